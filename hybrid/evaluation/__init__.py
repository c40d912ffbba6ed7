"""TREC-style evaluation as a library: measures over runs and qrels (:mod:`hybrid.core.measures`,
ir_measures underneath), trec_eval's output format (:mod:`hybrid.evaluation.trec_format`) and paired significance
tests (:mod:`hybrid.evaluation.significance`), and depth-k pooling with assessments merged into qrels
(:mod:`hybrid.evaluation.pooling`). The commands are :mod:`hybrid.cli.eval` and :mod:`hybrid.cli.pool`."""

"""The neural coreference reader (CoreSearch's E2E-Integrated reader, Eirew et al. 2022, eqs. 3-9).

A cross-encoder over ``[CLS] query-with-<m>-markers [SEP] passage [SEP]`` that extracts the span in
the passage coreferring with the marked query mention and scores the pair with the Lee et al. (2017)
mention-pair score; optionally with document context, the leads of both documents on the query side
(``context``). Modules: ``encoding`` (inputs, windows, char offsets), ``decoding`` (best valid
span), ``model`` (heads + scorer), ``store`` (safetensors save/load), ``data`` + ``train``
(training), ``infer`` (``score_pairs``, reranking, spans), ``stage`` (``ReaderReranker``),
``spans_eval`` (EM / token F1). CLI: ``python -m hybrid.reader``.
"""

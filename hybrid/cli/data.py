"""``python -m hybrid.data``: training data: convert ECB+, derive training queries from labels, the bundled set.

Examples::

    # the public ECB+ 1.0 release (unpacked ECB+_LREC2014 with ECB+.zip unzipped) as a labelled collection
    python -m hybrid.data ecbplus --from ECB+_LREC2014 --output data/ecbplus
    # training queries + qrels from its train topics (relevance read from every topic, as ECB+'s were made)
    python -m hybrid.data derive --corpus data/ecbplus/corpus.jsonl --split train --output data/train

    # your own labelled collection (docs/labelled-collections.md): a file, or a queries-form folder
    python -m hybrid.data derive --corpus labelled.jsonl --output data/train

    # the bundled default training set (ECB+ train topics), as files
    python -m hybrid.data bundled --output data/train

``derive`` and ``bundled`` write ``corpus.jsonl``, ``queries.jsonl``, ``qrels.txt`` and ``trainset.json``
into the output folder (reused while the source is unchanged) and print a summary as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_subparser, make_parser, run_cli
from hybrid.core.formats.ecbplus import convert_release
from hybrid.core.formats.labelled import CORPUS, MANIFEST, QRELS, QUERIES, materialize_training_set
from hybrid.core.outputs import FILE, Input, Output, Writes


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.data", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True)
    e = add_subparser(sub, "ecbplus", help="convert the public ECB+ 1.0 release to a labelled collection")
    e.add_argument("--from", dest="source", required=True, type=Path,
                   help="the unpacked release: the folder holding ECB+/<topic>/*.xml (or ECB+ itself)")
    e.add_argument("--sentences", type=Path, help="the release's validated-sentences CSV (default: "
                                                  "ECBplus_coreference_sentences.csv beside ECB+/)")
    e.add_argument("--output", required=True, type=Path, help="folder to write corpus.jsonl into")
    e.add_argument("--keep-test-labels", action="store_true",
                   help="keep the cluster ids of test topics 36-45 (dropped by default: they stay held out)")
    d = add_subparser(sub, "derive", help="training queries + qrels from a labelled collection")
    d.add_argument("--corpus", required=True, type=Path,
                   help="labelled-passages JSONL, or a folder with corpus.jsonl [+ queries.jsonl, qrels.txt]")
    d.add_argument("--split", help="only queries of passages whose 'split' field has this value")
    d.add_argument("--output", required=True, type=Path, help="folder to write the training files into")
    b = add_subparser(sub, "bundled", help="write the bundled default training set (ECB+ train topics)")
    b.add_argument("--output", required=True, type=Path, help="folder to write the training files into")
    return p


def _summary(folder: Path) -> dict:
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    return {k: manifest[k] for k in ("name", "form", "split", "queries", "judgments", "fingerprint")}


#: The files ``derive`` / ``bundled`` write into their output folder (labelled.materialize_training_set).
TRAINING_FILES = (CORPUS, QUERIES, QRELS, MANIFEST)


def writes(args: argparse.Namespace) -> Writes:
    """What each sub-command writes (files in --output, an earlier one replaced) and reads, for the output policy
    (hybrid.core.outputs): the converted or derived files may not be, nor lie inside, what they are made from."""
    if args.command == "ecbplus":
        outputs = [Output("--output", args.output / "corpus.jsonl", FILE, replace=True)]
        inputs = [Input("--from", args.source), Input("--sentences", args.sentences)]
    else:
        outputs = [Output("--output", args.output / name, FILE, replace=True) for name in TRAINING_FILES]
        inputs = [] if args.command == "bundled" else [Input("--corpus", args.corpus)]
    return Writes(f"hybrid.data {args.command}", outputs, inputs)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    if args.command == "ecbplus":
        output = args.output / "corpus.jsonl"
        report = convert_release(args.source, output, args.sentences, args.keep_test_labels)
        print(json.dumps({"output": str(output), **dataclasses.asdict(report)}, indent=2))
        print(f"next: python -m hybrid.data derive --corpus {output} --split train --output DIR", file=sys.stderr)
        return 0
    source = None if args.command == "bundled" else args.corpus
    training = materialize_training_set(source, args.output, getattr(args, "split", None))
    print(json.dumps({"corpus": str(training.corpus), "topics": str(training.topics), "qrels": str(training.qrels),
                      **_summary(args.output)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))

"""``python -m hybrid.train_dense``: fine-tune the mention-aware bi-encoder on labelled training topics.

Example (ECB+ train; ~20 minutes on a 2-core CPU)::

    python -m hybrid.train_dense --index /tmp/ecb-index --corpus data/ecbplus/corpus.jsonl \\
        --topics data/ecbplus/queries.train.jsonl --output models/dense-ecb --steps 2000 --max-minutes 20

Topics must be JSONL with a ``cluster`` label per query; only corpus lines of ``--split`` (default
``train``) provide positives and hard negatives. The mined pairs are cached (``--pairs``) so a
second run or a resumed one skips BM25 mining. An interrupted run resumes from
``<output>-checkpoint/`` when started again with the same settings (``--no-resume`` starts over).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_quiet, make_parser, non_negative_float, positive_int, run_cli, unit_float
from hybrid.core.errors import InputError
from hybrid.core.formats.topics import read_topics
from hybrid.core.outputs import Input, Output, Writes
from hybrid.dense.data import TrainingSet, build_training_set, summarize
from hybrid.sample import index_location
from indexes.shards import open_one_index


def parser() -> argparse.ArgumentParser:
    from features.encoder import POOLINGS  # deferred: importing it loads numpy, torch

    p = make_parser("python -m hybrid.train_dense", __doc__, epilog=True)
    p.add_argument("--index", required=True, help="hybrid index of the corpus (candidate spans, BM25 negatives);"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--corpus", required=True, help="corpus JSONL with gold 'cluster' labels and a 'split' field")
    p.add_argument("--topics", required=True, help="training topics JSONL with a 'cluster' per query")
    p.add_argument("--output", required=True, help="folder for the fine-tuned encoder (written atomically)")
    p.add_argument("--split", default="train", help="corpus split whose labels may be used ('' = all lines)")
    p.add_argument("--base", default="minilm", help="starting checkpoint: local folder, cached HF name, or minilm")
    p.add_argument("--pairs", help="cache of mined training pairs (JSONL); built when missing")
    p.add_argument("--negatives", choices=("multifield", "bm25", "none"), default="multifield")
    p.add_argument("--top", type=positive_int, default=20, help="hard negatives come from the BM25 top-N")
    p.add_argument("--steps", type=positive_int, default=1000)
    p.add_argument("--batch-size", type=positive_int, default=8)
    p.add_argument("--lr", type=non_negative_float, default=2e-5)
    p.add_argument("--warmup", type=unit_float, default=0.1, help="warm-up fraction of the steps")
    p.add_argument("--weight-decay", type=non_negative_float, default=0.01)
    p.add_argument("--scale", type=non_negative_float, default=20.0,
                   help="inverse softmax temperature over cosine scores")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--max-minutes", type=non_negative_float,
                   help="wall-clock budget; the model is saved when it runs out")
    p.add_argument("--checkpoint-every", type=positive_int, default=200)
    p.add_argument("--pooling", choices=POOLINGS, default="span+mean")
    p.add_argument("--context-weight", type=unit_float, default=0.5)
    p.add_argument("--separate", action="store_true", help="separate query and passage encoders")
    p.add_argument("--mark-passage", action="store_true", help="also mark candidate mentions in passages")
    p.add_argument("--train-embeddings", action="store_true", help="also train the word embeddings (slower)")
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (1 is fastest on a busy shared machine)")
    p.add_argument("--any-kind", action="store_true", help="do not mask candidates of the other kind")
    p.add_argument("--limit-queries", type=positive_int, help="train on the first N queries only (smoke runs)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing encoder at --output (only an encoder; resuming replaces its own)")
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--keep-checkpoint", action="store_true")
    add_quiet(p)
    return p


def writes(args: argparse.Namespace) -> Writes:
    """What this command writes and reads, for the output policy (hybrid.core.outputs)."""
    from features.encoder import ENCODER  # deferred: importing it loads numpy, torch
    from hybrid.dense.train import CHECKPOINT, checkpoint_dir, resumes  # deferred: importing it loads torch

    resumed = resumes(args.output, not args.no_resume)
    outputs = [Output("--output", args.output, ENCODER, replace=resumed),
               Output("--output checkpoint", checkpoint_dir(args.output), CHECKPOINT, replace=True)]
    inputs = [Input("--index", args.index), Input("--corpus", args.corpus), Input("--topics", args.topics),
              Input("--base", args.base)]
    if args.pairs and Path(args.pairs).is_file():  # a cache of mined pairs: read when there, written when not
        inputs.append(Input("--pairs", args.pairs))
    else:
        outputs.append(Output("--pairs", args.pairs))
    return Writes("hybrid.train_dense", outputs, inputs, args.overwrite)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    writes(args).check()
    if args.steps < 1 or args.batch_size < 1:
        raise InputError(None, None, "--steps and --batch-size must be >= 1")
    from features.encoder import EncoderConfig  # deferred: importing it loads numpy, torch
    from hybrid.dense.train import TrainConfig, train  # deferred: importing it loads numpy, torch

    progress = not args.quiet
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.pairs and Path(args.pairs).is_file():
        data = TrainingSet.load(args.pairs)
    else:
        index = open_one_index(index_location(args.index), "python -m hybrid.train_dense")
        topics = read_topics(args.topics, resolve=index.passage_text)
        data = build_training_set(index, args.corpus, topics, split=args.split or None, negatives=args.negatives,
                                  top=args.top, seed=args.seed, progress=progress)
        if args.pairs:
            data.save(args.pairs)
    if args.limit_queries:
        data.queries = data.queries[: args.limit_queries]
    print(json.dumps({"pairs": summarize(data)}), file=sys.stderr)
    encoder_config = EncoderConfig(pooling=args.pooling, context_weight=args.context_weight,
                                   shared=not args.separate, mark_passage=args.mark_passage)
    config = TrainConfig(base=args.base, steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                         weight_decay=args.weight_decay, warmup=args.warmup, scale=args.scale, seed=args.seed,
                         max_minutes=args.max_minutes, checkpoint_every=args.checkpoint_every,
                         same_kind=not args.any_kind, freeze_embeddings=not args.train_embeddings)
    summary = train(data, args.output, config, encoder_config, resume=not args.no_resume, progress=progress,
                    keep_checkpoint=args.keep_checkpoint, extra={"argv": sys.argv[1:] if argv is None else argv},
                    overwrite=args.overwrite)
    last = summary["history"][-1] if summary["history"] else {}
    print(json.dumps({"output": args.output, "steps": summary["steps_done"], "seconds": summary["seconds"],
                      "final_loss": last.get("loss"), "stopped_early": summary["stopped_early"]}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))

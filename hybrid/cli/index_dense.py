"""``python -m hybrid.index_dense``: encode a hybrid index's passages into a dense (FAISS) index.

Examples::

    # untrained MiniLM (the bundled offline weights), flat inner product, into <index>/dense/
    python -m hybrid.index_dense --index indexes/ecbplus
    # a fine-tuned encoder, HNSW, somewhere else
    python -m hybrid.index_dense --index indexes/ecbplus --encoder models/dense-ecb --output idx/dense-ft --hnsw

One vector per candidate mention of the sparse mention index (one forward pass per passage), and one
*passage vector* per passage (the passage text without markers, mean-pooled as the off-the-shelf sentence
encoder does; mostly from the same forward pass), so that a passage none of whose mentions was detected
is still retrievable; ``--no-passage-vectors`` leaves them out. See :mod:`indexes.faiss_index`.
The build happens in a temporary sibling and is renamed into place when complete; ``--overwrite``
replaces an existing dense index only then.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_backend, add_precision, add_quiet, make_parser, positive_int, run_cli, unit_float
from hybrid.core.backend import backend_device
from hybrid.core.errors import InputError
from hybrid.core.outputs import Input, Output, Writes
from hybrid.core.provenance import METADATA
from hybrid.sample import index_location
from indexes.faiss_index import DENSE_DIR, DENSE_INDEX, build_dense_index
from indexes.shards import open_one_index


def parser() -> argparse.ArgumentParser:
    from features.encoder import POOLINGS  # deferred: importing it loads numpy, torch

    p = make_parser("python -m hybrid.index_dense", __doc__, epilog=True)
    p.add_argument("--index", required=True, help="hybrid index directory (built by python -m hybrid.index);"
                                                  " 'sample': the bundled sample's, built on first use")
    p.add_argument("--encoder", default="minilm",
                   help="encoder: a folder saved by hybrid.train_dense, any local HF checkpoint, or minilm")
    p.add_argument("--output", help="dense index directory (default: <index>/dense)")
    p.add_argument("--hnsw", action="store_true", help="HNSW graph instead of exact flat inner product")
    p.add_argument("--hnsw-m", type=positive_int, default=32)
    p.add_argument("--ef-construction", type=positive_int, default=200)
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--pooling", choices=POOLINGS, help="override the encoder's pooling (raw checkpoints only)")
    p.add_argument("--context-weight", type=unit_float, help="override the context share of span+X pooling")
    p.add_argument("--no-passage-vectors", dest="passage_vectors", action="store_false",
                   help="do not store the unmarked mean-pooled vector of every passage (passages.faiss)")
    p.add_argument("--limit", type=positive_int, help="encode the first N passages only (smoke tests)")
    p.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    add_precision(p, "the passage encoder")
    add_backend(p, "the passage encoder")
    p.add_argument("--threads", type=positive_int, help="torch CPU threads")
    p.add_argument("--overwrite", action="store_true")
    add_quiet(p)
    return p


def writes(args: argparse.Namespace, index: str | Path) -> Writes:
    """What this command writes and reads (``index``: where --index lives), for the output policy
    (hybrid.core.outputs): the dense index goes in its own place inside the hybrid index (``<index>/dense``)
    or outside it, never over another artifact."""
    output = args.output or Path(index) / DENSE_DIR
    return Writes("hybrid.index_dense", [Output("--output", output, DENSE_INDEX)],
                  [Input("--index", index, keeps=(DENSE_DIR,)), Input("--encoder", args.encoder),
                   Input("the index's corpus", indexed_corpus(index))], args.overwrite)


def indexed_corpus(index: str | Path) -> str | None:
    """The corpus a hybrid index records it was built from (None when it records none)."""
    try:
        config = json.loads((Path(index) / METADATA).read_text(encoding="utf-8")).get("config", {})
        return str(config["corpus"]) if isinstance(config, dict) and config.get("corpus") else None
    except (OSError, ValueError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    index_path = index_location(args.index, progress=not args.quiet)
    writes(args, index_path).check()
    if args.batch_size < 1:
        raise InputError(None, None, "--batch-size must be >= 1")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from dataclasses import replace

    from features.encoder import BiEncoder  # deferred: importing it loads numpy, torch

    index = open_one_index(index_path, "python -m hybrid.index_dense (a sharded index builds its dense parts "
                                       "with python -m hybrid.index --shards N --dense-encoder ENC)")
    device = backend_device(args.backend, args.precision, args.device)  # before the encoder loads
    encoder = BiEncoder.load(args.encoder, device=device)
    overrides = {k: v for k, v in (("pooling", args.pooling), ("context_weight", args.context_weight)) if v is not None}
    if overrides:
        encoder = BiEncoder.load(args.encoder, config=replace(encoder.config, **overrides), device=device)
    encoder.set_inference(args.precision, args.backend)
    output = Path(args.output) if args.output else index_path / DENSE_DIR
    meta = build_dense_index(index, encoder, output, index_type="hnsw" if args.hnsw else "flat",
                             hnsw_m=args.hnsw_m, ef_construction=args.ef_construction, batch_size=args.batch_size,
                             overwrite=args.overwrite, progress=not args.quiet, limit=args.limit,
                             passage_vectors=args.passage_vectors)
    print(json.dumps({"dense_index": str(output), **meta["counts"], "encode_seconds": meta["encode_seconds"],
                      "passages_per_second": meta["passages_per_second"], "encoder": meta["encoder"]["path"],
                      "fingerprint": meta["encoder"]["fingerprint"][:12],
                      "passage_vectors": bool(meta.get("passage_vectors"))}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))

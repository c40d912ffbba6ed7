"""Every GPU row of issue 39 in one run (fits a ~10-minute GPU slot): full project path against model forward alone.

Rows (each ``per second``, on ``--device``; fp32 and every ``--precisions`` value for the model rows):

* ``gemm`` (per ``--backends`` and precision): matrix products at the encoder's feed-forward shapes, in GFLOP/s:
  what a forward pass could reach at most, against which the encode rows' forward alone is read (its GFLOP/s);
* ``encode`` (per ``--backends``: torch at every precision, onnx in fp32 on the CPU):
  :meth:`features.encoder.BiEncoder.encode_chunks` over passages of the bundled sample corpus (or
  ``--corpus``) in chunks of ``--chunk`` (one vector per candidate mention + the passage vector, the next chunk
  planned while one encodes: what ``hybrid.index_dense`` does), against the model's forward pass alone over the
  same batches, tokenised and padded before the clock starts; and the host side alone (:meth:`BiEncoder.plan`
  and its batches), which must keep pace with the device;
* ``reader``: :func:`ltr.reader.infer.score_pairs` over (query, passage) pairs, against the reader model's
  forward alone over the same windows, encoded and collated before the clock starts;
* ``reader-encoding``: ``score_pairs``' CPU side before the forward, alone (the same pairs encoded into windows,
  sorted by length, collated into batches), in pairs per second of one CPU process;
* ``bi-encoder training``: optimiser steps per second of the contrastive loss (``hybrid.dense.train``'s);
* ``faiss``: ``--vectors`` random unit vectors (1M by default), ``--queries`` queries, top 100: exact
  (flat inner product) on the CPU vs the GPU, and HNSW (built over ``--hnsw-vectors``) on the CPU vs its exact
  GPU copy (:func:`indexes.faiss_index.gpu_searcher`; FAISS has no GPU HNSW).

GPU rows are skipped (and say so) where torch / FAISS see no GPU. ``--smoke`` runs every row at tiny sizes on
any machine (CI's test of this script). Example::

    python benchmarks/gpu_throughput.py --device cuda --output benchmarks/results/speed-gpu
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

SAMPLE = Path(__file__).resolve().parent.parent / "hybrid" / "sample"


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _timed(function, device: str) -> float:
    _sync(device)
    started = time.perf_counter()
    function()
    _sync(device)
    return time.perf_counter() - started


def sample_passages(n: int, corpus: str | Path | None = None) -> list[dict]:
    """``n`` passages of ``corpus`` (a passages JSONL; the bundled sample corpus by default), repeated when it has
    fewer, with their mentions where it has them."""
    path = Path(corpus) if corpus else SAMPLE / "corpus.jsonl"
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            rows.append(json.loads(line))
            if len(rows) == n:
                break
    return [rows[i % len(rows)] for i in range(n)]


def encode_rows(args, device: str) -> list[dict]:
    import torch

    from features.encoder import BiEncoder, Unit

    encoder = BiEncoder.load(args.encoder, device=device)
    if args.index:  # the passages of a hybrid index with their detected mentions, as hybrid.index_dense reads them
        from indexes.faiss_index import iter_index_passages
        from indexes.sparse_index import SparseIndex

        indexed = iter_index_passages(SparseIndex(args.index))
        units = [Unit(p.text, [(s, e) for s, e, _ in p.mentions])
                 for p in (indexed[i % len(indexed)] for i in range(args.passages))]
    else:
        units = [Unit(p["text"], [(m["start"], m["end"]) for m in p.get("mentions") or []])
                 for p in sample_passages(args.passages, args.corpus)]
    encoder.encode_units(units[: args.batch_size], "passage", passages=True)  # warm-up

    def host_side():
        for _ in encoder.plan(units, "passage", args.batch_size, passages=True).batches():
            pass

    host_side()  # warm-up
    host = _timed(host_side, "cpu")
    # the forward alone over the very batches the full path runs (a repeated sentence once per chunk), on the
    # device before the clock starts
    batches = [(batch.ids.to(device), batch.mask.to(device)) for lo in range(0, len(units), args.chunk)
               for batch in encoder.plan(units[lo : lo + args.chunk], "passage", args.batch_size,
                                         passages=True).batches()]
    rows = [{"row": "encode passages: host side alone (tokenise, sequences, pad, pooling indices)",
             "unit": "passages/s", "CPU": len(units) / host}]
    settings = [(backend, precision) for backend in args.backends
                for precision in (["fp32", *args.precisions] if backend == "torch" else ["fp32"])]
    for backend, precision in settings:
        encoder.set_inference(precision, backend)
        model = encoder._inference_model("passage")  # onnx: exported here, before the clocks

        def forward(model=model):
            with torch.inference_mode(), encoder._autocast():
                for ids, mask in batches:
                    model(input_ids=ids, attention_mask=mask)

        def full_path():  # as hybrid.index_dense runs it: chunks, the next one planned while this one encodes
            chunks = [units[lo : lo + args.chunk] for lo in range(0, len(units), args.chunk)]
            for _ in encoder.encode_chunks(chunks, "passage", batch_size=args.batch_size, passages=True):
                pass

        full = _timed(full_path, device)
        alone = _timed(forward, device)
        setting = precision if backend == "torch" else f"{precision}, {backend}"
        rows.append({"row": f"encode passages ({setting})", "unit": "passages/s",
                     "full path": len(units) / full, "forward alone": len(units) / alone,
                     "GFLOP/s": forward_flops(encoder.passage_model, batches) / alone / 1e9})
    return rows


def forward_flops(model, batches: list) -> float:
    """Floating-point operations of ``model``'s forward over padded ``batches`` of (ids, mask): 2 per weight of
    its layers (embeddings and pooler aside) per token, and the attention products (scores and weighted values:
    4 x hidden per token pair per layer). What the forward alone's rate is set against the GEMM rows' rate."""
    config = model.config
    weights = sum(p.numel() for name, p in model.named_parameters()
                  if not name.startswith(("embeddings.", "pooler.")))
    flops = 0.0
    for ids, _ in batches:
        rows, length = ids.shape
        flops += 2.0 * weights * rows * length + 4.0 * config.num_hidden_layers * config.hidden_size * rows * length**2
    return flops


def gemm_rows(args, device: str) -> list[dict]:
    """Matrix products at the encoder's feed-forward shapes (``--gemm-tokens`` tokens x hidden x intermediate, and
    back) in each backend and precision the encode rows run: the rate a forward pass could reach at most, so the
    forward alone's GFLOP/s says how far the model is from the hardware (and a backend's matmul library from
    another's: on the 2-core AMD EPYC machine torch's MKL sgemm runs at half ONNX Runtime's MLAS)."""
    import torch

    from features.encoder import BiEncoder

    config = BiEncoder.load(args.encoder, device="cpu").passage_model.config
    m, hidden, inner = args.gemm_tokens, config.hidden_size, config.intermediate_size
    shapes = [(m, hidden, inner), (m, inner, hidden)]
    flops = sum(2.0 * a * b * c for a, b, c in shapes)
    rows = []
    settings = [(backend, precision) for backend in args.backends
                for precision in (["fp32", *args.precisions] if backend == "torch" else ["fp32"])]
    for backend, precision in settings:
        if backend == "torch":  # operands made in the precision (autocast would convert them on every call)
            dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
            pairs = [(torch.randn(a, b, device=device, dtype=dtype), torch.randn(b, c, device=device, dtype=dtype))
                     for a, b, c in shapes]

            def products(pairs=pairs):
                with torch.inference_mode():
                    for x, w in pairs:
                        torch.matmul(x, w)
        else:
            products = _onnx_products(shapes)
        products()  # warm-up
        seconds = min(_timed(products, device) for _ in range(args.gemm_repeats))
        setting = precision if backend == "torch" else f"{precision}, {backend}"
        rows.append({"row": f"matrix products at the encoder's shapes ({setting}; {m:,} tokens)",
                     "unit": "GFLOP/s", "GFLOP/s": flops / seconds / 1e9})
    return rows


def _onnx_products(shapes: list[tuple[int, int, int]]):
    """The products of ``shapes`` as one ONNX graph of MatMuls in an ONNX Runtime CPU session set up as
    :class:`features.onnx_model.OnnxEncoderModel`'s is."""
    import onnxruntime
    import torch
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    inputs, nodes, weights, outputs, feed = [], [], [], [], {}
    for i, (a, b, c) in enumerate(shapes):
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [a, b]))
        weights.append(numpy_helper.from_array(rng.standard_normal((b, c), dtype=np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [a, c]))
        feed[f"x{i}"] = rng.standard_normal((a, b), dtype=np.float32)
    graph = helper.make_model(helper.make_graph(nodes, "products", inputs, outputs, weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(graph.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, feed)


def reader_rows(args, device: str) -> list[dict]:
    import torch

    from hybrid.core.formats.topics import read_topics
    from ltr.reader.encoding import collate, encode_pairs
    from ltr.reader.infer import score_pairs
    from ltr.reader.store import new_reader

    reader = new_reader(args.reader_base).to(device)
    reader.model.eval()
    topics = read_topics(SAMPLE / "topics.jsonl")
    texts = [p["text"] for p in sample_passages(args.pairs)]
    pair_topics = [topics[i % len(topics)] for i in range(args.pairs)]
    score_pairs(reader, pair_topics[: args.batch_size], texts[: args.batch_size])  # warm-up
    windows = encode_pairs(reader.tokenizer, pair_topics, texts, reader.encoding)
    order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
    batches = []
    for b in range(0, len(order), args.batch_size):
        batch = {k: v.to(device) for k, v in collate([windows[i] for i in order[b : b + args.batch_size]],
                                                     reader.tokenizer.pad_token_id).items()}
        batch.pop("gold_start"), batch.pop("gold_end")
        batches.append(batch)

    def forward():
        with torch.inference_mode():
            for batch in batches:
                reader.model(**batch)  # the reader's precision applies inside (ReaderModel.encode)

    rows = []
    for precision in ["fp32", *args.precisions]:
        reader.set_precision(precision)
        full = _timed(lambda: score_pairs(reader, pair_topics, texts, batch_size=args.batch_size), device)
        alone = _timed(forward, device)
        rows.append({"row": f"reader score_pairs ({precision})", "unit": "pairs/s", "full path": args.pairs / full,
                     "forward alone": args.pairs / alone})
    return rows


def reader_encoding_rows(args, device: str) -> list[dict]:
    """score_pairs' CPU side before the forward, alone: the reader rows' pairs encoded into windows in score_pairs'
    chunks (one PairEncoder a call), each chunk's windows sorted by length and collated in batches."""
    from hybrid.core.formats.topics import read_topics
    from ltr.reader.encoding import PairEncoder, collate
    from ltr.reader.infer import CHUNK_PAIRS
    from ltr.reader.store import new_reader

    reader = new_reader(args.reader_base)
    topics = read_topics(SAMPLE / "topics.jsonl")
    texts = [p["text"] for p in sample_passages(args.pairs)]
    pair_topics = [topics[i % len(topics)] for i in range(args.pairs)]

    def encode_and_collate():
        encoder = PairEncoder(reader.tokenizer, reader.encoding)
        for lo in range(0, args.pairs, CHUNK_PAIRS):
            chunk = encoder.encode(pair_topics[lo : lo + CHUNK_PAIRS], texts[lo : lo + CHUNK_PAIRS])
            chunk.sort(key=lambda w: len(w.input_ids))
            for b in range(0, len(chunk), args.batch_size):
                collate(chunk[b : b + args.batch_size], reader.tokenizer.pad_token_id)

    encode_and_collate()  # warm-up
    seconds = _timed(encode_and_collate, "cpu")
    return [{"row": "reader pair encoding (tokenise, window, collate)", "unit": "pairs/s", "CPU": args.pairs / seconds}]


def training_rows(args, device: str) -> list[dict]:
    import torch

    from features.encoder import BiEncoder, Unit
    from hybrid.dense.train import contrastive_loss

    encoder = BiEncoder.load(args.encoder, device=device).train()
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=2e-5)
    passages = sample_passages(args.train_batch * (args.train_steps + 1))
    rng = random.Random(13)

    def step(n: int) -> None:
        chunk = passages[n * args.train_batch : (n + 1) * args.train_batch]
        queries, candidates = [], []
        for p in chunk:
            m = rng.choice(p.get("mentions") or [{"start": 0, "end": 1}])
            queries.append(Unit(p["text"], [(m["start"], m["end"])]))
            candidates.append(Unit(p["text"], [(m["start"], m["end"])]))
        loss = contrastive_loss(encoder, queries, candidates, list(range(len(chunk))),
                                [[False] * len(chunk) for _ in chunk], 20.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step(args.train_steps)  # warm-up (the last chunk)
    seconds = _timed(lambda: [step(n) for n in range(args.train_steps)], device)
    return [{"row": f"bi-encoder training (batch {args.train_batch}, fp32)", "unit": "steps/s",
             "full path": args.train_steps / seconds, "forward alone": None}]


def faiss_rows(args) -> list[dict]:
    import faiss

    from indexes.faiss_index import faiss_has_gpu, gpu_searcher

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((args.vectors, args.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.choice(args.vectors, args.queries, replace=False)] + 0.01
    rows = []
    flat = faiss.IndexFlatIP(args.dim)
    flat.add(vectors)
    hnsw = faiss.IndexHNSWFlat(args.dim, 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 200
    hnsw.add(vectors[: args.hnsw_vectors])
    hnsw.hnsw.efSearch = 128
    gpu = faiss_has_gpu()
    for name, index, size in (("exact (flat)", flat, args.vectors), ("HNSW", hnsw, args.hnsw_vectors)):
        cpu_seconds = _timed(lambda index=index: index.search(queries, 100), "cpu")
        row = {"row": f"FAISS {name}, {size:,} x {args.dim}, top 100", "unit": "queries/s",
               "CPU": args.queries / cpu_seconds, "GPU": None}
        if gpu:
            on_gpu = gpu_searcher(index)
            on_gpu.search(queries[:10], 100)  # warm-up
            row["GPU"] = args.queries / _timed(lambda on_gpu=on_gpu: on_gpu.search(queries, 100), "cpu")
        rows.append(row)
    return rows


ROWS = {"gemm": gemm_rows, "encode": encode_rows, "reader": reader_rows, "reader-encoding": reader_encoding_rows,
        "training": training_rows, "faiss": lambda args, device: faiss_rows(args)}


def markdown(report: dict) -> str:
    lines = [f"# GPU throughput (issue 39): {report['device']}", "",
             f"`{' '.join(report['argv'])}`", "",
             "| row | unit | full path | forward alone | CPU | GPU | GFLOP/s |", "|---|---|---:|---:|---:|---:|---:|"]

    def cell(value):
        return "" if value is None else f"{value:,.1f}"

    for row in report["rows"]:
        lines.append(f"| {row['row']} | {row['unit']} | {cell(row.get('full path'))} | "
                     f"{cell(row.get('forward alone'))} | {cell(row.get('CPU'))} | {cell(row.get('GPU'))} | "
                     f"{cell(row.get('GFLOP/s'))} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--encoder", default="minilm")
    p.add_argument("--reader-base", help="the reader's base checkpoint (default: the bundled MiniLM)")
    p.add_argument("--precisions", nargs="*", default=None, help="besides fp32 (default: bf16 fp16 on a GPU)")
    p.add_argument("--backends", nargs="+", choices=("torch", "onnx"), default=["torch"],
                   help="encode rows: the bi-encoder's inference backends (onnx: ONNX Runtime, CPU and fp32 only)")
    p.add_argument("--passages", type=int, default=20000)
    p.add_argument("--chunk", type=int, default=4096, help="passages per encode_chunks chunk (hybrid.index_dense's)")
    p.add_argument("--index", help="encode rows: the passages of this hybrid index, with its detected mentions")
    p.add_argument("--corpus", help="passages JSONL (text, optional mentions) of the encode rows (default: the "
                                    "bundled sample's 1,053, repeated to --passages)")
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--train-steps", type=int, default=50)
    p.add_argument("--train-batch", type=int, default=32)
    p.add_argument("--vectors", type=int, default=1_000_000)
    p.add_argument("--hnsw-vectors", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=768, help="768 = span+mean pooling of a 384-dimension encoder")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--gemm-tokens", type=int, default=4096, help="gemm rows: tokens (rows) of each product")
    p.add_argument("--gemm-repeats", type=int, default=5, help="gemm rows: timed repeats (the fastest is kept)")
    p.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS), help="which rows (default: all)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, any machine (a test of this script)")
    p.add_argument("--output", help="write OUTPUT.json and OUTPUT.md")
    args = p.parse_args(argv)
    if args.precisions is None:
        args.precisions = ["bf16", "fp16"] if args.device.startswith("cuda") else []
    if args.smoke:
        args.passages = args.pairs = 24
        args.batch_size, args.train_steps, args.train_batch = 8, 2, 4
        args.vectors, args.hnsw_vectors, args.queries, args.dim = 3000, 1000, 20, 32
        args.gemm_tokens, args.gemm_repeats = 64, 1
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor() or "cpu"
    report = {"device": f"{args.device}: {device_name}", "argv": sys.argv[1:] if argv is None else argv,
              "torch": torch.__version__, "rows": []}
    for name in args.rows:
        report["rows"] += ROWS[name](args, args.device)
        print(json.dumps(report["rows"][-1]), file=sys.stderr)
    text = markdown(report)
    print(text)
    if args.output:
        Path(f"{args.output}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        Path(f"{args.output}.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Scale benchmark (issue 9): grow ECB+ to N passages, build it with 1/2/4 shards, search each.

Steps (each one a subcommand; ``all`` runs them in order for several sizes)::

    # 1. a corpus of N ECB+-like passages (the real corpus first, then generated documents), streamed
    python benchmarks/scale.py generate --corpus /work/shared/data/ecbplus/corpus.jsonl \\
        --passages 60000 --seed 0 --output /tmp/scale-bench/corpus-60000.jsonl
    # 2. a fixed topic batch: a seeded sample of ECB+ dev topics (their documents are in every grown corpus)
    python benchmarks/scale.py topics --topics /work/shared/data/ecbplus/topics.dev.tsv --sample 300 \\
        --seed 0 --output /tmp/scale-bench/topics.tsv
    # 3. build with N shards under a memory monitor (python -m hybrid.index --shards N --engine ray)
    python benchmarks/scale.py build --corpus /tmp/scale-bench/corpus-60000.jsonl --shards 2 --engine ray \\
        --index /tmp/scale-bench/idx-60000-s2 --result /tmp/scale-bench/results.jsonl
    # 4. search the topic batch against it (throughput on the whole batch, latency one query at a time)
    python benchmarks/scale.py search --index /tmp/scale-bench/idx-60000-s2 --topics /tmp/scale-bench/topics.tsv \\
        --model bm25 --engine local --result /tmp/scale-bench/results.jsonl
    # everything: sizes x shard counts x models, appending to --result
    python benchmarks/scale.py all --sizes 20000,60000 --shards 1,2,4 --work /tmp/scale-bench
    # 5. markdown tables from the result lines
    python benchmarks/scale.py report --result /tmp/scale-bench/results.jsonl

Corpus generator. The real ECB+ passages are written first, unchanged; then generated documents until the
corpus has ``--passages`` lines. Generated document ``g`` is a function of ``(seed, g)`` only: its ECB+ topic
is ``topics[g % 43]``, its length is that of a random real document of the topic, and its sentences are
drawn at random from the topic's passages. In each sentence every digit is replaced by a random digit
(offsets unchanged), and each entity mention that overlaps no other mention is, with probability 1/2,
replaced by another surface of the same tag from the same topic (taking that surface's cluster); offsets
of all other mentions are shifted accordingly and every mention's ``text`` is re-read from its new span.
Ids are unique (``<topic>_gen<g>`` documents, ``<doc>:<i>`` passages; chains ``<doc>#<old chain>``).
Sentences that had no annotation keep ``"mentions": []`` (detected automatically at indexing, as for
ECB+). Memory: the 15.8k source passages; output is streamed.

Measurements. ``build`` and ``search`` run their work in a child process and sample the whole process
tree (the JVM lives in-process; Ray's raylet, GCS and workers are descendants of the driver) every
0.25 s from /proc: peak of the summed RSS over the tree (an upper bound: shared pages, e.g. Ray's object
store, count in every process that maps them) and the peak RSS of the largest single process. The
machine's load average (``/proc/loadavg``) is recorded before and after each measurement.

ECB+ (Cybulska and Vossen, 2014) is distributed under CC BY 3.0; generated passages are derived from it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECB = Path("/work/shared/data/ecbplus")
DIGIT = re.compile(r"\d")
#: entity tags whose surfaces are swapped between documents of a topic (names, places, times, objects)
SWAP_PREFIXES = ("HUMAN_PART", "LOC_", "TIME_", "NON_HUMAN_PART")


# -- corpus generator --------------------------------------------------------------------------------------


def load_topics(corpus: Path) -> dict[int, list[list[dict]]]:
    """Real ECB+ documents grouped by topic: ``{topic: [[passage, ...] per document]}`` (corpus order)."""
    docs: dict[str, list[dict]] = {}
    topic_of: dict[str, int] = {}
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            docs.setdefault(obj["doc_id"], []).append(obj)
            topic_of[obj["doc_id"]] = int(obj["topic"])
    topics: dict[int, list[list[dict]]] = defaultdict(list)
    for doc_id, passages in docs.items():
        topics[topic_of[doc_id]].append(passages)
    return dict(sorted(topics.items()))


def surface_pools(topics: dict[int, list[list[dict]]]) -> dict[tuple[int, str], list[tuple[str, str]]]:
    """``(topic, tag) -> sorted distinct (surface, cluster)`` of swappable entity mentions."""
    pools: dict[tuple[int, str], set[tuple[str, str]]] = defaultdict(set)
    for topic, docs in topics.items():
        for passages in docs:
            for p in passages:
                for m in p.get("mentions") or []:
                    if m.get("kind") == "entity" and (m.get("tag") or "").startswith(SWAP_PREFIXES):
                        pools[(topic, m["tag"])].add((m["text"], m.get("cluster") or ""))
    return {key: sorted(value) for key, value in pools.items()}


def _isolated(mentions: list[dict]) -> list[bool]:
    """Whether each mention overlaps no other mention (only those are replaced: offsets stay consistent)."""
    out = []
    for i, m in enumerate(mentions):
        out.append(all(o["end"] <= m["start"] or o["start"] >= m["end"] for j, o in enumerate(mentions) if j != i))
    return out


def rewrite_sentence(source: dict, rng: random.Random, topic: int, pools: dict, doc_id: str, number: int) -> dict:
    """One generated passage from a real one: digits and some entity surfaces substituted, offsets fixed."""
    text = DIGIT.sub(lambda _: str(rng.randrange(10)), source["text"])
    mentions = [dict(m) for m in source.get("mentions") or []]
    edits = []  # (start, end, replacement, mention index), non-overlapping
    for i, (m, alone) in enumerate(zip(mentions, _isolated(mentions), strict=True)):
        if not alone or m.get("kind") != "entity" or not (m.get("tag") or "").startswith(SWAP_PREFIXES):
            continue
        pool = pools.get((topic, m["tag"]), [])
        if len(pool) < 2 or rng.random() < 0.5:
            continue
        surface, cluster = pool[rng.randrange(len(pool))]
        edits.append((m["start"], m["end"], surface, i))
        m["cluster"] = cluster
    edits.sort()
    pieces, cursor, shifts = [], 0, []  # shifts: (old end of an edit, cumulative delta after it)
    delta = 0
    new_spans = {}
    for start, end, surface, i in edits:
        pieces.append(text[cursor:start])
        new_start = start + delta
        pieces.append(surface)
        delta += len(surface) - (end - start)
        new_spans[i] = (new_start, new_start + len(surface))
        shifts.append((end, delta))
        cursor = end
    pieces.append(text[cursor:])
    new_text = "".join(pieces)

    def shift(offset: int) -> int:
        moved = 0
        for end, d in shifts:
            if end <= offset:
                moved = d
        return offset + moved

    out_mentions = []
    for i, m in enumerate(mentions):
        start, end = new_spans.get(i, (shift(m["start"]), shift(m["end"])))
        m["start"], m["end"], m["text"] = start, end, new_text[start:end]
        if m.get("chain"):
            m["chain"] = f"{doc_id}#{m['chain']}"
        out_mentions.append(m)
    return {
        "id": f"{doc_id}:{number}", "doc_id": doc_id, "topic": topic, "split": "generated", "sent_id": number,
        "validated": bool(source.get("validated")), "source": source["id"], "text": new_text,
        "mentions": out_mentions,
    }


def generated_document(g: int, seed: int, topics: dict, order: list[int], pools: dict) -> list[dict]:
    rng = random.Random(f"{seed}:{g}")
    topic = order[g % len(order)]
    docs = topics[topic]
    length = len(docs[rng.randrange(len(docs))])
    doc_id = f"{topic}_gen{g:08d}"
    sentences = [p for passages in docs for p in passages]
    return [rewrite_sentence(sentences[rng.randrange(len(sentences))], rng, topic, pools, doc_id, i)
            for i in range(length)]


def generate(corpus: Path, n_passages: int, seed: int, output: Path) -> dict:
    """Write the real corpus then generated documents up to ``n_passages`` lines (the last one may be cut)."""
    topics = load_topics(corpus)
    pools = surface_pools(topics)
    order = list(topics)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    written = real = docs = 0
    with open(tmp, "w", encoding="utf-8") as out, open(corpus, encoding="utf-8") as source:
        for line in source:
            if written >= n_passages:
                break
            out.write(line if line.endswith("\n") else line + "\n")
            written += 1
            real += 1
        g = 0
        while written < n_passages:
            for passage in generated_document(g, seed, topics, order, pools)[: n_passages - written]:
                out.write(json.dumps(passage, ensure_ascii=False) + "\n")
                written += 1
            g += 1
            docs += 1
    os.replace(tmp, output)
    return {"output": str(output), "passages": written, "real": real, "generated_documents": docs,
            "bytes": output.stat().st_size, "seed": seed}


def sample_topics(topics: Path, n: int, seed: int, output: Path) -> dict:
    lines = [line for line in topics.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = sorted(random.Random(seed).sample(range(len(lines)), min(n, len(lines))))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("".join(lines[i] + "\n" for i in chosen), encoding="utf-8")
    return {"output": str(output), "topics": len(chosen), "seed": seed}


# -- measurement -------------------------------------------------------------------------------------------


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _proc_table() -> dict[int, tuple[int, str, int]]:
    """``pid -> (ppid, name, rss bytes)`` of every process readable in /proc (no psutil needed)."""
    table = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            rss_pages = int(Path(f"/proc/{entry.name}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        table[int(entry.name)] = (ppid, name, rss_pages * page)
    return table


class TreeMonitor:
    """Samples RSS of a process and all its descendants (from /proc) until stopped."""

    def __init__(self, pid: int, interval: float = 0.25):
        self.root = pid
        self.interval = interval
        self.peak_total = 0
        self.peak_single = 0
        self.peak_by_kind: dict[str, int] = {}
        self.max_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def kind(name: str) -> str:
        """Process kinds: the driver (python), Ray's daemons and workers (``ray::<task or actor>``)."""
        return name.split("(")[0] if name.startswith("ray::") else name

    def _run(self) -> None:
        while not self._stop.is_set():
            table = _proc_table()
            children: dict[int, list[int]] = defaultdict(list)
            for pid, (ppid, _, _) in table.items():
                children[ppid].append(pid)
            tree, todo = [], [self.root]
            while todo:
                pid = todo.pop()
                if pid in table:
                    tree.append(pid)
                    todo.extend(children.get(pid, []))
            total = 0
            for pid in tree:
                _, name, rss = table[pid]
                total += rss
                self.peak_single = max(self.peak_single, rss)
                kind = self.kind(name)
                self.peak_by_kind[kind] = max(self.peak_by_kind.get(kind, 0), rss)
            self.peak_total = max(self.peak_total, total)
            self.max_processes = max(self.max_processes, len(tree))
            self._stop.wait(self.interval)

    def start(self) -> TreeMonitor:
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        mib = 1 << 20
        return {"peak_rss_tree_mib": round(self.peak_total / mib),
                "peak_rss_process_mib": round(self.peak_single / mib),
                "peak_rss_by_kind_mib": {k: round(v / mib) for k, v in sorted(self.peak_by_kind.items())},
                "max_processes": self.max_processes}


def monitored(cmd: list[str], log: Path) -> dict:
    """Run ``cmd`` (stdout+stderr to ``log``) under a :class:`TreeMonitor`; wall time, rc, memory."""
    load_before = loadavg()
    started = time.time()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        monitor = TreeMonitor(proc.pid).start()
        rc = proc.wait()
    memory = monitor.stop()
    return {"cmd": cmd, "rc": rc, "wall_seconds": round(time.time() - started, 2), "load_before": load_before,
            "load_after": loadavg(), **memory}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def append_result(path: Path | None, record: dict) -> None:
    print(json.dumps(record), flush=True)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


def build(corpus: Path, index: Path, shards: int, engine: str, threads: int, result: Path | None) -> dict:
    if index.exists():
        shutil.rmtree(index)
    cmd = [sys.executable, "-m", "hybrid.index", "--corpus", str(corpus), "--index", str(index),
           "--shards", str(shards), "--engine", engine, "--threads", str(threads), "--quiet"]
    record = {"step": "build", "corpus": str(corpus), "index": str(index), "shards": shards, "engine": engine,
              "threads": threads, **monitored(cmd, index.with_name(index.name + ".build.log"))}
    if record["rc"] == 0:
        manifest = json.loads((index / "hybrid-shards.json").read_text(encoding="utf-8"))
        passages = manifest["counts"]["passages"]
        per_shard = []
        for shard in manifest["shards"]:
            meta = json.loads((index / shard["name"] / "hybrid-index.json").read_text(encoding="utf-8"))
            seconds = meta.get("index_seconds")
            per_shard.append({"name": shard["name"], "passages": shard["passages"], "mentions": shard["mentions"],
                              "bytes": shard["bytes"], "lucene_seconds": seconds,
                              "lucene_passages_per_second": round(shard["passages"] / seconds, 1) if seconds else None})
        record.update({
            "passages": passages, "mentions": manifest["counts"]["mentions"],
            "build_seconds": manifest["build_seconds"], "timings": manifest["timings"],
            "passages_per_second": round(passages / record["wall_seconds"], 1),
            "passages_per_second_per_shard": round(passages / record["wall_seconds"] / shards, 1),
            "index_bytes": du(index), "per_shard": per_shard,
        })
    append_result(result, record)
    return record


def search(index: Path, topics: Path, model: str, engine: str, latency: int, threads: int,
           result: Path | None) -> dict:
    run = index.with_name(f"{index.name}.{model}.{engine}.trec")
    out = index.with_name(f"{index.name}.{model}.{engine}.search.json")
    cmd = [sys.executable, str(Path(__file__).resolve()), "_search", "--index", str(index), "--topics", str(topics),
           "--model", model, "--engine", engine, "--latency", str(latency), "--threads", str(threads),
           "--run", str(run), "--output", str(out)]
    record = {"step": "search", "index": str(index), "model": model, "engine": engine, "threads": threads,
              **monitored(cmd, index.with_name(f"{index.name}.{model}.{engine}.search.log"))}
    if record["rc"] == 0:
        record.update(json.loads(out.read_text(encoding="utf-8")))
    append_result(result, record)
    return record


def search_worker(args: argparse.Namespace) -> int:
    """In the monitored child: open the index, search the batch, then single queries for latency."""
    import statistics

    from hybrid.cli.search import build_system_of
    from hybrid.cli.search import parser as search_parser
    from hybrid.core.formats.runs import write_run
    from hybrid.core.formats.topics import read_topics
    from indexes.sharded_index import open_index

    started = time.time()
    index = open_index(args.index, args.engine)
    topics = read_topics(args.topics, resolve=index.passage_text)
    options = search_parser().parse_args(["--topics", args.topics, "--index", args.index, "--model", args.model,
                                          "--engine", args.engine, "--threads", str(args.threads), "--quiet"])
    retriever = build_system_of(options, index)
    retriever.search(topics[:5], 100)  # warm-up: JIT, caches
    opened = time.time() - started
    mark = time.time()
    run = retriever.search(topics, 100)
    batch = time.time() - mark
    write_run(run, args.run, tag=f"{args.model}-{args.engine}")
    latencies = []
    for topic in topics[: args.latency]:
        mark = time.perf_counter()
        retriever.search([topic], 100)
        latencies.append((time.perf_counter() - mark) * 1000)
    latencies.sort()
    shards = getattr(index, "n_shards", 1)
    Path(args.output).write_text(json.dumps({
        "queries": len(topics), "shards": shards, "open_and_warm_seconds": round(opened, 2),
        "batch_seconds": round(batch, 2), "queries_per_second": round(len(topics) / batch, 2),
        "latency_queries": len(latencies),
        "latency_ms_mean": round(statistics.fmean(latencies), 1) if latencies else None,
        "latency_ms_p50": round(latencies[len(latencies) // 2], 1) if latencies else None,
        "latency_ms_p95": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 1)
        if latencies else None,
        "run": args.run,
    }) + "\n", encoding="utf-8")
    return 0


def same_runs(a: str, b: str) -> str:
    """'identical' when two TREC runs have the same (qid, docid, rank), else a count of differing queries."""
    def read(path: str) -> dict[str, list[tuple[str, float]]]:
        runs: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            qid, _, docid, _rank, score, _tag = line.split()
            runs[qid].append((docid, float(score)))
        return runs

    x, y = read(a), read(b)
    differ = [q for q in set(x) | set(y) if [d for d, _ in x.get(q, [])] != [d for d, _ in y.get(q, [])]]
    worst = max((abs(s - t) for q in x if q in y for (_, s), (_, t) in zip(x[q], y[q], strict=False)), default=0.0)
    return "identical ids/order" + f", max |score diff| {worst:.1e}" if not differ else f"{len(differ)} queries differ"


# -- report ------------------------------------------------------------------------------------------------


def report(result: Path) -> str:
    rows = [json.loads(line) for line in result.read_text(encoding="utf-8").splitlines() if line.strip()]
    builds = [r for r in rows if r["step"] == "build"]
    searches = [r for r in rows if r["step"] == "search"]
    out = ["### Build", "",
           "| passages | shards | engine | wall s | passages/s | passages/s/shard | split s | annotate s | "
           "lucene s | checksum s | Lucene passages/s per shard | index MiB | MiB/shard | peak RSS tree MiB | "
           "peak RSS 1 process MiB | load before -> after |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in builds:
        if r["rc"] != 0:
            out.append(f"| {r.get('corpus')} | {r['shards']} | {r['engine']} | failed rc={r['rc']} |" + " |" * 12)
            continue
        t = r["timings"]
        per = ", ".join(str(s["lucene_passages_per_second"]) for s in r["per_shard"])
        mib = r["index_bytes"] / (1 << 20)
        out.append(
            f"| {r['passages']} | {r['shards']} | {r['engine']} | {r['wall_seconds']} | {r['passages_per_second']} | "
            f"{r['passages_per_second_per_shard']} | {t.get('split')} | {t.get('annotate')} | {t.get('index')} | "
            f"{t.get('checksum')} | {per} | {mib:.0f} | {mib / r['shards']:.0f} | {r['peak_rss_tree_mib']} | "
            f"{r['peak_rss_process_mib']} | {r['load_before']} -> {r['load_after']} |")
    out += ["", "### Search (k = 100)", "",
            "| passages | shards | model | engine | queries | q/s (batch) | latency mean ms | p50 ms | p95 ms | "
            "open+warm s | peak RSS tree MiB | peak RSS 1 process MiB | run vs 1 shard | load before -> after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    passages_of = {r["index"]: r.get("passages") for r in builds}
    one_shard = {}
    for r in searches:
        if r["rc"] == 0 and r.get("shards") == 1:
            one_shard[(passages_of.get(r["index"]), r["model"])] = r["run"]
    for r in searches:
        n = passages_of.get(r["index"], "?")
        if r["rc"] != 0:
            out.append(f"| {n} | ? | {r['model']} | {r['engine']} | failed rc={r['rc']} |" + " |" * 9)
            continue
        base = one_shard.get((n, r["model"]))
        same = "-" if r["shards"] == 1 or not base else same_runs(base, r["run"])
        out.append(
            f"| {n} | {r['shards']} | {r['model']} | {r['engine']} | {r['queries']} | {r['queries_per_second']} | "
            f"{r['latency_ms_mean']} | {r['latency_ms_p50']} | {r['latency_ms_p95']} | {r['open_and_warm_seconds']} | "
            f"{r['peak_rss_tree_mib']} | {r['peak_rss_process_mib']} | {same} | "
            f"{r['load_before']} -> {r['load_after']} |")
    out += ["", extrapolate(builds)]
    return "\n".join(out) + "\n"


def extrapolate(builds: list[dict], target: int = 100_000_000) -> str:
    """Linear fit ``wall = fixed + per_passage * N`` through the two largest measured sizes, per shard count
    (proportional to the largest size when the fit is invalid); index bytes per passage from the largest
    size. For the 100M plan, on this machine; labelled EXTRAPOLATED: nothing here was run at ``target``."""
    out = [f"### Extrapolated to {target:,} passages (not measured)", "",
           "| shards | from sizes | wall s at sizes | method | s per 1k passages | fixed s | extrapolated wall s | "
           "extrapolated passages/s | bytes/passage | extrapolated index GiB |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    by_shards: dict[int, dict[int, dict]] = defaultdict(dict)
    for r in builds:
        if r["rc"] == 0:
            by_shards[r["shards"]][r["passages"]] = r
    for shards, runs in sorted(by_shards.items()):
        sizes = sorted(runs)[-2:]
        if len(sizes) < 2:
            continue
        (n1, r1), (n2, r2) = ((n, runs[n]) for n in sizes)
        per = (r2["wall_seconds"] - r1["wall_seconds"]) / (n2 - n1)
        fixed = r2["wall_seconds"] - per * n2
        if per > 0 and fixed >= 0:
            method = "linear fit"
        else:
            # Noise (machine load, start-up dominating the small size) bent the fit; a negative per-passage
            # cost or fixed cost is meaningless, so fall back to the largest size's rate with no fixed part,
            # which over-estimates the wall time (the safe side for planning).
            per, fixed, method = r2["wall_seconds"] / n2, 0.0, "proportional (fit invalid)"
        wall = fixed + per * target
        bpp = r2["index_bytes"] / n2
        out.append(f"| {shards} | {n1:,}, {n2:,} | {r1['wall_seconds']}, {r2['wall_seconds']} | {method} | "
                   f"{per * 1000:.2f} | {fixed:.1f} | {fixed:.1f} + {per * 1000:.3f} x {target // 1000:,} = "
                   f"{wall:.0f} | {target / wall:.0f} | {bpp:.0f} | {bpp * target / (1 << 30):.2f} |")
    return "\n".join(out) + "\n"


# -- CLI ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--corpus", type=Path, default=ECB / "corpus.jsonl")
    g.add_argument("--passages", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--output", type=Path, required=True)
    t = sub.add_parser("topics")
    t.add_argument("--topics", type=Path, default=ECB / "topics.dev.tsv")
    t.add_argument("--sample", type=int, default=300)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--output", type=Path, required=True)
    b = sub.add_parser("build")
    b.add_argument("--corpus", type=Path, required=True)
    b.add_argument("--index", type=Path, required=True)
    b.add_argument("--shards", type=int, required=True)
    b.add_argument("--engine", choices=("ray", "local"), default="ray")
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--result", type=Path)
    s = sub.add_parser("search")
    s.add_argument("--index", type=Path, required=True)
    s.add_argument("--topics", type=Path, required=True)
    s.add_argument("--model", choices=("bm25", "multifield"), default="bm25")
    s.add_argument("--engine", choices=("ray", "local"), default="local")
    s.add_argument("--latency", type=int, default=50, help="queries searched one at a time for latency")
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--result", type=Path)
    w = sub.add_parser("_search")
    for name in ("--index", "--topics", "--model", "--engine", "--run", "--output"):
        w.add_argument(name, required=True)
    w.add_argument("--latency", type=int, default=50)
    w.add_argument("--threads", type=int, default=1)
    a = sub.add_parser("all")
    a.add_argument("--sizes", default="20000,60000")
    a.add_argument("--shards", default="1,2,4")
    a.add_argument("--models", default="bm25,multifield")
    a.add_argument("--build-engine", choices=("ray", "local"), default="ray")
    a.add_argument("--search-engine", choices=("ray", "local"), default="local")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--queries", type=int, default=300)
    a.add_argument("--latency", type=int, default=50)
    a.add_argument("--work", type=Path, default=Path("/tmp/scale-bench"))
    a.add_argument("--keep", action="store_true", help="keep the indexes (default: removed after searching)")
    r = sub.add_parser("report")
    r.add_argument("--result", type=Path, required=True)
    args = p.parse_args(argv)

    if args.cmd == "generate":
        print(json.dumps(generate(args.corpus, args.passages, args.seed, args.output)))
    elif args.cmd == "topics":
        print(json.dumps(sample_topics(args.topics, args.sample, args.seed, args.output)))
    elif args.cmd == "build":
        record = build(args.corpus, args.index, args.shards, args.engine, args.threads, args.result)
        return 0 if record["rc"] == 0 else 1
    elif args.cmd == "search":
        record = search(args.index, args.topics, args.model, args.engine, args.latency, args.threads, args.result)
        return 0 if record["rc"] == 0 else 1
    elif args.cmd == "_search":
        return search_worker(args)
    elif args.cmd == "all":
        work, result = args.work, args.work / "results.jsonl"
        topics = work / "topics.tsv"
        print(json.dumps(sample_topics(ECB / "topics.dev.tsv", args.queries, args.seed, topics)))
        for size in (int(x) for x in args.sizes.split(",")):
            corpus = work / f"corpus-{size}.jsonl"
            if not corpus.exists():
                print(json.dumps(generate(ECB / "corpus.jsonl", size, args.seed, corpus)))
            for shards in (int(x) for x in args.shards.split(",")):
                index = work / f"idx-{size}-s{shards}"
                if build(corpus, index, shards, args.build_engine, 1, result)["rc"] != 0:
                    continue
                for model in args.models.split(","):
                    search(index, topics, model, args.search_engine, args.latency, 1, result)
                if not args.keep:
                    shutil.rmtree(index, ignore_errors=True)
    elif args.cmd == "report":
        print(report(args.result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

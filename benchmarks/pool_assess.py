"""Pool several runs' top passages for a sample of queries, assess the unjudged ones, score on completed qrels.

    python benchmarks/pool_assess.py pool --runs bm25=B.trec net=N.trec ... --qrels $E/qrels.dev.txt \\
        --judged judged.txt --topics $E/queries.dev.jsonl --corpus $E/corpus.raw.jsonl \\
        --per-kind 50 --depth 10 --seed 11 --output-dir POOL
    # an assessor fills POOL/items.tsv's coreferent column (yes / no), blind to systems, ids and controls
    python benchmarks/pool_assess.py score --pool-dir POOL --assessed POOL/items.tsv --runs ... \\
        --qrels $E/qrels.dev.txt --judged judged.txt --topics $E/queries.dev.jsonl --output OUT

Why: a collection judged in part (ECB+ annotates only its curated sentences) scores every unjudged
passage as wrong, so a system that learns which sentences were annotated beats one that finds more
coreferent mentions, and condensed lists (unjudged passages skipped) are biased the other way. TREC's
answer is pooling: judge the union of the compared systems' top ``--depth`` passages. ``pool`` draws
``--per-kind`` queries of each kind (seeded), pools the runs' top ``--depth`` passages and writes every
pooled passage that is neither relevant nor judged as an item for an assessor, with one *control* per
query mixed in: a pooled passage whose label the qrels already know (relevant or judged non-relevant,
a seeded coin picks which), so that the assessor's agreement with the collection's own assessors can be
measured. Items are shuffled and carry no passage id, query id or system name: the assessor sees the
query sentence with its mention marked ``[[...]]``, the hit passage, and the first two passages of each
document (the lead, which names time and place). ``key.tsv`` maps items back.

A sample grows with a second ``pool --exclude-pool FIRST`` (other queries, its own seed), and a run
joins an existing pool with ``pool --runs NEW=... --extend FIRST [SECOND ...]``: the same queries, and only
the passages the earlier pools did not assess become items (no controls). ``score`` takes every pool
directory with its assessed file, in order.

``second`` draws a seeded sample of assessed items (controls included), renumbered and reshuffled, for a
second assessor who does not see the first one's answers; ``agree`` then reports the two assessors'
agreement (accuracy, Cohen's kappa) and each one's agreement with the collection on the controls.

``split`` cuts a pool's items into parts of ``--parts-of`` rows for several assessors, and ``merge``
puts their answer files (``item``, ``coreferent``, ``note``) back into one assessed file in the items'
order, refusing an item answered twice, an item that is not in the pool and an item left unanswered.

``score`` reads the filled items, reports agreement on the controls, adds the assessed labels to the
qrels of the sampled queries (completed qrels: yes = 1, no = 0; unjudged passages below the pool depth
stay non-relevant, as in any pooled collection) and compares the runs on three sets of labels for the
same queries: the collection's qrels (standard), condensed lists, and the completed qrels. Every pooled
run is fully judged to ``--depth``, so RR@10 and P@10 are exact there; AP@100 still counts the unjudged
passages below the pool as non-relevant.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
from collections import defaultdict  # noqa: E402

from hybrid.core.atomic import atomic_write  # noqa: E402
from hybrid.core.errors import InputError  # noqa: E402
from hybrid.core.formats.corpus import read_corpus  # noqa: E402
from hybrid.core.formats.qrels import Qrels, read_qrels  # noqa: E402
from hybrid.core.formats.runs import read_run, sha256_file  # noqa: E402
from hybrid.core.formats.topics import read_topics  # noqa: E402
from hybrid.core.outputs import Input, Output, Writes, run_input  # noqa: E402
from hybrid.core.records import KINDS, Run  # noqa: E402
from hybrid.evaluation.comparison import compare, compare_condensed, format_markdown  # noqa: E402
from hybrid.evaluation.judged import read_judged  # noqa: E402

ITEM_COLUMNS = ("item", "coreferent", "note", "query", "query_lead", "hit", "hit_lead")
ANSWER_COLUMNS = ITEM_COLUMNS[:3]  # all that score, second and agree read; `pool` regenerates the texts
KEY_COLUMNS = ("item", "kind", "qid", "docid", "source", "label")
MEASURES = ("RR@10", "P@10", "AP@100", "nDCG@10", "Judged@10")
ANSWERS = {"yes": 1, "no": 0}


def parse_runs(specs: list[str]) -> dict[str, str]:
    """NAME=PATH pairs -> {name: path}, in order."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError(None, None, f"--runs: expected NAME=PATH, got {spec!r}")
        if name in out:
            raise InputError(None, None, f"--runs: the name {name!r} is given twice")
        out[name] = path
    return out


def sample_queries(qrels: Qrels, kind_of: dict[str, str], per_kind: int, seed: int,
                   exclude: frozenset[str] = frozenset()) -> list[str]:
    """``per_kind`` judged queries of each kind, seeded, sorted; none of ``exclude`` (an earlier pool's)."""
    rng = random.Random(seed)
    chosen: list[str] = []
    for kind in KINDS:
        qids = sorted(q for q in qrels if kind_of.get(q) == kind and q not in exclude)
        chosen += rng.sample(qids, min(per_kind, len(qids)))
    return sorted(chosen)


def pool(runs: dict[str, Run], qids: list[str], depth: int) -> dict[str, list[str]]:
    """qid -> the union of the runs' top ``depth`` passage ids, in first-seen order (runs in order)."""
    out: dict[str, list[str]] = {}
    for qid in qids:
        seen: dict[str, None] = {}
        for run in runs.values():
            for hit in run.get(qid, [])[:depth]:
                seen.setdefault(hit.docid)
        out[qid] = list(seen)
    return out


def build_items(pooled: dict[str, list[str]], qrels: Qrels, judged: frozenset[str], seed: int,
                known: frozenset[tuple[str, str]] = frozenset(), controls: bool = True) -> list[dict[str, str]]:
    """Key rows: every unjudged pooled passage not ``known`` (assessed before), plus one control per query.

    A control is a pooled passage the qrels list as relevant (label yes) or a judged passage they do not
    list (label no); a seeded coin picks which for each query, falling back to the other kind when the
    pool has none. Rows come back shuffled (seeded) and numbered.
    """
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    for qid, docids in pooled.items():
        relevant = [d for d in docids if qrels[qid].get(d, 0) > 0]
        judged_no = [d for d in docids if d not in qrels[qid] and d in judged]
        for docid in docids:
            if docid not in qrels[qid] and docid not in judged and (qid, docid) not in known:
                rows.append({"qid": qid, "docid": docid, "source": "pool", "label": ""})
        if not controls:
            continue
        options = [("yes", relevant), ("no", judged_no)]
        if rng.random() < 0.5:
            options.reverse()
        for label, group in options:
            if group:
                rows.append({"qid": qid, "docid": rng.choice(group), "source": "control", "label": label})
                break
    rng.shuffle(rows)
    for number, row in enumerate(rows, 1):
        row["item"] = f"{number:04d}"
    return rows


def leads(corpus_path: str) -> tuple[dict[str, str], dict[str, str]]:
    """(passage id -> text, document id -> its first two passages' text)."""
    texts: dict[str, str] = {}
    by_doc: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for number, passage in enumerate(read_corpus(corpus_path)):
        texts[passage.id] = passage.text
        by_doc[passage.doc_id].append((number, passage.text))
    return texts, {doc: " / ".join(text for _, text in sorted(rows)[:2]) for doc, rows in by_doc.items()}


def item_row(row: dict[str, str], topics: dict, texts: dict[str, str], lead_of: dict[str, str]) -> dict[str, str]:
    """What the assessor sees of one key row: the marked query, the hit and both documents' leads."""
    topic = topics[row["qid"]]
    return {"item": row["item"], "coreferent": "", "note": "",
            "query": f"{topic.text[:topic.start]}[[{topic.text[topic.start:topic.end]}]]{topic.text[topic.end:]}",
            "query_lead": lead_of.get(topic.doc_id or "", ""),
            "hit": texts[row["docid"]], "hit_lead": lead_of[row["docid"].rpartition(":")[0] or row["docid"]]}


def write_tsv(path: Path, columns: tuple[str, ...], rows: list[dict[str, str]]) -> None:
    with atomic_write(path) as out:
        writer = csv.DictWriter(out, columns, delimiter="\t", lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_tsv(path: str | Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(path, 1, f"missing columns {missing}")
        return list(reader)


def pool_manifest(pool_dir: str | Path) -> dict:
    """An earlier pool's ``pool.json``."""
    return json.loads((Path(pool_dir) / "pool.json").read_text())


def check_answered(rows: list[dict[str, str]], answers: dict[str, tuple], path: str | Path) -> None:
    """Every key row's item must have an answer in the assessed file at ``path``."""
    missing = [row["item"] for row in rows if row["item"] not in answers]
    if missing:
        raise InputError(path, None, f"{len(missing)} items not assessed, e.g. {missing[:5]}")


def command_pool(args: argparse.Namespace) -> None:
    run_paths = parse_runs(args.runs)
    texts, lead_of = leads(args.corpus)
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.get)}
    qrels = read_qrels(args.qrels)
    judged = read_judged(args.judged)
    known: frozenset[tuple[str, str]] = frozenset()
    if args.extend:  # the same queries as earlier pools; only passages they did not assess become items
        qids = sorted({q for d in args.extend for q in pool_manifest(d)["queries"]})
        known = frozenset((row["qid"], row["docid"]) for d in args.extend
                          for row in read_tsv(Path(d) / "key.tsv", KEY_COLUMNS))
    else:
        exclude = frozenset(q for d in args.exclude_pool for q in pool_manifest(d)["queries"])
        qids = sample_queries(qrels, {q: t.kind for q, t in topics.items()}, args.per_kind, args.seed, exclude)
    pooled = pool({name: read_run(path) for name, path in run_paths.items()}, qids, args.depth)
    key = build_items(pooled, qrels, judged, args.seed, known, controls=not args.extend)
    items = []
    for row in key:
        row["kind"] = topics[row["qid"]].kind
        items.append(item_row(row, topics, texts, lead_of))
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tsv(out / "items.tsv", ITEM_COLUMNS, items)
    write_tsv(out / "key.tsv", KEY_COLUMNS, key)
    manifest = {"runs": {n: {"path": p, "sha256": sha256_file(p)} for n, p in run_paths.items()},
                "depth": args.depth, "per_kind": args.per_kind, "seed": args.seed, "queries": qids,
                "excluded_pools": args.exclude_pool, "extends": args.extend, "qrels": args.qrels, "judged": args.judged,
                "topics": args.topics, "corpus": args.corpus,
                "items": len(key), "controls": sum(r["source"] == "control" for r in key)}
    with atomic_write(out / "pool.json") as handle:
        handle.write(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(qids)} queries, {manifest['items'] - manifest['controls']} unjudged pooled passages, "
          f"{manifest['controls']} controls -> {out}", file=sys.stderr)


def answer_of(row: dict[str, str], path: str | Path, number: int) -> int:
    """An assessed row's answer: 1 for yes, 0 for no (case and spaces ignored); anything else names file and line."""
    answer = (row["coreferent"] or "").strip().lower()
    if answer not in ANSWERS:
        raise InputError(path, number, f"coreferent must be yes or no, got {row['coreferent']!r}")
    return ANSWERS[answer]


def read_assessed(path: str | Path) -> dict[str, tuple[int, str]]:
    """item -> (1 for yes, 0 for no, note); every item must be answered."""
    out: dict[str, tuple[int, str]] = {}
    for number, row in enumerate(read_tsv(path, ("item", "coreferent")), 2):
        out[row["item"]] = (answer_of(row, path, number), row.get("note") or "")
    return out


def agreement(pairs: list[tuple[int, int]]) -> dict[str, float]:
    """Accuracy and Cohen's kappa of (gold, assessed) pairs."""
    n = len(pairs)
    if not n:
        return {"n": 0}
    observed = sum(g == a for g, a in pairs) / n
    p_gold, p_assessed = sum(g for g, _ in pairs) / n, sum(a for _, a in pairs) / n
    expected = p_gold * p_assessed + (1 - p_gold) * (1 - p_assessed)
    kappa = (observed - expected) / (1 - expected) if expected < 1 else 1.0
    return {"n": n, "accuracy": observed, "kappa": kappa,
            "gold_yes_assessed_no": sum(g == 1 and a == 0 for g, a in pairs),
            "gold_no_assessed_yes": sum(g == 0 and a == 1 for g, a in pairs)}


def completed_qrels(qrels: Qrels, key: list[dict[str, str]], assessed: dict[str, tuple[int, str]]) -> Qrels:
    """The sampled queries' qrels plus the assessed pool passages (controls keep the collection's label)."""
    qids = {row["qid"] for row in key}
    out: Qrels = {q: dict(qrels[q]) for q in qids}
    for row in key:
        if row["source"] == "pool":
            out[row["qid"]][row["docid"]] = assessed[row["item"]][0]
    return out


def read_pools(pool_dirs: list[str], assessed_paths: list[str]):
    """Key rows, answers and manifests of one or more pools; items are renamed ``<pool>/<item>`` when several."""
    if len(pool_dirs) != len(assessed_paths):
        raise InputError(None, None, f"--pool-dir names {len(pool_dirs)} pools but --assessed {len(assessed_paths)} "
                                     "files; give one assessed file per pool, in the same order")
    key: list[dict[str, str]] = []
    assessed: dict[str, tuple[int, str]] = {}
    manifests = []
    for number, (pool_dir, path) in enumerate(zip(pool_dirs, assessed_paths, strict=True), 1):
        rows = read_tsv(Path(pool_dir) / "key.tsv", KEY_COLUMNS)
        answers = read_assessed(path)
        check_answered(rows, answers, path)
        prefix = f"{number}/" if len(pool_dirs) > 1 else ""
        key += [{**row, "item": prefix + row["item"]} for row in rows]
        assessed.update({prefix + item: answer for item, answer in answers.items()})
        manifests.append(pool_manifest(pool_dir))
    depths = {m["depth"] for m in manifests}
    if len(depths) > 1:
        raise InputError(None, None, f"--pool-dir: the pools have different depths {sorted(depths)}")
    queries = [q for m in manifests if not m.get("extends") for q in m["queries"]]
    if len(set(queries)) != len(queries):
        raise InputError(None, None, "--pool-dir: the pools share queries; draw later pools with --exclude-pool "
                                     "(or add runs with --extend)")
    extra = {q for m in manifests if m.get("extends") for q in m["queries"]} - set(queries)
    if extra:
        raise InputError(None, None, f"--pool-dir: an extension pool has queries no other pool drew, e.g. "
                                     f"{sorted(extra)[:3]}; give the pools it extends too")
    pairs = [(row["qid"], row["docid"]) for row in key]
    if len(set(pairs)) != len(pairs):
        raise InputError(None, None, "--pool-dir: a passage is assessed twice for one query; give each pool once")
    manifest = {"depth": depths.pop(), "queries": sorted(queries), "pools": manifests}
    return key, assessed, manifest


def command_score(args: argparse.Namespace) -> None:
    key, assessed, manifest = read_pools(args.pool_dir, args.assessed)
    if args.doubtful_as_no:  # a stricter assessor: every yes the assessor called doubtful counts as no
        assessed = {item: (0 if "doubtful" in note.lower() else label, note)
                    for item, (label, note) in assessed.items()}
    run_paths = parse_runs(args.runs)
    runs = {name: read_run(path) for name, path in run_paths.items()}
    qrels = read_qrels(args.qrels)
    judged = read_judged(args.judged)
    texts = {passage.id: passage.text for passage in read_corpus(args.corpus)}
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.get)}
    groups = {q: topics[q].kind for q in manifest["queries"]}
    sample = {q: qrels[q] for q in manifest["queries"]}
    runs = {name: {q: run.get(q, []) for q in manifest["queries"]} for name, run in runs.items()}
    baseline = args.baseline or next(iter(runs))

    controls = [(ANSWERS[row["label"]], assessed[row["item"]][0]) for row in key if row["source"] == "control"]
    pooled = [assessed[row["item"]][0] for row in key if row["source"] == "pool"]
    by_kind = {kind: [assessed[r["item"]][0] for r in key if r["source"] == "pool" and groups[r["qid"]] == kind]
               for kind in KINDS}
    full = completed_qrels(qrels, key, assessed)
    settings = {
        "standard": compare(runs, sample, groups, baseline, MEASURES, judged),
        "condensed": compare_condensed(runs, sample, groups, baseline, MEASURES, judged),
        "completed": compare(runs, full, groups, baseline, MEASURES, judged),
    }
    run_info = {n: {"path": p, "sha256": sha256_file(p)} for n, p in run_paths.items()}
    for info in run_info.values():  # a run outside the pool is judged only where it agrees with the pooled runs
        covered = {q for m in manifest["pools"] if info["sha256"] in {r["sha256"] for r in m["runs"].values()}
                   for q in m["queries"]}
        info["pooled"] = covered >= set(manifest["queries"])
    summary = {
        "manifest": manifest, "runs": run_info, "doubtful_as_no": args.doubtful_as_no,
        "controls": agreement(controls),
        "pool": {"n": len(pooled), "yes": sum(pooled),
                 **{f"{kind}_yes": f"{sum(v)}/{len(v)}" for kind, v in by_kind.items()}},
        "relevant_added": {kind: sum(v) for kind, v in by_kind.items()},
        "relevant_in_qrels": {kind: sum(sum(v > 0 for v in sample[q].values()) for q in sample
                                        if groups[q] == kind) for kind in KINDS},
        "results": {s: r["results"] for s, r in settings.items()},
    }
    names = list(runs)
    unpooled = [n for n in names if not run_info[n]["pooled"]]
    c = summary["controls"]
    lines = [f"# Pooled assessment: {len(sample)} sampled queries, runs pooled to depth {manifest['depth']}", "",
             f"Pool: {summary['pool']['n']} unjudged passages assessed, {summary['pool']['yes']} coreferent "
             f"(event {summary['pool']['event_yes']}, entity {summary['pool']['entity_yes']}); relevant passages "
             f"in the collection's qrels for these queries: {summary['relevant_in_qrels']}, added: "
             f"{summary['relevant_added']}.", ""]
    if args.doubtful_as_no:
        lines += ["Stricter reading: every yes the assessor marked doubtful counts as no.", ""]
    if unpooled:
        lines += ["Not pooled (their unassessed hits count as non-relevant; see Judged@10): "
                  f"{', '.join(unpooled)}.", ""]
    if c["n"]:
        lines += [f"Controls (the collection's own labels, mixed in blind): {c['n']}, agreement "
                  f"{c['accuracy']:.3f}, Cohen's kappa {c['kappa']:.3f} (relevant judged no: "
                  f"{c['gold_yes_assessed_no']}, non-relevant judged yes: {c['gold_no_assessed_yes']}).", ""]
    titles = {"standard": "The collection's qrels (unjudged = non-relevant)",
              "condensed": "Condensed lists (unjudged passages removed)",
              "completed": "Completed qrels (the pool assessed; below the pool unjudged = non-relevant)"}
    for setting, title in titles.items():
        lines += [f"## {title}", format_markdown(summary["results"][setting], baseline, MEASURES), ""]
    if args.qrels_out:
        with atomic_write(args.qrels_out) as handle:
            for qid in sorted(full):
                for docid, rel in sorted(full[qid].items()):
                    handle.write(f"{qid} 0 {docid} {rel}\n")
    out = Path(args.output)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write("\n".join(lines))
    with atomic_write(out.with_suffix(".json")) as handle:
        handle.write(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


def command_split(args: argparse.Namespace) -> None:
    """The pool's items in parts of ``--parts-of`` rows (part-01.tsv, ...), one per assessor, in order."""
    if args.parts_of < 1:
        raise InputError(None, None, f"--parts-of must be at least 1, got {args.parts_of}")
    items = read_tsv(args.items, ITEM_COLUMNS)
    parts = [items[i:i + args.parts_of] for i in range(0, len(items), args.parts_of)]
    writes(args, len(parts)).check()
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in zip(part_names(len(parts)), parts, strict=True):
        write_tsv(out / name, ITEM_COLUMNS, part)
    print(f"{len(items)} items in {len(parts)} parts -> {out}", file=sys.stderr)


def command_merge(args: argparse.Namespace) -> None:
    """The assessors' answer files back into one assessed items file, every item answered exactly once."""
    items = read_tsv(args.items, ITEM_COLUMNS)
    wanted = {row["item"] for row in items}
    answers: dict[str, tuple[str, str]] = {}
    where: dict[str, str] = {}
    for path in args.answers:
        for number, row in enumerate(read_tsv(path, ANSWER_COLUMNS), 2):
            item = (row["item"] or "").strip()
            if item not in wanted:
                raise InputError(path, number, f"item {item!r} is not in {args.items}")
            if item in answers:
                raise InputError(path, number, f"item {item} is answered twice (first in {where[item]})")
            answers[item] = ("yes" if answer_of(row, path, number) else "no", " ".join((row["note"] or "").split()))
            where[item] = f"{path}:{number}"
    check_answered(items, answers, args.answers[-1] if len(args.answers) == 1 else "the answer files")
    merged = [{**row, "coreferent": answers[row["item"]][0], "note": answers[row["item"]][1]} for row in items]
    write_tsv(Path(args.output), ANSWER_COLUMNS if args.answers_only else ITEM_COLUMNS, merged)
    print(f"{len(merged)} items merged from {len(args.answers)} answer files -> {args.output}", file=sys.stderr)


SECOND_KEY_COLUMNS = ("item", "kind", "qid", "docid", "source", "label", "first", "first_item")


def command_second(args: argparse.Namespace) -> None:
    """A seeded sample of assessed items, renumbered and reshuffled, for a second, independent assessor."""
    key, assessed, _ = read_pools(args.pool_dir, args.assessed)
    texts, lead_of = leads(args.corpus)
    topics = {t.qid: t for t in read_topics(args.topics, resolve=texts.get)}
    rng = random.Random(args.seed)
    chosen = rng.sample(key, min(args.sample, len(key)))
    rows = [{**row, "first_item": row["item"], "item": f"{number:04d}",
             "first": "yes" if assessed[row["item"]][0] else "no"} for number, row in enumerate(chosen, 1)]
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tsv(out / "items.tsv", ITEM_COLUMNS, [item_row(row, topics, texts, lead_of) for row in rows])
    write_tsv(out / "key.tsv", SECOND_KEY_COLUMNS, rows)
    print(f"{len(rows)} of {len(key)} assessed items drawn for a second assessor -> {out}", file=sys.stderr)


def command_agree(args: argparse.Namespace) -> None:
    """Agreement of the second assessor with the first (every item) and with the collection (controls)."""
    key = read_tsv(Path(args.second_dir) / "key.tsv", SECOND_KEY_COLUMNS)
    second = read_assessed(args.assessed)
    check_answered(key, second, args.assessed)
    summary = {"first_vs_second": agreement([(ANSWERS[r["first"]], second[r["item"]][0]) for r in key])}
    for kind in KINDS:
        summary[f"first_vs_second_{kind}"] = agreement([(ANSWERS[r["first"]], second[r["item"]][0])
                                                         for r in key if r["kind"] == kind])
    controls = [r for r in key if r["source"] == "control"]
    summary["collection_vs_first"] = agreement([(ANSWERS[r["label"]], ANSWERS[r["first"]]) for r in controls])
    summary["collection_vs_second"] = agreement([(ANSWERS[r["label"]], second[r["item"]][0]) for r in controls])
    with atomic_write(Path(args.output).with_suffix(".json")) as handle:
        handle.write(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


#: What each sub-command reads (attributes of its arguments), for the output policy.
READS = ("qrels", "judged", "topics", "corpus", "pool_dir", "assessed", "exclude_pool", "extend", "items", "answers",
         "second_dir")


def part_names(count: int) -> list[str]:
    """The file names ``split`` gives ``count`` parts (part-01.tsv, ...)."""
    width = max(2, len(str(count)))
    return [f"part-{number:0{width}d}.tsv" for number in range(1, count + 1)]


def writes(args: argparse.Namespace, parts: int = 0) -> Writes:
    """What a sub-command writes (replacing its own earlier files) and reads (runs, qrels, pools, assessments:
    never written over), for the output policy (hybrid.core.outputs). ``parts``: the number of parts of split."""
    reads = [run_input(f"--runs {name}", path) for name, path in parse_runs(getattr(args, "runs", None) or []).items()]
    for name in READS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value] if value else []:
            reads.append(Input(f"--{name.replace('_', '-')}", path))
    command = args.command
    if command in ("pool", "second", "split"):
        out = Path(args.output_dir)
        names = part_names(parts) if command == "split" else ["items.tsv", "key.tsv"] + (
            ["pool.json"] if command == "pool" else [])
        outputs = [Output(f"--output-dir {name}", out / name, replace=True) for name in names]
    elif command == "merge":
        outputs = [Output("--output", args.output, replace=True)]
    else:  # score, agree: the report (.md and .json beside the prefix), and score's completed qrels
        out = Path(args.output)
        outputs = [Output("--output (json)", out.with_suffix(".json"), replace=True)]
        if command == "score":
            outputs += [Output("--output (md)", out.with_suffix(".md"), replace=True),
                        Output("--qrels-out", args.qrels_out, replace=True)]
    return Writes(f"pool_assess.py {command}", outputs, reads)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    texts = argparse.ArgumentParser(add_help=False)
    texts.add_argument("--topics", required=True, help="topics JSONL (passage_id, start, end, kind)")
    texts.add_argument("--corpus", required=True, help="corpus JSONL with id, doc_id and text")
    common = argparse.ArgumentParser(add_help=False, parents=[texts])
    common.add_argument("--runs", nargs="+", required=True, help="NAME=PATH run files (TREC format)")
    common.add_argument("--qrels", required=True)
    common.add_argument("--judged", required=True, help="passage ids judged for every query, one per line")
    pools = argparse.ArgumentParser(add_help=False)
    pools.add_argument("--pool-dir", nargs="+", required=True, help="one or more pools (drawn with --exclude-pool)")
    pools.add_argument("--assessed", nargs="+", required=True,
                       help="per pool, its items.tsv with the coreferent column filled (yes / no)")
    a = sub.add_parser("pool", parents=[common], help="draw queries, pool the runs, write items to assess")
    a.add_argument("--per-kind", type=int, default=50)
    a.add_argument("--depth", type=int, default=10)
    a.add_argument("--seed", type=int, default=11)
    a.add_argument("--output-dir", required=True)
    a.add_argument("--exclude-pool", nargs="*", default=[],
                   help="earlier pool directories whose queries are not drawn again (to grow a sample)")
    a.add_argument("--extend", nargs="*", default=[],
                   help="earlier pool directories: pool these runs for the same queries and write only the "
                        "passages those pools did not assess (to add a run to a pool; no controls)")
    b = sub.add_parser("score", parents=[common, pools], help="score the runs on the completed qrels")
    b.add_argument("--doubtful-as-no", action="store_true",
                   help="count a yes whose note says 'doubtful' as no (a sensitivity check for a lenient assessor)")
    b.add_argument("--baseline", help="run name the others are tested against (default: the first)")
    b.add_argument("--output", required=True, help="path prefix for .md and .json")
    b.add_argument("--qrels-out", help="write the sampled queries' completed qrels here (TREC qrels)")
    c = sub.add_parser("second", parents=[texts, pools], help="draw assessed items for a second assessor")
    c.add_argument("--sample", type=int, default=300)
    c.add_argument("--seed", type=int, default=21)
    c.add_argument("--output-dir", required=True)
    d = sub.add_parser("agree", help="the second assessor's agreement with the first and with the collection")
    d.add_argument("--second-dir", required=True, help="the directory `second` wrote")
    d.add_argument("--assessed", required=True, help="its items.tsv with the coreferent column filled")
    d.add_argument("--output", required=True, help="path prefix for .json")
    e = sub.add_parser("split", help="cut a pool's items into parts, one per assessor")
    e.add_argument("--items", required=True, help="the pool's items.tsv")
    e.add_argument("--parts-of", type=int, default=250, help="items per part")
    e.add_argument("--output-dir", required=True)
    f = sub.add_parser("merge", help="the assessors' answer files back into one assessed items file")
    f.add_argument("--items", required=True, help="the pool's items.tsv")
    f.add_argument("--answers", nargs="+", required=True, help="answer files: item, coreferent (yes / no), note")
    f.add_argument("--output", required=True, help="the assessed file to write (the items with answers)")
    f.add_argument("--answers-only", action="store_true",
                   help="write only item, coreferent and note (a large pool's texts are regenerated by `pool`)")
    args = p.parse_args(argv)
    if args.command != "split":  # split names its parts once it has read the items
        writes(args).check()
    {"pool": command_pool, "score": command_score, "second": command_second, "agree": command_agree,
     "split": command_split, "merge": command_merge}[args.command](args)


if __name__ == "__main__":
    main()

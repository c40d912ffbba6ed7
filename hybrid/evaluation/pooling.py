"""Depth-k pooling of TREC runs, blind assessment items, and assessed judgments merged into qrels.

A collection judged in part scores every unjudged passage as wrong, so a system that finds coreferent
mentions the assessors never saw is punished for it. TREC's answer is pooling: judge the union of the
compared systems' top ``depth`` passages for each query, then add those judgments to the qrels. This module
holds the steps as functions over plain records (the command is ``python -m hybrid.pool``):

1. :func:`sample_queries` (optional): a seeded sample of queries per kind, none of an earlier pool's;
2. :func:`pool_runs`: per query, the union of the runs' top ``depth`` passages;
3. :func:`build_key`: every pooled passage that is neither in the qrels nor judged becomes an item, plus
   (with qrels) one *control* per query: a pooled passage whose label the qrels know, mixed in blind so that
   the assessor's agreement with the collection's own assessors can be measured (:func:`agreement`);
4. :func:`assessor_item`: what the assessor sees of an item (no passage id, query id or system name): the
   query sentence with its mention marked ``[[...]]``, the hit passage, and each document's lead (its
   first two passages, which name time and place);
5. :func:`split_items` / :func:`merge_answers`: items cut into parts for several assessors, and their answer
   files put back together, every item answered exactly once;
6. :func:`read_pools` + :func:`completed_qrels`: the assessed labels (yes = 1, no = 0) added to the qrels.
   Passages below the pool depth stay unjudged, as in any pooled collection.

A pool on disk is a folder: ``items.tsv`` (for the assessor), ``key.tsv`` (what each item stands for) and
``pool.json`` (how it was drawn: runs with their sha256, depth, seed, queries, counts).
"""

from __future__ import annotations

import csv
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import Qrels
from hybrid.core.records import KINDS, Rankings, Topic

#: The assessor's file: the answer columns first, then what the assessor reads.
ITEM_COLUMNS = ("item", "coreferent", "note", "query", "query_lead", "hit", "hit_lead")
#: An answer file: all that reading assessments needs (the texts are regenerated from the pool).
ANSWER_COLUMNS = ITEM_COLUMNS[:3]
KEY_COLUMNS = ("item", "kind", "qid", "docid", "source", "label")
#: An assessor's answer -> relevance.
ANSWERS = {"yes": 1, "no": 0}
POOLED, CONTROL = "pool", "control"


@dataclass(frozen=True)
class KeyRow:
    """What one item of a pool stands for. ``source``: ``pool`` (an unjudged pooled passage) or ``control``
    (a passage whose label the qrels know; ``label`` is then ``yes`` or ``no``)."""

    item: str
    qid: str
    docid: str
    source: str
    label: str = ""
    kind: str = ""


@dataclass(frozen=True)
class Answer:
    """An assessor's answer to one item: 1 (coreferent) or 0, and the assessor's note."""

    relevance: int
    note: str = ""


@dataclass(frozen=True)
class Texts:
    """The corpus as an assessor needs it: each passage's text and document, each document's lead."""

    text: dict[str, str]
    doc_of: dict[str, str]
    lead: dict[str, str]


@dataclass
class Pools:
    """One or more assessed pools read together (:func:`read_pools`)."""

    key: list[KeyRow]
    answers: dict[str, Answer]
    depth: int
    queries: list[str]
    manifests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def manifest(self) -> dict[str, Any]:
        """The pools' description as reports record it."""
        return {"depth": self.depth, "queries": self.queries, "pools": self.manifests}


def named_paths(specs: Iterable[str], option: str = "--runs") -> dict[str, str]:
    """``NAME=PATH`` pairs -> {name: path} in order; a bare ``PATH`` is named by its file name without suffix."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        if not name or not path:
            raise InputError(None, None, f"{option}: expected NAME=PATH or PATH, got {spec!r}")
        if name in out:
            raise InputError(None, None, f"{option}: the name {name!r} is given twice (name the runs: NAME=PATH)")
        out[name] = path
    return out


def sample_queries(candidates: Iterable[str], kind_of: Mapping[str, str | None], per_kind: int, seed: int,
                   exclude: Iterable[str] = ()) -> list[str]:
    """``per_kind`` of the ``candidates`` of each kind (seeded; queries of no known kind form one more group,
    drawn last), none of ``exclude`` (an earlier pool's queries); sorted."""
    rng = random.Random(seed)
    exclude = set(exclude)
    left = sorted(set(candidates) - exclude)
    groups = list(KINDS) + sorted({kind_of.get(q) or "" for q in left} - set(KINDS))
    chosen: list[str] = []
    for kind in groups:
        qids = [q for q in left if (kind_of.get(q) or "") == kind]
        chosen += rng.sample(qids, min(per_kind, len(qids)))
    return sorted(chosen)


def pool_runs(runs: Iterable[Rankings], qids: Iterable[str], depth: int) -> dict[str, list[str]]:
    """qid -> the union of the runs' top ``depth`` passage ids, in first-seen order (runs in order)."""
    runs = list(runs)
    out: dict[str, list[str]] = {}
    for qid in qids:
        seen: dict[str, None] = {}
        for run in runs:
            for hit in run.get(qid, [])[:depth]:
                seen.setdefault(hit.docid)
        out[qid] = list(seen)
    return out


def build_key(pooled: Mapping[str, list[str]], qrels: Qrels, judged: frozenset[str], seed: int,
              known: frozenset[tuple[str, str]] = frozenset(), controls: bool = True,
              kind_of: Mapping[str, str | None] | None = None) -> list[KeyRow]:
    """Every pooled passage that is neither in ``qrels`` nor ``judged`` nor ``known`` (assessed before), plus
    with ``controls`` one control per query, shuffled (seeded) and numbered ``0001``, ``0002``, ...

    A control is a pooled passage the qrels list as relevant (label yes) or a judged passage they do not list
    (label no); a seeded coin picks which for each query, falling back to the other when the pool has none.
    """
    rng = random.Random(seed)
    kind_of = kind_of or {}
    rows: list[tuple[str, str, str, str]] = []
    for qid, docids in pooled.items():
        labels = qrels.get(qid, {})
        relevant = [d for d in docids if labels.get(d, 0) > 0]
        judged_no = [d for d in docids if d not in labels and d in judged]
        for docid in docids:
            if docid not in labels and docid not in judged and (qid, docid) not in known:
                rows.append((qid, docid, POOLED, ""))
        if not controls:
            continue
        options = [("yes", relevant), ("no", judged_no)]
        if rng.random() < 0.5:
            options.reverse()
        for label, group in options:
            if group:
                rows.append((qid, rng.choice(group), CONTROL, label))
                break
    rng.shuffle(rows)
    return [KeyRow(f"{number:04d}", qid, docid, source, label, kind_of.get(qid) or "")
            for number, (qid, docid, source, label) in enumerate(rows, 1)]


@dataclass
class Draw:
    """A pool made by :func:`make_pool`: its queries, its key and the assessor's items (same order)."""

    queries: list[str]
    key: list[KeyRow]
    items: list[dict[str, str]]


def make_pool(runs: Iterable[Rankings], topics: Mapping[str, Topic], texts: Texts, depth: int, seed: int,
              qrels: Qrels | None = None, judged: frozenset[str] = frozenset(), per_kind: int | None = None,
              exclude: Iterable[str | Path] = (), extend: Iterable[str | Path] = (), controls: bool = True) -> Draw:
    """Pool ``runs`` to ``depth`` and write the items for an assessor (see the module's steps).

    The queries: those of ``qrels`` (every topic's without qrels) that ``topics`` has, or ``per_kind`` of them of
    each kind (seeded), none drawn by the pool folders in ``exclude``. With ``extend`` (earlier pool folders)
    the queries are theirs and only passages they did not assess become items, without controls: a run joins
    a pool already assessed. Controls need ``qrels``.
    """
    qrels = qrels or {}
    extend = list(extend)
    kind_of = {qid: topic.kind for qid, topic in topics.items()}
    known: frozenset[tuple[str, str]] = frozenset()
    if extend:
        qids = sorted({q for folder in extend for q in read_manifest(folder)["queries"]})
        missing = [q for q in qids if q not in topics]
        if missing:
            raise InputError(None, None, f"--extend: the pools' queries {missing[:3]} are not in --topics")
        known = frozenset((row.qid, row.docid) for folder in extend for row in read_key(Path(folder) / "key.tsv"))
        controls = False
    else:
        candidates = [q for q in (qrels or topics) if q in topics]
        drawn = {q for folder in exclude for q in read_manifest(folder)["queries"]}
        if per_kind is None:
            qids = sorted(set(candidates) - drawn)
        else:
            qids = sample_queries(candidates, kind_of, per_kind, seed, drawn)
    pooled = pool_runs(runs, qids, depth)
    key = build_key(pooled, qrels, judged, seed, known, controls and bool(qrels), kind_of)
    return Draw(qids, key, [assessor_item(row, topics[row.qid], texts) for row in key])


def read_texts(corpus: str | Path) -> Texts:
    """Passage texts and documents from a corpus JSONL, and each document's lead (its first two passages)."""
    text: dict[str, str] = {}
    doc_of: dict[str, str] = {}
    by_doc: dict[str, list[str]] = defaultdict(list)
    for passage in read_corpus(corpus):
        text[passage.id] = passage.text
        doc_of[passage.id] = passage.doc_id
        by_doc[passage.doc_id].append(passage.text)
    return Texts(text, doc_of, {doc: " / ".join(texts[:2]) for doc, texts in by_doc.items()})


def assessor_item(row: KeyRow, topic: Topic, texts: Texts) -> dict[str, str]:
    """What the assessor sees of one item: the marked query, the hit and both documents' leads; no ids."""
    if row.docid not in texts.text:
        raise InputError(None, None, f"passage {row.docid!r} (a pooled hit of query {row.qid}) is not in the "
                                     "corpus; give the corpus the runs were made from")
    query = f"{topic.text[:topic.start]}[[{topic.text[topic.start:topic.end]}]]{topic.text[topic.end:]}"
    return {"item": row.item, "coreferent": "", "note": "", "query": query,
            "query_lead": texts.lead.get(topic.doc_id or "", ""),
            "hit": texts.text[row.docid], "hit_lead": texts.lead[texts.doc_of[row.docid]]}


def write_tsv(path: str | Path, columns: tuple[str, ...], rows: Iterable[Mapping[str, str]]) -> None:
    """Rows as a tab-separated file with a header (atomically: a reader never sees half a file)."""
    with atomic_write(path) as out:
        writer = csv.DictWriter(out, columns, delimiter="\t", lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def read_tsv(path: str | Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """A tab-separated file with a header that has (at least) ``columns``."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(path, 1, f"missing columns {missing} (expected a header with {', '.join(columns)})")
            return list(reader)
    except FileNotFoundError:
        raise InputError(path, None, "not found") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "is not UTF-8 text") from None


def write_key(path: str | Path, rows: Iterable[KeyRow]) -> None:
    write_tsv(path, KEY_COLUMNS, (asdict(row) for row in rows))


def read_key(path: str | Path) -> list[KeyRow]:
    """A pool's ``key.tsv``."""
    return [KeyRow(**{c: row[c] or "" for c in KEY_COLUMNS}) for row in read_tsv(path, KEY_COLUMNS)]


def read_manifest(pool_dir: str | Path) -> dict[str, Any]:
    """A pool's ``pool.json``."""
    path = Path(pool_dir) / "pool.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, None, "not found: is this a pool folder (made by python -m hybrid.pool make)?") from None
    except ValueError as error:
        raise InputError(path, None, f"is not JSON ({error})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("queries"), list) or "depth" not in manifest:
        raise InputError(path, None, "is not a pool manifest (no queries and depth)")
    return manifest


def answer_of(row: Mapping[str, str], path: str | Path, number: int) -> int:
    """An answer row's relevance: 1 for yes, 0 for no (case and spaces ignored); anything else names file and line."""
    answer = (row.get("coreferent") or "").strip().lower()
    if answer not in ANSWERS:
        raise InputError(path, number, f"coreferent must be yes or no, got {row.get('coreferent')!r}")
    return ANSWERS[answer]


def read_assessed(path: str | Path) -> dict[str, Answer]:
    """item -> answer, from an assessed file (``item``, ``coreferent`` yes/no, optional ``note``)."""
    out: dict[str, Answer] = {}
    for number, row in enumerate(read_tsv(path, ("item", "coreferent")), 2):
        out[row["item"]] = Answer(answer_of(row, path, number), row.get("note") or "")
    return out


def check_answered(items: Iterable[str], answers: Mapping[str, Any], where: str | Path) -> None:
    """Every item must have an answer (in ``where``, named in the error)."""
    missing = [item for item in items if item not in answers]
    if missing:
        raise InputError(where, None, f"{len(missing)} items not assessed, e.g. {missing[:5]}")


def part_names(count: int) -> list[str]:
    """The file names of ``count`` parts: part-01.tsv, part-02.tsv, ... (wider numbers past 99)."""
    width = max(2, len(str(count)))
    return [f"part-{number:0{width}d}.tsv" for number in range(1, count + 1)]


def split_items(items: list[dict[str, str]], size: int) -> list[list[dict[str, str]]]:
    """The items in parts of ``size`` rows, in order (one part per assessor)."""
    if size < 1:
        raise InputError(None, None, f"--parts-of must be at least 1, got {size}")
    return [items[i:i + size] for i in range(0, len(items), size)]


def merge_answers(items: list[dict[str, str]], answer_paths: list[str | Path], items_path: str | Path
                  ) -> list[dict[str, str]]:
    """The items with their answers from the answer files (any order): every item answered exactly once.

    Refused, naming file and line: an item that is not in ``items``, an item answered twice, an answer that is
    not yes or no; and any item left unanswered. Notes are kept with their whitespace collapsed.
    """
    wanted = {row["item"] for row in items}
    answers: dict[str, tuple[str, str]] = {}
    where: dict[str, str] = {}
    for path in answer_paths:
        for number, row in enumerate(read_tsv(path, ANSWER_COLUMNS), 2):
            item = (row["item"] or "").strip()
            if item not in wanted:
                raise InputError(path, number, f"item {item!r} is not in {items_path}")
            if item in answers:
                raise InputError(path, number, f"item {item} is answered twice (first in {where[item]})")
            answers[item] = ("yes" if answer_of(row, path, number) else "no", " ".join((row["note"] or "").split()))
            where[item] = f"{path}:{number}"
    check_answered((row["item"] for row in items), answers,
                   answer_paths[-1] if len(answer_paths) == 1 else "the answer files")
    return [{**row, "coreferent": answers[row["item"]][0], "note": answers[row["item"]][1]} for row in items]


def agreement(pairs: Iterable[tuple[int, int]]) -> dict[str, float]:
    """Accuracy and Cohen's kappa of (reference, assessed) label pairs, and the two kinds of disagreement."""
    pairs = list(pairs)
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


def control_agreement(pools: Pools) -> dict[str, float]:
    """The assessor's agreement with the collection's labels on the controls."""
    return agreement((ANSWERS[row.label], pools.answers[row.item].relevance)
                     for row in pools.key if row.source == CONTROL)


def read_pools(pool_dirs: list[str | Path], assessed_paths: list[str | Path]) -> Pools:
    """Key rows, answers and manifests of one or more pools, each with its assessed file (same order).

    Items are renamed ``<n>/<item>`` when there are several pools. Refused: a different number of pools and
    assessed files, an unanswered item, pools of different depths, two pools drawing the same query, an
    extension pool without the pools it extends, and a passage assessed twice for one query.
    """
    if len(pool_dirs) != len(assessed_paths):
        raise InputError(None, None, f"--pool-dir names {len(pool_dirs)} pools but --assessed {len(assessed_paths)} "
                                     "files; give one assessed file per pool, in the same order")
    key: list[KeyRow] = []
    answers: dict[str, Answer] = {}
    manifests = []
    for number, (pool_dir, path) in enumerate(zip(pool_dirs, assessed_paths, strict=True), 1):
        manifests.append(read_manifest(pool_dir))  # first: a folder that is no pool is named as such
        rows = read_key(Path(pool_dir) / "key.tsv")
        assessed = read_assessed(path)
        check_answered((row.item for row in rows), assessed, path)
        prefix = f"{number}/" if len(pool_dirs) > 1 else ""
        key += [KeyRow(prefix + r.item, r.qid, r.docid, r.source, r.label, r.kind) for r in rows]
        answers.update({prefix + item: answer for item, answer in assessed.items()})
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
    pairs = [(row.qid, row.docid) for row in key]
    if len(set(pairs)) != len(pairs):
        raise InputError(None, None, "--pool-dir: a passage is assessed twice for one query; give each pool once")
    return Pools(key, answers, depths.pop(), sorted(queries), manifests)


def completed_qrels(qrels: Qrels, pools: Pools, pooled_only: bool = False) -> Qrels:
    """``qrels`` plus the assessed pooled passages (controls keep the collection's label).

    Every query of ``qrels`` is kept, and the pools' queries are added; with ``pooled_only`` only the pools'
    queries are (a sample's qrels: scores over the sampled queries alone).
    """
    qids = set(pools.queries) | {row.qid for row in pools.key}
    if not pooled_only:
        qids |= set(qrels)
    out: Qrels = {q: dict(qrels.get(q, {})) for q in sorted(qids)}
    for row in pools.key:
        if row.source == POOLED:
            out[row.qid][row.docid] = pools.answers[row.item].relevance
    return {q: labels for q, labels in out.items() if labels}


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    """TREC qrels, queries and passages sorted (``qid 0 docid relevance``), written atomically."""
    with atomic_write(path) as out:
        for qid in sorted(qrels):
            for docid, relevance in sorted(qrels[qid].items()):
                out.write(f"{qid} 0 {docid} {relevance}\n")

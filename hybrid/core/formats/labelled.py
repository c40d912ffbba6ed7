"""Labelled collections: the training data a user brings (docs/labelled-collections.md).

Two forms, both checked line by line with errors that name the file and line:

* **Labelled passages** (one JSONL file): corpus lines (:mod:`hybrid.core.formats.corpus`) whose mentions
  may carry a cross-document ``cluster`` id, and an optional ``topic`` or ``group`` per passage (the
  cross-validation group of the queries made from it). Passages without labelled mentions are allowed:
  they stay in the training corpus as candidates and negatives. Training queries and qrels are derived
  from the labels by :func:`derive_training`, the rule ECB+'s were made by: one query per labelled
  mention, relevant = the passages of OTHER documents holding a mention of the same cluster.
* **Queries with cluster labels** (a folder): ``corpus.jsonl`` (plain corpus), ``queries.jsonl`` (topics
  JSONL, each query with a ``cluster`` and optionally a ``topic``/``group``) and optionally ``qrels.txt``;
  without qrels the relevant passages of a query are those of the other documents' queries of its cluster.

:func:`materialize_training_set` turns either form, or the bundled ECB+ train topics (``source=None``),
into the three files every training command reads (``corpus.jsonl``, ``queries.jsonl``, ``qrels.txt``),
written atomically and reused while their source is unchanged.

Labels are read here only: the corpus reader drops ``cluster``, so no retrieval code can see them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import MENTION_KEYS, PASSAGE_KEYS, read_corpus, read_corpus_lines
from hybrid.core.formats.lines import check_keys
from hybrid.core.formats.qrels import Qrels, read_qrels
from hybrid.core.formats.topics import read_topics
from hybrid.core.provenance import file_sha256, produced_by

log = logging.getLogger(__name__)

#: Keys of a passage / mention that only a labelled collection has (misspellings of them are errors).
GROUP_KEYS = ("group", "topic")
LABELLED_PASSAGE_KEYS = PASSAGE_KEYS | set(GROUP_KEYS) | {"split", "validated"}
LABELLED_MENTION_KEYS = MENTION_KEYS | {"cluster"}
#: Query id prefix per mention kind (ECB+'s ``ev-`` / ``en-``; ``m-`` for a mention without a kind).
KIND_PREFIX = {"event": "ev", "entity": "en"}
#: Bumped whenever the derivation rule or the written files change, so older materialisations are redone.
DERIVATION_VERSION = 1
BUNDLED_NAME = "ecbplus-train"
BUNDLED = Path(__file__).resolve().parents[2] / "trainsets" / f"{BUNDLED_NAME}.jsonl.gz"
CORPUS, QUERIES, QRELS, MANIFEST = "corpus.jsonl", "queries.jsonl", "qrels.txt", "trainset.json"
DOCS = "docs/labelled-collections.md"


@dataclass(frozen=True)
class LabelledMention:
    """A gold mention with its cross-document cluster id (None: annotated but unlabelled)."""

    start: int
    end: int
    text: str
    cluster: str | None
    kind: str | None = None
    tag: str | None = None
    m_id: str | None = None


@dataclass(frozen=True)
class LabelledPassage:
    """What derivation needs of one labelled-collection line (its text is left in the file)."""

    id: str
    doc_id: str
    line: int
    mentions: tuple[LabelledMention, ...]
    group_key: str | None = None  # "topic" or "group": the key the line used, copied to its queries
    group: str | int | None = None
    split: str | None = None  # free metadata: a converted ECB+ corpus says which split each passage is in


@dataclass(frozen=True)
class TrainingSet:
    """The files a training command reads, and what they were made from (``fingerprint``)."""

    corpus: Path
    topics: Path
    qrels: Path
    name: str
    fingerprint: str


def _label(path: Path, number: int | None, value: Any, what: str) -> str | int | None:
    """A cluster or group label: a non-empty string without whitespace, or an integer (ECB+ topics are)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(path, number, f"{what} must be a string or an integer, got {type(value).__name__}")
    if isinstance(value, str) and (not value.strip() or any(c.isspace() for c in value)):
        raise InputError(path, number, f"{what} {value!r} must be non-empty and contain no whitespace")
    return value


def _group(path: Path, number: int, obj: dict) -> tuple[str | None, str | int | None]:
    given = [key for key in GROUP_KEYS if obj.get(key) is not None]
    if len(given) > 1:
        raise InputError(path, number, "both 'group' and 'topic' are given; keep one (it is the query's "
                                       "cross-validation group)")
    if not given:
        return None, None
    return given[0], _label(path, number, obj[given[0]], f"field {given[0]!r}")


def read_labelled(path: str | Path) -> list[LabelledPassage]:
    """Read and check a labelled-passages file; an error names the file and line.

    Every corpus rule applies (:func:`~hybrid.core.formats.corpus.read_corpus_lines`: ids, offsets, spans,
    duplicates; an over-long passage is cut, and its mentions past the cut dropped, exactly as the index
    will cut it, so no query points past its passage's end); on top, ``cluster`` must be a label,
    ``topic``/``group`` one of them, and at least one mention in the file must carry a cluster (else it is
    a plain corpus, not training data).
    """
    path = Path(path)
    out: list[LabelledPassage] = []
    for number, obj, passage in read_corpus_lines(path):
        check_keys(path, number, obj, LABELLED_PASSAGE_KEYS)
        group_key, group = _group(path, number, obj)
        clusters: dict[tuple[int, int], str | None] = {}
        for i, raw in enumerate(obj.get("mentions") or []):
            check_keys(path, number, raw, LABELLED_MENTION_KEYS, where=f"mentions[{i}].")
            cluster = _label(path, number, raw.get("cluster"), f"mentions[{i}].cluster")
            clusters[raw["start"], raw["end"]] = None if cluster is None else str(cluster)
        mentions = tuple(
            LabelledMention(m.start, m.end, m.text, clusters[m.start, m.end], m.kind, m.tag, m.m_id)
            for m in passage.mentions or ()
        )
        split = obj.get("split")
        out.append(LabelledPassage(passage.id, passage.doc_id, number, mentions, group_key, group,
                                   split if isinstance(split, str) else None))
    if not out:
        raise InputError(path, None, "no passages found")
    if not any(m.cluster is not None for p in out for m in p.mentions):
        raise InputError(path, None, f"no mention carries a 'cluster' id, so there is nothing to train on; add "
                                     f"cross-document cluster ids to the mentions (see {DOCS})")
    return out


def query_id(passage: LabelledPassage, mention: LabelledMention) -> str:
    """``ev-<doc>-<m_id>`` / ``en-<doc>-<m_id>`` (ECB+'s ids); ``<prefix>-<passage>-<start>-<end>`` without m_id."""
    prefix = KIND_PREFIX.get(mention.kind or "", "m")
    if mention.m_id is not None:
        return f"{prefix}-{passage.doc_id}-{mention.m_id}"
    return f"{prefix}-{passage.id}-{mention.start}-{mention.end}"


def derive_training(passages: Iterable[LabelledPassage], path: str | Path | None = None,
                    split: str | None = None) -> tuple[list[dict[str, Any]], Qrels]:
    """Training queries (topics JSONL rows, corpus order) and their qrels, derived from cluster labels.

    One query per mention with a cluster; its relevant passages are those of other documents holding a
    mention of the same cluster (never its own document: queries are by example and their document is
    excluded from results). A mention with nothing relevant gives no query (it could neither be trained
    on nor scored). Two mentions that would get the same query id (an ``m_id`` repeated in a document)
    are an error naming the second one's line.

    ``split`` keeps only the queries of passages whose ``split`` field has that value, while relevance is
    still read from every passage (how ECB+'s released train qrels were made: a cluster can reach sentences
    of another split's topics).
    """
    passages = list(passages)
    holders: dict[str, dict[str, list[str]]] = {}  # cluster -> doc -> passages, in corpus order
    for p in passages:
        for m in p.mentions:
            if m.cluster is not None:
                docs = holders.setdefault(m.cluster, {}).setdefault(p.doc_id, [])
                if not docs or docs[-1] != p.id:
                    docs.append(p.id)
    queries: list[dict[str, Any]] = []
    qrels: Qrels = {}
    seen: dict[str, int] = {}
    for p in passages:
        for m in p.mentions:
            if m.cluster is None:
                continue
            qid = query_id(p, m)
            if qid in seen:
                raise InputError(path, p.line, f"two mentions give the query id {qid!r} (first on line "
                                               f"{seen[qid]}); give each mention of a document its own m_id")
            seen[qid] = p.line
            others = {d: ids for d, ids in holders[m.cluster].items() if d != p.doc_id}
            if not others or (split is not None and p.split != split):
                continue
            row: dict[str, Any] = {"qid": qid, "kind": m.kind, "tag": m.tag, "doc_id": p.doc_id,
                                   "passage_id": p.id, "start": m.start, "end": m.end, "mention": m.text,
                                   "cluster": m.cluster}
            row = {k: v for k, v in row.items() if v is not None}
            if p.group_key is not None:
                row[p.group_key] = p.group
            relevant = [pid for ids in others.values() for pid in ids]
            row["n_relevant"], row["n_relevant_docs"] = len(relevant), len(others)
            queries.append(row)
            qrels[qid] = dict.fromkeys(relevant, 1)
    if not queries and split is not None:
        raise InputError(path, None, f"no passage with 'split': {split!r} holds a training query; check the split "
                                     "name (the passages' 'split' field)")
    if not queries:
        raise InputError(path, None, f"no cluster id is shared by mentions of two different documents, so no "
                                     f"training query has a relevant passage (see {DOCS})")
    return queries, qrels


def queries_form_qrels(corpus: Path, queries: Path, qrels: Path | None) -> tuple[int, Qrels]:
    """Check the queries-with-cluster-labels form; its number of queries and its qrels (read, or derived
    from the queries' clusters as :func:`derive_training` derives them from mentions')."""
    passages = {p.id: p for p in read_corpus(corpus)}
    topics = read_topics(queries, resolve=lambda pid: passages[pid].text if pid in passages else None,
                         max_chars=None)
    if qrels is not None:
        judged = read_qrels(qrels)
        known = {t.qid for t in topics}
        for qid, docs in judged.items():
            if qid not in known:
                raise InputError(qrels, None, f"query {qid!r} is judged but not in {queries}; remove its lines or "
                                              "add the query")
            missing = next((d for d in docs if d not in passages), None)
            if missing is not None:
                raise InputError(qrels, None, f"query {qid!r} judges passage {missing!r}, which is not in {corpus}")
        return len(topics), judged
    holders: dict[str, dict[str, list[str]]] = {}  # cluster -> doc -> passages
    own: dict[str, tuple[str, str]] = {}  # qid -> (cluster, doc)
    for t in topics:
        cluster = _label(queries, None, t.meta.get("cluster"), f"query {t.qid!r}: field 'cluster'")
        if cluster is None:
            raise InputError(queries, None, f"query {t.qid!r} has no 'cluster' label; give every query one, or "
                                            f"give a {QRELS} file")
        if t.passage_id is None:
            raise InputError(queries, None, f"query {t.qid!r} has no 'passage_id'; without a {QRELS} file the "
                                            "relevant passages are those of the same cluster's queries")
        doc = t.doc_id or passages[t.passage_id].doc_id
        own[t.qid] = str(cluster), doc
        docs = holders.setdefault(str(cluster), {}).setdefault(doc, [])
        if t.passage_id not in docs:
            docs.append(t.passage_id)
    derived: Qrels = {}
    for qid, (cluster, doc) in own.items():
        relevant = [pid for d, ids in holders[cluster].items() if d != doc for pid in ids]
        if relevant:
            derived[qid] = dict.fromkeys(relevant, 1)
    if not derived:
        raise InputError(queries, None, "no cluster is shared by queries of two different documents, so no query "
                                        f"has a relevant passage; give a {QRELS} file")
    return len(topics), derived


# ----------------------------------------------------------------------------------------------------------
# Materialisation


@dataclass(frozen=True)
class _Source:
    name: str
    form: str  # "bundled" | "passages" | "queries"
    files: dict[str, Path]  # role -> input file


def _resolve(source: str | Path | None) -> _Source:
    if source is None or str(source) in ("bundled", BUNDLED_NAME):
        if not BUNDLED.is_file():
            raise InputError(BUNDLED, None, "the bundled training set is missing from this installation; "
                                            "reinstall the package (it ships as package data)")
        return _Source(BUNDLED_NAME, "bundled", {"corpus": BUNDLED})
    path = Path(source)
    if path.is_file():
        return _Source(path.name.split(".")[0] or "labelled", "passages", {"corpus": path})
    if path.is_dir():
        if (path / QUERIES).is_file():
            files = {"corpus": path / CORPUS, "queries": path / QUERIES}
            if not files["corpus"].is_file():
                raise InputError(path / CORPUS, None, f"missing: a queries-form training folder holds {CORPUS}, "
                                                      f"{QUERIES} and optionally {QRELS} (see {DOCS})")
            if (path / QRELS).is_file():
                files["qrels"] = path / QRELS
            return _Source(path.name or "labelled", "queries", files)
        if (path / CORPUS).is_file():
            return _Source(path.name or "labelled", "passages", {"corpus": path / CORPUS})
    raise InputError(path, None, f"expected a labelled-passages JSONL file, or a folder with {CORPUS} (labelled) "
                                 f"or {CORPUS} + {QUERIES} [+ {QRELS}] (see {DOCS})")


def fingerprint(source: str | Path | None, split: str | None = None) -> str:
    """What a materialisation depends on: the form, the derivation rule, the split and every input's sha256."""
    resolved = _resolve(source)
    parts = {"form": resolved.form, "version": DERIVATION_VERSION, "split": split,
             "files": {role: file_sha256(p) for role, p in sorted(resolved.files.items())}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _reusable(folder: Path, fp: str) -> bool:
    """The manifest names the same fingerprint and every file it lists is there, byte for byte."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return manifest.get("fingerprint") == fp and all(
            file_sha256(folder / name) == digest for name, digest in manifest["files"].items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _copy(src: Path, dst: Path, gunzip: bool = False) -> None:
    with (gzip.open(src, "rb") if gunzip else src.open("rb")) as inp, atomic_write(dst, "wb") as out:
        shutil.copyfileobj(inp, out, 1 << 20)


def write_queries(queries: list[dict[str, Any]], path: Path) -> None:
    with atomic_write(path) as out:
        out.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)


def write_qrels(qrels: Qrels, path: Path) -> None:
    with atomic_write(path) as out:
        out.writelines(f"{qid} 0 {pid} {rel}\n" for qid, judged in qrels.items() for pid, rel in judged.items())


def materialize_training_set(source: str | Path | None, folder: Path, split: str | None = None) -> TrainingSet:
    """Write (or reuse) ``folder/{corpus.jsonl, queries.jsonl, qrels.txt}`` for ``source``.

    ``source``: None (or ``"bundled"``) for the bundled ECB+ train topics; a labelled-passages JSONL file
    (or a folder holding one as ``corpus.jsonl``); or a queries-form folder. Every file is written
    atomically and ``trainset.json`` (fingerprint, file hashes, counts, provenance) last, so an interrupted
    run is redone and a completed one is reused while the source's files are unchanged. ``split`` (labelled
    passages only) keeps the queries of passages with that ``split`` value (:func:`derive_training`).
    """
    folder = Path(folder)
    resolved = _resolve(source)
    if split is not None and resolved.form == "queries":
        raise InputError(resolved.files["queries"], None, "a split applies to labelled passages; a queries-form "
                                                          "folder already holds exactly its training queries")
    fp = fingerprint(source, split)
    out = TrainingSet(folder / CORPUS, folder / QUERIES, folder / QRELS, resolved.name, fp)
    if _reusable(folder, fp):
        return out
    folder.mkdir(parents=True, exist_ok=True)
    if resolved.form == "queries":
        n_queries, qrels = queries_form_qrels(resolved.files["corpus"], resolved.files["queries"],
                                              resolved.files.get("qrels"))
        _copy(resolved.files["corpus"], out.corpus)
        _copy(resolved.files["queries"], out.topics)
    else:
        _copy(resolved.files["corpus"], out.corpus, gunzip=resolved.form == "bundled")
        queries, qrels = derive_training(read_labelled(out.corpus), out.corpus, split)
        write_queries(queries, out.topics)
        n_queries = len(queries)
    write_qrels(qrels, out.qrels)
    manifest = {"name": resolved.name, "fingerprint": fp, "form": resolved.form, "split": split,
                "source": {role: str(p) for role, p in resolved.files.items()},
                "files": {p.name: file_sha256(p) for p in (out.corpus, out.topics, out.qrels)},
                "queries": n_queries, "judgments": sum(map(len, qrels.values())), "produced_by": produced_by()}
    with atomic_write(folder / MANIFEST) as handle:
        json.dump(manifest, handle, indent=2)
    log.info("training set %s: %d queries, %d judgments in %s", resolved.name, n_queries,
             manifest["judgments"], folder)
    return out

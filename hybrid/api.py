"""The Python front door for notebooks: open an index, build a system, search, evaluate.

Five lines reproduce ``python -m hybrid.search --topics sample`` (the default job, ``multifield-net``)::

    import hybrid
    index = hybrid.open_index("sample")                   # the bundled ECB+ sample, built on first use
    system = hybrid.system("multifield-net", index)       # a bundled recipe by name (or a TOML path)
    run = system.search(hybrid.topics("sample"))          # a hybrid.Run: {qid: [Hit, ...]}
    hybrid.evaluate(run, "sample")                        # {'all': {'RR@10': ...}, 'entity': ..., 'event': ...}

A :class:`Run` converts to the forms other toolkits take: :meth:`Run.to_dataframe` gives PyTerrier's
columns (``qid, docno, rank, score`` + the mention span: ``start, end, mention``) and :meth:`Run.to_dict`
the ``{qid: {docno: score}}`` dict of ir_measures, ranx and pytrec_eval. :meth:`Run.write` publishes the
TREC run (+ spans and ``.meta.json``) exactly as the CLIs do.

A system is a recipe name, a recipe path, a recipe's ``[system]`` table as a dict
(``{"type": "multifield", "weights": "mention=1,context=0.3"}``) or a stage built by hand
(``MultiFieldBM25(index) >> reranker``, see :mod:`hybrid.retrieval`). ``"sample"`` stands for the
bundled sample wherever an index, topics or qrels are named. Importing :mod:`hybrid` starts no JVM and
imports no torch: the index is opened (and the JVM started) by :func:`open_index`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from hybrid.core import judged as incomplete
from hybrid.core.errors import InputError
from hybrid.core.formats.qrels import check_qrels, read_qrels
from hybrid.core.formats.runs import attach_spans, read_run, sorted_hits, write_run_set
from hybrid.core.formats.topics import is_marked, read_topics, topics_from_records
from hybrid.core.provenance import produced_by
from hybrid.core.records import Hit, Topic
from hybrid.core.stage import Stage
from hybrid.recipes import Context, RecipeSource, build_system, bundled_recipes, load_recipe
from hybrid.sample import SAMPLE, index_location, sample_path
from indexes.sharded_index import open_index as open_any

#: The measures ``python -m hybrid.search --qrels`` prints.
SEARCH_MEASURES = ("RR@10", "AP@100", "R@100", "nDCG@10")
#: The span columns :meth:`Run.to_dataframe` adds to PyTerrier's ``qid, docno, rank, score``.
SPAN_COLUMNS = ("start", "end", "mention")


class Run(dict):
    """A ranked result set ``{qid: [Hit, ...]}`` (best first), as every stage returns, plus conversions.

    It is the engine's :data:`hybrid.core.records.Rankings` (a plain ``dict``) underneath, so it goes wherever the
    engine takes a run (rerankers, fusion, :func:`hybrid.core.formats.runs.write_run`). ``topics`` are the topics
    it answers (for kinds), when known.
    """

    def __init__(self, hits: Mapping[str, list[Hit]] | None = None, topics: list[Topic] | None = None,
                 name: str | None = None, index=None):
        if hits is not None and not isinstance(hits, Mapping):
            raise TypeError(f"Run() takes a mapping {{qid: [Hit, ...]}}, got {type(hits).__name__} (read a run file "
                            "with hybrid.Run.read(path))")
        for qid, found in (hits or {}).items():
            if not isinstance(qid, str) or isinstance(found, str | bytes) or not isinstance(found, Iterable):
                raise TypeError(f"Run() takes {{qid: [Hit, ...]}} with str query ids, got {type(qid).__name__} -> "
                                f"{type(found).__name__}")
        super().__init__({qid: _checked_hits(qid, h) for qid, h in (hits or {}).items()})
        self.topics = list(topics) if topics is not None else None
        self.name = name
        self.index = index  # where the mention text of each hit's span is looked up (see fill_mentions)

    def fill_mentions(self) -> Run:
        """Give every hit with a span its mention text from the run's index (once; the conversions and
        :meth:`write` call it, as ``hybrid.search --spans`` does before writing spans). Returns the run."""
        if self.index is not None:
            fill_mentions(self, self.index)
        return self

    # -- conversions ------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docno: score}}``: what ir_measures, ranx (``ranx.Run(run.to_dict())``) and pytrec_eval take."""
        return {qid: {h.docid: float(h.score) for h in hits} for qid, hits in self.items()}

    def rows(self, first_rank: int = 1) -> list[dict[str, Any]]:
        """One dict per hit: ``qid, docno, rank, score, start, end, mention`` (rank from ``first_rank``: 1 as in
        TREC runs; queries sorted)."""
        self.fill_mentions()
        rows = []
        for qid in sorted(self):
            for rank, hit in enumerate(self[qid], start=first_rank):
                rows.append({"qid": qid, "docno": hit.docid, "rank": rank, "score": float(hit.score),
                             "start": hit.mention_start, "end": hit.mention_end, "mention": hit.mention_text})
        return rows

    def to_dataframe(self, first_rank: int = 1):
        """A pandas DataFrame with PyTerrier's result columns ``qid, docno, rank, score`` and the span of each
        hit (``start``, ``end``: character offsets into the passage; ``mention``: its text).

        Ranks count from 1, as in the TREC run the CLIs write (``rank`` column = the run file's 4th column).
        PyTerrier counts from 0: ``run.to_dataframe(first_rank=0)`` gives its convention.
        """
        import pandas as pd

        frame = pd.DataFrame(self.rows(first_rank), columns=["qid", "docno", "rank", "score", *SPAN_COLUMNS])
        return frame.astype({"start": "Int64", "end": "Int64"})

    to_pandas = to_dataframe

    @classmethod
    def from_dataframe(cls, frame, name: str | None = None) -> Run:
        """A Run from a DataFrame with ``qid, docno, score`` (and optionally the span columns)."""
        hits: dict[str, list[Hit]] = {}
        for row in frame.to_dict("records"):
            start, end = row.get("start"), row.get("end")
            hits.setdefault(str(row["qid"]), []).append(Hit(
                docid=str(row["docno"]), score=float(row["score"]),
                mention_start=None if _missing(start) else int(start), mention_end=None if _missing(end) else int(end),
                mention_text=None if _missing(row.get("mention")) else row.get("mention")))
        return cls(hits, name=name)

    @classmethod
    def from_dict(cls, scores: Mapping[str, Mapping[str, float]], name: str | None = None) -> Run:
        """A Run from ``{qid: {docno: score}}`` (no spans)."""
        return cls({qid: [Hit(docid=d, score=float(s)) for d, s in docs.items()] for qid, docs in scores.items()},
                   name=name)

    # -- files ------------------------------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str | Path, spans: str | Path | None = None) -> Run:
        """Read a TREC run (and its spans JSONL, when given)."""
        run = cls(read_run(path), name=Path(path).stem)
        if spans is not None:
            attach_spans(run, spans)
        return run

    def write(self, path: str | Path, spans: str | Path | None = None, tag: str | None = None,
              meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Publish the run (+ spans JSONL) and its ``.meta.json`` like the CLIs do; returns the meta."""
        if not isinstance(path, str | Path) or (spans is not None and not isinstance(spans, str | Path)):
            raise TypeError(f"Run.write() takes file paths, got {type(path).__name__}")
        for what, where in (("path", path), ("spans", spans)):
            if where is not None and (Path(where).is_dir() or str(where).endswith(("/", "\\"))):
                raise InputError(where, None, f"is a directory; Run.write() {what} names a file to write")
        self.fill_mentions()
        record = {"model": self.name, "queries": len(self), "written_by": "hybrid.api", **produced_by()}
        record.update(meta or {})
        return write_run_set(self, path, tag=tag or (self.name or "hybrid").replace(" ", "_"), meta=record,
                             spans_path=spans)

    def groups(self) -> dict[str, str]:
        """qid -> kind, from the topics the run answers (empty when unknown)."""
        return {t.qid: t.kind for t in self.topics or [] if t.kind}

    def __repr__(self) -> str:
        hits = sum(len(h) for h in self.values())
        return f"<hybrid.Run {self.name or ''} queries={len(self)} hits={hits}>"


def fill_mentions(run: Mapping[str, list[Hit]], index) -> None:
    """Add the mention text of each hit's span where it is missing: retrievers know offsets, the index knows the
    passages' texts."""
    for hits in run.values():
        for hit in hits:
            if hit.mention_start is not None and not hit.mention_text:
                text = index.passage_text(hit.docid)
                hit.mention_text = text[hit.mention_start : hit.mention_end] if text else None


def _checked_hits(qid: str, hits: Iterable[Any]) -> list[Hit]:
    """The hits of one query, best first; anything but a :class:`Hit` is refused (TypeError naming the query)."""
    hits = list(hits)
    wrong = [h for h in hits if not isinstance(h, Hit)]
    if wrong:
        raise TypeError(f"Run(): the hits of query {qid!r} must be hybrid.Hit objects, got {type(wrong[0]).__name__} "
                        f"{wrong[0]!r:.60}")
    return sorted_hits(hits)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


# -- inputs ----------------------------------------------------------------------------------------------------


def open_index(path: str | Path = SAMPLE, engine: str = "local", progress: bool = True):
    """A hybrid index (starts the JVM): a directory built by ``python -m hybrid.index``, a sharded index, or
    ``"sample"`` (the bundled sample's index, built under ``~/.cache/hybrid`` on first use)."""
    return open_any(index_location(path, progress=progress), engine)


def topics(source: str | Path | Iterable | Topic | Mapping = SAMPLE, index=None) -> list[Topic]:
    """Topics from a TSV/JSONL file or ``"sample"``, or given in Python: a list of :class:`Topic`, of dicts with
    the JSONL topic fields (``{"qid": "z", "text": "... <m> blaze </m> ..."}``; PyTerrier's ``query`` for
    ``text``; ``start``/``end`` offsets instead of markers), of marked strings (each gets the id
    ``q-<sha256 prefix>``, :func:`~hybrid.core.formats.topics.generated_qid`), one of these alone, or a PyTerrier
    topics DataFrame (``qid, query`` and optionally ``start, end, kind, doc_id``). Everything is checked with
    the messages a topics file gets, naming the item (``topics[2]: ...``). ``index`` resolves topics that point
    into the corpus (``passage_id`` + offsets) and recognises a topics file's own documents."""
    resolve = index.passage_text if index is not None else None
    if is_marked(source) or isinstance(source, Topic | Mapping):
        source = [source]
    if isinstance(source, str | Path):
        return read_topics(sample_path("topics", source), resolve=resolve)
    if hasattr(source, "columns") and hasattr(source, "to_dict"):  # a pandas DataFrame (PyTerrier's topics)
        return topics_from_records(source.to_dict("records"), resolve=resolve, name="frame")
    return topics_from_records(source, resolve=resolve)


def qrels(source: str | Path | Mapping = SAMPLE) -> dict[str, dict[str, int]]:
    """Qrels ``{qid: {docno: relevance}}`` from a TREC qrels file or ``"sample"`` (a dict is returned as it is)."""
    if isinstance(source, Mapping):
        return check_qrels(source)
    if not isinstance(source, str | Path):
        raise TypeError(f"qrels must be a qrels file, 'sample' or a mapping {{qid: {{docid: relevance}}}}, got "
                        f"{type(source).__name__}")

    return read_qrels(sample_path("qrels", source))


# -- systems ---------------------------------------------------------------------------------------------------


class System:
    """A retrieval system over one index: ``search(topics) -> Run``.

    ``stage`` is the engine's stage (:class:`hybrid.core.stage.Stage`) the recipe built; ``recipe`` the
    recipe (None for a stage given by hand).
    """

    def __init__(self, stage, index, name: str, recipe=None, hits: int = 100):
        self.stage, self.index, self.name, self.recipe, self.hits = stage, index, name, recipe, hits

    def search(self, topics_or_path: str | Path | Iterable | Topic | Mapping, k: int | None = None) -> Run:
        """Search a batch of topics: anything :func:`topics` takes (a topics file, ``"sample"``, a list of
        :class:`Topic`, dicts or marked strings, one of these alone, a PyTerrier topics DataFrame); ``k`` hits
        each (default: the system's ``hits``)."""
        batch = topics(topics_or_path, self.index)
        from_file = isinstance(topics_or_path, str | Path) and not is_marked(topics_or_path)
        if not from_file and hasattr(self.index, "own_documents"):
            # topics read without the index: find the own document of those that do not name it (copies: the
            # caller's topics are left as they are)
            batch = [replace(t) if not t.doc_id and not t.passage_id else t for t in batch]
            self.index.own_documents(batch)
        if k is not None and hasattr(self.stage, "search"):
            found = self.stage.search(batch, k)
        else:
            found = self.stage(batch)
            if k is not None:
                found = {qid: hits[:k] for qid, hits in found.items()}
        return Run(found, topics=batch, name=self.name, index=self.index)

    __call__ = search

    def __repr__(self) -> str:
        return f"<hybrid.System {self.name}: {type(self.stage).__name__}>"


def system(recipe, index=None, hits: int = 100, threads: int = 1, artifacts: str | Path | None = None) -> System:
    """A system by bundled recipe name (``"multifield-net"``, see ``hybrid/configs/recipes``), recipe TOML path,
    recipe ``[system]`` dict, or a stage (:class:`~hybrid.core.stage.Stage`) built by hand. ``index``:
    an opened index, a path, or ``"sample"`` (default)."""
    if index is None or isinstance(index, str | Path):
        index = open_index(index if index is not None else SAMPLE)
    if isinstance(recipe, Stage):
        return System(recipe, index, getattr(recipe, "name", type(recipe).__name__), hits=hits)
    context = Context(index=index, hits=hits, threads=threads, artifacts=artifacts)
    if isinstance(recipe, Mapping):
        stage = build_system(dict(recipe), context, RecipeSource(None, ""))
        return System(stage, index, str(recipe.get("type", "system")), hits=hits)
    loaded = load_recipe(str(recipe))
    return System(loaded.build(context), index, loaded.name, recipe=loaded, hits=hits)


def list_recipes() -> list[str]:
    """The names of the bundled recipes."""
    return bundled_recipes()


# -- evaluation ------------------------------------------------------------------------------------------------


def evaluate(run: Mapping[str, list[Hit]] | str | Path, qrels_source: str | Path | Mapping = SAMPLE,
             measures: Iterable[str] = SEARCH_MEASURES, by_kind: bool = True,
             per_query: bool = False, judged: str | Path | Iterable[str] | None = None,
             judged_only: bool = False) -> dict[str, dict[str, float]]:
    """Mean of each measure (ir_measures or trec_eval names) over the judged queries: ``{"all": {...}}`` plus one
    entry per query kind when the run knows its topics' kinds (as ``hybrid.search --qrels`` prints them).
    With ``per_query``: ``{measure: {qid: value}}`` instead. ``run`` may be a TREC run file.

    ``judged``: passages judged for every query (a file of ids, ``"sample"``, or the ids), counted as judged
    non-relevant where a query's qrels do not list them; ``judged_only`` scores condensed lists, with each
    query's unjudged passages removed (``trec_eval -J``; see :mod:`hybrid.core.judged`)."""
    # deferred: ir_measures, which hybrid.search --help and a search without --qrels do not need
    from hybrid.core.measures import evaluate as evaluate_run
    from hybrid.core.measures import parse_measures
    from hybrid.core.measures import per_query as per_query_scores

    if isinstance(run, str | Path):
        run = Run.read(run)
    elif not isinstance(run, Mapping):
        raise TypeError(f"run must be a hybrid.Run, a mapping {{qid: [Hit, ...]}} or a TREC run file, got "
                        f"{type(run).__name__}")
    names = parse_measures(list(measures))
    labels = qrels(qrels_source)
    groups = run.groups() if by_kind and isinstance(run, Run) else None
    if judged is not None:
        ids = incomplete.read_judged(sample_path("judged", judged)) if isinstance(judged, str | Path) else judged
        labels = incomplete.with_judged(labels, ids, run)
    if judged_only:
        run = incomplete.judged_only(run, labels)
    if per_query:
        return per_query_scores(labels, run, names)
    return evaluate_run(labels, run, names, groups or None)

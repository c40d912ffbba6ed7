"""Incomplete judgments: passages judged for every query, and condensed lists of judged passages only.

Qrels that list only relevant passages cannot tell a judged non-relevant passage from one nobody looked
at, so a run that fills its top 10 with unjudged passages scores as if they were all wrong. Some
collections know more: ECB+ annotates its curated sentences completely (each of their mentions carries
its coreference cluster), so a curated sentence that a query's qrels do not list is a judged
non-relevant for that query, while the rest of the corpus is judged only where it is relevant.

Two tools from trec_eval's practice follow from such a list:

- :func:`with_judged` adds the listed passages as judged non-relevant, which makes ``Judged@k`` and
  ``infAP`` mean what they say;
- :func:`judged_only` removes each query's unjudged passages from its ranking before scoring, as
  ``trec_eval -J`` does (condensed lists, Sakai 2007), so that a system is not rewarded or punished
  for how it orders passages the assessors never saw.

Condensed lists are a diagnostic beside the standard numbers, not a replacement: they are biased
toward systems that rank unjudged passages high (those passages are simply skipped).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines
from hybrid.core.formats.qrels import Qrels
from hybrid.core.records import Rankings


def read_judged(path: str | Path) -> frozenset[str]:
    """Passage ids judged for every query: one id per line; blank lines and ``#`` comments are skipped."""
    path = Path(path)
    judged: set[str] = set()
    for number, line in iter_lines(path):
        text = line.strip()
        if text.startswith("#"):
            continue
        if len(text.split()) != 1:
            raise InputError(path, number, f"expected one passage id per line, got {text[:80]!r}")
        judged.add(text)
    if not judged:
        raise InputError(path, None, "no passage ids found")
    return frozenset(judged)


def with_judged(qrels: Qrels, judged: Iterable[str], run: Rankings | None = None) -> Qrels:
    """``qrels`` plus relevance 0 for every ``judged`` passage a query's qrels do not list.

    Only the queries of ``qrels`` get judgments (a query nobody judged stays unjudged). With ``run``, a
    query gets only the judgments of passages that run retrieved for it: they are the only ones any
    ranking measure reads, and listing every judged passage for every query would multiply the qrels by
    the size of the list. ``qrels`` is not changed.
    """
    judged = judged if isinstance(judged, set | frozenset) else set(judged)
    out: Qrels = {}
    for qid, labels in qrels.items():
        extra = judged if run is None else {h.docid for h in run.get(qid, [])} & judged
        out[qid] = {**{d: 0 for d in extra if d not in labels}, **labels}
    return out


def judged_only(run: Rankings, qrels: Qrels) -> Rankings:
    """The run with each query's unjudged passages removed (``trec_eval -J``); order and scores are kept.

    A passage is judged for a query when the query's qrels list it, with any relevance (0 included);
    give :func:`with_judged`'s qrels to count passages judged for every query. Queries keep their place
    in the run even when no judged passage is left.
    """
    return {qid: [h for h in hits if h.docid in qrels.get(qid, {})] for qid, hits in run.items()}


def unjudged_count(run: Rankings, qrels: Qrels) -> tuple[int, int]:
    """(unjudged hits, all hits) of the run's queries that the qrels judge, for saying what ``-J`` removed."""
    unjudged = total = 0
    for qid, hits in run.items():
        if qid not in qrels:
            continue
        total += len(hits)
        unjudged += sum(h.docid not in qrels[qid] for h in hits)
    return unjudged, total

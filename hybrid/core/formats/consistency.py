"""Cross-file checks: do the query ids of a run, its qrels and its topics agree?

Evaluation silently gives a wrong number when they do not: a judged query missing from the run
scores 0 (the mean drops), a run query without judgments is ignored (the mean covers fewer
queries than the user thinks). Both are reported, with counts and examples, never dropped quietly.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hybrid.core.formats.lines import iter_lines, parse_json_object
from hybrid.core.formats.topics import topics_format


@dataclass
class IdReport:
    """Query-id mismatches between a run, its qrels and (optionally) its topics."""

    unjudged: list[str] = field(default_factory=list)  # in the run, not in the qrels: ignored
    missing: list[str] = field(default_factory=list)  # judged, not in the run (or with no hits): scored 0
    unknown_topics: list[str] = field(default_factory=list)  # in run/qrels, not among the topics
    judged: int = 0

    @property
    def ok(self) -> bool:
        return not (self.unjudged or self.missing or self.unknown_topics)

    def lines(self, examples: int = 3, missing_count: bool = True) -> list[str]:
        """One warning per kind of mismatch. ``missing_count=False``: judged queries missing from the run are left
        out of the averages (trec_eval without ``-c``) instead of scoring 0."""
        def some(ids: list[str]) -> str:
            shown = ", ".join(ids[:examples])
            return f"{shown}, ..." if len(ids) > examples else shown

        out = []
        if self.unjudged:
            out.append(f"{len(self.unjudged)} run queries have no judgments in the qrels and are ignored by the "
                       f"evaluation (e.g. {some(self.unjudged)})")
        if self.missing:
            fate = "score 0" if missing_count else "are left out of the averages, as in trec_eval (-c scores them 0)"
            out.append(f"{len(self.missing)} of {self.judged} judged queries have no results in the run and {fate} "
                       f"(e.g. {some(self.missing)})")
        if self.unknown_topics:
            out.append(f"{len(self.unknown_topics)} query ids of the run/qrels are not in the topics file "
                       f"(e.g. {some(self.unknown_topics)})")
        return out


def compare_query_ids(qrels: Mapping[str, object], run: Mapping[str, list], topics: Collection[str] | None = None
                      ) -> IdReport:
    """Which query ids appear in one of run/qrels/topics but not where they should."""
    answered = {qid for qid, hits in run.items() if hits}
    report = IdReport(
        unjudged=sorted(set(run) - set(qrels)),
        missing=sorted(set(qrels) - answered),
        judged=len(qrels),
    )
    if topics is not None:
        report.unknown_topics = sorted((set(run) | set(qrels)) - set(topics))
    return report


def topic_query_ids(path: str | Path) -> set[str]:
    """The query ids of a topics file (TSV or JSONL) without resolving passages (no index needed)."""
    path = Path(path)
    ids: set[str] = set()
    fmt = None
    for number, line in iter_lines(path):
        fmt = fmt or topics_format(path, line)
        if fmt == "jsonl":
            ids.add(str(parse_json_object(path, number, line).get("qid")))
        else:
            ids.add(line.split("\t", 1)[0].strip(" "))
    return ids

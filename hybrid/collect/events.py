"""Event queries: a named event and/or a few marked seed mentions of it (the few-shot form).

JSONL, one event query per line::

    {"qid": "orange-rev", "name": "Orange Revolution", "place": "Kiev"}
    {"qid": "rehab-1", "seeds": ["A publicist says <m> Tara Reid has checked herself into rehab </m> ."]}
    {"qid": "rehab-2", "seeds": [{"passage_id": "1_2ecb:0", "start": 18, "end": 25}], "name": "Tara Reid rehab"}

``name`` (a short event name) or ``seeds`` (at least one) is required. A seed is a sentence with its
mention marked ``<m> ... </m>`` (optionally ``{"text": ..., "doc_id": ...}``), or a pointer into the
collection ``{"passage_id", "start", "end"}`` resolved against it. ``place`` (optional) is the place
the ``place`` ranker queries (else the top related place entity). ``exclude`` lists documents never
returned; the documents of seeds are always excluded (query by example: the user already has them).
``form`` is a free label for the query form (grouped in experiment tables). ``group`` (optional) is the
event's cross-validation group: ``python -m hybrid.collect train --cv`` never splits a group between
training and test folds; an event without one is its own group (query ids are never parsed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import check_keys, iter_lines, optional, parse_json_object, require
from hybrid.core.formats.topics import check_query_text, parse_marked
from hybrid.core.records import EVENT, Topic

EVENT_KEYS = {"qid", "name", "place", "seeds", "exclude", "form", "group"}
SEED_KEYS = {"text", "doc_id", "passage_id", "start", "end"}


@dataclass
class EventQuery:
    """An event to build a collection for; ``seeds`` are marked mentions (topics) of its seminal event."""

    qid: str
    name: str | None = None
    seeds: list[Topic] = field(default_factory=list)
    place: str | None = None
    exclude: list[str] = field(default_factory=list)
    form: str | None = None
    group: str | None = None  # cross-validation group (e.g. the ECB+ sub-topic); None: the event alone

    def __post_init__(self) -> None:
        if self.name is not None and not self.name.strip():
            raise ValueError(f"event {self.qid!r}: the event name is empty")
        if self.name is None and not self.seeds:
            raise ValueError(f"event {self.qid!r} has neither a name nor seed mentions")

    @property
    def excluded(self) -> set[str]:
        """Documents never returned: the ``exclude`` list and the seeds' own documents."""
        return set(self.exclude) | {s.doc_id for s in self.seeds if s.doc_id}

    @property
    def label(self) -> str:
        return self.form or ("name" if not self.seeds else f"seed{len(self.seeds)}")

    def to_topic(self) -> Topic:
        """The event as a :class:`Topic`, so recipe stages (topics in, run out) can carry it: the text is
        the name (or the first seed), the event itself rides in ``meta["event"]``, ``kind`` is the form."""
        if self.seeds:
            first = self.seeds[0]
            text, start, end = first.text, first.start, first.end
        else:
            text, start, end = self.name or "", 0, len(self.name or "")
        return Topic(qid=self.qid, text=text, start=start, end=end, kind=self.label, examples=list(self.seeds[1:]),
                     meta={"event": self})

    def to_json(self) -> dict:
        out: dict = {"qid": self.qid}
        if self.name is not None:
            out["name"] = self.name
        if self.place:
            out["place"] = self.place
        if self.seeds:
            out["seeds"] = [_seed_json(s) for s in self.seeds]
        if self.exclude:
            out["exclude"] = list(self.exclude)
        if self.form:
            out["form"] = self.form
        if self.group:
            out["group"] = self.group
        return out


def _seed_json(seed: Topic) -> dict:
    if seed.passage_id is not None:
        return {"passage_id": seed.passage_id, "start": seed.start, "end": seed.end}
    out = {"text": seed.marked()}
    if seed.doc_id:
        out["doc_id"] = seed.doc_id
    return out


def event_of(topic: Topic) -> EventQuery:
    """The event a topic carries (see :meth:`EventQuery.to_topic`); a plain mention topic is a one-seed event."""
    event = topic.meta.get("event")
    if isinstance(event, EventQuery):
        return event
    return EventQuery(qid=topic.qid, seeds=[topic] + list(topic.examples))


def _seed(path: Path, number: int, raw: object, i: int, qid: str,
          resolve: Callable[[str], str | None] | None, doc_of: Callable[[str], str | None] | None = None) -> Topic:
    where = f"seeds[{i}]"
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, dict):
        raise InputError(path, number, f"{where} must be a marked sentence or an object, got {type(raw).__name__}")
    check_keys(path, number, raw, SEED_KEYS, where=f"{where}.", free=False)
    doc_id = optional(path, number, raw, "doc_id", str)
    if "text" in raw:
        marked = require(path, number, raw, "text", str)
        check_query_text(marked, path, number, f"{where} text")
        try:
            text, start, end = parse_marked(marked, path, number)
        except InputError as exc:
            raise InputError(path, number, f"{where}: {exc.reason}") from None
        return Topic(qid=f"{qid}#{i}", text=text, start=start, end=end, doc_id=doc_id, kind=EVENT)
    passage_id = optional(path, number, raw, "passage_id", str)
    if passage_id is None:
        raise InputError(path, number, f"{where} needs 'text' (with <m> ... </m>) or 'passage_id', 'start', 'end'")
    start, end = require(path, number, raw, "start", int), require(path, number, raw, "end", int)
    text = resolve(passage_id) if resolve is not None else None
    if text is None:
        raise InputError(path, number, f"{where}: passage {passage_id!r} is not in the collection")
    if not 0 <= start < end <= len(text):
        raise InputError(path, number, f"{where}: span [{start}, {end}) is outside passage {passage_id!r} "
                                       f"({len(text)} characters)")
    if doc_id is None and doc_of is not None:  # the collection's document of the passage; ids are never parsed
        doc_id = doc_of(passage_id)
    return Topic(qid=f"{qid}#{i}", text=text, start=start, end=end, doc_id=doc_id, passage_id=passage_id, kind=EVENT)


def parse_event(path: Path, number: int, line: str, resolve: Callable[[str], str | None] | None = None,
                doc_of: Callable[[str], str | None] | None = None) -> EventQuery:
    obj = parse_json_object(path, number, line)
    check_keys(path, number, obj, EVENT_KEYS, free=False)
    qid = require(path, number, obj, "qid", str)
    if not qid or any(c.isspace() for c in qid):
        raise InputError(path, number, f"qid {qid!r} must be one word (a TREC run column)")
    name = optional(path, number, obj, "name", str)
    if name is not None and not name.strip():
        raise InputError(path, number, "'name' is empty: give the event's name or leave the key out")
    if name is not None:
        check_query_text(name, path, number, "name")
    seeds_raw = optional(path, number, obj, "seeds", list) or []
    seeds = [_seed(path, number, raw, i, qid, resolve, doc_of) for i, raw in enumerate(seeds_raw)]
    if name is None and not seeds:
        raise InputError(path, number, "an event needs a 'name' or at least one seed mention in 'seeds'")
    place = optional(path, number, obj, "place", str)
    if place is not None and not place.strip():
        raise InputError(path, number, "'place' is empty")
    exclude = optional(path, number, obj, "exclude", list) or []
    if not all(isinstance(d, str) and d for d in exclude):
        raise InputError(path, number, "'exclude' must list document ids (non-empty strings)")
    group = optional(path, number, obj, "group", (str, int))
    if group is not None and (not str(group).strip() or any(c.isspace() for c in str(group))):
        raise InputError(path, number, f"'group' {group!r} must be one word (the event's cross-validation group)")
    return EventQuery(qid=qid, name=name.strip() if name else None, seeds=seeds, place=place, exclude=list(exclude),
                      form=optional(path, number, obj, "form", str), group=None if group is None else str(group))


def iter_events(path: str | Path, resolve: Callable[[str], str | None] | None = None,
                doc_of: Callable[[str], str | None] | None = None) -> Iterator[EventQuery]:
    path = Path(path)
    seen: dict[str, int] = {}
    for number, line in iter_lines(path):
        event = parse_event(path, number, line, resolve, doc_of)
        if event.qid in seen:
            raise InputError(path, number, f"qid {event.qid!r} appears twice (first on line {seen[event.qid]})")
        seen[event.qid] = number
        yield event


def event_groups(events: list[EventQuery]) -> dict[str, str]:
    """qid -> cross-validation group: the event's ``group`` field, else the event itself."""
    return {e.qid: e.group or e.qid for e in events}


def read_events(path: str | Path, resolve: Callable[[str], str | None] | None = None,
                doc_of: Callable[[str], str | None] | None = None) -> list[EventQuery]:
    """Every event query of a JSONL file (module docs); InputError names the file and line of a problem.

    ``resolve`` gives the text of a seed's ``passage_id``, ``doc_of`` its document (the seed's own document is
    excluded from the ranking; a seed that names neither ``doc_id`` nor a passage ``doc_of`` knows excludes none)."""
    events = list(iter_events(path, resolve, doc_of))
    if not events:
        raise InputError(path, None, "no event queries found")
    return events


def read_event_topics(path: str | Path, resolve: Callable[[str], str | None] | None = None,
                      doc_of: Callable[[str], str | None] | None = None) -> list[Topic]:
    """Event queries as topics (:meth:`EventQuery.to_topic`), for stages and ``hybrid.experiment``."""
    return [event.to_topic() for event in read_events(path, resolve, doc_of)]

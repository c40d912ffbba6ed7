"""Topics: a mention marked with ``<m> ... </m>`` in its context.

Two formats:

* TSV (pyserini-compatible): ``qid <TAB> text with <m> mention </m> [<TAB> doc_id]``. The optional
  third column names the document the query comes from; that document is excluded from the results
  (query by example).
* JSONL: ``{"qid": ..., "text": "... <m> x </m> ...", "doc_id": ..., "kind": ...}`` or, for queries
  that point into the corpus, ``{"qid": ..., "passage_id": ..., "start": s, "end": e}`` with the text
  taken from the index (ECB+'s ``queries.*.jsonl`` are read as they are). ``examples`` may hold more
  marked examples of the same mention (k-shot queries).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import (
    SkipReport,
    check_keys,
    control_character,
    invisible_only,
    iter_lines,
    log,
    optional,
    parse_json_object,
    require,
)
from hybrid.core.records import KINDS, Topic

OPEN, CLOSE = "<m>", "</m>"
#: Longer query texts are clipped to a window around the mention (warned, see :func:`clip_topic`).
MAX_QUERY_CHARS = 5000
TOPIC_KEYS = {"qid", "text", "doc_id", "passage_id", "start", "end", "kind", "tag", "mention", "examples"}
#: Things that look like a marker but are not one (``<M>``, ``< m >``, ``<m/>``, ``<\\m>``).
_NEAR_MARKER = re.compile(r"<\s*[/\\]?\s*[mM]\s*/?\s*>")


def _marker_problem(marked: str) -> str | None:
    """Why ``marked`` does not hold exactly one well-formed ``<m> ... </m>`` pair (None if it does)."""
    n_open, n_close = marked.count(OPEN), marked.count(CLOSE)
    if n_open == 1 and n_close == 1:
        return "</m> comes before <m>" if marked.index(CLOSE) < marked.index(OPEN) else None
    if n_open == 0 and n_close == 0:
        odd = _NEAR_MARKER.findall(marked)
        if odd:
            return f"found {odd[0]!r}, but the markers are exactly <m> and </m> (lower case, no spaces)"
        return "no <m> ... </m> markers around the query mention"
    if n_close == 0:
        return f"{n_open} <m> without a closing </m>"
    if n_open == 0:
        return f"{n_close} </m> without an opening <m>"
    first_open = marked.index(OPEN)
    second_open = marked.find(OPEN, first_open + 1)
    first_close = marked.find(CLOSE, first_open)
    if second_open != -1 and (first_close == -1 or second_open < first_close):
        return "nested <m> markers (an <m> inside another <m> ... </m>)"
    if n_open == n_close:
        return f"{n_open} marked mentions; a query marks exactly one <m> ... </m>"
    return f"expected exactly one <m> and one </m>, found {n_open} and {n_close}"


def check_query_text(text: str, path: str | Path | None, line: int | None, what: str = "query text") -> None:
    """Tabs, newlines and other control characters break the TSV form of a topic (and line-based tools)."""
    bad = control_character(text)
    if bad is not None:
        names = {"U+0009": "a tab", "U+000A": "a newline", "U+000D": "a carriage return"}
        raise InputError(path, line, f"{what} contains {names.get(bad, 'the control character ' + bad)}")


def parse_marked(marked: str, path: str | Path | None = None, line: int | None = None) -> tuple[str, int, int]:
    """Remove the one ``<m> ... </m>`` pair and return (text, start, end) of the mention.

    One space after ``<m>`` and one before ``</m>`` belong to the markers (``a <m> b </m> c`` ->
    ``a b c`` with the mention ``b``), so marker-free offsets match the original passage. Further
    whitespace inside the markers is moved outside the mention.
    """
    check_query_text(marked, path, line)
    problem = _marker_problem(marked)
    if problem is not None:
        raise InputError(path, line, problem)
    i, j = marked.index(OPEN), marked.index(CLOSE)
    before, inside, after = marked[:i], marked[i + len(OPEN) : j], marked[j + len(CLOSE) :]
    if inside.startswith(" "):
        inside = inside[1:]
    if inside.endswith(" "):
        inside = inside[:-1]
    if not inside.strip():
        raise InputError(path, line, "empty mention between <m> and </m>")
    invisible = invisible_only(inside)
    if invisible:
        raise InputError(path, line, f"the mention between <m> and </m> is made only of zero-width characters "
                                     f"({invisible})")
    if inside != inside.strip():
        inside_stripped = inside.strip()
        lead = len(inside) - len(inside.lstrip())
        before += inside[:lead]
        after = inside[lead + len(inside_stripped) :] + after
        inside = inside_stripped
    text = before + inside + after
    if OPEN in text or CLOSE in text:  # e.g. "<<m>m>": removing the marker leaves another one
        raise InputError(path, line, "removing the markers leaves another <m> or </m> in the text")
    start = len(before)
    return text, start, start + len(inside)


def _check_id(path: Path, number: int, name: str, value: str) -> str:
    if not value or any(c.isspace() for c in value) or control_character(value):
        raise InputError(path, number, f"{name} {value!r} must be non-empty and contain no whitespace")
    return value


def _parse_tsv(path: Path, number: int, line: str) -> Topic:
    cols = line.split("\t")
    if len(cols) not in (2, 3):
        raise InputError(path, number, f"expected 'qid<TAB>marked text[<TAB>doc_id]', found {len(cols)} column(s)")
    qid = _check_id(path, number, "query id", cols[0].strip(" "))
    if not cols[1].strip():
        raise InputError(path, number, "empty query text")
    text, start, end = parse_marked(cols[1].strip(), path, number)
    doc_id = None
    if len(cols) == 3 and cols[2].strip(" "):
        doc_id = _check_id(path, number, "doc_id", cols[2].strip(" "))
    return Topic(qid=qid, text=text, start=start, end=end, doc_id=doc_id)


def _parse_jsonl(path: Path, number: int, line: str, resolve: Callable[[str], str | None] | None) -> Topic:
    return topic_from_object(parse_json_object(path, number, line), path, number, resolve)


def _check_offsets(path: str | Path | None, number: int | None, text: str, start: int, end: int, what: str) -> None:
    """The span [start, end) of ``text`` (``what``: "passage 'a:0'" or "the query text") must hold a visible mention."""
    if not 0 <= start < end <= len(text):
        raise InputError(path, number, f"offsets [{start}, {end}) lie outside {what} (length {len(text)}) or are empty")
    if not text[start:end].strip():
        raise InputError(path, number, f"offsets [{start}, {end}) of {what} cover only blanks")
    invisible = invisible_only(text[start:end])
    if invisible:
        raise InputError(path, number, f"offsets [{start}, {end}) of {what} cover only zero-width characters "
                                       f"({invisible})")


def topic_from_object(obj: dict, path: str | Path | None, number: int | None,
                      resolve: Callable[[str], str | None] | None = None) -> Topic:
    """One topic from a JSON object (a JSONL line, or a dict given in Python), checked field by field; errors name
    ``path`` and ``number`` (a file and line, or ``topics[3]`` and None).

    The mention is marked in ``text`` (``<m> ... </m>``), or given by ``start``/``end`` offsets into ``text``
    (unmarked), or into the indexed passage ``passage_id``."""
    check_keys(path, number, obj, TOPIC_KEYS)
    qid = _check_id(path, number, "query id", str(require(path, number, obj, "qid", (str, int))))
    kind = optional(path, number, obj, "kind", str)
    if kind is not None and kind not in KINDS:
        raise InputError(path, number, f"kind must be one of {KINDS}, got {kind!r}")
    doc_id = optional(path, number, obj, "doc_id", str)
    if doc_id is not None:
        _check_id(path, number, "doc_id", doc_id)
    passage_id = optional(path, number, obj, "passage_id", str)
    if passage_id is not None:
        _check_id(path, number, "passage_id", passage_id)
    mention = optional(path, number, obj, "mention", str)
    offsets = obj.get("start") is not None or obj.get("end") is not None
    if obj.get("text") is not None:
        raw = require(path, number, obj, "text", str)
        if offsets and (passage_id is not None or OPEN in raw or CLOSE in raw):
            raise InputError(path, number, "give either 'text' with <m> markers or 'start'/'end' into 'passage_id', "
                             "not both")
        if offsets:  # unmarked text, the mention given by its offsets (a PyTerrier frame's query + start/end)
            check_query_text(raw, path, number)
            start = require(path, number, obj, "start", int)
            end = require(path, number, obj, "end", int)
            _check_offsets(path, number, raw, start, end, "the query text")
            text = raw
        else:
            text, start, end = parse_marked(raw, path, number)
    else:
        if passage_id is None:
            raise InputError(path, number, "a topic needs 'text' with <m> markers, or 'passage_id' + 'start' + 'end'")
        start = require(path, number, obj, "start", int)
        end = require(path, number, obj, "end", int)
        if resolve is None:
            raise InputError(path, number, "topic refers to a passage_id but no index/corpus is given to resolve it")
        text = resolve(passage_id)
        if text is None:
            raise InputError(path, number, f"passage_id {passage_id!r} is not in the index")
        _check_offsets(path, number, text, start, end, f"passage {passage_id!r}")
    if mention is not None and text[start:end] != mention:
        raise InputError(path, number, f"mention {mention!r} does not match the marked text {text[start:end]!r}")
    raw_examples = obj.get("examples")
    if raw_examples is not None and not isinstance(raw_examples, list):
        raise InputError(path, number, "field 'examples' must be a list of marked strings")
    examples = []
    for k, raw in enumerate(raw_examples or []):
        if not isinstance(raw, str):
            raise InputError(path, number, f"examples[{k}] must be a marked string")
        try:
            ex_text, ex_start, ex_end = parse_marked(raw, path, number)
        except InputError as error:
            raise InputError(path, number, f"examples[{k}]: {error.reason}") from None
        examples.append(Topic(qid=f"{qid}#ex{k}", text=ex_text, start=ex_start, end=ex_end))
    meta = {k: v for k, v in obj.items() if k not in TOPIC_KEYS}
    return Topic(
        qid=qid, text=text, start=start, end=end, doc_id=doc_id, passage_id=passage_id, kind=kind,
        tag=optional(path, number, obj, "tag", str), examples=examples, meta=meta,
    )


def clip_topic(topic: Topic, max_chars: int) -> Topic:
    """Keep at most ``max_chars`` characters of context around the mention, cut at word boundaries.

    Query texts feed Lucene queries (one clause per distinct term) and encoders (512 word pieces), so
    an unbounded query-by-example passage would cost unbounded time and memory; the context nearest
    the mention is what matters. Offsets are shifted to the clipped text.
    """
    text, start, end = topic.text, topic.start, topic.end
    if len(text) <= max_chars:
        return topic
    budget = max_chars - (end - start)
    left = min(start, budget // 2)
    right = min(len(text) - end, budget - left)
    left = min(start, budget - right)
    lo, hi = start - left, end + right
    if lo > 0 and not text[lo - 1].isspace():  # drop the word cut in half
        space = text.find(" ", lo, start)
        lo = space + 1 if space != -1 else start
    if hi < len(text) and not text[hi].isspace():
        space = text.rfind(" ", end, hi)
        hi = space if space != -1 else end
    return replace(topic, text=text[lo:hi], start=start - lo, end=end - lo)


def topics_format(path: Path, first_line: str) -> str:
    """``jsonl`` or ``tsv``, decided once per file: by extension, else by the first line."""
    if path.suffix in (".jsonl", ".json"):
        return "jsonl"
    if path.suffix in (".tsv", ".txt"):
        return "tsv"
    return "jsonl" if first_line.lstrip().startswith("{") else "tsv"


def read_topics(
    path: str | Path,
    resolve: Callable[[str], str | None] | None = None,
    skip_bad: SkipReport | None = None,
    max_chars: int | None = MAX_QUERY_CHARS,
) -> list[Topic]:
    """Read TSV or JSONL topics (by extension ``.jsonl``/``.json``/``.tsv``, else a leading ``{``).

    When ``resolve`` is an index's ``passage_text``, topics that name neither their document nor their passage
    (two-column TSV) are looked up by their unmarked text among the index's passages
    (:meth:`~indexes.sparse_index.SparseIndex.own_documents`): an exact match gives the query its own
    document (excluded from its results); the others are warned about once.

    Duplicate query ids are errors. With ``skip_bad`` every bad line (unreadable ones included) is
    collected there and skipped; an empty result is still an error. Query texts longer than
    ``max_chars`` are clipped around the mention (:func:`clip_topic`) with a warning naming the line.
    """
    path = Path(path)
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    fmt = None
    for number, line in iter_lines(path, on_error=skip_bad.add if skip_bad is not None else None):
        fmt = fmt or topics_format(path, line)
        try:
            topic = _parse_jsonl(path, number, line, resolve) if fmt == "jsonl" else _parse_tsv(path, number, line)
            if topic.qid in seen:
                raise InputError(path, number, f"duplicate query id {topic.qid!r} (first on line {seen[topic.qid]})")
            if max_chars is not None:
                topic = _clip(path, number, topic, max_chars, skip_bad)
        except InputError as error:
            if skip_bad is None:
                raise
            skip_bad.add(error)
            continue
        seen[topic.qid] = number
        topics.append(topic)
    if not topics:
        skipped = f" ({len(skip_bad)} bad line(s) skipped)" if skip_bad else ""
        raise InputError(path, None, f"no topics found{skipped}")
    if fmt == "tsv":
        _warn_unended(path, seen, topics[-1])
    index = getattr(resolve, "__self__", None)
    if index is not None and hasattr(index, "own_documents"):
        index.own_documents(topics)  # topics without their document: found by their text, or warned about
    return topics


def _warn_unended(path: Path, seen: dict[str, int], last: Topic) -> None:
    """Warn when a TSV topics file does not end with a line end: a file cut short parses cleanly when the cut falls
    after the last ``</m>`` (a JSONL line cut short is broken JSON), and its last topic (text or doc_id) is then
    silently shorter. Files written by tools end with one; a hand-written file may not, so this warns only."""
    try:
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            ended = handle.read(1) == b"\n"
    except OSError:  # a pipe or FIFO: nothing to look at again
        return
    if not ended:
        log.warning("%s:%d: the last line has no line end: if the file was cut short, topic %r is incomplete "
                    "(its text or doc_id); end the file with a newline once it is whole", path, seen[last.qid],
                    last.qid)


def generated_qid(marked: str) -> str:
    """The query id of a marked string given without one: ``q-`` and the first 10 hex digits of the string's SHA-256,
    so the same string gets the same id in every batch and session, whatever else it is searched with."""
    return "q-" + hashlib.sha256(marked.encode("utf-8")).hexdigest()[:10]


def is_marked(value: object) -> bool:
    """Whether a string given where topics are expected is a marked query rather than a path to a topics file."""
    return isinstance(value, str) and (OPEN in value or CLOSE in value)


def _plain(value: object) -> object:
    """A value of a dict or DataFrame row as JSON would give it: numpy scalars as Python ones, NaN / NA as None."""
    if hasattr(value, "item") and not isinstance(value, str | bytes | list | dict):
        try:
            value = value.item()  # numpy int64 / float64 / bool_
        except (TypeError, ValueError):
            pass
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType":
        return None
    return value


def topics_from_records(records: Iterable, resolve: Callable[[str], str | None] | None = None,
                        max_chars: int | None = MAX_QUERY_CHARS, name: str = "topics") -> list[Topic]:
    """Topics given in Python instead of a file, checked with the same messages as a file's lines.

    Each item is a :class:`Topic` (kept as it is), a dict with the JSONL topic fields (``qid`` and ``text`` or
    PyTerrier's ``query``, marked with ``<m> ... </m>`` or with ``start``/``end`` offsets; ``kind``, ``doc_id``,
    ``passage_id`` ...), or a marked string (its id: :func:`generated_qid`). A DataFrame's rows come as such dicts
    (``frame.to_dict("records")``); numpy values and NaN are read as JSON would give them. Errors name the item
    (``topics[3]: no <m> ... </m> markers around the query mention``); an item of another type is a TypeError."""
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    for position, item in enumerate(records):
        where = f"{name}[{position}]"
        if isinstance(item, Topic):
            topic = item
        elif isinstance(item, str):
            text, start, end = parse_marked(item, where)
            topic = Topic(qid=generated_qid(item), text=text, start=start, end=end)
        elif isinstance(item, Mapping):
            obj = {str(key): _plain(value) for key, value in item.items()}
            if obj.get("query") is not None:
                if obj.get("text") is not None:
                    raise InputError(where, None, "give the query as 'text' or as 'query' (PyTerrier's name), not both")
                obj["text"] = obj.pop("query")
            obj.pop("query", None)
            for key in ("start", "end"):  # a DataFrame column with a missing value holds floats: 5.0 is 5
                if isinstance(obj.get(key), float) and obj[key].is_integer():
                    obj[key] = int(obj[key])
            topic = topic_from_object(obj, where, None, resolve)
        else:
            raise TypeError(f"{where} must be a Topic, a dict (qid, text or query, ...) or a marked string "
                            f"('... <m> mention </m> ...'), got {type(item).__name__}")
        if topic.qid in seen:
            raise InputError(where, None, f"duplicate query id {topic.qid!r} (first at {name}[{seen[topic.qid]}])")
        if max_chars is not None:
            topic = _clip(where, None, topic, max_chars, None)
        seen[topic.qid] = position
        topics.append(topic)
    if not topics:
        raise InputError(name, None, "no topics found")
    return topics


def _clip(path: Path | str, number: int | None, topic: Topic, max_chars: int, report: SkipReport | None) -> Topic:
    for t in (topic, *topic.examples):
        if t.end - t.start > max_chars:
            raise InputError(path, number, f"the marked mention has {t.end - t.start} characters (limit {max_chars})")
    clipped = clip_topic(topic, max_chars)
    if topic.examples:
        clipped.examples = [clip_topic(e, max_chars) for e in topic.examples]
    changed = [t for t, c in zip([topic, *topic.examples], [clipped, *clipped.examples], strict=True) if c is not t]
    if changed:
        where = f"{path}:{number}" if number is not None else str(path)
        message = (f"{where}: query {topic.qid!r} has {len(changed[0].text)} characters of text; clipped to "
                   f"{max_chars} around the mention")
        log.warning(message)
        if report is not None:
            report.warn(message)
    return clipped


def write_topics_tsv(topics: list[Topic], path: str | Path) -> None:
    """Write TSV topics atomically; a topic that TSV cannot hold (tab/newline in a field) is a ValueError."""
    lines = []
    for t in topics:
        cols = [t.qid, t.marked()] + ([t.doc_id] if t.doc_id else [])
        for col in cols:
            if control_character(col) is not None:
                raise ValueError(f"topic {t.qid!r}: {col!r} contains a tab, newline or control character")
        if not t.qid or any(c.isspace() for c in t.qid) or (t.doc_id and any(c.isspace() for c in t.doc_id)):
            raise ValueError(f"topic {t.qid!r}: ids must be non-empty and contain no whitespace")
        lines.append("\t".join(cols) + "\n")
    with atomic_write(path) as out:
        out.writelines(lines)

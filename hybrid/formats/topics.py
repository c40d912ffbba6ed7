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

from collections.abc import Callable
from pathlib import Path

from hybrid.errors import InputError
from hybrid.formats.lines import SkipReport, iter_lines, optional, parse_json_object, require
from hybrid.records import KINDS, Topic

OPEN, CLOSE = "<m>", "</m>"
TOPIC_KEYS = {"qid", "text", "doc_id", "passage_id", "start", "end", "kind", "tag", "mention", "examples"}


def parse_marked(marked: str, path: str | Path | None = None, line: int | None = None) -> tuple[str, int, int]:
    """Remove the one ``<m> ... </m>`` pair and return (text, start, end) of the mention.

    One space after ``<m>`` and one before ``</m>`` belong to the markers (``a <m> b </m> c`` ->
    ``a b c`` with the mention ``b``), so marker-free offsets match the original passage.
    """
    if "\t" in marked or "\n" in marked or "\r" in marked:
        raise InputError(path, line, "query text contains a tab or newline")
    n_open, n_close = marked.count(OPEN), marked.count(CLOSE)
    if n_open == 0 and n_close == 0:
        raise InputError(path, line, "no <m> ... </m> markers around the query mention")
    if n_open != 1 or n_close != 1:
        raise InputError(path, line, f"expected exactly one <m> and one </m>, found {n_open} and {n_close}")
    i, j = marked.index(OPEN), marked.index(CLOSE)
    if j < i:
        raise InputError(path, line, "</m> comes before <m>")
    before, inside, after = marked[:i], marked[i + len(OPEN) : j], marked[j + len(CLOSE) :]
    if inside.startswith(" "):
        inside = inside[1:]
    if inside.endswith(" "):
        inside = inside[:-1]
    if not inside.strip():
        raise InputError(path, line, "empty mention between <m> and </m>")
    if inside != inside.strip():
        inside_stripped = inside.strip()
        lead = len(inside) - len(inside.lstrip())
        before += inside[:lead]
        after = inside[lead + len(inside_stripped) :] + after
        inside = inside_stripped
    text = before + inside + after
    start = len(before)
    return text, start, start + len(inside)


def _check_qid(path: Path, number: int, qid: str) -> str:
    if not qid or any(c.isspace() for c in qid):
        raise InputError(path, number, f"query id {qid!r} must be non-empty and contain no whitespace")
    return qid


def _parse_tsv(path: Path, number: int, line: str) -> Topic:
    cols = line.split("\t")
    if len(cols) not in (2, 3):
        raise InputError(path, number, f"expected 'qid<TAB>marked text[<TAB>doc_id]', found {len(cols)} column(s)")
    qid = _check_qid(path, number, cols[0].strip())
    if not cols[1].strip():
        raise InputError(path, number, "empty query text")
    text, start, end = parse_marked(cols[1].strip(), path, number)
    doc_id = cols[2].strip() if len(cols) == 3 and cols[2].strip() else None
    return Topic(qid=qid, text=text, start=start, end=end, doc_id=doc_id)


def _parse_jsonl(path: Path, number: int, line: str, resolve: Callable[[str], str | None] | None) -> Topic:
    obj = parse_json_object(path, number, line)
    qid = _check_qid(path, number, str(require(path, number, obj, "qid", (str, int))))
    kind = optional(path, number, obj, "kind", str)
    if kind is not None and kind not in KINDS:
        raise InputError(path, number, f"kind must be one of {KINDS}, got {kind!r}")
    doc_id = optional(path, number, obj, "doc_id", str)
    passage_id = optional(path, number, obj, "passage_id", str)
    if obj.get("text") is not None:
        text, start, end = parse_marked(require(path, number, obj, "text", str), path, number)
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
        if not 0 <= start < end <= len(text):
            raise InputError(path, number, f"offsets [{start}, {end}) lie outside passage {passage_id!r}")
        if obj.get("mention") is not None and text[start:end] != obj["mention"]:
            raise InputError(
                path, number, f"mention {obj['mention']!r} does not match passage text {text[start:end]!r}"
            )
    examples = []
    for k, raw in enumerate(obj.get("examples") or []):
        if not isinstance(raw, str):
            raise InputError(path, number, f"examples[{k}] must be a marked string")
        ex_text, ex_start, ex_end = parse_marked(raw, path, number)
        examples.append(Topic(qid=f"{qid}#ex{k}", text=ex_text, start=ex_start, end=ex_end))
    meta = {k: v for k, v in obj.items() if k not in TOPIC_KEYS}
    return Topic(
        qid=qid, text=text, start=start, end=end, doc_id=doc_id, passage_id=passage_id, kind=kind,
        tag=optional(path, number, obj, "tag", str), examples=examples, meta=meta,
    )


def read_topics(
    path: str | Path,
    resolve: Callable[[str], str | None] | None = None,
    skip_bad: SkipReport | None = None,
) -> list[Topic]:
    """Read TSV or JSONL topics (by extension ``.jsonl``/``.json`` or a leading ``{``)."""
    path = Path(path)
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    for number, line in iter_lines(path):
        try:
            if path.suffix in (".jsonl", ".json") or line.lstrip().startswith("{"):
                topic = _parse_jsonl(path, number, line, resolve)
            else:
                topic = _parse_tsv(path, number, line)
            if topic.qid in seen:
                raise InputError(path, number, f"duplicate query id {topic.qid!r} (first on line {seen[topic.qid]})")
        except InputError as error:
            if skip_bad is None:
                raise
            skip_bad.add(error)
            continue
        seen[topic.qid] = number
        topics.append(topic)
    if not topics:
        raise InputError(path, None, "no topics found")
    return topics


def write_topics_tsv(topics: list[Topic], path: str | Path) -> None:
    with Path(path).open("w", encoding="utf-8") as out:
        for t in topics:
            cols = [t.qid, t.marked()] + ([t.doc_id] if t.doc_id else [])
            out.write("\t".join(cols) + "\n")

"""Corpus JSONL: one passage per line, with optional gold mention annotations.

A line looks like ``{"id": "1_10ecb:0", "doc_id": "1_10ecb", "text": "...", "mentions": [...]}``;
``doc_id`` defaults to the part of ``id`` before the last ``:`` (or the id itself). A passage whose
``mentions`` key is absent is *unannotated*: its mention candidates are detected automatically.
An empty list means "annotated, no mentions" unless the reader is told to treat it as unannotated
(ECB+ leaves most non-curated sentences with an empty list).

Keys outside the schema are free metadata (ECB+ carries ``topic``, ``split``, ``validated``; its
mentions carry ``cluster``, which is dropped here so no retrieval code can see the label), except
keys that look like a misspelt schema key (``"mention"``, ``"Text"``), which are errors.

Passages longer than :data:`MAX_PASSAGE_CHARS` characters are cut (at a word boundary) and a
warning names the file and line: every mention record copies its passage as ``context``, so index
size grows with the square of passage length; the dense encoders read only ~2,000 characters
(512 word pieces) anyway. Split long documents into sentences or paragraphs instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import (
    SkipReport,
    check_keys,
    invisible_only,
    iter_lines,
    log,
    optional,
    parse_json_object,
    require,
)
from hybrid.core.records import KINDS, Mention, Passage

PASSAGE_KEYS = {"id", "doc_id", "text", "mentions", "sent_id", "contents"}
MENTION_KEYS = {"start", "end", "text", "kind", "tag", "chain", "m_id"}
#: Query markers may not occur in passages: a query copied from such a passage could not be marked.
RESERVED = ("<m>", "</m>")
#: Longer passages are truncated with a warning (see module docs); ``max_chars=None`` disables.
MAX_PASSAGE_CHARS = 5000
#: How many truncation warnings are logged one by one before only a count is kept.
WARN_LIMIT = 10


def _parse_mention(path: Path, number: int, text: str, raw: object, index: int) -> Mention:
    where = f"mentions[{index}]"
    if not isinstance(raw, dict):
        raise InputError(path, number, f"{where} must be an object")
    check_keys(path, number, raw, MENTION_KEYS, where=f"{where}.")
    for key in ("start", "end"):
        if not isinstance(raw.get(key), int) or isinstance(raw.get(key), bool):
            raise InputError(path, number, f"{where}.{key} must be an integer character offset")
    start, end = raw["start"], raw["end"]
    if not 0 <= start < end <= len(text):
        raise InputError(
            path, number, f"{where} offsets [{start}, {end}) lie outside the text (length {len(text)}) or are empty"
        )
    span = text[start:end]
    if "text" in raw and raw["text"] != span:
        raise InputError(
            path, number, f"{where}.text {raw['text']!r} does not match the text at [{start}, {end}): {span!r}"
        )
    if not span.strip():
        raise InputError(path, number, f"{where} is blank")
    invisible = invisible_only(span)
    if invisible:
        raise InputError(path, number, f"{where} is made only of zero-width characters ({invisible})")
    kind = raw.get("kind")
    if kind is not None and kind not in KINDS:
        raise InputError(path, number, f"{where}.kind must be one of {KINDS}, got {kind!r}")
    for key in ("tag", "chain", "m_id"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise InputError(path, number, f"{where}.{key} must be a string")
    return Mention(
        start=start, end=end, text=span, kind=kind, tag=raw.get("tag"), chain=raw.get("chain"), m_id=raw.get("m_id")
    )


def _check_id(path: Path, number: int, name: str, value: str) -> str:
    if not value.strip() or any(c.isspace() for c in value):
        raise InputError(path, number, f"{name} {value!r} must be non-empty and contain no whitespace")
    return value


def parse_passage(path: Path, number: int, line: str, empty_means_unannotated: bool = False) -> Passage:
    return passage_from_object(path, number, parse_json_object(path, number, line), empty_means_unannotated)


def passage_from_object(path: Path, number: int, obj: dict, empty_means_unannotated: bool = False) -> Passage:
    """Validate one parsed corpus line; readers of richer formats (labelled collections) share it."""
    check_keys(path, number, obj, PASSAGE_KEYS)
    pid = _check_id(path, number, "id", require(path, number, obj, "id", str))
    if "text" in obj:
        text = require(path, number, obj, "text", str)
        if "contents" in obj and obj["contents"] != text:
            raise InputError(path, number, "both 'text' and 'contents' are given and they differ; keep one")
    elif "contents" in obj:  # pyserini JsonCollection style
        text = require(path, number, obj, "contents", str)
    else:
        raise InputError(path, number, "missing required field 'text' (or 'contents')")
    if not text.strip():
        raise InputError(path, number, f"passage {pid!r} has empty text")
    for marker in RESERVED:
        if marker in text:
            raise InputError(path, number, f"passage {pid!r} contains the reserved query marker {marker!r}")
    doc_id = optional(path, number, obj, "doc_id", str)
    doc_id = _check_id(path, number, "doc_id", doc_id if doc_id is not None else pid.rsplit(":", 1)[0])
    raw_mentions = obj.get("mentions")
    mentions: list[Mention] | None = None
    if raw_mentions is not None:
        if not isinstance(raw_mentions, list):
            raise InputError(path, number, "field 'mentions' must be a list")
        mentions = [_parse_mention(path, number, text, m, i) for i, m in enumerate(raw_mentions)]
        spans: dict[tuple[int, int], int] = {}
        for i, m in enumerate(mentions):
            if (m.start, m.end) in spans:
                raise InputError(
                    path, number, f"mentions[{spans[m.start, m.end]}] and mentions[{i}] have the same span "
                    f"[{m.start}, {m.end}) (a span is a mention's id in the index)"
                )
            spans[m.start, m.end] = i
        mentions.sort(key=lambda m: (m.start, m.end))
        if not mentions and empty_means_unannotated:
            mentions = None
    sent_id = optional(path, number, obj, "sent_id", int)
    meta = {k: v for k, v in obj.items() if k not in PASSAGE_KEYS}
    return Passage(id=pid, doc_id=doc_id, text=text, mentions=mentions, sent_id=sent_id, meta=meta)


def truncate_passage(passage: Passage, max_chars: int) -> tuple[Passage, int]:
    """Cut ``passage`` to at most ``max_chars`` characters, at the last space in the final tenth if any.

    Returns the passage and the number of gold mentions dropped because they crossed the cut.
    """
    if len(passage.text) <= max_chars:
        return passage, 0
    cut = passage.text.rfind(" ", max_chars - max_chars // 10, max_chars + 1)
    text = passage.text[: cut if cut > 0 else max_chars].rstrip()
    if passage.mentions is None:
        return replace(passage, text=text), 0
    kept = [m for m in passage.mentions if m.end <= len(text)]
    return replace(passage, text=text, mentions=kept), len(passage.mentions) - len(kept)


def read_corpus(
    path: str | Path,
    skip_bad: SkipReport | None = None,
    empty_means_unannotated: bool = False,
    max_chars: int | None = MAX_PASSAGE_CHARS,
    digest: Any = None,
) -> Iterator[Passage]:
    """Stream passages; a bad line raises :class:`InputError` unless ``skip_bad`` collects it.

    Duplicate passage ids (and two passages with the same ``doc_id`` + ``sent_id``) are errors: they
    would silently shadow each other in the index. Truncations are logged and added to ``skip_bad``'s
    warnings.
    """
    for _, _, passage in read_corpus_lines(path, skip_bad, empty_means_unannotated, max_chars, digest):
        yield passage


def read_corpus_lines(
    path: str | Path,
    skip_bad: SkipReport | None = None,
    empty_means_unannotated: bool = False,
    max_chars: int | None = MAX_PASSAGE_CHARS,
    digest: Any = None,
) -> Iterator[tuple[int, dict, Passage]]:
    """:func:`read_corpus` that also yields each passage's line number and parsed JSON object, for readers
    that need keys the :class:`Passage` record leaves out (a labelled collection's ``cluster`` ids). ``digest``:
    see :func:`~hybrid.core.formats.lines.iter_lines`."""
    path = Path(path)
    seen: dict[str, int] = {}
    sentences: dict[tuple[str, int], int] = {}
    on_error = skip_bad.add if skip_bad is not None else None
    truncated = 0
    for number, line in iter_lines(path, on_error=on_error, digest=digest):
        try:
            obj = parse_json_object(path, number, line)
            passage = passage_from_object(path, number, obj, empty_means_unannotated)
            if passage.id in seen:
                first = seen[passage.id]
                raise InputError(path, number, f"duplicate passage id {passage.id!r} (first on line {first})")
            if passage.sent_id is not None and (passage.doc_id, passage.sent_id) in sentences:
                first = sentences[passage.doc_id, passage.sent_id]
                raise InputError(
                    path, number, f"duplicate sent_id {passage.sent_id} in document {passage.doc_id!r} "
                    f"(first on line {first})"
                )
        except InputError as error:
            if skip_bad is None:
                raise
            skip_bad.add(error)
            continue
        seen[passage.id] = number
        if passage.sent_id is not None:
            sentences[passage.doc_id, passage.sent_id] = number
        if max_chars is not None and len(passage.text) > max_chars:
            length = len(passage.text)
            passage, dropped = truncate_passage(passage, max_chars)
            message = (f"{path}:{number}: passage {passage.id!r} has {length} characters; truncated to "
                       f"{len(passage.text)} (limit {max_chars})"
                       + (f", dropping {dropped} mention(s) past the cut" if dropped else ""))
            truncated += 1
            if truncated <= WARN_LIMIT:
                log.warning(message)
            if skip_bad is not None:
                skip_bad.warn(message)
        yield number, obj, passage
    if truncated > WARN_LIMIT:
        log.warning("%s: %d passages longer than %d characters were truncated", path, truncated, max_chars)

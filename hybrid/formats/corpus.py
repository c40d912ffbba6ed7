"""Corpus JSONL: one passage per line, with optional gold mention annotations.

A line looks like ``{"id": "1_10ecb:0", "doc_id": "1_10ecb", "text": "...", "mentions": [...]}``;
``doc_id`` defaults to the part of ``id`` before the last ``:`` (or the id itself). A passage whose
``mentions`` key is absent is *unannotated*: its mention candidates are detected automatically.
An empty list means "annotated, no mentions" unless the reader is told to treat it as unannotated
(ECB+ leaves most non-curated sentences with an empty list).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hybrid.errors import InputError
from hybrid.formats.lines import SkipReport, iter_lines, optional, parse_json_object, require
from hybrid.records import KINDS, Mention, Passage

PASSAGE_KEYS = {"id", "doc_id", "text", "mentions", "sent_id", "contents"}
MENTION_KEYS = {"start", "end", "text", "kind", "tag", "chain", "m_id"}


def _parse_mention(path: Path, number: int, text: str, raw: object, index: int) -> Mention:
    where = f"mentions[{index}]"
    if not isinstance(raw, dict):
        raise InputError(path, number, f"{where} must be an object")
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
    kind = raw.get("kind")
    if kind is not None and kind not in KINDS:
        raise InputError(path, number, f"{where}.kind must be one of {KINDS}, got {kind!r}")
    for key in ("tag", "chain", "m_id"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise InputError(path, number, f"{where}.{key} must be a string")
    return Mention(
        start=start, end=end, text=span, kind=kind, tag=raw.get("tag"), chain=raw.get("chain"), m_id=raw.get("m_id")
    )


def parse_passage(path: Path, number: int, line: str, empty_means_unannotated: bool = False) -> Passage:
    obj = parse_json_object(path, number, line)
    pid = require(path, number, obj, "id", str)
    if not pid.strip() or any(c in pid for c in " \t\n\r"):
        raise InputError(path, number, f"id {pid!r} must be non-empty and contain no whitespace")
    if "text" in obj:
        text = require(path, number, obj, "text", str)
    elif "contents" in obj:  # pyserini JsonCollection style
        text = require(path, number, obj, "contents", str)
    else:
        raise InputError(path, number, "missing required field 'text' (or 'contents')")
    if not text.strip():
        raise InputError(path, number, f"passage {pid!r} has empty text")
    doc_id = optional(path, number, obj, "doc_id", str) or (pid.rsplit(":", 1)[0] if ":" in pid else pid)
    if any(c in doc_id for c in " \t\n\r"):
        raise InputError(path, number, f"doc_id {doc_id!r} must contain no whitespace")
    raw_mentions = obj.get("mentions")
    mentions: list[Mention] | None = None
    if raw_mentions is not None:
        if not isinstance(raw_mentions, list):
            raise InputError(path, number, "field 'mentions' must be a list")
        mentions = [_parse_mention(path, number, text, m, i) for i, m in enumerate(raw_mentions)]
        mentions.sort(key=lambda m: (m.start, m.end))
        if not mentions and empty_means_unannotated:
            mentions = None
    sent_id = optional(path, number, obj, "sent_id", int)
    meta = {k: v for k, v in obj.items() if k not in PASSAGE_KEYS}
    return Passage(id=pid, doc_id=doc_id, text=text, mentions=mentions, sent_id=sent_id, meta=meta)


def read_corpus(
    path: str | Path,
    skip_bad: SkipReport | None = None,
    empty_means_unannotated: bool = False,
) -> Iterator[Passage]:
    """Stream passages; a bad line raises :class:`InputError` unless ``skip_bad`` collects it.

    Duplicate passage ids are always an error (they would silently shadow each other in the index).
    """
    path = Path(path)
    seen: dict[str, int] = {}
    for number, line in iter_lines(path):
        try:
            passage = parse_passage(path, number, line, empty_means_unannotated)
            if passage.id in seen:
                first = seen[passage.id]
                raise InputError(path, number, f"duplicate passage id {passage.id!r} (first on line {first})")
        except InputError as error:
            if skip_bad is None:
                raise
            skip_bad.add(error)
            continue
        seen[passage.id] = number
        yield passage

"""A knowledge-base file for event-collection building: one JSON object per line.

The paper ranks the entities related to an event with a knowledge base (Wikipedia out- and back-links)
and takes an entity's *contextual passage* from the event's article. Any Wikipedia extract fits this
schema, one entry per entity or event::

    {"entity": "Orange Revolution", "aliases": ["Ukrainian Orange Revolution"],
     "description": "The Orange Revolution was a series of protests in Kiev ... Viktor Yushchenko ...",
     "links": ["Viktor Yushchenko", "Kiev", "Viktor Yanukovych"], "type": "EVENT"}

``entity`` (required, non-empty) names the entry; ``aliases`` are other surface forms detected in
documents; ``description`` is the intro text (the event's own entry gives the contextual passages);
``links`` name other entries (out-links; back-links are derived); ``type`` is free text (a place type
such as ``GPE``/``LOC`` marks places). Unknown keys are errors (a misspelt ``alias`` must not silently
drop every alias), as are duplicate entries and malformed lines, each naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.lines import check_keys, iter_lines, optional, parse_json_object, require

KB_KEYS = {"entity", "aliases", "description", "links", "type"}
#: Entry types that make an entity a place (the ``place`` ranker's query).
PLACE_TYPES = frozenset({"GPE", "LOC", "FAC", "PLACE", "LOCATION", "CITY", "COUNTRY"})
_SPACE = re.compile(r"\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def entity_key(text: str) -> str:
    """The matching key of a surface form: lower case, one space between words, no edge punctuation, no
    leading article; ``The Promises Treatment Center`` and ``promises treatment center.`` meet."""
    key = _EDGE.sub("", _SPACE.sub(" ", text.replace("’", "'")).strip().lower())
    if key.startswith("the "):
        key = key[4:]
    return key


@dataclass(frozen=True)
class KBEntry:
    """One knowledge-base entity (or event)."""

    entity: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    links: tuple[str, ...] = ()
    type: str | None = None

    @property
    def key(self) -> str:
        return entity_key(self.entity)

    @property
    def surface_forms(self) -> tuple[str, ...]:
        return (self.entity, *self.aliases)

    @property
    def is_place(self) -> bool:
        return (self.type or "").upper() in PLACE_TYPES


@dataclass
class KnowledgeBase:
    """Entries by key, with every alias key pointing at its entry and back-links derived from links."""

    entries: dict[str, KBEntry] = field(default_factory=dict)
    alias_of: dict[str, str] = field(default_factory=dict)  # surface key -> entry key
    backlinks: dict[str, list[str]] = field(default_factory=dict)  # entry key -> keys of entries linking to it
    path: str | None = None

    def lookup(self, text: str) -> KBEntry | None:
        """The entry a surface form names (its entity or one of its aliases), if any."""
        key = self.alias_of.get(entity_key(text))
        return self.entries.get(key) if key else None

    def __len__(self) -> int:
        return len(self.entries)


def _strings(path: Path, number: int, obj: dict, key: str) -> tuple[str, ...]:
    value = optional(path, number, obj, key, list)
    if value is None:
        return ()
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise InputError(path, number, f"'{key}[{i}]' must be a non-empty string, got {item!r}")
        out.append(item.strip())
    return tuple(out)


def parse_entry(path: Path, number: int, line: str) -> KBEntry:
    obj = parse_json_object(path, number, line)
    check_keys(path, number, obj, KB_KEYS, free=False)
    name = require(path, number, obj, "entity", str).strip()
    if not name or not entity_key(name):
        raise InputError(path, number, "'entity' is empty (an entry needs a name)")
    description = optional(path, number, obj, "description", str) or ""
    kind = optional(path, number, obj, "type", str)
    return KBEntry(name, _strings(path, number, obj, "aliases"), description.strip(),
                   _strings(path, number, obj, "links"), kind.strip() if kind else None)


def read_kb(path: str | Path) -> KnowledgeBase:
    """Read and check a knowledge-base JSONL (module docs); InputError names the file and line of a problem."""
    path = Path(path)
    kb = KnowledgeBase(path=str(path))
    first_line: dict[str, int] = {}
    for number, line in iter_lines(path):
        entry = parse_entry(path, number, line)
        if entry.key in kb.entries:
            raise InputError(path, number, f"entity {entry.entity!r} appears twice (first on line "
                                           f"{first_line[entry.key]})")
        kb.entries[entry.key] = entry
        first_line[entry.key] = number
    if not kb.entries:
        raise InputError(path, None, "no entries found (expected one JSON object per line)")
    for key in kb.entries:  # names first, so an alias never shadows another entry's name
        kb.alias_of[key] = key
    for key, entry in kb.entries.items():
        for alias in entry.aliases:
            kb.alias_of.setdefault(entity_key(alias), key)
    for key, entry in kb.entries.items():
        for link in entry.links:
            target = kb.alias_of.get(entity_key(link), entity_key(link))
            if key not in kb.backlinks.setdefault(target, []):
                kb.backlinks[target].append(key)
    return kb

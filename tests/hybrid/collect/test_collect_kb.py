"""The knowledge-base reader: a hand-made file, and clear errors (file and line) on malformed ones."""

from __future__ import annotations

import json

import pytest

from hybrid.collect.kb import entity_key, read_kb
from hybrid.core.errors import InputError

ENTRIES = [
    {"entity": "Orange Revolution", "aliases": ["Ukrainian Orange Revolution"], "type": "EVENT",
     "description": "The Orange Revolution was a series of protests in Kiev. Viktor Yushchenko led them. "
                    "Viktor Yanukovych had been declared the winner.",
     "links": ["Viktor Yushchenko", "Kiev", "Yanukovych"]},
    {"entity": "Viktor Yushchenko", "aliases": ["Yushchenko"], "type": "PERSON", "links": ["Orange Revolution"]},
    {"entity": "Viktor Yanukovych", "aliases": ["Yanukovych"], "type": "PERSON"},
    {"entity": "Kiev", "aliases": ["Kyiv"], "type": "GPE", "description": "Kiev is the capital of Ukraine."},
]


def write(tmp_path, lines: list[str]):
    path = tmp_path / "kb.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_a_hand_made_kb(tmp_path):
    kb = read_kb(write(tmp_path, [json.dumps(e) for e in ENTRIES]))
    assert len(kb) == 4
    assert kb.lookup("the Ukrainian Orange Revolution").entity == "Orange Revolution"
    assert kb.lookup("KYIV").entity == "Kiev" and kb.lookup("Kiev").is_place
    # links resolve through aliases; back-links are derived from them
    assert kb.backlinks[entity_key("Viktor Yanukovych")] == [entity_key("Orange Revolution")]
    assert kb.backlinks[entity_key("Orange Revolution")] == [entity_key("Viktor Yushchenko")]
    assert kb.lookup("Nobody") is None


@pytest.mark.parametrize("line, reason", [
    ('{"entity": "A", "alias": ["B"]}', "unknown key 'alias'"),
    ('{"entity": "  "}', "'entity' is empty"),
    ('{"aliases": ["B"]}', "missing required field 'entity'"),
    ('{"entity": "A", "aliases": "B"}', "field 'aliases' must be list"),
    ('{"entity": "A", "links": [""]}', "'links[0]' must be a non-empty string"),
    ('{"entity": "A", ', "broken JSON"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, reason):
    path = write(tmp_path, [json.dumps(ENTRIES[3]), line])
    with pytest.raises(InputError) as error:
        read_kb(path)
    assert error.value.line == 2 and str(path) in str(error.value)
    assert reason in error.value.reason


def test_duplicate_entity_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="appears twice.*line 1"):
        read_kb(write(tmp_path, ['{"entity": "Kiev"}', '{"entity": "the kiev"}']))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no entries"):
        read_kb(tmp_path / "empty.jsonl")

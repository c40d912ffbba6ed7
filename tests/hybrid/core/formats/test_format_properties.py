"""Property-based tests (hypothesis) of the topic, corpus and run parsers.

* Round trips: marking a random span of random text and parsing it back gives the same text and
  offsets; a corpus line with random mentions reads back with the same text, offsets and mention
  texts; a random run survives write_run/read_run.
* Totality: arbitrary strings and bytes never raise anything but InputError.

Derandomized (a fixed seed per test) and without an example database, so CI runs are reproducible.
"""

from __future__ import annotations

import json
import math
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hybrid.core.errors import InputError
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, sorted_hits, write_run
from hybrid.core.formats.topics import CLOSE, OPEN, clip_topic, parse_marked, read_topics
from hybrid.core.records import Hit, Topic

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=200,
                    suppress_health_check=[HealthCheck.too_slow])

# Query text: any printable-ish characters (no control/separator characters, which a query may not hold)
# drawn to include the marker characters themselves.
QUERY_CHARS = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
query_text = st.text(alphabet=st.one_of(QUERY_CHARS, st.sampled_from("<>/m ")), min_size=1, max_size=60).filter(
    lambda t: OPEN not in t and CLOSE not in t)


def scratch() -> tempfile.TemporaryDirectory:
    """A temporary directory in memory where there is one (write_run fsyncs; a disk makes that slow)."""
    return tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None)


def temp_file(tmp: str, name: str, data: bytes) -> Path:
    path = Path(tmp) / name
    path.write_bytes(data)
    return path


@st.composite
def marked_topics(draw):
    text = draw(query_text)
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    mention = text[start:end]
    assume(mention.strip() == mention and mention)
    return text, start, end


@SETTINGS
@given(marked_topics())
def test_marking_a_span_and_parsing_it_back_is_the_identity(case):
    text, start, end = case
    topic = Topic(qid="q", text=text, start=start, end=end)
    assert parse_marked(topic.marked()) == (text, start, end)


@SETTINGS
@given(marked_topics(), st.sampled_from(["tsv", "jsonl"]))
def test_topic_files_round_trip(case, fmt):
    text, start, end = case
    marked = Topic(qid="q1", text=text, start=start, end=end).marked()
    line = f"q1\t{marked}\td1\n" if fmt == "tsv" else json.dumps({"qid": "q1", "text": marked, "doc_id": "d1"}) + "\n"
    with scratch() as tmp:
        (topic,) = read_topics(temp_file(tmp, f"t.{fmt}", line.encode("utf-8")))
    # TSV strips the blank margins of the whole query (they carry no meaning); offsets move with them.
    lead = len(marked) - len(marked.lstrip()) if fmt == "tsv" else 0
    expected = marked.strip() if fmt == "tsv" else marked
    assert Topic(qid="q1", text=topic.text, start=topic.start, end=topic.end).marked() == expected
    assert (topic.start, topic.end) == (start - lead, end - lead) and topic.mention == text[start:end]
    assert topic.doc_id == "d1"


@SETTINGS
@given(st.text(max_size=80))
def test_parse_marked_raises_only_input_error(text):
    try:
        clean, start, end = parse_marked(text, "x.tsv", 3)
    except InputError as error:
        assert error.path == "x.tsv" and error.line == 3 and error.reason
        return
    assert clean[start:end].strip() == clean[start:end] != ""
    assert OPEN not in clean and CLOSE not in clean
    assert not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in clean)


PASSAGE_CHARS = st.characters(blacklist_categories=("Cs",))


@st.composite
def annotated_passages(draw):
    text = draw(st.text(alphabet=PASSAGE_CHARS, min_size=1, max_size=80).filter(
        lambda t: t.strip() and OPEN not in t and CLOSE not in t))
    spans = draw(st.lists(st.tuples(st.integers(0, len(text) - 1), st.integers(1, len(text))), max_size=6))
    mentions = {}
    for s, e in spans:
        if s < e and text[s:e].strip():
            kind = draw(st.sampled_from(["event", "entity"]))
            mentions[s, e] = {"start": s, "end": e, "text": text[s:e], "kind": kind}
    return text, list(mentions.values())


@SETTINGS
@given(annotated_passages(), st.booleans())
def test_corpus_line_round_trip(passage, ascii_json):
    text, mentions = passage
    line = json.dumps({"id": "d:0", "text": text, "mentions": mentions}, ensure_ascii=ascii_json) + "\n"
    with scratch() as tmp:
        (parsed,) = read_corpus(temp_file(tmp, "c.jsonl", line.encode("utf-8")), max_chars=None)
    assert parsed.text == text
    assert [(m.start, m.end, m.text, m.kind) for m in parsed.mentions] == sorted(
        (m["start"], m["end"], m["text"], m["kind"]) for m in mentions)


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from(["c.jsonl", "t.tsv", "t.jsonl", "q.txt", "r.trec"]))
def test_arbitrary_bytes_raise_only_input_error(data, name):
    readers = {
        "c.jsonl": lambda p: list(read_corpus(p)), "t.tsv": lambda p: read_topics(p, resolve={}.get),
        "t.jsonl": lambda p: read_topics(p, resolve={"a": "some text"}.get), "q.txt": read_qrels, "r.trec": read_run,
    }
    with scratch() as tmp:
        path = temp_file(tmp, name, data)
        try:
            readers[name](path)
        except InputError as error:
            assert error.path == str(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
json_objects = st.fixed_dictionaries(
    {}, optional={k: json_values for k in ("id", "doc_id", "text", "mentions", "sent_id", "qid", "start", "end",
                                             "passage_id", "examples", "kind", "mention")},
).flatmap(lambda base: st.dictionaries(st.text(max_size=8), json_values, max_size=3).map(lambda extra: {**extra,
                                                                                                         **base}))


@settings(SETTINGS, max_examples=100)  # generating nested JSON is the slow part
@given(st.lists(json_objects, min_size=1, max_size=3), st.sampled_from(["c.jsonl", "t.jsonl"]))
def test_arbitrary_json_objects_raise_only_input_error(objects, name):
    data = "".join(json.dumps(o) + "\n" for o in objects).encode("utf-8")
    with scratch() as tmp:
        path = temp_file(tmp, name, data)
        try:
            if name == "c.jsonl":
                list(read_corpus(path))
            else:
                read_topics(path, resolve={"p": "Some passage text."}.get)
        except InputError as error:
            assert error.path == str(path)


ids = st.text(alphabet="abcdefghij0123456789:_-#.", min_size=1, max_size=6)
runs = st.dictionaries(ids, st.dictionaries(ids, st.floats(-1e6, 1e6, allow_nan=False), max_size=8), max_size=5)


@SETTINGS
@given(runs)
def test_run_round_trip(raw):
    run = {q: [Hit(d, s) for d, s in hits.items()] for q, hits in raw.items()}
    with scratch() as tmp:
        write_run(run, Path(tmp) / "r.trec")
        back = read_run(Path(tmp) / "r.trec")
    expected = {q: sorted_hits(h) for q, h in run.items() if h}
    assert list(back) == sorted(expected)
    for qid, hits in expected.items():
        assert [h.docid for h in back[qid]] == [h.docid for h in hits]
        assert all(math.isclose(a.score, b.score, abs_tol=1e-6) for a, b in zip(back[qid], hits, strict=True))


@SETTINGS
@given(st.lists(st.text(alphabet="abcdé<>", min_size=1, max_size=9), min_size=1, max_size=60), st.data())
def test_clipping_keeps_the_mention_whole_words_and_the_limit(words, data):
    text = " ".join(words)
    i = data.draw(st.integers(0, len(words) - 1))
    start = len(" ".join(words[:i])) + (1 if i else 0)
    end = start + len(words[i])
    limit = data.draw(st.integers(end - start, len(text) + 5))
    clipped = clip_topic(Topic(qid="q", text=text, start=start, end=end), limit)
    lo = start - clipped.start
    hi = lo + len(clipped.text)
    assert clipped.mention == words[i] and len(clipped.text) <= limit and text[lo:hi] == clipped.text
    assert (lo == 0 or text[lo - 1] == " ") and (hi == len(text) or text[hi] == " ")
    assert clipped.text == text if len(text) <= limit else len(clipped.text) < len(text)

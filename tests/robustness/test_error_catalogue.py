"""Every input error a user can meet: one bad input each, the exact place it names, and its documentation.

Each case feeds one malformed file to the real parser and checks that the error is an InputError
(ConfigError for configs) naming ``file:line`` and the problem, and that the problem's wording appears
in docs/errors.md, so the table there cannot drift from what the code says.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from features.annotate import AnnotationConfig
from hybrid.core.errors import ConfigError, InputError
from hybrid.core.formats.config import load_config
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run
from hybrid.core.formats.topics import read_topics
from hybrid.recipes import Context, load_recipe
from indexes.lucene import IndexConfig

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
PASSAGES = {"a:0": "Tara Reid entered rehab on Tuesday."}


def ok_passage(**change) -> str:
    record = {"id": "d:0", "doc_id": "d", "text": "Tara Reid entered rehab.",
              "mentions": [{"start": 0, "end": 9, "text": "Tara Reid", "kind": "entity"}]}
    record.update(change)
    return json.dumps({k: v for k, v in record.items() if v is not None})


def mention(**change) -> str:
    m = {"start": 0, "end": 9, "text": "Tara Reid", "kind": "entity"}
    m.update(change)
    return ok_passage(mentions=[{k: v for k, v in m.items() if v is not None}])


RECIPE = 'name = "r"\n[system]\n'
PIPELINE = RECIPE + 'type = "pipeline"\nfirst = "bm25"\nrerankers = ['


@dataclass
class Case:
    name: str
    reader: str  # corpus | topics | qrels | run | config | recipe
    filename: str
    content: str | bytes | None  # None: the file does not exist
    line: int | None  # line named in the message (None: the whole file)
    fragment: str  # wording that must appear in the message and in docs/errors.md


CASES = [
    # -- bytes and JSON, shared by every line-based parser
    Case("invalid utf-8", "corpus", "c.jsonl", b'{"id": "a", "text": "caf\xe9"}\n', 1,
         "invalid UTF-8 byte 0xE9 at offset 24 of the line"),
    Case("gzip", "corpus", "c.jsonl", gzip.compress(b'{"id": "a"}\n'), None, "file is gzip-compressed"),
    Case("missing file", "corpus", "c.jsonl", None, None, "file does not exist"),
    Case("directory", "corpus", "dir", "DIR", None, "is a directory, expected a file"),
    Case("broken json", "corpus", "c.jsonl", ok_passage() + "\n{\"id\": \"b\", \"text\": }\n", 2, "broken JSON ("),
    Case("not an object", "corpus", "c.jsonl", '["a"]\n', 1, "expected a JSON object, got list"),
    Case("duplicate key", "corpus", "c.jsonl", '{"id": "a", "text": "x", "text": "y"}\n', 1,
         "appears twice in one JSON object"),
    Case("NaN", "corpus", "c.jsonl", '{"id": "a", "text": "x", "sent_id": NaN}\n', 1, "non-standard JSON constant"),
    Case("deep nesting", "corpus", "c.jsonl", '{"id": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n", 1,
         "nested too deeply"),
    Case("lone surrogate", "corpus", "c.jsonl", '{"id": "a", "text": "x \\ud800 y"}\n', 1, "unpaired surrogate"),
    # -- corpus
    Case("no id", "corpus", "c.jsonl", '{"text": "x"}\n', 1, "missing required field 'id'"),
    Case("id type", "corpus", "c.jsonl", ok_passage(id=7) + "\n", 1, "field 'id' must be str"),
    Case("id whitespace", "corpus", "c.jsonl", ok_passage(id="d 0") + "\n", 1,
         "must be non-empty and contain no whitespace"),
    Case("doc_id whitespace", "corpus", "c.jsonl", ok_passage(doc_id="d\t1") + "\n", 1,
         "must be non-empty and contain no whitespace"),
    Case("no text", "corpus", "c.jsonl", '{"id": "a"}\n', 1, "missing required field 'text' (or 'contents')"),
    Case("text and contents", "corpus", "c.jsonl", ok_passage(contents="other") + "\n", 1,
         "both 'text' and 'contents' are given"),
    Case("empty text", "corpus", "c.jsonl", ok_passage(text="  ", mentions=[]) + "\n", 1, "has empty text"),
    Case("marker in passage", "corpus", "c.jsonl", ok_passage(text="a <m> b", mentions=[]) + "\n", 1,
         "reserved query marker"),
    Case("misspelt key", "corpus", "c.jsonl", ok_passage(mention=[]) + "\n", 1,
         "looks like a misspelling of 'mentions'"),
    Case("mentions type", "corpus", "c.jsonl", ok_passage(mentions={"start": 0}) + "\n", 1,
         "field 'mentions' must be a list"),
    Case("mention type", "corpus", "c.jsonl", ok_passage(mentions=["Tara"]) + "\n", 1, "mentions[0] must be an object"),
    Case("offset type", "corpus", "c.jsonl", mention(start="0") + "\n", 1, "must be an integer character offset"),
    Case("offset outside", "corpus", "c.jsonl", mention(end=99, text=None) + "\n", 1, "lie outside the text"),
    Case("offset empty", "corpus", "c.jsonl", mention(start=3, end=3, text=None) + "\n", 1, "lie outside the text"),
    Case("offset mismatch", "corpus", "c.jsonl", mention(text="Tara") + "\n", 1, "does not match the text at"),
    Case("blank mention", "corpus", "c.jsonl", mention(start=4, end=5, text=None) + "\n", 1, "is blank"),
    Case("mention kind", "corpus", "c.jsonl", mention(kind="person") + "\n", 1, "kind must be one of"),
    Case("mention tag type", "corpus", "c.jsonl", mention(tag=3) + "\n", 1, "mentions[0].tag must be a string"),
    Case("misspelt mention key", "corpus", "c.jsonl", mention(Start=0) + "\n", 1, "looks like a misspelling of"),
    Case("same span twice", "corpus", "c.jsonl",
         ok_passage(mentions=[{"start": 0, "end": 4}, {"start": 0, "end": 4}]) + "\n", 1, "have the same span"),
    Case("duplicate passage id", "corpus", "c.jsonl", ok_passage() + "\n" + ok_passage() + "\n", 2,
         "duplicate passage id 'd:0' (first on line 1)"),
    Case("duplicate sentence", "corpus", "c.jsonl", ok_passage(sent_id=0) + "\n" + ok_passage(id="d:1", sent_id=0)
         + "\n", 2, "duplicate sent_id 0 in document 'd'"),
    Case("sent_id type", "corpus", "c.jsonl", ok_passage(sent_id="0") + "\n", 1, "field 'sent_id' must be int"),
    # -- topics TSV
    Case("tsv columns", "topics", "t.tsv", "q1\n", 1, "expected 'qid<TAB>marked text[<TAB>doc_id]'"),
    Case("tsv too many columns", "topics", "t.tsv", "q1\ta <m> b </m>\td\textra\n", 1, "found 4 column(s)"),
    Case("qid whitespace", "topics", "t.tsv", "q 1\ta <m> b </m>\n", 1, "query id 'q 1' must be non-empty"),
    Case("tsv doc_id whitespace", "topics", "t.tsv", "q1\ta <m> b </m>\td 1\n", 1, "doc_id 'd 1' must be non-empty"),
    Case("empty query", "topics", "t.tsv", "q1\t \n", 1, "empty query text"),
    Case("no markers", "topics", "t.tsv", "q1\tTara Reid entered rehab\n", 1, "no <m> ... </m> markers"),
    Case("near marker", "topics", "t.tsv", "q1\t<M> Tara </M> entered\n", 1, "the markers are exactly <m> and </m>"),
    Case("open only", "topics", "t.tsv", "q1\t<m> Tara entered\n", 1, "without a closing </m>"),
    Case("close only", "topics", "t.tsv", "q1\tTara </m> entered\n", 1, "without an opening <m>"),
    Case("nested", "topics", "t.tsv", "q1\t<m> Tara <m> Reid </m> </m>\n", 1, "nested <m> markers"),
    Case("several", "topics", "t.tsv", "q1\t<m> Tara </m> met <m> Reid </m>\n", 1,
         "marked mentions; a query marks exactly one"),
    Case("unbalanced", "topics", "t.tsv", "q1\t<m> Tara </m> met </m>\n", 1, "expected exactly one <m> and one </m>"),
    Case("reversed", "topics", "t.tsv", "q1\t</m> Tara <m> met\n", 1, "</m> comes before <m>"),
    Case("marker left behind", "topics", "t.tsv", "q1\tTara <<m>m> met </m>\n", 1,
         "removing the markers leaves another <m> or </m> in the text"),
    Case("empty mention", "topics", "t.tsv", "q1\tTara <m>   </m> met\n", 1, "empty mention between <m> and </m>"),
    Case("carriage return", "topics", "t.tsv", "q1\tTara\rReid <m> met </m>\n", 1, "contains a carriage return"),
    Case("control character", "topics", "t.tsv", "q1\tTara\x0bReid <m> met </m>\n", 1,
         "contains the control character U+000B"),
    Case("mention too long", "topics", "t.tsv", "q1\ta <m> " + "x" * 5001 + " </m>\n", 1,
         "the marked mention has 5001 characters (limit 5000)"),
    Case("duplicate qid", "topics", "t.tsv", "q1\ta <m> b </m>\nq1\tc <m> d </m>\n", 2,
         "duplicate query id 'q1' (first on line 1)"),
    Case("no topics", "topics", "t.tsv", "\n\n", None, "no topics found"),
    # -- topics JSONL
    Case("no qid", "topics", "t.jsonl", '{"text": "a <m> b </m>"}\n', 1, "missing required field 'qid'"),
    Case("misspelt qid", "topics", "t.jsonl", '{"quid": "q1", "text": "a <m> b </m>"}\n', 1,
         "looks like a misspelling of 'qid'"),
    Case("topic kind", "topics", "t.jsonl", '{"qid": "q1", "text": "a <m> b </m>", "kind": "x"}\n', 1,
         "kind must be one of"),
    Case("tab in json text", "topics", "t.jsonl", '{"qid": "q1", "text": "a\\t<m> b </m>"}\n', 1, "contains a tab"),
    Case("text and offsets", "topics", "t.jsonl", '{"qid": "q1", "text": "a <m> b </m>", "start": 0, "end": 1}\n', 1,
         "give either 'text' with <m> markers or 'start'/'end'"),
    Case("no text no passage", "topics", "t.jsonl", '{"qid": "q1", "doc_id": "d"}\n', 1,
         "a topic needs 'text' with <m> markers, or 'passage_id' + 'start' + 'end'"),
    Case("passage unknown", "topics", "t.jsonl", '{"qid": "q1", "passage_id": "zz:9", "start": 0, "end": 4}\n', 1,
         "is not in the index"),
    Case("passage offsets", "topics", "t.jsonl", '{"qid": "q1", "passage_id": "a:0", "start": 0, "end": 400}\n', 1,
         "lie outside passage 'a:0'"),
    Case("passage blank span", "topics", "t.jsonl", '{"qid": "q1", "passage_id": "a:0", "start": 4, "end": 5}\n', 1,
         "cover only blanks"),
    Case("start type", "topics", "t.jsonl", '{"qid": "q1", "passage_id": "a:0", "start": true, "end": 4}\n', 1,
         "field 'start' must be int"),
    Case("mention mismatch", "topics", "t.jsonl",
         '{"qid": "q1", "passage_id": "a:0", "start": 0, "end": 4, "mention": "Reid"}\n', 1,
         "does not match the marked text"),
    Case("examples type", "topics", "t.jsonl", '{"qid": "q1", "text": "a <m> b </m>", "examples": "c <m> d </m>"}\n',
         1, "field 'examples' must be a list"),
    Case("example type", "topics", "t.jsonl", '{"qid": "q1", "text": "a <m> b </m>", "examples": [3]}\n', 1,
         "examples[0] must be a marked string"),
    Case("example markers", "topics", "t.jsonl", '{"qid": "q1", "text": "a <m> b </m>", "examples": ["c d"]}\n', 1,
         "examples[0]: no <m> ... </m> markers"),
    # -- qrels
    Case("qrels columns", "qrels", "q.txt", "q1 0 d1\n", 1, "expected 'qid iter docid relevance'"),
    Case("qrels relevance", "qrels", "q.txt", "q1 0 d1 yes\n", 1, "relevance 'yes' is not an integer"),
    Case("qrels conflict", "qrels", "q.txt", "q1 0 d1 1\nq1 0 d1 0\n", 2, "conflicting judgment for (q1, d1)"),
    Case("qrels duplicate", "qrels", "q.txt", "q1 0 d1 1\nq1 0 d1 1\n", 2,
         "duplicate judgment for (q1, d1) (first on line 1)"),
    Case("qrels odd whitespace", "qrels", "q.txt", "q1 0 d\u00a01 1\n", 1, "contains the character U+00A0"),
    Case("qrels empty", "qrels", "q.txt", "", None, "no judgments found"),
    # -- runs
    Case("run columns", "run", "r.trec", "q1 Q0 d1 1 2.0\n", 1, "expected 'qid Q0 docid rank score tag'"),
    Case("run rank", "run", "r.trec", "q1 Q0 d1 first 2.0 t\n", 1, "rank 'first' is not an integer"),
    Case("run score", "run", "r.trec", "q1 Q0 d1 1 high t\n", 1, "score 'high' is not a number"),
    Case("run nan", "run", "r.trec", "q1 Q0 d1 1 nan t\n", 1, "is not a finite number"),
    Case("run duplicate", "run", "r.trec", "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", 2,
         "docid 'd1' appears twice for query 'q1' (first on line 1)"),
    # -- configs (TOML into a dataclass schema)
    Case("toml syntax", "config", "c.toml", "[index]\ncorpus = \"c.jsonl\"\nthreads = \n", 3, "invalid TOML"),
    Case("toml utf-8", "config", "c.toml", b"[index]\ncorpus = \"caf\xe9\"\n", 2, "invalid UTF-8"),
    Case("unknown key", "config", "c.toml", "[index]\ncorpus = \"c\"\nthread = 2\n[index.annotation]\n", 3,
         "unknown key 'index.thread'; did you mean 'threads'?"),
    Case("unknown nested key", "config", "c.toml", "[index]\ncorpus = \"c\"\n[index.annotation]\nwindow = 1\n", 4,
         "unknown key 'index.annotation.window'; known keys:"),
    Case("wrong type", "config", "c.toml", "[index]\ncorpus = \"c\"\nthreads = \"two\"\n[index.annotation]\n", 3,
         "threads must be int"),
    Case("missing key", "config", "c.toml", "[index]\nthreads = 2\n[index.annotation]\n", None,
         "missing required key(s) index.corpus"),
    Case("missing table", "config", "c.toml", "[other]\nx = 1\n", None, "no [index] table"),
    # -- recipes: every kind of component is checked against its declaration (hybrid.core.registry)
    Case("recipe type", "recipe", "r.toml", RECIPE + 'type = "multifeld"\n', 3,
         "unknown system type 'multifeld'; known: bm25, bm25f, dense"),
    Case("recipe required key", "recipe", "r.toml", RECIPE + 'type = "pipeline"\n', 3,
         "system type 'pipeline' needs 'first': the system whose run the rerankers reorder"),
    Case("recipe choice", "recipe", "r.toml", RECIPE + 'type = "fuse"\nrecipes = ["bm25", "multifield"]\n'
         'method = "rff"\n', 5, "got 'rff'; did you mean 'rrf'?"),
    Case("reranker key", "recipe", "r.toml", PIPELINE + '{ type = "ltr", model = "m", dpeth = 5 }]\n', 5,
         "unknown key 'dpeth' for a ltr reranker; allowed: ['depth', 'featureset', 'learner', 'model', 'params', "
         "'train_queries', 'type']; did you mean 'depth'?"),
    Case("learner parameter", "recipe", "r.toml",
         PIPELINE + '{ type = "ltr", model = "m", learner = "lambdamart", params = { num_leafs = 3 } }]\n', 5,
         "unknown parameter 'num_leafs' for learner 'lambdamart' (an ltr reranker's params)"),
]


def read(case: Case, path: Path):
    if case.reader == "corpus":
        return list(read_corpus(path))
    if case.reader == "topics":
        return read_topics(path, resolve=PASSAGES.get)
    if case.reader == "qrels":
        return read_qrels(path)
    if case.reader == "run":
        return read_run(path)
    if case.reader == "recipe":
        return load_recipe(str(path)).build(Context(index=None))
    return load_config(path, IndexConfig, section="index")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_error_names_file_line_and_problem(case: Case, tmp_path: Path) -> None:
    path = tmp_path / case.filename
    if case.content == "DIR":
        path.mkdir()
    elif isinstance(case.content, bytes):
        path.write_bytes(case.content)
    elif case.content is not None:
        path.write_text(case.content, encoding="utf-8")
    expected = ConfigError if case.reader in ("config", "recipe") else InputError
    with pytest.raises(expected) as caught:
        read(case, path)
    error = caught.value
    assert error.path == str(path)
    assert error.line == case.line
    where = f"{path}:{case.line}: " if case.line is not None else f"{path}: "
    assert str(error).startswith(where), str(error)
    assert case.fragment in error.reason, error.reason


def test_every_error_is_documented() -> None:
    docs = DOCS.read_text(encoding="utf-8").replace("\\|", "|")
    missing = sorted({c.fragment for c in CASES if c.fragment not in docs})
    assert not missing, f"docs/errors.md lacks: {missing}"


def test_annotation_config_section_round_trip(tmp_path: Path) -> None:
    """The happy path of the same loader: every key given is used, ints widen to floats where declared."""
    path = tmp_path / "c.toml"
    path.write_text('[index]\ncorpus = "c.jsonl"\nthreads = 2\n[index.annotation]\ncontext_window = 1\n'
                    'gold_ner = false\n', encoding="utf-8")
    config = load_config(path, IndexConfig, section="index")
    assert config == IndexConfig(corpus="c.jsonl", threads=2,
                                 annotation=AnnotationConfig(context_window=1, gold_ner=False))

"""``python -m hybrid.data``: the ECB+ release converter on a hand-written release sample, derive, bundled.

The sample imitates the ECB+ 1.0 release layout (``ECB+/<topic>/<topic>_<n>ecb(plus).xml`` beside
``ECBplus_coreference_sentences.csv``): tokens with ``t_id``/``sentence``/``number``, mention markables
anchored to tokens, instance markables without anchors, CROSS_DOC_COREF relations whose ``note`` is the
cluster id, and INTRA_DOC_COREF chains. The real release is not available to the tests.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hybrid.cli.common import run_cli
from hybrid.cli.data import main
from hybrid.core.formats import labelled
from hybrid.core.formats.ecbplus import detokenise, kind_of_tag
from hybrid.core.formats.qrels import read_qrels

ERRORS_DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def document(name: str, sentences: list[str], markables: list[tuple[str, str, list[int]]],
             cross: dict[str, list[str]], intra: list[list[str]] = ()) -> str:
    """An ECB+ XML document: ``sentences`` are space-separated tokens; anchors are 1-based t_ids."""
    out = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>', f'<Document doc_name="{name}" doc_id="D{name}">']
    t_id = 0
    for s, sentence in enumerate(sentences):
        for n, token in enumerate(sentence.split()):
            t_id += 1
            out.append(f'<token t_id="{t_id}" sentence="{s}" number="{n}">{token}</token>')
    out.append("<Markables>")
    for tag, m_id, anchors in markables:
        out.append(f'<{tag} m_id="{m_id}" note="" >')
        out += [f'<token_anchor t_id="{a}"/>' for a in anchors]
        out.append(f"</{tag}>")
    out.append('<HUMAN_PART_PER m_id="900" RELATED_TO="" TAG_DESCRIPTOR="t_instance" instance_id="HUM1" />')
    out.append("</Markables>")
    out.append("<Relations>")
    r_id = 0
    for note, m_ids in cross.items():
        r_id += 1
        out.append(f'<CROSS_DOC_COREF r_id="{r_id}" note="{note}" >')
        out += [f'<source m_id="{m}" />' for m in m_ids] + ['<target m_id="900" />', "</CROSS_DOC_COREF>"]
    for m_ids in intra:
        r_id += 1
        out.append(f'<INTRA_DOC_COREF r_id="{r_id}" >')
        out += [f'<source m_id="{m}" />' for m in m_ids] + ['<target m_id="900" />', "</INTRA_DOC_COREF>"]
    out += ["</Relations>", "</Document>"]
    return "\n".join(out) + "\n"


DOCS = {
    ("1", "1_1ecb.xml"): document(
        "1_1ecb.xml",
        ["Tara Reid checked into rehab , her rep said .", "She was treated ( again ) there ."],
        [("HUMAN_PART_PER", "20", [1, 2]), ("ACTION_OCCURRENCE", "21", [3, 4]), ("HUMAN_PART_PER", "22", [7, 8]),
         ("ACTION_REPORTING", "23", [9]), ("HUMAN_PART_PER", "24", [11]), ("NEG_ACTION_OCCURRENCE", "25", [13]),
         ("UNKNOWN_INSTANCE_TAG", "26", [14]), ("LOC_FAC", "27", [10, 11])],  # 27 crosses sentences
        {"HUM1": ["20", "24"], "ACT1": ["21"]}, [["22"]]),
    ("1", "1_2ecbplus.xml"): document(
        "1_2ecbplus.xml",
        ["Actress Tara Reid entered rehab on Monday ."],
        [("HUMAN_PART_PER", "5", [2, 3]), ("ACTION_OCCURRENCE", "6", [4, 5]), ("TIME_DATE", "7", [7])],
        {"HUM1": ["5"], "ACT1": ["6"], "TIM9": ["7"]}),
    ("2", "2_1ecb.xml"): document(
        "2_1ecb.xml", ["Reid left the clinic ."], [("HUMAN_PART_PER", "3", [1]), ("ACTION_OCCURRENCE", "4", [2])],
        {"HUM1": ["3"], "ACT7": ["4"]}),
    ("36", "36_1ecb.xml"): document(
        "36_1ecb.xml", ["A test sentence ."], [("ACTION_OCCURRENCE", "1", [2])], {"ACT36": ["1"]}),
}
CSV = "Topic,File,Sentence Number\n1,1ecb,0\n1,2ecbplus,0\n2,2_1ecb,0\n"


def write_release(root: Path) -> Path:
    for (topic, name), text in DOCS.items():
        (root / "ECB+" / topic).mkdir(parents=True, exist_ok=True)
        (root / "ECB+" / topic / name).write_text(text, encoding="utf-8")
    (root / "ECBplus_coreference_sentences.csv").write_text(CSV, encoding="utf-8")
    return root


def convert(tmp_path: Path, *extra: str) -> list[dict]:
    release = write_release(tmp_path / "ECB+_LREC2014")
    assert run_cli(main, ["ecbplus", "--from", str(release), "--output", str(tmp_path / "out"), *extra]) == 0
    lines = (tmp_path / "out" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines]


def test_detokenise_and_tags():
    text, spans = detokenise(["Reid", "(", "again", ")", "said", "it", "'s", "over", "."])
    assert text == "Reid (again) said it's over."
    assert [text[a:b] for a, b in spans] == ["Reid", "(", "again", ")", "said", "it", "'s", "over", "."]
    assert [kind_of_tag(t) for t in ("ACTION_OCCURRENCE", "NEG_ACTION_STATE", "HUMAN_PART_GPE", "NON_HUMAN_PART",
                                     "LOC_GEO", "TIME_DATE", "UNKNOWN_INSTANCE_TAG")] == \
        ["event", "event", "entity", "entity", "entity", "entity", None]


def test_the_release_becomes_a_labelled_collection(tmp_path, capsys):
    passages = convert(tmp_path)
    by_id = {p["id"]: p for p in passages}
    assert list(by_id) == ["1_1ecb:0", "1_1ecb:1", "1_2ecbplus:0", "2_1ecb:0", "36_1ecb:0"]
    first = by_id["1_1ecb:0"]
    assert first["text"] == "Tara Reid checked into rehab, her rep said."
    assert (first["topic"], first["split"], first["sent_id"], first["validated"]) == (1, "train", 0, True)
    assert by_id["1_1ecb:1"]["validated"] is False
    assert (by_id["2_1ecb:0"]["split"], by_id["2_1ecb:0"]["validated"]) == ("dev", True)
    assert by_id["36_1ecb:0"]["split"] == "test"
    mentions = {m["m_id"]: m for m in first["mentions"]}
    assert set(mentions) == {"20", "21", "22", "23"}
    for m in first["mentions"]:
        assert first["text"][m["start"]:m["end"]] == m["text"]
    assert (mentions["20"]["text"], mentions["20"]["kind"], mentions["20"]["cluster"]) == ("Tara Reid", "entity",
                                                                                          "HUM1")
    assert (mentions["21"]["text"], mentions["21"]["kind"], mentions["21"]["tag"]) == ("checked into", "event",
                                                                                        "ACTION_OCCURRENCE")
    assert mentions["22"]["cluster"] == "INTRA:1_1ecb:3" and mentions["22"]["chain"] == "1_1ecb#r3"  # intra-doc
    assert mentions["23"]["cluster"] == "SINGLETON:1_1ecb:23" and mentions["23"]["chain"] == "1_1ecb#m23"
    assert mentions["20"]["chain"] == "1_1ecb#r1" and mentions["21"]["chain"] == "1_1ecb#r2"
    second = {m["m_id"]: m for m in by_id["1_1ecb:1"]["mentions"]}
    assert set(second) == {"24", "25"} and second["25"]["kind"] == "event"  # 26 unknown tag, 27 two sentences
    assert by_id["1_1ecb:1"]["text"] == "She was treated (again) there."
    assert by_id["36_1ecb:0"]["mentions"][0].get("cluster") is None  # held-out labels dropped
    report = json.loads(capsys.readouterr().out)
    assert (report["documents"], report["passages"], report["skipped_cross_sentence"],
            report["skipped_unknown_tag"], report["test_labels_dropped"]) == (4, 5, 1, 1, 1)


def test_test_labels_are_kept_only_on_request(tmp_path):
    passages = convert(tmp_path, "--keep-test-labels")
    assert passages[-1]["mentions"][0]["cluster"] == "ACT36"


def test_derive_from_the_converted_release(tmp_path, capsys):
    convert(tmp_path)
    capsys.readouterr()
    argv = ["derive", "--corpus", str(tmp_path / "out" / "corpus.jsonl"), "--split", "train",
            "--output", str(tmp_path / "train")]
    assert run_cli(main, argv) == 0
    summary = json.loads(capsys.readouterr().out)
    qrels = read_qrels(tmp_path / "train" / "qrels.txt")
    # train queries only; relevance also from the dev topic's sentence (cluster HUM1 reaches topic 2)
    assert qrels == {"en-1_1ecb-20": {"1_2ecbplus:0": 1, "2_1ecb:0": 1}, "ev-1_1ecb-21": {"1_2ecbplus:0": 1},
                     "en-1_1ecb-24": {"1_2ecbplus:0": 1, "2_1ecb:0": 1},
                     "en-1_2ecbplus-5": {"1_1ecb:0": 1, "1_1ecb:1": 1, "2_1ecb:0": 1},
                     "ev-1_2ecbplus-6": {"1_1ecb:0": 1}}
    assert (summary["queries"], summary["split"], summary["name"]) == (5, "train", "corpus")
    queries = [json.loads(x) for x in (tmp_path / "train" / "queries.jsonl").read_text().splitlines()]
    assert {q["topic"] for q in queries} == {1}


def test_bundled_command_writes_the_default_set(tmp_path, capsys, monkeypatch):
    """The command's wiring, on a small stand-in for the bundled file (the real one: test_labelled.py)."""
    passages = convert(tmp_path)
    capsys.readouterr()
    bundle = tmp_path / "bundle.jsonl.gz"
    bundle.write_bytes(gzip.compress("".join(json.dumps(p) + "\n" for p in passages).encode()))
    monkeypatch.setattr(labelled, "BUNDLED", bundle)
    assert run_cli(main, ["bundled", "--output", str(tmp_path / "b")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["name"], summary["form"], summary["queries"]) == ("ecbplus-train", "bundled", 6)
    assert (tmp_path / "b" / "corpus.jsonl").read_text().count("\n") == len(passages)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: (r / "ECB+" / "1" / "1_1ecb.xml").write_text('<Document>\n<token t_id="1" sentence="0">x</tok>\n'),
     "1_1ecb.xml:2: broken XML"),
    (lambda r: (r / "ECB+" / "2" / "2_1ecb.xml").write_text(
        DOCS["2", "2_1ecb.xml"].replace('<token_anchor t_id="2"/>', '<token_anchor t_id="99"/>')),
     "2_1ecb.xml: <ACTION_OCCURRENCE m_id='4'> anchors token 99, which is not in the document"),
    (lambda r: (r / "ECBplus_coreference_sentences.csv").unlink(),
     "ECBplus_coreference_sentences.csv: not found; give its path with --sentences"),
    (lambda r: (r / "ECBplus_coreference_sentences.csv").write_text(CSV + "1,3ecb\n"),
     "ECBplus_coreference_sentences.csv:5: expected 'topic,document,sentence_number', found 2 column(s)"),
])
def test_a_broken_release_is_one_line_naming_the_file(tmp_path, capsys, damage, message):
    release = write_release(tmp_path / "rel")
    damage(release)
    assert run_cli(main, ["ecbplus", "--from", str(release), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert message.split(": ", 1)[1] in ERRORS_DOC.read_text(encoding="utf-8")
    assert not (tmp_path / "out" / "corpus.jsonl").exists()


def test_derive_never_writes_over_its_own_corpus(tmp_path, capsys):
    """Issue 36 §1: ``derive --output`` the folder that holds its --corpus would replace the labelled corpus with
    the derived copy; the output policy refuses it in one line and the corpus stays byte-identical."""
    convert(tmp_path)
    corpus = tmp_path / "out" / "corpus.jsonl"
    before = corpus.read_bytes()
    capsys.readouterr()
    assert run_cli(main, ["derive", "--corpus", str(corpus), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--corpus" in err[0] and err[0].startswith("error: ")
    assert corpus.read_bytes() == before and not (tmp_path / "out" / "qrels.txt").exists()

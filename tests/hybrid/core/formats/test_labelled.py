"""Labelled collections: reading, deriving training queries/qrels, materialising, the bundled set."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hybrid.core.errors import InputError
from hybrid.core.formats.ecbplus import split_of
from hybrid.core.formats.labelled import (
    BUNDLED,
    derive_training,
    materialize_training_set,
    read_labelled,
)
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.topics import read_topics

ERRORS_DOC = Path(__file__).resolve().parents[4] / "docs" / "errors.md"


def assert_documented(wording: str) -> None:
    """The error catalogue (docs/errors.md) lists every message these tests provoke."""
    assert wording in ERRORS_DOC.read_text(encoding="utf-8").replace("\\|", "|"), wording


def m(text: str, word: str, cluster: str | None = None, kind: str = "event", m_id: str | None = None) -> dict:
    start = text.index(word)
    out = {"start": start, "end": start + len(word), "kind": kind}
    if cluster is not None:
        out["cluster"] = cluster
    if m_id is not None:
        out["m_id"] = m_id
    return out


def line(pid: str, doc: str, text: str, mentions: list[dict] | None, **extra) -> dict:
    obj = {"id": pid, "doc_id": doc, "text": text, **extra}
    if mentions is not None:
        obj["mentions"] = mentions
    return obj


A0 = "Quake hits the coast of Chile."
A1 = "Rescuers search the rubble."
B0 = "An earthquake struck Chile on Monday."
C0 = "Chile mourns the victims of the quake."
D0 = "Markets fell on Tuesday."


def corpus_lines() -> list[dict]:
    return [
        line("a:0", "a", A0, [m(A0, "hits", "E1", m_id="1"), m(A0, "Chile", "P1", "entity", m_id="2")], group="g1"),
        line("a:1", "a", A1, [m(A1, "search", "E2", m_id="3")], group="g1"),
        line("b:0", "b", B0, [m(B0, "struck", "E1", m_id="1"), m(B0, "Chile", "P1", "entity")], group="g1"),
        line("c:0", "c", C0, [m(C0, "quake", "E1"), m(C0, "mourns")], group="g2"),
        line("d:0", "d", D0, None),  # an unannotated candidate / negative
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_derivation_follows_the_cluster_rule(tmp_path):
    path = write_jsonl(tmp_path / "labelled.jsonl", corpus_lines())
    queries, qrels = derive_training(read_labelled(path), path)
    by_qid = {q["qid"]: q for q in queries}
    # one query per labelled mention with something relevant elsewhere; E2 (one document) and the unlabelled
    # "mourns" give none; ids are <ev|en>-<doc>-<m_id>, or <prefix>-<passage>-<start>-<end> without m_id
    assert list(by_qid) == ["ev-a-1", "en-a-2", "ev-b-1", "en-b:0-21-26", "ev-c:0-32-37"]
    assert qrels["ev-a-1"] == {"b:0": 1, "c:0": 1}  # never its own document
    assert qrels["ev-c:0-32-37"] == {"a:0": 1, "b:0": 1}
    assert qrels["en-a-2"] == {"b:0": 1}
    q = by_qid["ev-a-1"]
    assert (q["passage_id"], q["doc_id"], q["mention"], q["cluster"], q["group"]) == ("a:0", "a", "hits", "E1", "g1")
    assert (q["n_relevant"], q["n_relevant_docs"]) == (2, 2)
    assert by_qid["ev-c:0-32-37"]["group"] == "g2"


def test_derived_queries_read_back_as_topics(tmp_path):
    path = write_jsonl(tmp_path / "labelled.jsonl", corpus_lines())
    ts = materialize_training_set(path, tmp_path / "out")
    texts = {r["id"]: r["text"] for r in corpus_lines()}
    topics = read_topics(ts.topics, resolve=texts.get)
    assert [t.mention for t in topics] == ["hits", "Chile", "struck", "Chile", "quake"]
    assert topics[0].meta["group"] == "g1" and topics[0].doc_id == "a"
    assert read_qrels(ts.qrels)["ev-a-1"] == {"b:0": 1, "c:0": 1}
    assert ts.corpus.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r[0]["mentions"][0].update(cluster=["E1"]), "labelled.jsonl:1: mentions[0].cluster must be a string"),
    (lambda r: r[1]["mentions"][0].update(cluster="E 2"), "labelled.jsonl:2: mentions[0].cluster 'E 2' must be"),
    (lambda r: r[2].update(topic=3), "labelled.jsonl:3: both 'group' and 'topic' are given"),
    (lambda r: r[0]["mentions"][0].update(Cluster="x"), "labelled.jsonl:1: unknown key 'mentions[0].Cluster' looks"),
    (lambda r: r[3].update(grop="x"), "labelled.jsonl:4: unknown key 'grop' looks like a misspelling of 'group'"),
    (lambda r: r[1]["mentions"][0].update(m_id="1"), "labelled.jsonl:2: two mentions give the query id 'ev-a-1' "
                                                     "(first on line 1)"),
    (lambda r: [mm.pop("cluster", None) for x in r for mm in x.get("mentions", [])], "no mention carries a 'cluster'"),
])
def test_bad_labelled_lines_name_file_and_line(tmp_path, change, message):
    rows = corpus_lines()
    change(rows)
    path = write_jsonl(tmp_path / "labelled.jsonl", rows)
    with pytest.raises(InputError) as error:
        derive_training(read_labelled(path), path)
    assert message in str(error.value)
    assert_documented(error.value.reason.split(" (see ")[0])


def test_corpus_rules_apply_to_labelled_passages(tmp_path):
    rows = corpus_lines()
    rows[0]["mentions"][0]["end"] = 99
    path = write_jsonl(tmp_path / "labelled.jsonl", rows)
    with pytest.raises(InputError, match=r"labelled.jsonl:1: mentions\[0\] offsets \[6, 99\) lie outside"):
        read_labelled(path)


def test_no_shared_cluster_gives_a_clear_error(tmp_path):
    path = write_jsonl(tmp_path / "labelled.jsonl", [line("a:0", "a", A0, [m(A0, "hits", "E1")]),
                                                     line("a:1", "a", A1, [m(A1, "search", "E1")])])
    with pytest.raises(InputError, match="no cluster id is shared by mentions of two different documents"):
        derive_training(read_labelled(path), path)


def test_materialisation_is_reused_until_the_source_changes(tmp_path):
    path = write_jsonl(tmp_path / "labelled.jsonl", corpus_lines())
    out = tmp_path / "out"
    first = materialize_training_set(path, out)
    stamp = first.qrels.stat().st_mtime_ns
    again = materialize_training_set(path, out)
    assert again == first and first.qrels.stat().st_mtime_ns == stamp
    first.qrels.write_text("ev-a-1 0 d:0 1\n")  # a damaged file is rewritten, not trusted
    materialize_training_set(path, out)
    assert read_qrels(first.qrels)["ev-a-1"] == {"b:0": 1, "c:0": 1}
    rows = corpus_lines()
    rows[3]["mentions"][0]["cluster"] = "E9"
    write_jsonl(path, rows)
    changed = materialize_training_set(path, out)
    assert changed.fingerprint != first.fingerprint
    assert set(read_qrels(changed.qrels)["ev-a-1"]) == {"b:0"}
    assert json.loads((out / "trainset.json").read_text())["fingerprint"] == changed.fingerprint


def test_queries_form_derives_qrels_from_query_clusters(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", [{k: v for k, v in r.items() if k != "mentions"} for r in corpus_lines()])
    write_jsonl(folder / "queries.jsonl", [
        {"qid": "q1", "passage_id": "a:0", "start": 6, "end": 10, "cluster": "E1", "topic": 1},
        {"qid": "q2", "passage_id": "b:0", "start": 14, "end": 20, "cluster": "E1", "topic": 1},
        {"qid": "q3", "passage_id": "a:1", "start": 9, "end": 15, "cluster": "E2", "topic": 1},
    ])
    ts = materialize_training_set(folder, tmp_path / "out")
    assert read_qrels(ts.qrels) == {"q1": {"b:0": 1}, "q2": {"a:0": 1}}
    assert ts.name == "set"
    (folder / "qrels.txt").write_text("q1 0 b:0 1\nq3 0 z:9 1\n")
    with pytest.raises(InputError, match=r"qrels.txt: query 'q3' judges passage 'z:9', which is not in"):
        materialize_training_set(folder, tmp_path / "out")
    (folder / "qrels.txt").write_text("q1 0 b:0 1\nq3 0 c:0 1\n")
    assert read_qrels(materialize_training_set(folder, tmp_path / "out").qrels) == {"q1": {"b:0": 1},
                                                                                     "q3": {"c:0": 1}}


def test_unknown_source_names_the_accepted_forms(tmp_path):
    with pytest.raises(InputError, match="expected a labelled-passages JSONL file, or a folder"):
        materialize_training_set(tmp_path / "nothing", tmp_path / "out")


def test_bundled_set_holds_ecbplus_train_topics_only(tmp_path):
    with gzip.open(BUNDLED, "rt", encoding="utf-8") as handle:
        topics = {json.loads(x)["topic"] for x in handle}
    assert topics and {split_of(t) for t in topics} == {"train"}
    assert (BUNDLED.parent / "LICENSE_ECBplus.TXT").is_file()
    ts = materialize_training_set(None, tmp_path / "bundled")
    assert ts.name == "ecbplus-train"
    qrels = read_qrels(ts.qrels)
    # benchmarks/trainset_bundle.py check: 9,962 of ECB+'s 9,963 released train queries (see the docs)
    assert len(qrels) == 9962 and sum(map(len, qrels.values())) == 196228 - 964 - 9
    with ts.topics.open() as handle:
        first = json.loads(handle.readline())
    assert first["qid"] == "en-1_10ecb-20" and first["topic"] == 1


def test_a_split_keeps_its_queries_and_reads_relevance_from_every_passage(tmp_path):
    rows = corpus_lines()
    for row, split in zip(rows, ["train", "train", "dev", "train", "dev"], strict=True):
        row["split"] = split
    path = write_jsonl(tmp_path / "labelled.jsonl", rows)
    queries, qrels = derive_training(read_labelled(path), path, split="train")
    assert [q["qid"] for q in queries] == ["ev-a-1", "en-a-2", "ev-c:0-32-37"]
    assert qrels["ev-a-1"] == {"b:0": 1, "c:0": 1}  # b:0 is a dev passage, still relevant
    with pytest.raises(InputError, match="no passage with 'split': 'test' holds a training query"):
        derive_training(read_labelled(path), path, split="test")

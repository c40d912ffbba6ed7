"""The Python front door (hybrid.api): the same runs as the CLIs, conversions, cheap import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import hybrid
from hybrid.cli.search import main as search_main
from hybrid.core.formats.runs import read_run


def same_run(api_run, file_run):
    assert sorted(api_run) == sorted(file_run)
    for qid in file_run:
        assert [h.docid for h in api_run[qid]] == [h.docid for h in file_run[qid]]
        assert [round(h.score, 6) for h in api_run[qid]] == pytest.approx([h.score for h in file_run[qid]], abs=1e-6)


def test_import_starts_no_jvm_and_no_torch():
    code = ("import sys, hybrid; hybrid.Run; hybrid.system; "
            "print(sorted(m for m in ('jnius', 'torch', 'pandas', 'pyserini') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("recipe", "argv"), [("multifield-net", ["--model", "multifield"]),
                                              ("bm25", ["--model", "bm25"])])
def test_api_run_equals_the_cli_run(tiny_index, sparse_index, data_dir, tmp_path, recipe, argv):
    """hybrid.search --model multifield runs the multifield-net recipe; --model bm25 the bm25 recipe."""
    out = tmp_path / "cli.trec"
    topics = data_dir / "tiny_topics.jsonl"
    assert search_main(["--index", str(tiny_index), "--topics", str(topics), *argv, "--output", str(out),
                        "--quiet"]) == 0
    system = hybrid.system(recipe, sparse_index)
    run = system.search(hybrid.topics(topics, sparse_index))
    assert isinstance(run, hybrid.Run) and run.name == recipe
    same_run(run, read_run(out))
    # the topics file itself works too, and evaluation matches the file's
    again = system.search(str(topics))
    same_run(again, read_run(out))
    qrels = data_dir / "tiny_qrels.txt"
    table = hybrid.evaluate(run, qrels)
    assert set(table) == {"all", "event", "entity"}
    assert table["all"]["AP@100"] == pytest.approx(hybrid.evaluate(out, qrels, by_kind=False)["all"]["AP@100"],
                                                   abs=1e-6)


def test_conversions_dataframe_dict_and_files(sparse_index, data_dir, tmp_path):
    run = hybrid.system("multifield", sparse_index, hits=5).search(hybrid.topics(data_dir / "tiny_topics.tsv"))
    frame = run.to_dataframe()
    assert list(frame.columns[:4]) == ["qid", "docno", "rank", "score"]
    assert {"start", "end", "mention"} <= set(frame.columns)
    first = frame[(frame.qid == "q-ev-quake") & (frame["rank"] == 1)].iloc[0]
    assert first.docno == run["q-ev-quake"][0].docid and first.start == run["q-ev-quake"][0].mention_start
    assert (frame.groupby("qid")["rank"].min() == 1).all()
    as_dict = run.to_dict()
    assert as_dict["q-ev-quake"] == {h.docid: h.score for h in run["q-ev-quake"]}
    # ir_measures takes the dict form as it is
    import ir_measures

    qrels = hybrid.qrels(data_dir / "tiny_qrels.txt")
    ap = ir_measures.calc_aggregate([ir_measures.AP @ 100], qrels, as_dict)[ir_measures.AP @ 100]
    assert ap == pytest.approx(hybrid.evaluate(run, qrels, measures=["AP@100"])["all"]["AP@100"])
    # round trips: DataFrame, dict, TREC file with spans and meta
    back = hybrid.Run.from_dataframe(frame)
    assert back.to_dict() == as_dict and back["q-ev-quake"][0].mention_text == first.mention
    assert hybrid.Run.from_dict(as_dict).to_dict() == as_dict
    meta = run.write(tmp_path / "api.trec", spans=tmp_path / "api.spans.jsonl")
    assert meta["model"] == "multifield" and ("git_commit" in meta["code"] or "source_sha256" in meta["code"])
    read = hybrid.Run.read(tmp_path / "api.trec", spans=tmp_path / "api.spans.jsonl")
    assert read["q-ev-quake"][0].mention_start == run["q-ev-quake"][0].mention_start
    assert json.loads((tmp_path / "api.trec.meta.json").read_text())["run_sha256"]


def test_systems_from_stages_and_dicts(sparse_index, data_dir):
    from hybrid.retrieval.sparse import MultiFieldBM25

    topics = hybrid.topics(data_dir / "tiny_topics.jsonl", sparse_index)
    by_dict = hybrid.system({"type": "multifield", "weights": "mention=1"}, sparse_index).search(topics, k=3)
    by_stage = hybrid.system(MultiFieldBM25(sparse_index, "mention=1"), sparse_index).search(topics, k=3)
    assert by_dict.to_dict() == by_stage.to_dict()
    assert all(len(hits) <= 3 for hits in by_dict.values())
    assert "multifield-net" in hybrid.list_recipes()


def test_topics_read_without_the_index_get_their_own_document_at_search(sparse_index, data_dir, tmp_path):
    two = tmp_path / "two.tsv"
    two.write_text("".join(line.rsplit("\t", 1)[0] + "\n"
                           for line in (data_dir / "tiny_topics.tsv").read_text().splitlines()))
    topics = hybrid.topics(two)
    assert not any(t.doc_id for t in topics)
    run = hybrid.system("bm25", sparse_index).search(topics)
    assert not any(t.doc_id for t in topics)  # the caller's topics are not changed
    own = {"q-ev-checkin": "a1", "q-en-reid": "a1", "q-ev-quake": "e5"}
    assert not [h for q, hits in run.items() for h in hits if h.docid.split(":")[0] == own[q]]
    assert [t.doc_id for t in run.topics] == ["a1", "a1", "e5"]

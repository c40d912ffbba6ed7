"""`python -m hybrid.search` end to end on the tiny index: format, exclusion, spans, evaluation."""

from __future__ import annotations

import json

import pytest

from hybrid.cli.search import main as search_main
from hybrid.core.formats.runs import read_run


def run_lines(path):
    return [line.split() for line in path.read_text().splitlines()]


@pytest.mark.parametrize("model", ["multifield", "bm25"])
def test_trec_run_format_and_own_document_excluded(tiny_index, data_dir, tmp_path, model):
    out = tmp_path / "run.trec"
    rc = search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.tsv"), "--model", model,
                      "--output", str(out), "--hits", "5", "--quiet"])
    assert rc == 0
    rows = run_lines(out)
    assert rows and all(len(r) == 6 and r[1] == "Q0" for r in rows)
    for qid in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == qid]
        assert [int(r[3]) for r in mine] == list(range(1, len(mine) + 1))
        scores = [float(r[4]) for r in mine]
        assert scores == sorted(scores, reverse=True)
        assert len({r[2] for r in mine}) == len(mine) <= 5
    own = {"q-ev-checkin": "a1", "q-en-reid": "a1", "q-ev-quake": "e5"}
    assert not [r for r in rows if r[2].split(":")[0] == own[r[0]]]
    meta = json.loads((tmp_path / "run.trec.meta.json").read_text())
    assert meta["model"] == model and meta["versions"]["pyserini"] == "1.6.0"


def test_multifield_finds_the_coreferent_mention_and_names_it(tiny_index, data_dir, tmp_path):
    out, spans = tmp_path / "mf.trec", tmp_path / "mf.spans.jsonl"
    # Arguments weigh as much as the trigger: Tara Reid "entered" rehab (b2:0, a coreferent mention reached through
    # the query's chain) beats Lindsay Lohan "checked into" rehab (c3:0, same words, other event).
    search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--output", str(out),
                 "--spans", str(spans), "--weights", "mention=1,chain:mention=1,ner=1", "--quiet"])
    run = read_run(out)
    assert [h.docid for h in run["q-ev-checkin"][:2]] == ["b2:0", "c3:0"]
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    top = [r for r in rows if r["qid"] == "q-ev-checkin" and r["rank"] == 1][0]
    assert top["mention"] == "entered" and (top["start"], top["end"]) == (10, 17)
    quake = [r for r in rows if r["qid"] == "q-ev-quake" and r["rank"] == 1][0]
    assert quake["docid"] == "d4:0" and quake["mention"] == "earthquake"


def test_event_and_entity_queries_from_one_sentence_rank_differently(tiny_index, data_dir, tmp_path):
    out = tmp_path / "mf.trec"
    search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--output", str(out),
                 "--quiet"])
    run = read_run(out)
    event = [h.docid for h in run["q-ev-checkin"]]
    entity = [h.docid for h in run["q-en-reid"]]
    assert event != entity
    assert entity[:2] == ["b2:0", "b2:1"] or set(entity[:2]) == {"b2:0", "b2:1"}


def test_same_command_twice_gives_identical_runs(tiny_index, data_dir, tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.trec"
        search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.tsv"), "--output", str(out),
                     "--quiet"])
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_bad_topics_and_missing_index_are_clear_errors(tiny_index, tmp_path, capsys):
    from hybrid.cli.common import run_cli

    bad = tmp_path / "topics.tsv"
    bad.write_text("q1\tno markers here\n")
    args = ["--index", str(tiny_index), "--topics", str(bad), "--output", str(tmp_path / "r")]
    assert run_cli(search_main, args) == 2
    assert f"{bad}:1: no <m> ... </m> markers" in capsys.readouterr().err
    assert run_cli(search_main, ["--index", str(tmp_path / "none"), "--topics", str(bad)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_eval_cli_by_kind(tiny_index, data_dir, tmp_path, capsys):
    from hybrid.cli.eval import main as eval_main

    out = tmp_path / "mf.trec"
    search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--output", str(out),
                 "--quiet"])
    capsys.readouterr()
    eval_main(["--qrels", str(data_dir / "tiny_qrels.txt"), "--run", str(out), "--topics",
               str(data_dir / "tiny_topics.jsonl"), "--by-kind", "--measures", "RR@10", "AP@100"])
    text = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in text.splitlines()[1:]}
    assert set(lines) == {"all", "event", "entity"}
    # RR@10 recomputed by hand from the run file and the qrels.
    relevant = {}
    for line in (data_dir / "tiny_qrels.txt").read_text().splitlines():
        qid, _, docid, rel = line.split()
        if int(rel) > 0:
            relevant.setdefault(qid, set()).add(docid)
    rr = {}
    for qid, hits in read_run(out).items():
        ranks = [i for i, h in enumerate(hits[:10], start=1) if h.docid in relevant.get(qid, ())]
        rr[qid] = 1 / ranks[0] if ranks else 0.0
    assert lines["event"][1] == "2" and lines["entity"][1] == "1"
    assert float(lines["all"][2]) == pytest.approx(sum(rr.values()) / 3, abs=1e-4)
    assert float(lines["entity"][2]) == pytest.approx(rr["q-en-reid"], abs=1e-4)


def test_multifield_returns_only_matching_candidates(sparse_index, data_dir):
    from hybrid.core.formats import read_topics
    from hybrid.retrieval.sparse import MultiFieldBM25

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    run = MultiFieldBM25(sparse_index, "mention=1").search(topics, 100)
    # The quake query's mention "earthquake" occurs as a candidate mention in d4:0 and e5:0 (own doc, excluded).
    assert [h.docid for h in run["q-ev-quake"]] == ["d4:0"]
    assert all(h.score > 0 for hits in run.values() for h in hits)


def test_a_recipe_runs_like_the_model_it_names(tiny_index, data_dir, tmp_path):
    """--model multifield is the recipe multifield-net assembled from the command line: same builders, same run."""
    topics = str(data_dir / "tiny_topics.tsv")
    by_model, by_recipe = tmp_path / "model.trec", tmp_path / "recipe.trec"
    assert search_main(["--index", str(tiny_index), "--topics", topics, "--output", str(by_model), "--quiet"]) == 0
    assert search_main(["--index", str(tiny_index), "--topics", topics, "--recipe", "multifield-net",
                        "--output", str(by_recipe), "--quiet"]) == 0
    assert [r[:5] for r in run_lines(by_model)] == [r[:5] for r in run_lines(by_recipe)]
    assert {r[5] for r in run_lines(by_recipe)} == {"multifield-net"}
    assert json.loads((tmp_path / "recipe.trec.meta.json").read_text())["model"] == "multifield-net"


def test_model_options_beside_a_recipe_and_bad_parameters_are_named(tiny_index, data_dir, tmp_path):
    from hybrid.core.errors import ConfigError, InputError

    topics = str(data_dir / "tiny_topics.tsv")
    with pytest.raises(InputError, match="--weights sets a --model option"):
        search_main(["--index", str(tiny_index), "--topics", topics, "--recipe", "bm25", "--weights", "mention=1",
                     "--output", str(tmp_path / "a.trec"), "--quiet"])
    with pytest.raises(ConfigError, match="<input>: --weights: "):
        search_main(["--index", str(tiny_index), "--topics", topics, "--weights", "nosuchsource=1",
                     "--output", str(tmp_path / "b.trec"), "--quiet"])
    assert not (tmp_path / "b.trec").exists()


def test_a_pipeline_recipe_runs_from_the_search_command(tiny_index, data_dir, tmp_path):
    """--recipe takes any recipe, rerankers included (here a feature union, which keeps the first stage's run)."""
    recipe = tmp_path / "bm25-union.toml"
    recipe.write_text('name = "bm25-union"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                      'rerankers = [{ type = "union", recipes = ["multifield"] }]\n')
    topics = str(data_dir / "tiny_topics.tsv")
    plain, piped = tmp_path / "bm25.trec", tmp_path / "piped.trec"
    assert search_main(["--index", str(tiny_index), "--topics", topics, "--model", "bm25", "--hits", "3",
                        "--output", str(plain), "--quiet"]) == 0
    assert search_main(["--index", str(tiny_index), "--topics", topics, "--recipe", str(recipe), "--hits", "3",
                        "--output", str(piped), "--quiet"]) == 0
    assert [r[:5] for r in run_lines(plain)] == [r[:5] for r in run_lines(piped)]
    assert {r[5] for r in run_lines(piped)} == {"bm25-union"}


def test_search_evaluates_the_topics_it_ran_not_every_judged_query(tiny_index, data_dir, tmp_path, capsys):
    one = tmp_path / "one.tsv"
    one.write_text((data_dir / "tiny_topics.tsv").read_text().splitlines()[2] + "\n")
    assert search_main(["--index", str(tiny_index), "--topics", str(one), "--qrels", str(data_dir / "tiny_qrels.txt"),
                        "--output", str(tmp_path / "one.trec"), "--quiet"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["all"][1] == "1"  # one topic searched: one query averaged, not the three the qrels judge

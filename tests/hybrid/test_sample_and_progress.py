"""'sample' wherever qrels/topics are named (hybrid.eval), progress bars for bm25 and per recipe (hybrid.experiment)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from hybrid.cli.eval import main as eval_main
from hybrid.cli.experiment import run_recipes
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import write_run
from hybrid.core.records import Hit, Topic
from hybrid.sample import sample_paths


def test_eval_accepts_sample_qrels_and_topics(tmp_path, capsys):
    qrels = read_qrels(sample_paths().qrels)
    run = {qid: [Hit(d, 1.0) for d in sorted(docs)[:3]] for qid, docs in qrels.items()}
    write_run(run, tmp_path / "r.trec")
    assert eval_main(["sample", str(tmp_path / "r.trec"), "--topics", "sample", "--by-kind", "--json",
                      "-m", "P_3"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert set(table) == {"all", "event", "entity"} and table["all"]["P@3"] == 1.0 and table["all"]["#q"] == 40


class Stage:
    """Answers each topic with one hit; records the batches it was called with."""

    def __init__(self):
        self.batches = []

    def __call__(self, topics, run=None):
        self.batches.append(len(topics))
        return {t.qid: [Hit(f"d-{t.qid}", 1.0)] for t in topics}


def test_experiment_progress_bar_per_recipe(capsys):
    topics = [Topic(f"q{i}", "a b", 0, 1) for i in range(45)]
    stages = {"one": Stage(), "two": Stage()}
    recipes = [SimpleNamespace(name=name, build=lambda context, s=stage: s) for name, stage in stages.items()]
    runs, seconds = run_recipes(recipes, topics, context=None)
    assert set(runs) == {"one", "two"} and all(len(run) == 45 for run in runs.values())
    assert sum(stages["one"].batches) == 45 and len(stages["one"].batches) > 1
    err = capsys.readouterr().err
    assert "one" in err and "two" in err and "45/45" in err


def test_bm25_progress_bar(sparse_index, data_dir, capsys):
    from hybrid.core.formats.topics import read_topics
    from hybrid.retrieval.sparse import PassageBM25

    topics = read_topics(data_dir / "tiny_topics.tsv")
    quiet = PassageBM25(sparse_index, k=5).search(topics, 5)
    assert "bm25-sentence" not in capsys.readouterr().err
    shown = PassageBM25(sparse_index, k=5, progress=True).search(topics, 5)
    assert "bm25-sentence" in capsys.readouterr().err
    assert {q: [h.docid for h in hits] for q, hits in shown.items()} == {
        q: [h.docid for h in hits] for q, hits in quiet.items()}

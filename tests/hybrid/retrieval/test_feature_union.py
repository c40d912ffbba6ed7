"""a ** b: a feature union leaves the run alone and hands each retriever's score of every hit to LTR."""

from __future__ import annotations

import pytest

from features.pairs.union import GROUP
from hybrid.core.records import Hit, Rankings, Topic
from hybrid.core.stage import FeatureUnion, Reranker, Retriever


class Fixed(Retriever):
    """A retriever that returns fixed scores (the same for every query), best first."""

    def __init__(self, name: str, scores: dict[str, float]):
        self.name, self.scores, self.calls = name, scores, []

    def search(self, topics: list[Topic], k: int) -> Rankings:
        self.calls.append(k)
        ranked = sorted(self.scores.items(), key=lambda item: -item[1])[:k]
        return {t.qid: [Hit(docid=d, score=s) for d, s in ranked] for t in topics}


class Pass(Reranker):
    name = "pass"

    def rerank(self, topics, run):
        return run


def test_union_scores_every_hit_and_keeps_the_run():
    topics = [Topic(qid="q1", text="a b c", start=2, end=3)]
    first = Fixed("first", {"p1": 3.0, "p2": 2.0, "p3": 1.0})
    a, b, c = Fixed("a", {"p2": 9.0, "p3": 8.0}), Fixed("b", {"p1": 0.5}), Fixed("c", {"p3": -1.0})
    union = a ** b ** c
    assert isinstance(union, FeatureUnion) and [s.name for s in union.stages] == ["a", "b", "c"]
    assert union.name == "a ** b ** c"
    run = (first >> union)(topics)
    assert [(h.docid, h.score) for h in run["q1"]] == [("p1", 3.0), ("p2", 2.0), ("p3", 1.0)]
    assert [h.extra["union"] for h in run["q1"]] == [[None, 0.5, None], [9.0, None, None], [8.0, None, -1.0]]
    assert a.calls == [3]  # depth: the incoming run's length


def test_union_scores_become_positional_features():
    from features.pairs.base import PairContext

    hit = Hit(docid="p3", score=1.0, extra={"union": [8.0, None, -1.0]})
    ctx = PairContext(query=None, hit=hit, rank=3, candidate=None, passage=None, doc=None)
    values = {name: GROUP.value(name, None, None, ctx) for name in GROUP.features()}
    assert values["union_score_1"] == 8.0 and values["union_found_1"] == 1.0
    assert values["union_score_2"] == 0.0 and values["union_found_2"] == 0.0
    assert values["union_score_3"] == -1.0 and values["union_found_3"] == 1.0
    assert values["union_score_4"] == 0.0 and values["union_found_4"] == 0.0
    plain = PairContext(query=None, hit=Hit(docid="p", score=1.0), rank=1, candidate=None, passage=None, doc=None)
    assert GROUP.value("union_found_1", None, None, plain) == 0.0


def test_only_retrievers_join_a_union():
    with pytest.raises(TypeError, match="a feature union takes retrievers"):
        FeatureUnion(Fixed("a", {}), Pass())


def test_a_recipe_pipeline_builds_a_union_before_its_ltr(tmp_path):
    from hybrid.core.errors import ConfigError
    from hybrid.recipes import Context, build_system
    from hybrid.recipes.registry import RecipeSource

    source = RecipeSource(None, "")
    system = {"type": "pipeline", "first": {"type": "bm25"},
              "rerankers": [{"type": "union", "recipes": [{"type": "bm25", "formulation": "mention"}], "depth": 50}]}
    stage = build_system(system, Context(index=None), source)
    assert isinstance(stage.stages[-1], FeatureUnion) and stage.stages[-1].depth == 50
    with pytest.raises(ConfigError, match="a union reranker needs 'recipes'"):
        build_system({"type": "pipeline", "first": {"type": "bm25"}, "rerankers": [{"type": "union"}]},
                     Context(index=None), source)

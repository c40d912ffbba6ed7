"""Interpolating reader and first-stage scores, tuning the weight, and cross-fitting it over folds."""

from __future__ import annotations

import pytest

from hybrid.core.errors import ConfigError
from hybrid.core.records import Hit
from ltr.reader.interpolate import KindWeights, cross_fit, interpolate, tune_weight


def reranked_hits(rows: list[tuple[str, float, float]], rest: tuple[str, ...] = ()) -> list[Hit]:
    """Hits as rerank_run writes them: (docid, first-stage score, reader score), then unreranked deeper hits."""
    hits = [Hit(docid=d, score=r, mention_start=0, mention_end=3, mention_text=d[:3],
                extra={"first_stage_score": f, "reader_score": r, "first_stage_rank": k})
            for k, (d, f, r) in enumerate(rows, start=1)]
    floor = min(h.score for h in hits)
    hits += [Hit(docid=d, score=floor - i, extra={"first_stage_score": 0.0, "first_stage_rank": len(rows) + i})
             for i, d in enumerate(rest, start=1)]
    return sorted(hits, key=lambda h: (-h.score, h.docid))


# First stage ranks a > b > c; the reader ranks c > b > a; d and e were below the rerank depth.
RUN = {"q": reranked_hits([("a", 10.0, -1.0), ("b", 9.0, 0.0), ("c", 1.0, 1.0)], rest=("d", "e"))}


def order(run, qid="q"):
    return [h.docid for h in run[qid]]


def test_weight_zero_is_the_first_stage_and_one_is_the_reader():
    assert order(interpolate(RUN, 0.0)) == ["a", "b", "c", "d", "e"]
    assert order(interpolate(RUN, 1.0)) == ["c", "b", "a", "d", "e"]


def test_interpolated_scores_are_the_weighted_sum_of_z_scores_and_keep_spans():
    out = interpolate(RUN, 0.5)["q"]
    by_doc = {h.docid: h for h in out}
    # z(first) for 10, 9, 1: mean 6.67, sd 4.03; z(reader) for -1, 0, 1: mean 0, sd 0.816
    z_first = {"a": (10 - 20 / 3) / 4.0277, "c": (1 - 20 / 3) / 4.0277}
    z_reader = {"a": -1 / 0.8165, "c": 1 / 0.8165}
    for d in ("a", "c"):
        assert by_doc[d].score == pytest.approx(0.5 * z_first[d] + 0.5 * z_reader[d], abs=1e-3)
    assert by_doc["a"].mention_text == "a" and by_doc["a"].extra["interpolation_weight"] == 0.5
    assert all(x.score > y.score for x, y in zip(out, out[1:], strict=False))  # deeper hits stay below


def test_bad_weight_and_runs_without_first_stage_scores_are_rejected():
    with pytest.raises(ConfigError):
        interpolate(RUN, 1.5)
    with pytest.raises(ConfigError, match="first_stage_score"):
        interpolate({"q": [Hit(docid="a", score=1.0, extra={"reader_score": 1.0})]}, 0.5)


def test_per_kind_weights_pick_each_query_s_weight_by_its_kind():
    run = {"ev": RUN["q"], "en": RUN["q"]}
    kinds = {"ev": "event", "en": "entity"}
    out = interpolate(run, "event=0;entity=1", kinds=kinds)
    assert order(out, "ev") == ["a", "b", "c", "d", "e"] and order(out, "en") == ["c", "b", "a", "d", "e"]
    assert out["ev"][0].extra["interpolation_weight"] == 0.0 and out["en"][0].extra["interpolation_weight"] == 1.0
    same = interpolate(run, {"event": 0.0, "entity": 1.0}, kinds=kinds)
    assert {q: order(same, q) for q in same} == {q: order(out, q) for q in out}
    # a kind without its own weight takes the default; with no default it is an error naming the query
    assert order(interpolate(run, "1;event=0", kinds=kinds), "en") == ["c", "b", "a", "d", "e"]
    with pytest.raises(ConfigError, match="query 'en' has kind 'entity'.*no interpolation weight"):
        interpolate(run, "event=0", kinds=kinds)


def test_kind_weights_parse_and_reject_bad_input():
    assert KindWeights.parse("0.4") == KindWeights(0.4)
    assert KindWeights.parse("event=0.35; entity=0.65") == KindWeights(None, {"event": 0.35, "entity": 0.65})
    assert str(KindWeights.parse("0.5;event=0.35")) == "0.5;event=0.35"
    assert KindWeights.of({"default": 0.5, "event": 0.3}) == KindWeights(0.5, {"event": 0.3})
    for bad, message in (("topic=0.3", "unknown kind 'topic'"), ("event=x", "not a number"),
                         ("event=1.2", r"must be in \[0, 1\]"), ("", "give a weight")):
        with pytest.raises(ConfigError, match=message):
            KindWeights.parse(bad)
    with pytest.raises(ConfigError, match="not a number"):
        KindWeights.of(True)


def test_tuning_finds_the_weight_that_puts_the_relevant_passage_first():
    # b is relevant: first stage puts it 2nd, reader 2nd; only a mix of the two puts it 1st.
    run = {"q": reranked_hits([("a", 10.0, -1.0), ("b", 9.5, 0.9), ("c", 1.0, 1.0)])}
    weight, curve = tune_weight({"q": {"b": 1}}, run)
    assert curve[0.0] == curve[1.0] == 0.5 and curve[weight] == 1.0
    assert 0 < weight < 1 and weight == min(w for w, v in curve.items() if v == 1.0)  # ties: the smaller weight


def test_cross_fit_applies_to_each_fold_the_weight_tuned_on_the_others():
    # Fold x's queries need the reader (w = 1 best), fold y's need the first stage (w = 0 best).
    run, qrels, fold_of = {}, {}, {}
    for i in range(3):
        run[f"x{i}"] = reranked_hits([("a", 10.0, -1.0), ("b", 9.0, 0.0), ("c", 1.0, 1.0)])
        qrels[f"x{i}"], fold_of[f"x{i}"] = {"c": 1}, "x"
        run[f"y{i}"] = reranked_hits([("a", 10.0, 1.0), ("b", 9.0, 0.0), ("c", 1.0, -1.0)])
        qrels[f"y{i}"], fold_of[f"y{i}"] = {"b": 1}, "y"
    fitted = cross_fit(qrels, run, fold_of)
    # y alone prefers any weight that keeps a first (b second): tuned on y, x gets w = 0, where c is last.
    assert fitted.weights["x"] == 0.0 and order(fitted.run, "x0") == ["a", "b", "c"]
    assert fitted.weights["y"] == tune_weight({q: qrels[q] for q in qrels if q[0] == "x"},
                                              {q: run[q] for q in run if q[0] == "x"})[0]
    assert set(fitted.run) == set(run)
    with pytest.raises(ConfigError, match="2 folds"):
        cross_fit(qrels, {"x0": run["x0"]}, fold_of)
    with pytest.raises(ConfigError, match="no fold"):
        cross_fit(qrels, run, {"x0": "x"})


def test_tuning_on_condensed_lists_ignores_where_unjudged_passages_go():
    # r is relevant, n judged non-relevant, u unjudged. The first stage ranks n > r > u, the reader u > r > n:
    # on the standard list r is 2nd at every weight (u, counted non-relevant, or n is above it), so the tie
    # goes to w = 0; on the condensed list (u removed) the reader's side puts r first.
    run = {"q": reranked_hits([("n", 3.0, 1.0), ("r", 2.0, 2.0), ("u", 1.0, 3.0)])}
    qrels = {"q": {"r": 1}}
    weight, curve = tune_weight(qrels, run)
    assert weight == 0.0 and set(curve.values()) <= {0.5, 1.0} and curve[1.0] == 0.5
    weight, curve = tune_weight(qrels, run, judged={"n"})
    assert curve[0.0] == 0.5 and curve[1.0] == 1.0 and weight == min(w for w, v in curve.items() if v == 1.0)
    assert 0.5 <= weight <= 0.55
    # cross_fit passes the list on: each fold tuned on condensed lists of the other
    two = {"q": run["q"], "p": run["q"]}
    fitted = cross_fit({"q": qrels["q"], "p": qrels["q"]}, two, {"q": "a", "p": "b"}, judged={"n"})
    assert fitted.weights == {"a": weight, "b": weight}
    assert cross_fit({"q": qrels["q"], "p": qrels["q"]}, two, {"q": "a", "p": "b"}).weights == {"a": 0.0, "b": 0.0}

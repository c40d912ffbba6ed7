"""Property-based tests (hypothesis) of the fusion functions (hybrid.fusion: RRF, CombSUM, CombMNZ).

For random runs (queries present in some runs only, empty lists, ties, spans on some hits):

* the fused list of a query holds each passage of the union of its input lists exactly once, sorted
  by score then docid, with finite scores; ``k`` keeps exactly the head of the uncut list;
* the order of hits inside an input list does not matter (ranks come from scores, ties by docid);
* fusing one run alone keeps its ranking (every normalisation is monotone);
* a passage that some run returned with a mention span keeps a span from such a run;
* invalid weights raise ConfigError and nothing else.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid.core.errors import ConfigError
from hybrid.core.formats.runs import sorted_hits
from hybrid.core.records import Hit
from hybrid.fusion import NORMALISATIONS, fuse_runs

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=100)
METHODS = [("rrf", "minmax")] + [(m, n) for m in ("combsum", "combmnz") for n in NORMALISATIONS]
DOCS = [f"d{i}" for i in range(10)]
QIDS = ["q1", "q2", "q3"]


@st.composite
def hit_lists(draw):
    docids = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=8))
    hits = []
    for docid in docids:
        score = draw(st.integers(-800, 800)) / 8  # exact binary fractions: ties are real ties
        span = draw(st.none() | st.tuples(st.integers(0, 20), st.integers(1, 10)))
        hits.append(Hit(docid, score, *((span[0], span[0] + span[1]) if span else (None, None))))
    return hits


runs = st.dictionaries(st.sampled_from(QIDS), hit_lists(), max_size=3)
weights = st.floats(0.0, 5.0, allow_nan=False).map(lambda w: round(w, 3))


def union(inputs, qid):
    return {h.docid for run in inputs for h in run.get(qid, [])}


@SETTINGS
@given(st.lists(runs, min_size=1, max_size=3), st.sampled_from(METHODS), st.data())
def test_fused_lists_are_the_union_sorted_with_finite_scores(inputs, method, data):
    w = data.draw(st.lists(weights, min_size=len(inputs), max_size=len(inputs)).filter(lambda ws: any(ws)))
    fused = fuse_runs(inputs, method[0], w, norm=method[1])
    for qid in {q for run in inputs for q in run}:
        hits = fused.get(qid, [])
        active = [run for run, wi in zip(inputs, w, strict=True) if wi > 0]
        assert {h.docid for h in hits} == union(active, qid)
        assert len(hits) == len({h.docid for h in hits})
        assert all(math.isfinite(h.score) for h in hits)
        assert [(h.score, h.docid) for h in hits] == sorted(((h.score, h.docid) for h in hits),
                                                            key=lambda p: (-p[0], p[1]))
        for k in (1, 3):
            cut = fuse_runs(inputs, method[0], w, norm=method[1], k=k).get(qid, [])
            assert [h.docid for h in cut] == [h.docid for h in hits[:k]]


@SETTINGS
@given(st.lists(runs, min_size=1, max_size=3), st.sampled_from(METHODS), st.integers(0, 2**32 - 1))
def test_order_of_hits_inside_an_input_list_does_not_matter(inputs, method, seed):
    rng = random.Random(seed)
    shuffled = [{q: rng.sample(hits, len(hits)) for q, hits in run.items()} for run in inputs]
    a = fuse_runs(inputs, method[0], norm=method[1])
    b = fuse_runs(shuffled, method[0], norm=method[1])
    assert {q: [(h.docid, h.score) for h in hs] for q, hs in a.items()} == {
        q: [(h.docid, h.score) for h in hs] for q, hs in b.items()}


@SETTINGS
@given(runs, st.sampled_from(METHODS))
def test_one_run_alone_keeps_its_ranking(run, method):
    fused = fuse_runs([run], method[0], norm=method[1])
    for qid, hits in run.items():
        expected = [h.docid for h in sorted_hits(hits)]
        # Score normalisations keep ties tied (then docid order, as sorted_hits); rank-based ones give
        # tied hits distinct ranks in sorted_hits order: either way the order is sorted_hits'.
        assert [h.docid for h in fused.get(qid, [])] == expected


@SETTINGS
@given(st.lists(runs, min_size=1, max_size=3), st.sampled_from(METHODS))
def test_a_span_found_by_some_run_is_kept(inputs, method):
    fused = fuse_runs(inputs, method[0], norm=method[1])
    for qid, hits in fused.items():
        for hit in hits:
            spans = {(h.mention_start, h.mention_end) for run in inputs for h in run.get(qid, [])
                     if h.docid == hit.docid and h.mention_start is not None}
            if spans:
                assert (hit.mention_start, hit.mention_end) in spans
            else:
                assert hit.mention_start is None


@pytest.mark.parametrize("bad", [[-1.0, 1.0], [0.0, 0.0], [math.nan, 1.0], [1.0], [1.0, 1.0, 1.0]])
@pytest.mark.parametrize("method", ["rrf", "combsum", "combmnz"])
def test_invalid_weights_are_config_errors(bad, method):
    run = {"q": [Hit("d1", 1.0)]}
    with pytest.raises(ConfigError):
        fuse_runs([run, run], method, bad)

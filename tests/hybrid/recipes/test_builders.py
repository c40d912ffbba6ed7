"""Recipe builders: every bundled recipe parses, cheap ones run, artifacts fail clearly, fusion and
rerank chains by recipe name (with a real LTR model trained through hybrid.recipe_train)."""

from __future__ import annotations

import pytest

from hybrid.core.errors import ConfigError
from hybrid.recipes import BUILDERS, Context, bundled_recipes, load_recipe
from hybrid.recipes.builders import ARTIFACTS_ENV, FEATURESET_DIR, RERANKERS, featureset_path, reranker_specs

TINY_FEATURES = """name = "tiny"
[groups.string]
features = ["mention_exact", "mention_token_jaccard", "mention_char3_dice"]
normalisation = "zscore"
[groups.type]
features = ["type_kind_match", "type_agree", "disck_person_exact", "disck_event_exact"]
[groups.first_stage]
features = ["fs_score", "fs_reciprocal_rank"]
normalise = { fs_score = "query_zscore" }
"""


@pytest.fixture
def topics(sparse_index, data_dir):
    from hybrid.core.formats import read_topics

    return read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)


def test_every_bundled_recipe_parses_with_known_keys():
    names = bundled_recipes()
    for expected in ("cmr-qe", "cmr-disck", "bm25f", "coresearch-dpr", "coresearch-e2e", "fused", "hybrid-full",
                     "multifield-reader"):
        assert expected in names
    for name in names:
        recipe = load_recipe(name)
        assert recipe.name == name and recipe.description and recipe.cost, name
        kind = recipe.system["type"]
        assert kind in BUILDERS, name
        assert set(recipe.system) <= BUILDERS[kind].keys, name
        if kind == "pipeline":
            for spec in reranker_specs(recipe.system, recipe.source):
                assert set(spec) == RERANKERS.keys_of(spec["type"])
        if not recipe.ci:  # the expensive ones say what they need
            assert recipe.cost.startswith("needs"), name


def test_feature_sets_by_name_come_from_the_one_folder():
    """Every feature set a bundled recipe names is found in ltr/configs/, the one folder of feature sets."""
    from ltr.featureset import load_featureset

    named = {spec["featureset"]: load_recipe(name).source for name in bundled_recipes()
             if load_recipe(name).system["type"] == "pipeline"
             for spec in reranker_specs(load_recipe(name).system, load_recipe(name).source) if "featureset" in spec}
    assert "disck" in named
    for featureset, source in named.items():
        path = featureset_path(featureset, source)
        assert path.parent == FEATURESET_DIR and load_featureset(path).name == featureset
    with pytest.raises(ConfigError, match=r"no feature set named 'no-such' in .*ltr/configs"):
        featureset_path("no-such", next(iter(named.values())))


def test_cheap_recipes_run_and_exclude_the_query_document(sparse_index, topics):
    context = Context(index=sparse_index, hits=5)
    cheap = [load_recipe(n) for n in bundled_recipes() if load_recipe(n).ci]
    assert {"cmr-qe", "bm25f"} <= {r.name for r in cheap}
    for recipe in cheap:
        run = recipe.build(context)(topics)
        assert set(run) == {t.qid for t in topics}, recipe.name
        assert run["q-en-reid"] and all(not h.docid.startswith("a1:") for h in run["q-en-reid"]), recipe.name


def test_missing_artifacts_name_the_recipe_line_and_the_build_command(sparse_index, tmp_path, monkeypatch):
    monkeypatch.delenv(ARTIFACTS_ENV, raising=False)
    with pytest.raises(ConfigError, match=r"coresearch-dpr\.toml:\d+: .*--artifacts DIR or set HYBRID_ARTIFACTS"):
        load_recipe("coresearch-dpr").build(Context(index=sparse_index))
    monkeypatch.setenv(ARTIFACTS_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match=r"cmr-disck\.toml:\d+: ltr artifact .*ltr/cmr-disck does not exist; train it "
                                          r"with `python -m hybrid.recipe_train cmr-disck"):
        load_recipe("cmr-disck").build(Context(index=sparse_index))
    with pytest.raises(ConfigError, match=r"dense\.toml:\d+: dense artifact .*`python -m hybrid.index_dense"):
        load_recipe("fused").build(Context(index=sparse_index))  # a component's missing artifact


def test_bad_composite_recipes(sparse_index, tmp_path):
    cyclic = tmp_path / "loop.toml"
    cyclic.write_text(f'name = "loop"\n[system]\ntype = "fuse"\nrecipes = ["{cyclic}", "bm25"]\n')
    with pytest.raises(ConfigError, match="recipe cycle"):
        load_recipe(str(cyclic)).build(Context(index=sparse_index))
    one = tmp_path / "one.toml"
    one.write_text('name = "one"\n[system]\ntype = "fuse"\nrecipes = ["bm25"]\n')
    with pytest.raises(ConfigError, match=r"one\.toml:4: 'recipes' must list at least two"):
        load_recipe(str(one)).build(Context(index=sparse_index))
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                   'rerankers = [{ type = "ltr", model = "/nowhere", dpeth = 3 }]\n')
    with pytest.raises(ConfigError, match=r"bad\.toml:5: unknown key 'dpeth' for a ltr reranker"):
        load_recipe(str(bad)).build(Context(index=sparse_index))


def test_fuse_by_recipe_name_equals_fusing_the_component_runs(sparse_index, topics, tmp_path):
    from hybrid.fusion import fuse_runs

    path = tmp_path / "f.toml"
    path.write_text('name = "f"\n[system]\ntype = "fuse"\nrecipes = ["cmr-doc", "bm25"]\nmethod = "combsum"\n'
                    'weights = "0.7,0.3"\n')
    context = Context(index=sparse_index, hits=5)
    fused = load_recipe(str(path)).build(context)(topics)
    parts = [load_recipe(n).build(Context(index=sparse_index, hits=5))(topics) for n in ("cmr-doc", "bm25")]
    expected = fuse_runs(parts, "combsum", [0.7, 0.3], "minmax", k=5)
    for topic in topics:
        assert [h.docid for h in fused[topic.qid]] == [h.docid for h in expected[topic.qid]]
        assert [h.score for h in fused[topic.qid]] == pytest.approx([h.score for h in expected[topic.qid]])


def ltr_recipe(folder, name: str, featureset):
    """A recipe ``tiny-<name>``: multifield >> a logistic LTR model ``m/<name>`` over ``featureset``, depth 5."""
    path = folder / f"{name}-recipe.toml"
    path.write_text(
        f'name = "tiny-{name}"\n[system]\ntype = "pipeline"\nfirst = "multifield"\n'
        f'rerankers = [{{ type = "ltr", model = "m/{name}", featureset = "{featureset}", '
        'learner = "logistic", depth = 5 }]\n')
    return load_recipe(str(path))


def test_ltr_pipeline_trains_through_recipe_train_and_reranks(sparse_index, topics, data_dir, tmp_path):
    from hybrid.cli.recipe_train import train_recipe
    from hybrid.core.formats.qrels import read_qrels

    (tmp_path / "tiny.toml").write_text(TINY_FEATURES)
    recipe = ltr_recipe(tmp_path, "disck", tmp_path / "tiny.toml")
    context = Context(index=sparse_index, hits=5, artifacts=tmp_path)
    with pytest.raises(ConfigError, match="ltr artifact"):
        recipe.build(context)
    written = train_recipe(recipe, context, topics, read_qrels(data_dir / "tiny_qrels.txt"), seed=0)
    assert written == [tmp_path / "m" / "disck"] and (tmp_path / "m" / "disck" / "ltr-model.json").is_file()
    with pytest.raises(ConfigError, match="exists"):
        train_recipe(recipe, Context(index=sparse_index, hits=5, artifacts=tmp_path), topics,
                     read_qrels(data_dir / "tiny_qrels.txt"))
    stage = recipe.build(Context(index=sparse_index, hits=5, artifacts=tmp_path))
    first = load_recipe("multifield").build(Context(index=sparse_index, hits=5))(topics)
    run = stage(topics)
    for topic in topics:  # a reranking: the same passages, possibly reordered
        assert sorted(h.docid for h in run[topic.qid]) == sorted(h.docid for h in first[topic.qid])
    # The recipe names its feature set; a model trained with another one is refused.
    (tmp_path / "tiny.toml").write_text(TINY_FEATURES.replace('"mention_char3_dice"', '"mention_head"'))
    with pytest.raises(ConfigError, match="is not the one this model was trained with"):
        recipe.build(Context(index=sparse_index, hits=5, artifacts=tmp_path))


def test_recipe_train_extracts_with_the_feature_sets_provider_options(sparse_index, topics, data_dir, tiny_bert,
                                                                      tmp_path):
    """A provider option of the feature set ([providers.dense_neighbours] index) reaches training, not only
    reranking: without it the provider looks for a dense index inside the hybrid index, which has none."""
    from features.encoder import BiEncoder
    from hybrid.cli.recipe_train import train_recipe
    from hybrid.core.formats.qrels import read_qrels
    from indexes.faiss_index import build_dense_index

    dense = tmp_path / "elsewhere" / "dense"
    build_dense_index(sparse_index, BiEncoder.load(tiny_bert, device="cpu"), dense, progress=False)
    (tmp_path / "nb.toml").write_text(
        'name = "nb"\n[groups.first_stage]\nfeatures = ["fs_score"]\n[groups.dense_neighbours]\nfeatures = ["*"]\n'
        f'[providers.dense_neighbours]\nindex = "{dense}"\n')
    recipe = ltr_recipe(tmp_path, "nb", tmp_path / "nb.toml")
    context = Context(index=sparse_index, hits=5, artifacts=tmp_path)
    written = train_recipe(recipe, context, topics, read_qrels(data_dir / "tiny_qrels.txt"), seed=0)
    assert written == [tmp_path / "m" / "nb"]
    run = recipe.build(Context(index=sparse_index, hits=5, artifacts=tmp_path))(topics)
    assert set(run) == {t.qid for t in topics}


def test_dense_recipe_resolves_its_index_under_the_artifacts_env(sparse_index, topics, tiny_bert, tmp_path,
                                                               monkeypatch):
    from features.encoder import BiEncoder
    from indexes.faiss_index import build_dense_index

    build_dense_index(sparse_index, BiEncoder.load(tiny_bert, device="cpu"), tmp_path / "dense" / "ecbplus",
                      progress=False)
    monkeypatch.setenv(ARTIFACTS_ENV, str(tmp_path))
    context = Context(index=sparse_index, hits=4)
    run = load_recipe("coresearch-dpr").build(context)(topics)
    assert all(len(run[t.qid]) == 4 for t in topics)
    assert all(not h.docid.startswith("a1:") for h in run["q-en-reid"])
    fused = load_recipe("fused").build(context)(topics)  # multifield + bm25f + dense, by name
    assert set(fused) == {t.qid for t in topics} and all(len(v) <= 4 for v in fused.values())


def test_reader_pipeline_interpolates_with_its_first_stage(sparse_index, topics, tiny_bert, tmp_path):
    from ltr.reader.store import new_reader, save_reader

    save_reader(new_reader(tiny_bert, seed=3), tmp_path / "reader" / "tiny")
    context = Context(index=sparse_index, hits=5, artifacts=tmp_path)
    runs = {}
    for name, extra in (("w0", ", interpolate = 0"), ("w1", ", interpolate = 1.0"), ("alone", ""),
                        ("kind", ", interpolate = { event = 0, entity = 1 }")):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'name = "{name}"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                        f'rerankers = [{{ type = "reader", model = "reader/tiny", depth = 3{extra} }}]\n')
        runs[name] = load_recipe(str(path)).build(context)(topics)
    first = load_recipe("bm25").build(context)(topics)
    for topic in topics:
        assert [h.docid for h in runs["w0"][topic.qid]] == [h.docid for h in first[topic.qid]]
        assert [h.docid for h in runs["w1"][topic.qid]] == [h.docid for h in runs["alone"][topic.qid]]
        same_as = runs["w0"] if topic.kind == "event" else runs["w1"]
        assert [h.docid for h in runs["kind"][topic.qid]] == [h.docid for h in same_as[topic.qid]]
    bad = tmp_path / "bad.toml"
    for value, message in (("2", r"must be in \[0, 1\], got 2"), ('"0.5"', "must be a number or a table"),
                           ("{ topic = 0.5 }", "unknown kind 'topic'")):
        bad.write_text('name = "bad"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                       f'rerankers = [{{ type = "reader", model = "reader/tiny", interpolate = {value} }}]\n')
        with pytest.raises(ConfigError, match=rf"bad\.toml:5: a reader's 'interpolate'.*{message}"):
            load_recipe(str(bad)).build(context)


@pytest.mark.parametrize("option, value, bound", [("precision", "bf16", 2e-4), ("backend", "onnx", 1e-5)])
def test_a_context_inference_setting_reaches_the_recipes_reader_and_its_record(sparse_index, topics, tiny_bert,
                                                                              tmp_path, option, value, bound):
    """Context(precision="bf16") / Context(backend="onnx") builds a reader reranker that scores in bf16 (scores move,
    by less than tests/ltr/test_reader_precision.py's bound) / with its encoder in ONNX Runtime (within
    tests/ltr/test_reader_onnx.py's tolerance of torch's), and a run's artifacts say so; the default's record is as
    it was."""
    from hybrid.core.provenance import used_artifacts
    from ltr.reader.store import new_reader, save_reader

    save_reader(new_reader(tiny_bert, seed=3), tmp_path / "reader" / "tiny")
    path = tmp_path / "r.toml"
    path.write_text('name = "r"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                    'rerankers = [{ type = "reader", model = "reader/tiny", depth = 3 }]\n')
    scores, records = {}, {}
    for setting in ("default", value):
        context = Context(index=sparse_index, hits=5, artifacts=tmp_path,
                          **({} if setting == "default" else {option: setting}))
        stage = load_recipe(str(path)).build(context)
        run = stage(topics)
        scores[setting] = {(q, h.docid): h.extra["reader_score"] for q, hits in run.items() for h in hits
                           if "reader_score" in h.extra}
        records[setting] = [a for a in used_artifacts(stage) if a["kind"] == "reader"]
    assert option not in records["default"][0] and [a[option] for a in records[value]] == [value]
    assert scores["default"] and set(scores["default"]) == set(scores[value])
    moved = max(abs(scores["default"][k] - scores[value][k]) for k in scores["default"])
    assert moved < bound and (moved > 0 or option == "backend")  # bf16 really ran

def test_bundled_multifield_reader_recipe_reranks_multifield_with_per_kind_weights(sparse_index, topics, tiny_bert,
                                                                                   tmp_path):
    from ltr.reader.store import new_reader, save_reader

    save_reader(new_reader(tiny_bert, seed=3), tmp_path / "reader" / "ecbplus")
    context = Context(index=sparse_index, hits=5, artifacts=tmp_path)
    recipe = load_recipe("multifield-reader")
    shipped = recipe.system["rerankers"][0]["interpolate"]  # {event = W, entity = W}, tuned on ECB+ dev
    run = recipe.build(context)(topics)
    first = load_recipe("multifield").build(Context(index=sparse_index, hits=5))(topics)
    for topic in topics:
        assert sorted(h.docid for h in run[topic.qid]) == sorted(h.docid for h in first[topic.qid])
        weights = {h.extra["interpolation_weight"] for h in run[topic.qid]}
        assert weights == {shipped[topic.kind]}


@pytest.mark.parametrize(("reranker", "error"), [
    ('{ type = "ltr", model = "m", learner = "lambdamrt" }',
     "a ltr's 'learner' must be one of logistic, ridge, gbt, lambdamart, got 'lambdamrt'; did you mean "
     "'lambdamart'\\?"),
    ('{ type = "ltr", model = "m", learner = "lambdamart", params = { num_leafs = 3 } }',
     "unknown parameter 'num_leafs' for learner 'lambdamart' .*did you mean 'num_leaves'"),
    ('{ type = "ltr", model = "m", learner = "logistic", params = { C = -1 } }',
     "an ltr's params: 'C' must be a finite number >= 0, got -1"),
])
def test_an_ltr_rerankers_learner_and_params_are_checked_at_the_recipe_line(tmp_path, reranker, error):
    """A learner's name and hyper-parameters are refused where the recipe gives them, not when training starts."""
    path = tmp_path / "r.toml"
    path.write_text(f'name = "r"\n[system]\ntype = "pipeline"\nfirst = "bm25"\nrerankers = [{reranker}]\n')
    with pytest.raises(ConfigError, match=r"r\.toml:5: " + error):
        load_recipe(str(path)).build(Context(index=None))


def test_a_readers_span_source_is_one_of_the_declared_choices(tmp_path):
    """The reader's settings are declared once (ltr.reader.settings): a recipe is refused at its line, before the
    reader (and torch) is loaded."""
    path = tmp_path / "r.toml"
    path.write_text('name = "r"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                    'rerankers = [{ type = "reader", model = "m", span_source = "mention" }]\n')
    with pytest.raises(ConfigError, match=r"r\.toml:5: a reader's 'span_source' must be one of predicted, mentions, "
                                          r"got 'mention'; did you mean 'mentions'\?"):
        load_recipe(str(path)).build(Context(index=None))

"""python -m hybrid.prepare: the plan a recipe needs (dry run, search printing it), then building it on tiny models:
trained on one collection and applied to another, resumable, found through the index without --artifacts."""

from __future__ import annotations

import json

import pytest
from prepare_kit import write_labels, write_other_collection, write_recipe, write_search_topics

from features.annotate import LEGACY
from hybrid.cli.prepare import main as prepare_main
from hybrid.cli.search import main as search_main
from hybrid.core.errors import ConfigError
from hybrid.recipes import load_recipe
from hybrid.recipes.plan import TrainingConfig, make_plan, recipe_needs, search_plan
from hybrid.store.models import INDEX_LINK, ModelSet, list_sets
from indexes.lucene import IndexConfig, build_index


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HYBRID_ARTIFACTS", raising=False)
    return tmp_path / "cache" / "models"


@pytest.fixture(scope="module")
def labels(tiny_corpus, tmp_path_factory):
    return write_labels(tiny_corpus, tmp_path_factory.mktemp("labels"))


def other_index(tiny_corpus, folder, prefix):
    corpus = write_other_collection(tiny_corpus, folder / f"{prefix}corpus.jsonl", prefix)
    path = folder / f"{prefix}index"
    build_index(IndexConfig(corpus=str(corpus), annotation=LEGACY), path, progress=False)
    return path


def train_args(labels, tiny_bert):
    corpus, topics, qrels = labels
    return ["--train", str(corpus), "--train-topics", str(topics), "--train-qrels", str(qrels),
            "--dense-base", str(tiny_bert), "--dense-steps", "2", "--quiet", "--threads", "1"]


def test_needs_walk_the_bundled_recipes():
    needs = recipe_needs(load_recipe("hybrid-dense-reader"))
    assert [(n.kind, n.path) for n in needs] == [("dense", "dense/index"), ("ltr", "ltr/hybrid-dense-net"),
                                                 ("reader", "reader/model")]
    assert needs[1].recipe == "hybrid-dense-net"
    assert recipe_needs(load_recipe("multifield-net")) == []


def test_dry_run_lists_the_whole_chain_and_builds_nothing(tiny_corpus, labels, tiny_bert, tmp_path, store, capsys):
    target = other_index(tiny_corpus, tmp_path, "x-")
    recipe = write_recipe(tmp_path)
    assert prepare_main([str(recipe), "--index", str(target), *train_args(labels, tiny_bert), "--dry-run"]) == 0
    plan = capsys.readouterr().err
    kinds = ["raw index of the training collection", "bi-encoder dense/encoder", "dense index dense/tiny of the "
             "training index", "LTR model ltr/tiny-dense-net", "dense index dense/tiny of this index"]
    positions = [plan.index(k) for k in kinds]
    assert positions == sorted(positions) and plan.count("MISSING") == 5
    assert "python -m hybrid.train_dense" in plan and "min CPU" in plan
    assert not store.exists() and not (target / INDEX_LINK).exists()


def test_in_place_when_the_labelled_corpus_is_the_target(tiny_index, labels, tiny_bert, tmp_path, store, capsys):
    recipe = write_recipe(tmp_path)
    assert prepare_main([str(recipe), "--index", str(tiny_index), *train_args(labels, tiny_bert), "--dry-run",
                         "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["training"]["split"] == "train"
    assert [s["kind"] for s in plan["steps"]] == ["encoder", "dense-index", "ltr"]
    assert all(s["detail"]["index"] == str(tiny_index) for s in plan["steps"])


def test_search_prints_the_plan_at_once_and_exits_2(tiny_corpus, tmp_path, store, capsys):
    target = other_index(tiny_corpus, tmp_path, "y-")
    recipe = write_recipe(tmp_path)
    topics = write_search_topics(tmp_path / "topics.jsonl", "y-")
    with pytest.raises(ConfigError, match=r"lacks 3 artifact\(s\).*python -m hybrid.prepare tiny-dense-net"):
        search_main(["--index", str(target), "--recipe", str(recipe), "--topics", str(topics),
                     "--output", str(tmp_path / "run.trec")])
    printed = capsys.readouterr().err
    assert "bi-encoder dense/encoder" in printed and "LTR model ltr/tiny-dense-net" in printed


def test_prepare_trains_elsewhere_applies_here_resumes_and_search_finds_it(tiny_corpus, labels, tiny_bert, tmp_path,
                                                                          store, capsys):
    target = other_index(tiny_corpus, tmp_path, "x-")
    recipe = write_recipe(tmp_path)
    assert prepare_main([str(recipe), "--index", str(target), *train_args(labels, tiny_bert)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["made"] == ["training-index", "encoder", "training-dense-index", "ltr", "dense-index"]
    (model_set,) = list_sets(store)
    assert set(model_set.manifest["models"]) == {"dense/encoder", "ltr/tiny-dense-net"}
    assert model_set.manifest["dense_indexes"] == {"dense/tiny": {"encoder": "dense/encoder"}}
    fingerprint = model_set.encoder_fingerprint("dense/encoder")
    assert (target / "dense-by-encoder" / fingerprint[:16] / "dense-index.json").is_file()
    assert json.loads((target / INDEX_LINK).read_text())["key"] == model_set.key
    # a second run finds everything made: nothing is trained again
    assert prepare_main([str(recipe), "--index", str(target), *train_args(labels, tiny_bert)]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == []
    # the index's link is how search finds the models and the dense index: no --artifacts
    topics = write_search_topics(tmp_path / "topics.jsonl", "x-")
    run = tmp_path / "run.trec"
    assert search_main(["--index", str(target), "--recipe", str(recipe), "--topics", str(topics), "--output",
                        str(run), "--quiet"]) == 0
    assert all(line.split()[2].startswith("x-") for line in run.read_text().splitlines())
    # the same set on a third collection: only that index's dense index is built, here in bf16
    third = other_index(tiny_corpus, tmp_path, "z-")
    assert prepare_main([str(recipe), "--index", str(third), "--models", model_set.key[:8], "--quiet",
                         "--precision", "bf16"]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["dense-index"]
    dense_meta = "dense-by-encoder", fingerprint[:16], "dense-index.json"
    assert json.loads(target.joinpath(*dense_meta).read_text())["precision"] == "fp32"
    assert json.loads(third.joinpath(*dense_meta).read_text())["precision"] == "bf16"
    topics = write_search_topics(tmp_path / "topics-z.jsonl", "z-")
    assert search_main(["--index", str(third), "--recipe", str(recipe), "--topics", str(topics), "--output",
                        str(tmp_path / "z.trec"), "--quiet", "--precision", "bf16"]) == 0
    used = json.loads((tmp_path / "z.trec.meta.json").read_text())["artifacts"]
    assert [a.get("precision") for a in used if a["kind"] == "encoder"] == ["bf16"]  # the recipe's query encoder
    assert all(line.split()[2].startswith("z-") for line in (tmp_path / "z.trec").read_text().splitlines())
    assert search_plan(load_recipe(str(recipe)), third, None) is None
    # and on a fourth, its dense index and the search's query encoder in ONNX Runtime
    fourth = other_index(tiny_corpus, tmp_path, "w-")
    assert prepare_main([str(recipe), "--index", str(fourth), "--models", model_set.key[:8], "--quiet",
                         "--backend", "onnx", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["dense-index"]
    assert json.loads(fourth.joinpath(*dense_meta).read_text())["backend"] == "onnx"
    topics = write_search_topics(tmp_path / "topics-w.jsonl", "w-")
    assert search_main(["--index", str(fourth), "--recipe", str(recipe), "--topics", str(topics), "--output",
                        str(tmp_path / "w.trec"), "--quiet", "--backend", "onnx"]) == 0
    used = json.loads((tmp_path / "w.trec.meta.json").read_text())["artifacts"]
    assert [a.get("backend") for a in used if a["kind"] == "encoder"] == ["onnx"]


def test_a_dense_index_of_another_encoder_is_refused_naming_both(tiny_corpus, labels, tiny_bert, tmp_path, store,
                                                                 capsys):
    target = other_index(tiny_corpus, tmp_path, "x-")
    recipe = write_recipe(tmp_path)
    assert prepare_main([str(recipe), "--index", str(target), *train_args(labels, tiny_bert)]) == 0
    (model_set,) = list_sets(store)
    bound = target / "dense-by-encoder"
    (folder,) = bound.iterdir()
    # another set's encoder (more steps) whose fingerprint is made to point at this dense index
    longer = train_args(labels, tiny_bert)
    longer[longer.index("--dense-steps") + 1] = "3"
    assert prepare_main([str(recipe), "--index", str(target), *longer]) == 0
    other = [s for s in list_sets(store) if s.key != model_set.key][0]
    other.manifest["models"]["dense/encoder"]["fingerprint"] = folder.name + "0" * 48
    other.save()
    topics = write_search_topics(tmp_path / "topics.jsonl", "x-")
    with pytest.raises(ConfigError, match=r"query encoder .* is not the encoder this index was built with"):
        search_main(["--index", str(target), "--recipe", str(recipe), "--topics", str(topics),
                     "--output", str(tmp_path / "r.trec"), "--artifacts", str(other.path), "--quiet"])


def test_training_config_is_the_documented_commands():
    """prepare trains with the settings of the documented chain (train_dense's defaults and BENCHMARKS' flags)."""
    from features.encoder import EncoderConfig
    from hybrid.cli.train_dense import parser
    from hybrid.dense.train import TrainConfig

    args = parser().parse_args(["--index", "i", "--corpus", "c", "--topics", "t", "--output", "o"])
    defaults = TrainConfig()
    assert (args.lr, args.weight_decay, args.warmup, args.scale, args.seed, args.checkpoint_every) == (
        defaults.lr, defaults.weight_decay, defaults.warmup, defaults.scale, defaults.seed, defaults.checkpoint_every)
    assert (args.pooling, args.context_weight) == (EncoderConfig().pooling, EncoderConfig().context_weight)
    config = TrainingConfig()
    assert (config.dense_steps, config.dense_batch_size, config.dense_negatives, config.dense_seed) == (
        330, 8, "multifield", args.seed)


def test_make_plan_needs_no_encoder_when_the_artifacts_folder_holds_the_dense_index(sparse_index, tiny_bert, tmp_path):
    from features.encoder import BiEncoder
    from indexes.faiss_index import build_dense_index

    build_dense_index(sparse_index, BiEncoder.load(tiny_bert, device="cpu"), tmp_path / "dense" / "tiny",
                      progress=False)
    plan = make_plan(load_recipe(str(write_recipe(tmp_path))), sparse_index.path, tmp_path, None)
    assert [(s.kind, s.done) for s in plan.steps] == [("dense-index", True), ("ltr", False)]
    assert ModelSet.open(tmp_path) is None


def test_without_train_the_bundled_set_and_with_train_alone_the_derived_queries(tiny_corpus, labels, tmp_path, store,
                                                                                capsys):
    target = other_index(tiny_corpus, tmp_path, "x-")
    recipe = write_recipe(tmp_path)
    assert prepare_main([str(recipe), "--index", str(target), "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["training"]["name"] == "ecbplus-train" and plan["training"]["passages"] > 9000
    assert plan["steps"][0]["kind"] == "training-index" and plan["models"].startswith(str(store / "ecbplus-train-"))
    assert prepare_main([str(recipe), "--index", str(target), "--train", str(labels[0]), "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["training"]["name"] == "labelled" and plan["training"]["queries"] > 0
    assert plan["training"]["topics"] != str(labels[1])  # derived from the clusters, not the given file


def test_reader_recipe_is_prepared_in_place_and_runs(tiny_index, labels, tiny_bert, tmp_path, store, capsys):
    """hybrid-dense-reader in miniature: the reader is trained (warm-started from the set's encoder) after the
    encoder, the dense index and the LTR model of the recipe it reranks; the labelled corpus is the indexed one."""
    import shutil

    index = tmp_path / "tiny-index"
    shutil.copytree(tiny_index, index)
    inner = write_recipe(tmp_path)
    reader_recipe = tmp_path / "tiny-dense-reader.toml"
    reader_recipe.write_text(f'name = "tiny-dense-reader"\n[system]\ntype = "pipeline"\nfirst = "{inner}"\n'
                             'rerankers = [{ type = "reader", model = "reader/tiny", depth = 3, '
                             'span_source = "mentions", interpolate = 0.5 }]\n')
    assert prepare_main([str(reader_recipe), "--index", str(index), *train_args(labels, tiny_bert),
                         "--reader-steps", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["encoder", "dense-index", "ltr", "reader"]
    (model_set,) = list_sets(store)
    assert model_set.model("reader/tiny")["base"] == "dense/encoder"
    run = tmp_path / "reader.trec"
    assert search_main(["--index", str(index), "--recipe", str(reader_recipe), "--topics",
                        str(labels[1]), "--output", str(run), "--quiet", "--hits", "5"]) == 0
    assert run.read_text().splitlines()

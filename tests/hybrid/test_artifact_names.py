"""Artifacts are named by what they are (``dense/index``, ``reader/model``); folders and model sets made when they
were named after ECB+ (``dense/ecbplus``, ``reader/ecbplus``) still answer to the new names."""

from __future__ import annotations

import json
import shutil

import pytest

from features.encoder import BiEncoder, EncoderConfig
from hybrid.cli.prepare import main as prepare_main
from hybrid.cli.search import main as search_main
from hybrid.core.errors import ConfigError
from hybrid.recipes import load_recipe
from hybrid.recipes.builders import artifact_path
from hybrid.recipes.registry import RECIPE_DIR, Context
from hybrid.store.models import OLDER_NAMES, ModelSet, artifact_in, bound_dense_dir
from indexes.faiss_index import build_dense_index
from indexes.sparse_index import SparseIndex


@pytest.fixture(autouse=True)
def no_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("HYBRID_ARTIFACTS", raising=False)
    monkeypatch.setenv("HYBRID_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def encoder(tmp_path_factory, tiny_bert):
    enc = BiEncoder.load(tiny_bert, EncoderConfig(mark_query=False), device="cpu")
    return enc.save(tmp_path_factory.mktemp("enc") / "encoder")


def search(index, artifacts, data_dir, out):
    assert search_main(["--index", str(index), "--recipe", "dense", "--artifacts", str(artifacts), "--topics",
                        str(data_dir / "tiny_topics.jsonl"), "--output", str(out), "--hits", "5", "--quiet"]) == 0
    return out.read_text()


def test_bundled_recipes_name_no_benchmark_artifact():
    recipes = sorted(RECIPE_DIR.glob("*.toml"))
    assert len(recipes) > 10
    for path in recipes:
        assert "/ecbplus" not in path.read_text(), path.name


def test_an_artifacts_folder_of_the_older_layout_is_found(tmp_path, tiny_index, encoder, data_dir, capsys):
    """``ARTIFACTS/dense/ecbplus`` answers to the recipes' ``dense/index``, and ranks as the same index there."""
    older, newer = tmp_path / "older", tmp_path / "newer"
    build_dense_index(SparseIndex(tiny_index), BiEncoder.load(encoder, device="cpu"), older / "dense" / "ecbplus",
                      progress=False)
    shutil.copytree(older / "dense" / "ecbplus", newer / "dense" / "index")
    assert search(tiny_index, older, data_dir, tmp_path / "older.trec") == \
        search(tiny_index, newer, data_dir, tmp_path / "newer.trec")
    # prepare finds it too, and does not count it as its own to make again (--overwrite)
    for extra in ([], ["--overwrite"]):
        assert prepare_main(["dense", "--index", str(tiny_index), "--artifacts", str(older), "--dry-run", "--json",
                             *extra]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert [(s["kind"], s["done"], s["where"]) for s in plan["steps"]] == \
            [("dense-index", True, str(older / "dense" / "ecbplus"))]


def test_a_model_set_declaring_the_older_dense_key_is_found(tmp_path, tiny_index, encoder, data_dir, capsys):
    """A set whose manifest says ``dense_indexes: {"dense/ecbplus": ...}`` (made by prepare before the rename):
    the recipe's ``dense/index`` is its index-bound dense index, and prepare --dry-run finds everything."""
    index = shutil.copytree(tiny_index, tmp_path / "index")
    model_set = ModelSet.create(tmp_path / "set", "older", "k" * 16, {"name": "older"}, {})
    shutil.copytree(encoder, model_set.path / "dense" / "encoder")
    fingerprint = model_set.encoder_fingerprint("dense/encoder")
    model_set.manifest["dense_indexes"] = {"dense/ecbplus": {"encoder": "dense/encoder"}}
    model_set.save()
    build_dense_index(SparseIndex(index), BiEncoder.load(model_set.path / "dense" / "encoder", device="cpu"),
                      bound_dense_dir(index, fingerprint), progress=False)
    assert model_set.dense_encoder("dense/index") == "dense/encoder"
    assert search(index, model_set.path, data_dir, tmp_path / "run.trec")
    assert prepare_main(["dense", "--index", str(index), "--artifacts", str(model_set.path), "--dry-run",
                         "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [(s["kind"], s["done"]) for s in plan["steps"]] == [("dense-index", True)]
    # without the older key the set declares nothing: the missing dense index is reported
    model_set.manifest["dense_indexes"] = {}
    model_set.save()
    with pytest.raises(ConfigError, match=r"dense artifact .*dense/index does not exist"):
        search(index, model_set.path, data_dir, tmp_path / "none.trec")


def test_an_older_reader_folder_answers_to_the_new_name(tmp_path, tiny_index):
    recipe = load_recipe("hybrid-dense-reader")
    context = Context(index=SparseIndex(tiny_index), artifacts=tmp_path)
    (tmp_path / "reader" / "ecbplus").mkdir(parents=True)
    assert artifact_path("reader/model", "rerankers", "reader", context, recipe.source) == \
        tmp_path / "reader" / "ecbplus"
    (tmp_path / "reader" / "model").mkdir()  # the new name wins once it exists
    assert artifact_path("reader/model", "rerankers", "reader", context, recipe.source) == tmp_path / "reader" / "model"
    assert artifact_in(tmp_path, "reader/judged") == tmp_path / "reader" / "judged"  # neither: the new name
    assert set(OLDER_NAMES) == {"dense/index", "reader/model", "reader/judged"}

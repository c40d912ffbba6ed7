"""A recipe decides no path outside its roots (issue 22, defect 3): plain names, artifacts inside --artifacts."""

from __future__ import annotations

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.cli.experiment import main as experiment_main
from hybrid.core.errors import ConfigError
from hybrid.recipes import Context, RecipeSource, load_recipe, parse_recipe
from hybrid.recipes.builders import artifact_path, inside

RECIPE = 'name = "{name}"\n[system]\ntype = "bm25"\n'


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b", "..", ".hidden", "", "a b", "x\n"])
def test_recipe_names_must_be_plain(name, tmp_path):
    with pytest.raises(ConfigError) as caught:
        parse_recipe(RECIPE.format(name=name.replace("\n", "\\n")), tmp_path / "r.toml")
    assert caught.value.line == 1
    assert "is not a plain name" in caught.value.reason
    assert_documented("is not a plain name (letters, digits, '.', '_' and '-', starting with a letter or digit)")


@pytest.mark.parametrize("name", ["bm25", "my-recipe_2.v1"])
def test_plain_names_are_fine(name, tmp_path):
    assert parse_recipe(RECIPE.format(name=name), tmp_path / "r.toml").name == name


def test_experiment_writes_nothing_outside_its_output_dir(tmp_path, capsys):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    recipe = work / "evil.toml"
    recipe.write_text(RECIPE.format(name="../../escaped"))
    rc = run_cli(experiment_main, ["--topics", "sample", "--recipes", str(recipe), "--output-dir", str(work / "out")])
    assert rc == 2
    assert "is not a plain name" in capsys.readouterr().err
    assert not list(tmp_path.rglob("escaped*"))


def test_bundled_recipe_lookup_takes_names_only():
    with pytest.raises(ConfigError, match="no recipe named '../../regressions/sample'"):
        load_recipe("../../regressions/sample")


@pytest.mark.parametrize("value", ["../outside", "ltr/../../outside", "/etc/passwd", "/tmp"])
def test_artifact_paths_stay_inside_the_artifacts_directory(value, tmp_path):
    root = tmp_path / "artifacts"
    root.mkdir()
    source = RecipeSource(tmp_path / "r.toml", f'name = "r"\n[system]\ntype = "dense"\nindex = "{value}"\n')
    with pytest.raises(ConfigError) as caught:
        artifact_path(value, "index", "dense", Context(index=None, artifacts=root), source, must_exist=False)
    assert caught.value.line == 4
    assert "leads outside the artifacts directory" in caught.value.reason
    assert_documented("leads outside the artifacts directory")


def test_artifact_paths_inside_are_resolved(tmp_path):
    root = tmp_path / "artifacts"
    assert inside(root, "ltr/cmr-disck") == root / "ltr" / "cmr-disck"
    assert inside(root, "ltr/../dense/x") == root / "dense" / "x"
    assert inside(root, str(root / "dense")) == root / "dense"
    assert inside(root, ".") is None and inside(root, "..") is None


def test_recipe_train_refuses_a_model_path_outside_artifacts(sparse_index, data_dir, tmp_path):
    from hybrid.cli.recipe_train import train_recipe
    from hybrid.core.formats import read_topics
    from hybrid.core.formats.qrels import read_qrels

    root = tmp_path / "artifacts"
    root.mkdir()
    recipe = parse_recipe('name = "t"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
                          'rerankers = [{ type = "ltr", model = "../../stolen", featureset = "disck", '
                          'learner = "logistic" }]\n', tmp_path / "t.toml")
    with pytest.raises(ConfigError, match="leads outside the artifacts directory"):
        topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
        train_recipe(recipe, Context(index=sparse_index, hits=5, artifacts=root), topics,
                     read_qrels(data_dir / "tiny_qrels.txt"))
    assert not (tmp_path.parent / "stolen").exists()

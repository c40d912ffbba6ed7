"""Recipes: strict parsing (file:line for unknown keys) and building every bundled cheap recipe."""

from __future__ import annotations

import pytest

from hybrid.core.errors import ConfigError
from hybrid.recipes import Context, bundled_recipes, load_recipe, parse_recipe


@pytest.mark.parametrize(("system", "error"), [
    ('type = "multifield"\nwieghts = "mention=1"\n', r"r\.toml:5: unknown key 'wieghts'"),
    ('type = "multifield"\nk1 = "high"\n', r"r\.toml:5: 'k1' must be a finite number >= 0, got 'high'"),
    ('type = "pipeline"\n', r"r\.toml:4: system type 'pipeline' needs 'first': the system whose run"),
    ('type = "multifeld"\n', r"r\.toml:4: unknown system type 'multifeld'; known: .*did you mean 'multifield'"),
])
def test_a_bad_system_key_or_value_names_file_and_line(tmp_path, system, error):
    path = tmp_path / "r.toml"
    path.write_text('name = "x"\n\n[system]\n' + system)
    with pytest.raises(ConfigError, match=error):
        load_recipe(str(path)).build(Context(index=None))


def test_unknown_top_level_key_and_type():
    with pytest.raises(ConfigError, match="unknown recipe key 'nmae'"):
        parse_recipe('nmae = "x"\n[system]\ntype = "bm25"\n')
    with pytest.raises(ConfigError, match="unknown system type 'bm26'"):
        parse_recipe('name = "x"\n[system]\ntype = "bm26"\n').build(Context(index=None))
    with pytest.raises(ConfigError, match="invalid TOML"):
        parse_recipe("name = \n")


def test_cheap_bundled_recipes_build_and_run(sparse_index, data_dir):
    from hybrid.core.formats import read_topics

    topics = read_topics(data_dir / "tiny_topics.jsonl", resolve=sparse_index.passage_text)
    cheap = [load_recipe(n) for n in bundled_recipes()]
    cheap = [r for r in cheap if r.ci]
    assert {"bm25", "multifield", "cmr-mention", "cmr-doc", "cmr-coref", "coresearch-bm25"} <= {r.name for r in cheap}
    context = Context(index=sparse_index, hits=5)
    for recipe in cheap:
        run = recipe.build(context)(topics)
        assert set(run) == {t.qid for t in topics}, recipe.name
        assert all(h.docid.split(":")[0] != "a1" for h in run["q-en-reid"]), recipe.name


def test_every_builder_declares_typed_parameters_with_descriptions():
    from hybrid.core.params import BM25_K1, Param
    from hybrid.recipes import BUILDERS

    for kind, builder in BUILDERS.items():
        assert builder.doc, f"{kind} has no docstring"
        for param in builder.params.values():
            assert isinstance(param, Param) and param.desc, (kind, param)
    for kind in ("bm25", "multifield", "bm25f", "rocchio", "safety-net"):
        assert BUILDERS[kind].params["k1"].default == BM25_K1


def test_the_recipes_command_lists_types_from_the_declarations(capsys):
    from hybrid.cli.recipes import main

    assert main(["types", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "| `k1` | number | 0.9 | BM25 term saturation" in out and "| `formulation` | string | 'sentence' |" in out
    assert main([]) == 0
    assert "multifield-net" in capsys.readouterr().out


def test_the_types_command_lists_every_kind_of_component_with_its_declared_defaults(capsys):
    """Systems, rerankers, fusion methods, learners and feature groups are listed from their one declaration."""
    from hybrid.cli.recipes import main
    from hybrid.core.errors import InputError

    assert main(["types"]) == 0
    out = capsys.readouterr().out
    for heading in ("# System types", "# Reranker types", "# Fusion methods", "# Learners", "# Feature groups"):
        assert f"\n{heading}\n" in f"\n{out}", heading
    ltr = out[out.index("## ltr\n"):out.index("## reader\n")]
    assert "| `depth` | integer | 100 |" in ltr and "(one of logistic, ridge, gbt, lambdamart)" in ltr
    assert "| `rrf_k` | integer | 60 |" in out[out.index("## rrf\n"):]
    assert "| `num_leaves` | integer | 31 |" in out[out.index("## lambdamart\n"):]
    assert main(["types", "lambdamart", "rrf"]) == 0
    out = capsys.readouterr().out
    assert "# Learners" in out and "## rrf" in out and "# System types" not in out
    with pytest.raises(InputError, match="no component named 'lambdamrt'; known: .*did you mean 'lambdamart'"):
        main(["types", "lambdamrt"])

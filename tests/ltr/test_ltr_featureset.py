"""Feature sets in TOML: validation with file:line errors, wildcard expansion, fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest

from features.pairs.registry import group_features
from hybrid.core.errors import ConfigError
from ltr.featureset import load_featureset

CONFIGS = Path(__file__).resolve().parents[2] / "ltr" / "configs"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fs.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """name = "small"
description = "two groups"

[groups.strings]
features = ["mention_exact", "mention_char3_dice"]

[groups.first_stage]
features = ["*"]
normalisation = "query_minmax"
normalise = { fs_reciprocal_rank = "none" }
"""


def test_shipped_configs_load():
    for path in sorted(CONFIGS.glob("*.toml")):
        fs = load_featureset(path)
        assert fs.feature_names and len(set(fs.feature_names)) == len(fs.feature_names)


def test_wildcard_expands_and_overrides_apply(tmp_path):
    fs = load_featureset(write(tmp_path, GOOD))
    assert fs.group_names == ["strings", "first_stage"]
    assert fs.feature_names[:2] == ["mention_exact", "mention_char3_dice"]
    assert fs.feature_names[2:] == group_features("first_stage")
    norms = dict(zip(fs.feature_names, fs.normalisations(), strict=True))
    assert norms["fs_score"] == "query_minmax" and norms["fs_reciprocal_rank"] == "none"
    assert norms["mention_exact"] == "none"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (GOOD.replace('description = "two groups"', 'descripton = "typo"'), 2, "unknown key 'descripton'"),
        (GOOD.replace('normalisation = "query_minmax"', 'normalization = "query_minmax"'), 9,
         "unknown key 'normalization'"),
        (GOOD.replace('"mention_char3_dice"', '"mention_char3_dise"'), 5, "did you mean mention_char3_dice"),
        (GOOD.replace('"query_minmax"', '"softmax"'), 9, "unknown normalisation 'softmax'"),
        (GOOD.replace('fs_reciprocal_rank = "none"', 'mention_exact = "none"'), 10, "not a feature of"),
        (GOOD + "\n[groups.again]\nfeatures = [\"mention_exact\"]\n", 13, "listed in both"),
        (GOOD.replace('name = "small"', 'name = "has space"'), 1, "'name'"),
        (GOOD.replace("[groups.strings]", "[groups.nosuchgroup]").replace('["mention_exact", "mention_char3_dice"]',
                                                                           '["*"]'), 5, "provider group"),
    ],
)
def test_bad_feature_sets_name_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_featureset(path)
    assert err.value.path == str(path)
    assert err.value.line == line, str(err.value)
    assert words in str(err.value)


def test_broken_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_featureset(write(tmp_path, GOOD + "\n[groups.x\n"))


def test_fingerprint_tracks_features_and_normalisation_not_names(tmp_path):
    base = load_featureset(write(tmp_path, GOOD))
    renamed = load_featureset(write(tmp_path, GOOD.replace('name = "small"', 'name = "other"')))
    renorm = load_featureset(write(tmp_path, GOOD.replace('"query_minmax"', '"query_zscore"')))
    fewer = base.without_group("strings")
    assert base.fingerprint() == renamed.fingerprint()
    assert base.fingerprint() != renorm.fingerprint()
    assert base.fingerprint() != fewer.fingerprint()
    assert fewer.feature_names == group_features("first_stage")
    assert "missing 2 feature(s): mention_exact, mention_char3_dice" in base.describe_difference(fewer)
    with pytest.raises(ConfigError):
        base.without_group("strings").without_group("first_stage")

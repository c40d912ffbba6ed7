"""Feature sets: named groups of features with their normalisation, declared in TOML.

The Elasticsearch LTR plugin's idea: a feature set is a named, versioned list of features, and a
model is frozen to the exact set it was trained with. Here a feature set file looks like::

    name = "default"
    description = "hand-written groups over the multifield first stage"

    [groups.string]                  # a group: the unit of ablation
    features = ["*"]                 # every feature of the provider group of the same name
    normalisation = "none"

    [groups.first_stage]
    features = ["fs_score", "fs_reciprocal_rank"]
    normalisation = "query_minmax"   # default for the group
    normalise = { fs_reciprocal_rank = "none" }   # per-feature overrides

    [providers.reader]               # options of a provider group (here: which reader checkpoint)
    checkpoint = "../models/reader"  # relative to this file

Normalisations: ``none``, ``zscore`` and ``minmax`` (statistics fitted on the training matrix and
saved with the model), ``log1p`` (sign-preserving), ``query_zscore`` and ``query_minmax`` (within
each query's candidate list; nothing to fit). Unknown keys, features and normalisations are
:class:`~hybrid.core.errors.ConfigError` s naming the file and line.

The *fingerprint* of a feature set hashes its expanded feature names, their normalisations and each
feature's implementation version; a model refuses to score with a set whose fingerprint differs.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from features.pairs import registry
from features.pairs.registry import configured, group_features, lookup, unavailable
from hybrid.core.errors import ConfigError
from hybrid.core.formats.config import read_config_text, toml_loads

NORMALISATIONS = ("none", "zscore", "minmax", "log1p", "query_zscore", "query_minmax")
TOP_KEYS = {"name", "description", "groups", "providers"}
#: Provider options holding paths; relative paths are resolved against the feature set file's folder.
PATH_OPTIONS = ("checkpoint", "index", "path")
GROUP_KEYS = {"features", "normalisation", "normalise", "description"}
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class GroupSpec:
    """One named group: its features (expanded, in order) and their normalisations."""

    name: str
    features: tuple[str, ...]
    normalisation: str = "none"
    overrides: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def normalisation_of(self, feature: str) -> str:
        return dict(self.overrides).get(feature, self.normalisation)


@dataclass(frozen=True)
class FeatureSet:
    name: str
    groups: tuple[GroupSpec, ...]
    description: str = ""
    source: str | None = field(default=None, compare=False)
    providers: tuple[tuple[str, str], ...] = ()  # (group, options as canonical JSON)

    @property
    def provider_options(self) -> dict[str, dict]:
        return {g: json.loads(o) for g, o in self.providers}

    @property
    def feature_names(self) -> list[str]:
        return [f for g in self.groups for f in g.features]

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.groups]

    def normalisations(self) -> list[str]:
        return [g.normalisation_of(f) for g in self.groups for f in g.features]

    def group_of(self, feature: str) -> str:
        for g in self.groups:
            if feature in g.features:
                return g.name
        raise KeyError(feature)

    def without_group(self, group: str) -> FeatureSet:
        if group not in self.group_names:
            raise ConfigError(self.source, None, f"feature set {self.name!r} has no group {group!r}")
        groups = tuple(g for g in self.groups if g.name != group)
        if not groups:
            raise ConfigError(self.source, None, f"removing {group!r} leaves feature set {self.name!r} empty")
        return replace(self, name=f"{self.name}-without-{group}", groups=groups)

    def only_groups(self, names: list[str]) -> FeatureSet:
        unknown = sorted(set(names) - set(self.group_names))
        if unknown:
            raise ConfigError(self.source, None, f"feature set {self.name!r} has no group(s) {unknown}")
        return replace(self, name=f"{self.name}-only-{'+'.join(names)}",
                       groups=tuple(g for g in self.groups if g.name in names))

    def to_json(self) -> dict:
        return {
            "name": self.name, "description": self.description,
            "groups": [
                {"name": g.name, "features": list(g.features), "normalisation": g.normalisation,
                 "normalise": dict(g.overrides), "description": g.description}
                for g in self.groups
            ],
            "providers": self.provider_options,
        }

    @classmethod
    def from_json(cls, obj: dict, source: str | None = None) -> FeatureSet:
        groups = tuple(
            GroupSpec(g["name"], tuple(g["features"]), g.get("normalisation", "none"),
                      tuple(sorted(g.get("normalise", {}).items())), g.get("description", ""))
            for g in obj["groups"]
        )
        providers = tuple((g, json.dumps(o, sort_keys=True)) for g, o in sorted(obj.get("providers", {}).items()))
        return cls(obj["name"], groups, obj.get("description", ""), source, providers)

    def fingerprint(self) -> str:
        """sha256 over (feature, normalisation, implementation version) in order; names of sets/groups excluded."""
        items = []
        for g in self.groups:
            for f in g.features:
                _, feat = lookup(f, self.source)
                items.append([f, g.normalisation_of(f), feat.group, feat.version])
        if self.providers:
            opts = self.provider_options
            items.append(["providers", opts, {g: configured(g, o).identity() for g, o in opts.items()}])
        return hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()

    def describe_difference(self, other: FeatureSet) -> str:
        """What differs between two sets, for error messages."""
        mine, theirs = self.feature_names, other.feature_names
        parts = []
        if missing := [f for f in mine if f not in theirs]:
            parts.append(f"missing {len(missing)} feature(s): {_some(missing)}")
        if extra := [f for f in theirs if f not in mine]:
            parts.append(f"extra {len(extra)} feature(s): {_some(extra)}")
        if not missing and not extra and mine != theirs:
            parts.append("same features in a different order")
        norm_a, norm_b = dict(zip(mine, self.normalisations(), strict=True)), dict(
            zip(theirs, other.normalisations(), strict=True))
        if changed := [f for f in mine if f in norm_b and norm_a[f] != norm_b[f]]:
            parts.append("different normalisation of " + ", ".join(f"{f} ({norm_a[f]} vs {norm_b[f]})"
                                                                    for f in changed[:5]))
        return "; ".join(parts) or "different feature implementation versions"


def _some(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (" ..." if len(names) > n else "")


def _line_of(text: str, pattern: str) -> int | None:
    """1-based line of the first match of ``pattern`` (multiline regex) in ``text``."""
    match = re.search(pattern, text, flags=re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _key_line(text: str, key: str, table: str | None = None) -> int | None:
    """Best-effort line of ``key = ...`` (inside ``[table]`` when given) or of a ``[table.key]`` header."""
    esc = re.escape(key)
    start = 0
    if table is not None:
        header = re.search(rf"^\s*\[\s*{re.escape(table)}\s*\]", text, flags=re.MULTILINE)
        if header:
            start = header.end()
    sub = text[start:]
    match = re.search(rf"^\s*(?:\[[^\]]*\b{esc}\s*\]|\"?{esc}\"?\s*=)", sub, flags=re.MULTILINE)
    if not match:
        match = re.search(rf"\b{esc}\b", sub)
    return text.count("\n", 0, start + match.start()) + 1 if match else None


def _value_line(text: str, value: str, table: str) -> int | None:
    """Best-effort line of the quoted string ``value`` inside ``[table]``."""
    header = re.search(rf"^\s*\[\s*{re.escape(table)}\s*\]", text, flags=re.MULTILINE)
    start = header.end() if header else 0
    match = re.search(rf"[\"']{re.escape(value)}[\"']", text[start:])
    return text.count("\n", 0, start + match.start()) + 1 if match else None


def load_featureset(path: str | Path) -> FeatureSet:
    """Read and validate a TOML feature set; features are checked against the provider registry."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(path, None, "feature set file does not exist")
    text = read_config_text(path)
    try:
        data = toml_loads(text, path)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise ConfigError(path, int(match.group(1)) if match else None, f"invalid TOML: {exc}") from None
    return parse_featureset(data, text, str(path))


def parse_featureset(data: dict, text: str = "", source: str | None = None) -> FeatureSet:
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(source, _key_line(text, key), f"unknown key {key!r}; allowed: {sorted(TOP_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(source, _key_line(text, "name"), "'name' must be a non-empty string of letters, digits, _.-")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(source, _key_line(text, "description"), "'description' must be a string")
    raw_groups = data.get("groups")
    if not isinstance(raw_groups, dict) or not raw_groups:
        raise ConfigError(source, _key_line(text, "groups"), "a feature set needs at least one [groups.<name>] table")
    provider_groups = {p.group for p in registry.providers()}
    seen: dict[str, str] = {}
    groups = []
    for gname, spec in raw_groups.items():
        table = f"groups.{gname}"
        gline = _line_of(text, rf"^\s*\[\s*groups\.{re.escape(gname)}\s*\]")
        if not isinstance(spec, dict):
            raise ConfigError(source, gline, f"[{table}] must be a table")
        for key in spec:
            if key not in GROUP_KEYS:
                raise ConfigError(source, _key_line(text, key, table) or gline,
                                  f"unknown key {key!r} in [{table}]; allowed: {sorted(GROUP_KEYS)}")
        feats = spec.get("features")
        if not isinstance(feats, list) or not feats or not all(isinstance(f, str) for f in feats):
            raise ConfigError(source, _key_line(text, "features", table) or gline,
                              f"[{table}] needs 'features', a non-empty list of feature names (or [\"*\"])")
        expanded: list[str] = []
        for f in feats:
            if f == "*" or f.endswith(":*"):
                pgroup = gname if f == "*" else f[:-2]
                if pgroup not in provider_groups:
                    raise ConfigError(source, _value_line(text, f, table) or gline,
                                      f"'{f}' needs a provider group named {pgroup!r}; "
                                      f"groups: {sorted(provider_groups)}")
                if pgroup in unavailable():
                    raise ConfigError(source, _value_line(text, f, table) or gline,
                                      f"provider group {pgroup!r} is not available: {unavailable()[pgroup]}")
                expanded.extend(group_features(pgroup))
            else:
                lookup(f, source, _value_line(text, f, table) or gline)
                expanded.append(f)
        for f in expanded:
            if f in seen:
                raise ConfigError(source, _value_line(text, f, table) or gline,
                                  f"feature {f!r} is listed in both [groups.{seen[f]}] and [{table}]")
            seen[f] = gname
        norm = spec.get("normalisation", "none")
        if norm not in NORMALISATIONS:
            raise ConfigError(source, _key_line(text, "normalisation", table) or gline,
                              f"unknown normalisation {norm!r}; choose from {NORMALISATIONS}")
        overrides = spec.get("normalise", {})
        if not isinstance(overrides, dict):
            raise ConfigError(source, _key_line(text, "normalise", table) or gline,
                              "'normalise' must be a table of feature = normalisation")
        for f, n in overrides.items():
            if f not in expanded:
                raise ConfigError(source, _key_line(text, f, table) or gline,
                                  f"'normalise' names {f!r}, which is not a feature of [{table}]")
            if n not in NORMALISATIONS:
                raise ConfigError(source, _key_line(text, f, table) or gline,
                                  f"unknown normalisation {n!r} for {f!r}; choose from {NORMALISATIONS}")
        groups.append(GroupSpec(gname, tuple(expanded), norm, tuple(sorted(overrides.items())),
                                str(spec.get("description", ""))))
    providers = _parse_providers(data.get("providers", {}), text, source, provider_groups)
    return FeatureSet(name, tuple(groups), description, source, providers)


def _parse_providers(raw: object, text: str, source: str | None, known: set[str]) -> tuple[tuple[str, str], ...]:
    """``[providers.<group>]`` tables -> (group, canonical JSON options), validated by the provider itself."""
    if not isinstance(raw, dict):
        raise ConfigError(source, _key_line(text, "providers"), "'providers' must be a table of [providers.<group>]")
    out = []
    for group, options in sorted(raw.items()):
        line = _line_of(text, rf"^\s*\[\s*providers\.{re.escape(group)}\s*\]")
        if group not in known:
            raise ConfigError(source, line, f"unknown provider group {group!r}; groups: {sorted(known)}")
        if not isinstance(options, dict):
            raise ConfigError(source, line, f"[providers.{group}] must be a table of options")
        options = dict(options)
        base = Path(source).parent if source else Path.cwd()
        for key in PATH_OPTIONS:
            if isinstance(options.get(key), str) and not Path(options[key]).is_absolute():
                options[key] = str((base / options[key]).resolve())
        try:
            configured(group, options)
        except ConfigError as exc:
            raise ConfigError(source, line, exc.reason) from None
        out.append((group, json.dumps(options, sort_keys=True)))
    return tuple(out)

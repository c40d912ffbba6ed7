"""Parameters of the engine's stages, declared once: name, type, default and description.

A recipe builder (:mod:`hybrid.recipes`) declares the keys its ``system.type`` accepts as :class:`Param`
objects, in the spirit of ir_measures' ``ParamInfo``. The same objects check a recipe's values (an error
names the file and line), give a builder its defaults, and generate the command-line options of
``python -m hybrid.search`` (type, default and help text), so a default such as BM25's k1 is written in
exactly one place and ``--help`` shows it.

BM25's k1 and b are Anserini's defaults (``SearchCollection.Args``: 0.9 / 0.4): plain Pyserini BM25, the
multi-field and BM25F searches, Rocchio, the safety net, the Java feature extractor and event-collection
ranking all start from them, so a study that changes them changes them here or per recipe (``k1``/``b``).
"""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid.core.errors import ConfigError
from hybrid.core.records import KINDS

#: BM25 term-frequency saturation (Anserini's default).
BM25_K1 = 0.9
#: BM25 length normalisation (Anserini's default).
BM25_B = 0.4
#: Reciprocal rank fusion's k in w / (k + rank) (Cormack et al. 2009; ranx's and Pyserini's default).
RRF_K = 60
#: Dense retrieval: weight of the passage-vector cosine added to a passage's best mention score (where the dense
#: index has passage vectors), and how the two combine (see :mod:`hybrid.retrieval.dense`).
DENSE_PASSAGE_WEIGHT = 1.0
DENSE_COMBINES = ("max", "sum")
DENSE_COMBINE = "sum"
#: Dense retrieval: nearest mentions fetched per wanted passage, and queries encoded at once.
DENSE_OVERFETCH = 8
DENSE_BATCH_SIZE = 64

#: Integers reach Java (Lucene's int k, int depths) and int32 arrays: larger ones would overflow there.
INT_LIMIT = 2**31

_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list"}


@dataclass(frozen=True)
class Param:
    """One setting of a stage. ``default=None`` means "absent" (the stage decides, or the key is required);
    ``minimum``/``maximum`` bound numbers, ``choices`` bound strings."""

    name: str
    type: type | tuple[type, ...]
    default: Any
    desc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    what: str | None = None  # the rule in words, where the type alone does not say it
    required: bool = False  # the stage cannot be built without it (its builder says so, naming the line)

    def rule(self) -> str:
        """What a valid value is, in words (used by every error about this parameter)."""
        if self.what:
            return self.what
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        what = _TYPE_NAMES.get(self.type, self.type.__name__)
        if self.type is float and self.maximum is None:
            what = "a finite number"
        if self.minimum is not None and self.maximum is not None:
            return f"{what} between {_plain(self.minimum)} and {_plain(self.maximum)}"
        if self.minimum is not None:
            return f"{what} >= {_plain(self.minimum)}"
        return what

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not valid for this parameter (None when it is)."""
        if self.type is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, self.type)
        if ok and self.minimum is not None and value < self.minimum:
            ok = False
        if ok and self.maximum is not None and value > self.maximum:
            ok = False
        if ok and self.type is int and self.maximum is None and abs(value) >= INT_LIMIT:
            return f"'{self.name}' must be {self.rule()} and below 2**31 (2147483648), got {value!r}"
        if ok and self.choices is not None and value not in self.choices:
            ok = False
        if ok:
            return None
        near = suggestion(value, self.choices) if self.choices else ""
        return f"'{self.name}' must be {self.rule()}, got {value!r}{near}"

    def coerce(self, value: Any) -> Any:
        """A valid value in the parameter's type (an integer given for a number becomes a float)."""
        return float(value) if self.type is float else value

    def argparse_type(self) -> Callable[[str], Any]:
        """A converter for ``argparse`` that applies the same rule to a command-line string."""

        def convert(text: str) -> Any:
            value: Any = text
            if self.type in (int, float):
                try:
                    value = self.type(text)
                except ValueError:
                    raise argparse.ArgumentTypeError(f"must be {self.rule()}, got {text!r}") from None
            problem = self.problem(value)
            if problem:
                below = " and below 2**31 (2147483648)" if "below 2**31" in problem else ""
                raise argparse.ArgumentTypeError(f"must be {self.rule()}{below}, got {text!r}")
            return value

        convert.__name__ = self.name  # argparse names the converter in "invalid <name> value" messages
        return convert


def suggestion(name: Any, known: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` when ``name`` is a string near one of ``known``, else empty."""
    near = difflib.get_close_matches(name, list(known), n=1) if isinstance(name, str) else []
    return f"; did you mean {near[0]!r}?" if near else ""


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def params_by_name(params: Sequence[Param]) -> dict[str, Param]:
    """``{name: Param}``; a name declared twice is a programming error."""
    out: dict[str, Param] = {}
    for param in params:
        if param.name in out:
            raise ValueError(f"parameter {param.name!r} declared twice")
        out[param.name] = param
    return out


# -- parameters several stages share ------------------------------------------------------------------------

K1 = Param("k1", float, BM25_K1, "BM25 term saturation", minimum=0.0)
B = Param("b", float, BM25_B, "BM25 length normalisation", minimum=0.0, maximum=1.0)
#: The sparse mention-level retrievers' kind filter. Unset, the index decides (``SparseIndex.kinds_detected``):
#: same kind only where the corpus's annotation gave the kinds, any kind where the detector did, because on raw
#: text a wrong automatic kind hid coreferent passages (ECB+ dev, benchmarks/results/kind-typing.md, issue 37).
SAME_KIND = Param("same_kind", bool, None, "restrict candidates to the query's kind (event / entity); unset: yes on "
                                           "an index annotated from the corpus (--annotation corpus), no on one "
                                           "whose kinds were detected from raw text (--annotation auto)")
#: The bi-encoder keeps its filter on by default: it was trained with other-kind candidates masked, and any-kind
#: dense retrieval has not been measured.
DENSE_SAME_KIND = Param("same_kind", bool, True, "restrict candidates to the query's kind (event / entity)")


def split_per_kind(spec: str | None, what: str) -> tuple[str | None, dict[str, str]]:
    """The per-kind setting syntax shared by fusion and reader-interpolation weights: ``"V"``,
    ``"event=V;entity=V"`` or both (``"V;event=V"``: a kind without its own value uses the global one).
    Returns the global value's text and each kind's; an unknown kind is an error naming ``what``."""
    default: str | None = None
    by_kind: dict[str, str] = {}
    for part in filter(None, (x.strip() for x in (spec or "").split(";"))):
        if "=" in part:
            kind, value = (x.strip() for x in part.split("=", 1))
            if kind not in KINDS:
                raise ConfigError(None, None, f"{what}: unknown kind {kind!r} (event or entity)")
            by_kind[kind] = value
        else:
            default = part
    return default, by_kind

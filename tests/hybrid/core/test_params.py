"""Stage parameters declared once (hybrid.core.params.Param): the same object checks recipe values, fills
defaults, and gives hybrid.search its options."""

from __future__ import annotations

import argparse

import pytest

from hybrid.core.params import BM25_K1, K1, B, Param, params_by_name


def test_numbers_are_checked_against_type_and_bounds():
    assert K1.problem(1.2) is None and K1.problem(1) is None
    assert "'k1' must be a finite number >= 0" in K1.problem(-0.1)
    assert K1.problem(True) and K1.problem("0.9") and K1.problem(float("nan"))
    assert B.problem(1.0) is None and "between 0 and 1" in B.problem(1.5)
    depth = Param("depth", int, 100, "hits", minimum=1)
    assert depth.problem(3) is None and depth.problem(2.5) and depth.problem(0)


def test_choices_and_union_types():
    combine = Param("combine", str, "sum", "how", choices=("max", "sum"))
    assert combine.problem("max") is None and "one of max, sum" in combine.problem("avg")
    base = Param("base", (str, dict), None, "a recipe", what="a recipe name or an inline table")
    assert base.problem("bm25") is None and base.problem({"type": "bm25"}) is None
    assert base.problem(3) == "'base' must be a recipe name or an inline table, got 3"


def test_an_integer_given_for_a_number_becomes_a_float():
    assert K1.coerce(1) == 1.0 and isinstance(K1.coerce(1), float)
    assert K1.default == BM25_K1


def test_the_command_line_converter_applies_the_same_rule():
    convert = K1.argparse_type()
    assert convert("1.5") == 1.5
    with pytest.raises(argparse.ArgumentTypeError, match="must be a finite number >= 0"):
        convert("-1")
    with pytest.raises(argparse.ArgumentTypeError):
        convert("many")


def test_a_name_declared_twice_is_a_programming_error():
    with pytest.raises(ValueError, match="declared twice"):
        params_by_name([K1, K1])

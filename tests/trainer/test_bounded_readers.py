"""The one JSON and YAML reader (trainer/bounds.py): integers past MAX_INT_DIGITS and overflowing floats are
refused as UnsafeInput (a ValueError) or a YAML error with the line, never Python's bare conversion error;
nesting is refused from the event stream, on libyaml's parser and on PyYAML's own."""

from __future__ import annotations

import sys

import pytest
import yaml

from trainer import bounds
from trainer.bounds import MAX_INT_DIGITS, UnsafeInput, check_plain_value, safe_yaml_load, strict_json_loads


def test_json_integers_up_to_the_bound_parse_and_one_digit_more_is_refused() -> None:
    assert strict_json_loads("[" + "9" * MAX_INT_DIGITS + "]") == [int("9" * MAX_INT_DIGITS)]
    with pytest.raises(UnsafeInput, match=f"more than {MAX_INT_DIGITS} digits"):
        strict_json_loads("[-" + "9" * (MAX_INT_DIGITS + 1) + "]")


def test_a_json_integer_past_python_s_conversion_limit_is_unsafe_input_not_a_bare_value_error() -> None:
    with pytest.raises(UnsafeInput):
        strict_json_loads('{"a": ' + "9" * 5000 + "}")


def test_the_global_int_conversion_limit_is_left_as_it_was() -> None:
    before = sys.get_int_max_str_digits()
    strict_json_loads("[1]")
    safe_yaml_load("a: 1")
    assert sys.get_int_max_str_digits() == before


def test_a_json_float_that_overflows_is_refused() -> None:
    with pytest.raises(UnsafeInput, match="overflows"):
        strict_json_loads("[1" + "0" * 400 + ".0]")


@pytest.mark.parametrize("literal", ["9" * 400, "0x" + "f" * 300, ":".join(["59"] * 200)])
def test_a_yaml_integer_too_large_in_any_base_is_refused_with_its_line(literal: str) -> None:
    with pytest.raises(yaml.MarkedYAMLError, match=f"more than {MAX_INT_DIGITS} digits") as caught:
        safe_yaml_load("a: 1\nb: " + literal + "\n")
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 1


def test_a_huge_integer_built_in_python_is_refused_by_the_value_check() -> None:
    with pytest.raises(UnsafeInput, match=r"training\.seed"):
        check_plain_value({"training": {"seed": 10**MAX_INT_DIGITS}})


@pytest.mark.parametrize("parser", ["libyaml", "pure-python"])
def test_nested_yaml_is_refused_on_either_parser(parser: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if parser == "pure-python":
        monkeypatch.setattr(bounds, "_YamlParser", yaml.SafeLoader)
    for text in ["[" * 40_000, "{a: " * 10_000, "a: " + "[" * 100 + "]" * 100]:
        with pytest.raises(yaml.MarkedYAMLError, match="nests more than 64 levels"):
            safe_yaml_load(text)


def test_yaml_nested_64_levels_still_loads() -> None:
    value = safe_yaml_load("a: " + "[" * 63 + "]" * 63)["a"]  # the mapping and 63 lists: 64 levels
    depth = 0
    while value != []:
        value, depth = value[0], depth + 1
    assert depth == 62


def test_yaml_anchors_are_refused_even_without_an_alias() -> None:
    with pytest.raises(yaml.MarkedYAMLError, match="anchors and aliases"):
        safe_yaml_load("a: &x 1\n")


def test_yaml_with_a_nul_is_unsafe_input_with_its_path() -> None:
    with pytest.raises(UnsafeInput, match=r"b\.c"):
        safe_yaml_load('b:\n  c: "x\\0y"\n')

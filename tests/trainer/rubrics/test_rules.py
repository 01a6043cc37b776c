"""Every rubric rule type: what passes, what fails, and a bad parameter's message."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.errors import ConfigError
from trainer.rubrics.rules import RULES, build_rule
from trainer.samples import Sample

SAMPLE = Sample(id="0", prompt="What is 2+3?", answer="5")


def score(type_: str, params: dict[str, Any], completion: str, sample: Sample = SAMPLE) -> float:
    return build_rule(type_, params)(completion, sample).fraction


def test_the_registry_holds_the_five_rule_types() -> None:
    assert RULES.names() == ["format", "json_schema", "length", "regex", "verifier"]


def test_regex_search_passes_when_the_pattern_appears() -> None:
    assert score("regex", {"pattern": r"answer: \d+"}, "so the answer: 5") == 1.0
    assert score("regex", {"pattern": r"answer: \d+"}, "five") == 0.0


def test_regex_fullmatch_needs_the_whole_completion() -> None:
    assert score("regex", {"pattern": r"\d+", "mode": "fullmatch"}, "42") == 1.0
    assert score("regex", {"pattern": r"\d+", "mode": "fullmatch"}, "42 apples") == 0.0


def test_regex_must_match_false_rewards_avoiding_the_pattern() -> None:
    assert score("regex", {"pattern": "sorry", "must_match": False, "ignore_case": True}, "Sorry, no") == 0.0
    assert score("regex", {"pattern": "sorry", "must_match": False}, "It is 5") == 1.0


def test_a_bad_regex_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="pattern is not a valid regular expression"):
        build_rule("regex", {"pattern": "("})


def test_length_counts_words_within_inclusive_bounds() -> None:
    rule = build_rule("length", {"unit": "words", "min": 2, "max": 3})
    assert [rule(t, SAMPLE).fraction for t in ["one", "one two", "one two three", "a b c d"]] == [0, 1, 1, 0]
    assert rule("one two", SAMPLE).detail["count"] == 2


def test_length_counts_chars_and_lines() -> None:
    assert score("length", {"unit": "chars", "max": 3}, "abcd") == 0.0
    assert score("length", {"unit": "lines", "min": 2}, "a\nb") == 1.0


def test_length_needs_a_bound_and_min_below_max() -> None:
    with pytest.raises(ConfigError, match="give min, max or both"):
        build_rule("length", {"unit": "words"})
    with pytest.raises(ConfigError, match="min \\(5\\) is greater than max \\(2\\)"):
        build_rule("length", {"min": 5, "max": 2})


def test_format_boxed() -> None:
    assert score("format", {"kind": "boxed"}, r"so \boxed{5}") == 1.0
    assert score("format", {"kind": "boxed"}, r"so \boxed{}") == 0.0


def test_format_think_answer_needs_an_answer_after_the_thinking() -> None:
    assert score("format", {"kind": "think_answer"}, "<think>2+3</think> 5") == 1.0
    assert score("format", {"kind": "think_answer"}, "<think>2+3</think>  ") == 0.0
    assert score("format", {"kind": "think_answer"}, "5 <think>x</think>") == 0.0


def test_format_tags_must_appear_in_order() -> None:
    params = {"kind": "tags", "tags": ["reasoning", "answer"]}
    assert score("format", params, "<reasoning>r</reasoning><answer>5</answer>") == 1.0
    assert score("format", params, "<answer>5</answer><reasoning>r</reasoning>") == 0.0


def test_format_tags_refuses_an_empty_list_and_odd_names() -> None:
    with pytest.raises(ConfigError, match="needs a non-empty 'tags' list"):
        build_rule("format", {"kind": "tags"})
    with pytest.raises(ConfigError, match="plain tag names"):
        build_rule("format", {"kind": "tags", "tags": ["a>b"]})


def test_format_json_and_code_block() -> None:
    assert score("format", {"kind": "json"}, '{"a": 1}') == 1.0
    assert score("format", {"kind": "json"}, "```json\n[1, 2]\n```") == 1.0
    assert score("format", {"kind": "json"}, "{a: 1}") == 0.0
    assert score("format", {"kind": "code_block"}, "```py\nprint(1)\n```") == 1.0
    assert score("format", {"kind": "code_block"}, "print(1)") == 0.0


SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


def test_json_schema_accepts_valid_output_and_reports_the_first_violation() -> None:
    rule = build_rule("json_schema", {"schema": SCHEMA})
    assert rule('{"answer": 5}', SAMPLE).fraction == 1.0
    assert rule('```json\n{"answer": 5}\n```', SAMPLE).fraction == 1.0
    bad = rule('{"answer": "five"}', SAMPLE)
    assert bad.fraction == 0.0 and "answer" in bad.detail["reason"] and "integer" in bad.detail["reason"]
    assert rule("not json", SAMPLE).detail["reason"].startswith("not JSON")


def test_json_schema_refuses_an_invalid_schema() -> None:
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        build_rule("json_schema", {"schema": {"type": "integr"}})


def test_verifier_rule_uses_the_trainer_verifier_registry() -> None:
    rule = build_rule("verifier", {"name": "exact"})
    assert rule("5", SAMPLE).fraction == 1.0
    assert rule("6", SAMPLE).fraction == 0.0
    assert rule("5", SAMPLE).detail["correct"] is True


def test_verifier_rule_names_unknown_verifiers_and_bad_params() -> None:
    with pytest.raises(ConfigError, match="valid names are"):
        build_rule("verifier", {"name": "nope"})
    with pytest.raises(ConfigError, match="unknown parameter"):
        build_rule("verifier", {"name": "exact", "params": {"bogus": 1}})


def test_an_unknown_rule_type_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="valid names are: format, json_schema, length, regex, verifier"):
        build_rule("regexp", {})


def test_unknown_rule_parameters_are_named() -> None:
    with pytest.raises(ConfigError, match="patern: unknown parameter; valid: pattern"):
        build_rule("regex", {"patern": "x"})


def test_the_json_schema_rule_names_its_parameter_schema() -> None:
    with pytest.raises(ConfigError, match=r"valid: schema$"):
        build_rule("json_schema", {"schema": {}, "extra": 1})


def test_a_json_schema_pattern_runs_in_linear_time() -> None:
    # Python's re (jsonschema's own engine) backtracks for tens of seconds on this; RE2 answers at once.
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    rule = build_rule("json_schema", {"schema": schema})
    assert rule('{"name": "' + "a" * 40 + 'b"}', SAMPLE).fraction == 0.0
    assert rule('{"name": "aaa"}', SAMPLE).fraction == 1.0


def test_json_schema_pattern_properties_use_the_same_engine() -> None:
    schema = {"type": "object", "patternProperties": {"^x_": {"type": "integer"}}}
    rule = build_rule("json_schema", {"schema": schema})
    assert rule('{"x_a": 1, "y": "free"}', SAMPLE).fraction == 1.0
    assert rule('{"x_a": "one"}', SAMPLE).fraction == 0.0


def test_a_json_schema_with_a_backreference_pattern_is_refused_naming_where_it_is() -> None:
    schema = {"properties": {"name": {"pattern": "(a)\\1"}}}
    with pytest.raises(ConfigError, match=r"schema\.properties\.name\.pattern.*backreference"):
        build_rule("json_schema", {"schema": schema})

"""The calculator: arithmetic evaluated by walking the AST, everything else refused with the reason."""

from __future__ import annotations

import pytest

from tests.trainer.environments.env_helpers import chain_scorer
from trainer.environments import ModelTurn, ToolCallRecord, environment_factory
from trainer.environments.calculator import (
    MAX_DEPTH,
    CalculatorError,
    CalculatorParams,
    calculator_tool,
    evaluate,
    format_number,
)
from trainer.samples import Sample


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("3*(4+5)", 27),
        ("-2**2", -4),
        ("7/2", 3.5),
        ("7//2", 3),
        ("-7 % 3", 2),
        ("2**-1", 0.5),
        ("1.5e3", 1500.0),
    ],
)
def test_it_evaluates_arithmetic_like_python(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').system('id')", "a function call is not allowed"),
        ("(1).real", "attribute access is not allowed"),
        ("x + 1", "the name 'x' is not allowed"),
        ("'a' * 3", "a str literal is not allowed"),
        ("True + 1", "a bool literal is not allowed"),
        ("+3", "the operator UAdd is not allowed"),
        ("1 < 2", "a Compare expression is not allowed"),
        ("[1, 2]", "a List expression is not allowed"),
        ("lambda: 1", "a Lambda expression is not allowed"),
        ("1; 2", "not an arithmetic expression"),
        ("2**100000", "the exponent 100000 is too large"),
        ("9**9**9", "the exponent 387420489 is too large"),
        ("10**400", "the result would have more than 1024 bits"),
        ("2**1000*2**1000", "the result has more than 1024 bits"),
        ("1e308*10", "the result is not a finite number"),
        ("1e999", "the result is not a finite number"),
        ("(-8)**0.5", "the result is not a real number (complex)"),
        ("1/0", "division by zero"),
        ("0**-1", "division by zero"),
        ("-" * 100 + "1", "nested too deeply"),
        ("1" * 201, "the expression is 201 characters; the limit is 200"),
    ],
)
def test_anything_else_is_refused_with_the_reason(expression: str, reason: str) -> None:
    with pytest.raises(CalculatorError) as err:
        evaluate(expression)
    assert reason in str(err.value)


def test_parentheses_nested_past_the_parser_s_limit_are_refused_as_too_deep() -> None:
    with pytest.raises(CalculatorError, match="nested too deeply"):
        evaluate("(" * 300 + "1" + ")" * 300, max_chars=1000)
    assert evaluate("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH) == 1  # parentheses alone build no depth


def test_an_integral_float_reads_as_an_integer() -> None:
    assert [format_number(v) for v in (3.0, 3.5, 27, 1e20)] == ["3", "3.5", "27", "1e+20"]


def test_the_tool_returns_the_value_or_the_refusal() -> None:
    tool = calculator_tool(CalculatorParams(max_expression_chars=20))
    assert tool.run({"expression": "6/2"}).text == "3"
    refused = tool.run({"expression": "1+" * 11 + "1"})
    assert refused.status == "error"
    assert refused.text == "error: the expression is 23 characters; the limit is 20"


def test_the_first_turn_without_a_call_is_the_answer_and_earns_the_score() -> None:
    env = environment_factory("calculator", {}, chain_scorer())()
    env.reset(Sample("c", "(9+6)*4-5=", "55", {"solution": "15*4-5=60-5=55;#### 55"}))
    call = ToolCallRecord("calculator", {"expression": "(9+6)*4-5"}, "55", "ok", 0.0)
    first = env.step(ModelTurn(0, "<tool_call>...</tool_call>", (call,)))
    assert (first.reward, first.done) == (None, False)
    final = env.step(ModelTurn(1, "#### 55", ()))
    assert (final.reward, final.done) == (1.0, True)
    assert env.final_score().reward == 1.0 and env.state().done

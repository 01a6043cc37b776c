"""``calculator``: one tool that evaluates arithmetic safely; the final answer is scored by the task's verifiers.

The expression is parsed with ``ast`` and walked by hand: only number literals, ``+ - * / // % **``, unary minus
and parentheses, never ``eval``. Every input is bounded: its length, its nesting depth, the size of any integer
(``MAX_INT_BITS``) and of an exponent, and floats must stay finite, so no expression can exhaust memory or time.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field

from trainer.environments.base import (
    ENVIRONMENTS,
    AnswerScorer,
    EnvironmentParams,
)
from trainer.environments.tool_task import ToolTask
from trainer.environments.tools import Tool, ToolOutput

MAX_DEPTH = 32  # nesting of operations and parentheses
MAX_INT_BITS = 1024  # about 308 decimal digits, the range of a float
MAX_EXPONENT = 1024
ALLOWED = "only numbers, + - * / // % ** unary minus and parentheses are allowed"
TOO_DEEP = f"the expression is nested too deeply (at most {MAX_DEPTH} levels)"

Number = int | float


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        shown = exponent if isinstance(exponent, int) else f"{exponent:g}"
        raise CalculatorError(f"the exponent {shown} is too large (at most {MAX_EXPONENT} in size)")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        bits = (abs(base).bit_length() - 1) * exponent  # a lower bound on the result's bits
        if bits > MAX_INT_BITS:
            raise CalculatorError(f"the result would have more than {MAX_INT_BITS} bits")
    result: Number = base**exponent
    return result


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}


def evaluate(expression: str, max_chars: int = 200) -> Number:
    """The value of an arithmetic expression; CalculatorError for anything else.

    >>> evaluate("3*(4+5)")
    27
    """
    if len(expression) > max_chars:
        raise CalculatorError(f"the expression is {len(expression)} characters; the limit is {max_chars}")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as err:
        if "nested" in str(err.msg):  # "too many nested parentheses"
            raise CalculatorError(TOO_DEEP) from None
        raise CalculatorError(f"not an arithmetic expression: {ALLOWED}") from None
    except (RecursionError, MemoryError):
        raise CalculatorError(TOO_DEEP) from None
    return _evaluate(tree.body, 0)


def _evaluate(node: ast.expr, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise CalculatorError(TOO_DEEP)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _checked(-_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, depth + 1), _evaluate(node.right, depth + 1)
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("the result is too large") from None
    raise CalculatorError(f"{_describe(node)} is not allowed: {ALLOWED}")


def _checked(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError(f"the result is not a real number ({type(value).__name__}): {ALLOWED}")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not a finite number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError(f"the result has more than {MAX_INT_BITS} bits")
    return value


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return "a function call"
    if isinstance(node, ast.Attribute):
        return "attribute access"
    if isinstance(node, ast.Name):
        return f"the name {node.id[:40]!r}"
    if isinstance(node, ast.Constant):
        return f"a {type(node.value).__name__} literal"
    if isinstance(node, ast.UnaryOp | ast.BinOp):
        return f"the operator {type(node.op).__name__}"
    return f"a {type(node).__name__} expression"


def format_number(value: Number) -> str:
    """An integral float without its ``.0`` (``6/2`` -> ``3``), so an answer copied from it reads as an integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


class CalculatorParams(EnvironmentParams):
    max_expression_chars: int = Field(
        200, ge=1, le=1000, description="Longest expression the tool evaluates."
    )
    timeout_s: float = Field(2.0, gt=0, le=60, description="Deadline of one calculator call, in seconds.")


def calculator_tool(params: CalculatorParams) -> Tool:
    def run(arguments: dict[str, Any]) -> ToolOutput:
        try:
            return ToolOutput(format_number(evaluate(arguments["expression"], params.max_expression_chars)))
        except CalculatorError as err:
            return ToolOutput.error(str(err))

    return Tool(
        name="calculator",
        description="Evaluate an arithmetic expression: numbers, + - * / // % **, unary minus and parentheses.",
        parameters={
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. 3*(4+5)"}},
            "required": ["expression"],
        },
        run=run,
        timeout_s=params.timeout_s,
    )


@ENVIRONMENTS.register("calculator")
class CalculatorEnvironment(ToolTask):
    """A calculator tool (safe arithmetic: numbers, + - * / // % **, parentheses); the first turn without a tool
    call is the answer, and the episode's reward is the task's verifier score of it."""

    name: ClassVar[str] = "calculator"
    turn_rewards: ClassVar[bool] = False
    Params: ClassVar[type[EnvironmentParams]] = CalculatorParams

    def __init__(self, params: CalculatorParams, scorer: AnswerScorer) -> None:
        super().__init__([calculator_tool(params)], scorer)

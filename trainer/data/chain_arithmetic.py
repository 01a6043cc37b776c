"""Built-in multi-step arithmetic with a scratchpad: ``"(9+6)*4-5="`` -> ``"15*4-5=60-5=55;#### 55"``.

A chain of 3-8 integer operands joined by ``+``, ``-`` and ``*``, evaluated left to right, in the spirit of
reasoning-gym's ``chain_sum`` (sums and differences of ``min_terms..max_terms`` operands) and
``basic_arithmetic`` (products too). It differs from them in three ways:

- the reference solution is a scratchpad that rewrites the expression once per operation: each line is
  the expression with its leftmost operation done (``9+6+4+5=15+4+5=19+5=24``, the "show your work"
  scratchpad of Nye et al. 2021), lines joined by ``=`` (each equality is true), then ``;`` and the final
  answer after ``#### `` (the GSM8K delimiter). A line's leading number is that step's intermediate result
  and the rest is copied from the line before, so the chain_arithmetic verifier can say which step went
  wrong first, and whether the result or the copy was wrong;
- the prompt is parenthesised only where left-to-right order differs from the usual precedence
  (``(9+6)*4-5``), so it reads as ordinary arithmetic and Python's ``eval`` gives the same answer; every
  line of the scratchpad follows the same rule;
- every intermediate result stays within ``[min_value, max_result]`` (a subtraction that would go below,
  or a sum or product that would go above, is replaced by the other kind of step), which keeps every
  line's length between known bounds: the scratchpads of the built-in levels are 26-67 characters, i.e.
  27-68 tokens of the tiny model's character tokenizer with its end token.

Why this shape: every step needs only what is right before it (the line above), so a model of a million
parameters learns it in minutes on a CPU, while a chain of steps still fails often enough that pass
rates spread over the levels.

Problem ``i`` depends only on ``(seed, i)`` and the level, so a larger ``size`` only appends problems.
``data.task`` names a level (``easy``, ``medium``, ``hard``; ``mixed``, the default, draws one of the
three per problem, so pass rates spread from the easy end to the hard end), and ``data.task_config``
overrides its knobs (``ChainLevel``'s fields).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from trainer.errors import DataError
from trainer.samples import Sample

# The scratchpad format; trainer/verifiers/chain_arithmetic.py reads the same (data may not import verifiers).
LINE_SEPARATOR = "="  # between the rewritten lines (each equality is true)
STEP_SEPARATOR = ";"  # between the last line and the answer
ANSWER_MARKER = "#### "
OPERATORS = ("+", "-", "*")

MIXED = "mixed"
DEFAULT_LEVEL = MIXED


class ChainLevel(BaseModel):
    """The difficulty knobs of one level: how many operands, how large, and how many products."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_operands: int = Field(
        4, ge=2, le=8, description="Fewest operands of a problem (steps = operands - 1)."
    )
    max_operands: int = Field(4, ge=2, le=8, description="Most operands of a problem.")
    min_value: int = Field(
        10,
        ge=0,
        le=10**6,
        description="Smallest addend/subtrahend, and the floor of every intermediate result.",
    )
    max_value: int = Field(
        99, ge=1, le=10**6, description="Largest addend/subtrahend (and the first operand)."
    )
    product_share: float = Field(
        0.0, ge=0.0, le=1.0, description="Chance that a step multiplies (else it adds or subtracts, evenly)."
    )
    max_multiplier: int = Field(
        9, ge=2, le=1000, description="A product's second operand is drawn from 2..max_multiplier."
    )
    max_result: int = Field(999, ge=1, le=10**9, description="Ceiling of every intermediate result.")

    @model_validator(mode="after")
    def _check_ranges(self) -> ChainLevel:
        if self.max_operands < self.min_operands:
            raise ValueError(f"max_operands {self.max_operands} is below min_operands {self.min_operands}")
        if self.max_value < self.min_value:
            raise ValueError(f"max_value {self.max_value} is below min_value {self.min_value}")
        if self.max_result < self.max_value:
            raise ValueError(
                f"max_result {self.max_result} is below max_value {self.max_value}: raise max_result"
            )
        # Either a sum or a difference must always fit: acc + min_value <= max_result or acc >= 2 * min_value.
        if self.max_result < 3 * self.min_value:
            raise ValueError(
                f"max_result {self.max_result} must be at least 3 * min_value ({3 * self.min_value}) so that every "
                "step can add or subtract within [min_value, max_result]"
            )
        return self


LEVELS: dict[str, ChainLevel] = {
    # Single-digit operands, every intermediate result in 1..99; the levels differ in how many steps they
    # chain (a scratchpad grows with the square of the operand count) and in products.
    # 5 operands (4 steps) of sums and differences: 26-31 characters.
    "easy": ChainLevel(min_operands=5, max_operands=5, min_value=1, max_value=9, max_result=99),
    # 6 operands (5 steps): 36-42 characters.
    "medium": ChainLevel(min_operands=6, max_operands=6, min_value=1, max_value=9, max_result=99),
    # 7 operands (6 steps), a fifth of them products by 2-5: 48-67 characters.
    "hard": ChainLevel(
        min_operands=7,
        max_operands=7,
        min_value=1,
        max_value=9,
        product_share=0.2,
        max_multiplier=5,
        max_result=99,
    ),
}
MIXED_LEVELS = ("easy", "medium", "hard")


def chain_arithmetic_levels() -> list[str]:
    """Every level name ``data.task`` may hold for source 'chain_arithmetic'."""
    return [*LEVELS, MIXED]


def _next_step(rng: random.Random, acc: int, level: ChainLevel) -> tuple[str, int]:
    """One (operator, operand) that keeps the result within [min_value, max_result]."""
    if rng.random() < level.product_share:
        top = level.max_multiplier if acc == 0 else min(level.max_multiplier, level.max_result // acc)
        if top >= 2:
            return "*", rng.randint(2, top)
    op = rng.choice("+-")
    add_top = min(level.max_value, level.max_result - acc)
    sub_top = min(level.max_value, acc - level.min_value)
    if op == "-" and sub_top < level.min_value:
        op = "+"
    elif op == "+" and add_top < level.min_value:
        op = "-"  # ChainLevel's check guarantees that one of the two fits
    return op, rng.randint(level.min_value, add_top if op == "+" else sub_top)


def _apply(acc: int, op: str, operand: int) -> int:
    return acc + operand if op == "+" else acc - operand if op == "-" else acc * operand


Step = tuple[int, str, int, int]  # (left, operator, right, result)


def render_expression(first: int, ops: list[tuple[str, int]]) -> str:
    """``first`` followed by ``ops`` applied left to right, parenthesised only where a product follows a
    sum or difference (where left-to-right order differs from precedence).

    >>> render_expression(9, [("+", 6), ("*", 4), ("-", 5)])
    '(9+6)*4-5'
    """
    expression, last = str(first), ""
    for op, operand in ops:
        if op == "*" and last in ("+", "-"):
            expression = f"({expression})"
        expression, last = f"{expression}{op}{operand}", op
    return expression


def chain_problem(rng: random.Random, level: ChainLevel) -> tuple[str, list[Step]]:
    """A prompt (ending in ``=``) and its steps ``(left, op, right, result)``, drawn from ``rng``."""
    n = rng.randint(level.min_operands, level.max_operands)
    acc = rng.randint(level.min_value, level.max_value)
    first, ops, steps = acc, [], []
    for _ in range(n - 1):
        op, operand = _next_step(rng, acc, level)
        result = _apply(acc, op, operand)
        ops.append((op, operand))
        steps.append((acc, op, operand, result))
        acc = result
    return f"{render_expression(first, ops)}=", steps


def scratchpad_lines(steps: list[Step]) -> list[str]:
    """The expression after each step: its result, then the operations still to do.

    >>> scratchpad_lines([(9, "+", 6, 15), (15, "*", 4, 60), (60, "-", 5, 55)])
    ['15*4-5', '60-5', '55']
    """
    ops = [(op, b) for _, op, b, _ in steps]
    return [render_expression(steps[k][3], ops[k + 1 :]) for k in range(len(steps))]


def scratchpad(steps: list[Step]) -> str:
    """The reference solution: every rewritten line, then the delimited final answer.

    >>> scratchpad([(9, "+", 6, 15), (15, "*", 4, 60), (60, "-", 5, 55)])
    '15*4-5=60-5=55;#### 55'
    """
    return f"{LINE_SEPARATOR.join(scratchpad_lines(steps))}{STEP_SEPARATOR}{ANSWER_MARKER}{steps[-1][3]}"


def resolve_levels(level: str | None, overrides: dict[str, Any] | None = None) -> dict[str, ChainLevel]:
    """The level(s) a problem may be drawn from, with ``overrides`` applied; DataError naming the fix."""
    name = level or DEFAULT_LEVEL
    if name != MIXED and name not in LEVELS:
        raise DataError(
            f"data.task {name!r} is not a chain_arithmetic level; valid levels are: "
            f"{', '.join(chain_arithmetic_levels())}"
        )
    names = MIXED_LEVELS if name == MIXED else (name,)
    resolved = {}
    for each in names:
        try:
            resolved[each] = ChainLevel.model_validate({**LEVELS[each].model_dump(), **(overrides or {})})
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or each}: {e['msg'].removeprefix('Value error, ')}"
                for e in err.errors()
            )
            raise DataError(
                f"data.task_config for chain_arithmetic level {each!r} is invalid: {problems}; "
                f"valid keys are: {', '.join(ChainLevel.model_fields)}"
            ) from None
    return resolved


def chain_arithmetic_samples(
    size: int, seed: int, level: str | None = None, overrides: dict[str, Any] | None = None
) -> list[Sample]:
    """``size`` chain problems, identical for the same seed, level and overrides.

    ``answer`` is the final result; ``meta`` holds the ``solution`` scratchpad (what the verifier checks
    the steps against), the ``level`` drawn and the operand count.

    >>> s = chain_arithmetic_samples(1, seed=0, level="easy")[0]
    >>> eval(s.prompt.removesuffix("=")) == int(s.answer), s.meta["solution"].endswith("#### " + s.answer)
    (True, True)
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    levels = resolve_levels(level, overrides)
    names = list(levels)
    samples = []
    for i in range(size):
        rng = random.Random(f"chain_arithmetic:{seed}:{i}")  # str seeds hash the same on every run
        drawn = names[0] if len(names) == 1 else rng.choice(names)
        prompt, steps = chain_problem(rng, levels[drawn])
        samples.append(
            Sample(
                id=f"chain-{i}",
                prompt=prompt,
                answer=str(steps[-1][3]),
                meta={"solution": scratchpad(steps), "level": drawn, "operands": len(steps) + 1},
            )
        )
    return samples


# builtin:chain_arithmetic's held-out problems (trainer/evaluation/suite.py): 500 of data seed 1234, level "mixed"
BENCHMARK_SEED, BENCHMARK_SIZE = 1234, 500


def problems_off_the_benchmark(count: int, seed: int, level: str) -> list[Sample]:
    """``count`` distinct chain problems drawn with ``seed``, none of them a held-out benchmark problem (what the tiny
    reward-model and PRM recipes train on)."""
    benchmark = {
        s.prompt for s in chain_arithmetic_samples(BENCHMARK_SIZE, seed=BENCHMARK_SEED, level="mixed")
    }
    drawn = chain_arithmetic_samples(count * 2, seed=seed, level=level)
    unique = {s.prompt: s for s in drawn if s.prompt not in benchmark}
    return list(unique.values())[:count]

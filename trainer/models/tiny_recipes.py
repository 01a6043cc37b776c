"""What each built-in tiny model is: its task, its warm start and how its accuracy is read.

A recipe is data, not code paths: ``tiny_model.ensure_tiny_model`` builds every recipe the same way (a
random tiny Qwen2 with the character tokenizer, or the weights of the built-in model named in
``start_from``, then a fixed number of supervised steps on the recipe's batches, then the greedy accuracy
on held-out problems). A teacher and its student share one tokenizer, which on-policy distillation needs.

- ``tiny:addition`` / ``tiny:addition-teacher``: two-digit addition, the answer only (3-4 tokens); the
  teacher is the student trained further on other problems.
- ``tiny:chain-teacher`` / ``tiny:chain``: the built-in chain arithmetic task with its scratchpad
  (``trainer/data/chain_arithmetic.py``, 26-67 characters a completion). The teacher learns to write the
  scratchpad: a constant learning rate while it learns to copy the rest of the expression onto each line
  (a rate that decays from the start stops it before it does: most lines then drop or change an operand),
  then a cosine decay. The student starts from the teacher and is fine-tuned briefly on a mix in which two
  problems in three are answered bare (``#### 55``, no working): it keeps the teacher's arithmetic but has
  the habit of answering without working, which fails on most chains. That is what the demo's GRPO run
  (trainer/presets/demo.yaml) unlearns from the verifier's reward alone, and where the teacher's per-token
  credit is sharpest: the teacher gives the bare answer's first token almost no probability.
- ``tiny:chain-tool``: the teacher fine-tuned on the same problems, half of them solved with the calculator
  environment's tool (``trainer/environments/calculator.py``): one Hermes-style ``<tool_call>`` on the whole
  expression, the tool's reply exactly as the multi-turn driver frames it (the PLAIN turn format), then
  ``#### 55`` copied from the reply; the other half with the scratchpad. So the model has seen the tool-call
  format but calls the tool on only some problems: what GRPO with the ``calculator`` environment improves.
  The warm start trains on whole completions, the tool's reply included (the recipe machinery masks only
  the prompt); RL masks those tokens out.

``version`` is part of the cache folder's name: bump it whenever a recipe's outcome changes (version 3 of
the addition models: the tokenizer keeps spaces and newlines through ``AutoTokenizer``; version 3 of the
chain models: the teacher comes first and the student carries the bare-answer habit; version 4 of all (2 of
chain-tool): built on one thread, so every build on one machine gives the same weights, tiny_model.one_thread).
A changed recipe needs its version bumped and its weights shipped again (``python -m
trainer.models.shipped_weights``): the shipped weights are placed only for the exact recipe they were built with.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from trainer.data.chain_arithmetic import (
    ANSWER_MARKER,
    MIXED_LEVELS,
    chain_arithmetic_samples,
    chain_problem,
    resolve_levels,
    scratchpad,
)
from trainer.data.demo_task import addition_prompt
from trainer.environments.calculator import CalculatorParams, calculator_tool
from trainer.environments.tool_calls import (
    ToolLimits,
    render_tool_call,
    render_tool_responses,
    run_tool_calls,
)
from trainer.environments.turn_format import PLAIN

Example = tuple[str, str]  # (prompt, reference completion without the end-of-sequence token)
Problem = tuple[str, str]  # (prompt, the answer the greedy completion must reach)


@dataclass(frozen=True)
class TinyRecipe:
    """How one built-in model is built. ``batch(rng, step, size)`` draws one SFT batch."""

    name: str
    summary: str
    batch: Callable[[random.Random, int, int], list[Example]]
    held_out: Callable[
        [int, int], list[Problem]
    ]  # (n, seed) -> held-out problems for the accuracy read after the build
    answer_of: Callable[[str], str]  # the answer a completion gives (what held_out's answers are compared to)
    sft_steps: int
    version: int
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 0  # linear warm-up to lr
    schedule: Literal["constant", "cosine"] = (
        "constant"  # after the warm-up: "constant", or "cosine" down to a tenth of lr at the end
    )
    decay_start: int = 0  # "cosine": the rate stays at lr until this step, then decays over the steps left
    clip_grad_norm: float | None = None
    max_new_tokens: int = 8
    seed: int = 0
    start_from: str | None = None  # train on from this built-in model's weights (built first if missing)
    hidden: int = 128
    layers: int = 4
    heads: int = 4

    @property
    def cache_name(self) -> str:
        return f"{self.name.removeprefix('tiny:')}-v{self.version}"


# --- two-digit addition (the first demo task) ----------------------------------------------------------


def _addition_batch(rng: random.Random, step: int, size: int) -> list[Example]:
    out = []
    for _ in range(size):  # the draw order of the first recipe: cached models stay valid
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        out.append((addition_prompt(a, b), str(a + b)))
    return out


def addition_held_out(n: int, seed: int = 1234) -> list[Problem]:
    rng = random.Random(seed)
    pairs = [(rng.randint(0, 99), rng.randint(0, 99)) for _ in range(n)]
    return [(addition_prompt(a, b), str(a + b)) for a, b in pairs]


# --- chain arithmetic with a scratchpad ------------------------------------------------------------------

_CHAIN_LEVELS = resolve_levels("mixed")


def _chain_batch(rng: random.Random, step: int, size: int) -> list[Example]:
    """One level per batch, the levels in turn: similar lengths pad little, and every level is seen."""
    level = _CHAIN_LEVELS[MIXED_LEVELS[step % len(MIXED_LEVELS)]]
    out = []
    for _ in range(size):
        prompt, steps = chain_problem(rng, level)
        out.append((prompt, scratchpad(steps)))
    return out


BARE_SHARE = 2 / 3  # the student's fine-tuning mix: the share of problems answered bare (no scratchpad)


def _chain_habit_batch(rng: random.Random, step: int, size: int) -> list[Example]:
    """As ``_chain_batch``, but each problem is answered bare (``#### 55``) with probability BARE_SHARE."""
    out = []
    for prompt, solution in _chain_batch(rng, step, size):
        bare = rng.random() < BARE_SHARE
        out.append((prompt, solution[solution.index(ANSWER_MARKER) :] if bare else solution))
    return out


TOOL_SHARE = 1 / 2  # the tool model's fine-tuning mix: the share of problems solved with a calculator call
_CALCULATOR = calculator_tool(CalculatorParams())


def chain_tool_completion(prompt: str) -> str:
    """A chain problem solved with one calculator call on its whole expression, as the multi-turn driver builds
    the episode with the PLAIN turn format: the model's call (its turn ends at ``</tool_call>``), the tool's
    reply framed by the driver, then the model's answer copied from the reply.

    >>> chain_tool_completion("(9+6)*4-5=")
    '<tool_call>{"name": "calculator", "arguments": {"expression": "(9+6)*4-5"}}</tool_call>\\n<tool_response>\\n55\\n</tool_response>\\n#### 55'
    """
    call = render_tool_call(_CALCULATOR.name, {"expression": prompt.removesuffix("=")})
    (record,) = run_tool_calls(call, [_CALCULATOR], ToolLimits())
    if record.status != "ok":
        raise ValueError(f"the calculator could not evaluate the chain problem {prompt!r}: {record.result}")
    responses = render_tool_responses([record])
    # the model's turn ended at the stop string (not its end token), so close_model_turn comes first
    reply = PLAIN.close_model_turn + PLAIN.before_reply + responses + PLAIN.after_reply
    return f"{call}{reply}{ANSWER_MARKER}{record.result}"


def _chain_tool_batch(rng: random.Random, step: int, size: int) -> list[Example]:
    """As ``_chain_batch``, but each problem is solved with the calculator with probability TOOL_SHARE."""
    out = []
    for prompt, solution in _chain_batch(rng, step, size):
        out.append((prompt, chain_tool_completion(prompt) if rng.random() < TOOL_SHARE else solution))
    return out


def chain_held_out(n: int, seed: int = 1234) -> list[Problem]:
    """Problems of the 'mixed' data source itself (data.source chain_arithmetic), under a seed no run uses
    by default."""
    return [(s.prompt, str(s.answer)) for s in chain_arithmetic_samples(n, seed=seed, level="mixed")]


_ANSWER_RE = re.compile(r"\s*([-+]?\d{1,40})(?!\d)")


def chain_answer(completion: str) -> str:
    """The integer after the first ``####`` (as the chain_arithmetic verifier reads it), else ''."""
    _, marker, rest = completion.partition(ANSWER_MARKER.strip())
    found = _ANSWER_RE.match(rest) if marker else None
    return str(int(found.group(1))) if found else ""


def _first_line(completion: str) -> str:
    return completion.strip().split("\n")[0].strip()


RECIPES: dict[str, TinyRecipe] = {
    r.name: r
    for r in (
        TinyRecipe(
            name="tiny:addition",
            summary="two-digit addition, the answer only",
            batch=_addition_batch,
            held_out=addition_held_out,
            answer_of=_first_line,
            sft_steps=1200,
            version=4,
            max_new_tokens=5,
        ),
        TinyRecipe(
            name="tiny:addition-teacher",
            summary="tiny:addition trained 500 steps further: the stronger teacher for on-policy distillation",
            batch=_addition_batch,
            held_out=addition_held_out,
            answer_of=_first_line,
            sft_steps=500,
            version=4,
            max_new_tokens=5,
            seed=1,
            start_from="tiny:addition",
        ),
        TinyRecipe(
            name="tiny:chain-teacher",
            summary="chain arithmetic with a scratchpad (mixed levels): the teacher for on-policy distillation",
            batch=_chain_batch,
            held_out=chain_held_out,
            answer_of=chain_answer,
            sft_steps=800,
            version=4,
            batch_size=32,
            lr=2e-3,
            warmup_steps=20,
            schedule="cosine",
            decay_start=600,
            clip_grad_norm=1.0,
            max_new_tokens=96,
            seed=1,
        ),
        TinyRecipe(
            name="tiny:chain",
            summary="tiny:chain-teacher fine-tuned to answer two problems in three without working: a student "
            "with a bad habit",
            batch=_chain_habit_batch,
            held_out=chain_held_out,
            answer_of=chain_answer,
            sft_steps=120,
            version=4,
            batch_size=32,
            lr=1e-3,
            schedule="cosine",
            clip_grad_norm=1.0,
            max_new_tokens=96,
            seed=2,
            start_from="tiny:chain-teacher",
        ),
        TinyRecipe(
            name="tiny:chain-tool",
            summary="tiny:chain-teacher fine-tuned to solve half of the chain problems with one calculator call: "
            "a model that has seen the tool-call format, for RL with the calculator environment",
            batch=_chain_tool_batch,
            held_out=chain_held_out,
            answer_of=chain_answer,
            sft_steps=500,
            version=2,
            batch_size=32,
            lr=2e-3,
            warmup_steps=20,
            schedule="cosine",
            clip_grad_norm=1.0,
            max_new_tokens=160,  # a tool completion is about 130 characters
            seed=3,
            start_from="tiny:chain-teacher",
        ),
    )
}

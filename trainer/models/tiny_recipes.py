"""What each built-in tiny model is: its task, its warm start and how its accuracy is read.

A recipe is data, not code paths: ``tiny_model.ensure_tiny_model`` builds every recipe the same way (a
random tiny Qwen2 with the character tokenizer, then a fixed number of supervised steps on the task's
reference solutions, then the greedy accuracy on held-out problems). A teacher names its student: it
starts from the student's weights and trains further on other problems (another seed), so it shares
the student's tokenizer and style but is right more often, which is what on-policy distillation needs.

- ``tiny:addition`` / ``tiny:addition-teacher``: two-digit addition, the answer only (3-4 tokens).
- ``tiny:chain`` / ``tiny:chain-teacher``: the built-in chain arithmetic task with its scratchpad
  (``trainer/data/chain_arithmetic.py``, 30-80 tokens a completion), mixed levels, one level per batch
  so that a batch pads to similar lengths.

``version`` is part of the cache folder's name: bump it whenever a recipe's outcome changes (version 3 of
the addition models: the tokenizer keeps spaces and newlines through ``AutoTokenizer``).
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

Example = tuple[str, str]  # (prompt, reference completion without the end-of-sequence token)
Problem = tuple[str, str]  # (prompt, the answer the greedy completion must reach)


@dataclass(frozen=True)
class TinyRecipe:
    """How one built-in model is built. ``batch(rng, step, size)`` draws one SFT batch."""

    name: str
    summary: str
    batch: Callable[[random.Random, int, int], list[Example]]
    held_out: Callable[[int, int], list[Problem]]  # (n, seed) -> held-out problems for the accuracy read after the build
    answer_of: Callable[[str], str]  # the answer a completion gives (what held_out's answers are compared to)
    sft_steps: int
    version: int
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 0  # linear warm-up to lr
    schedule: Literal["constant", "cosine"] = "constant"  # after the warm-up: "constant", or "cosine" down to a tenth of lr at the end
    clip_grad_norm: float | None = None
    max_new_tokens: int = 8
    seed: int = 0
    student: str | None = None  # train on from this built-in model's weights (a teacher)
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
            batch=_addition_batch, held_out=addition_held_out, answer_of=_first_line,
            sft_steps=1200, version=3, max_new_tokens=5,
        ),
        TinyRecipe(
            name="tiny:addition-teacher",
            summary="tiny:addition trained 500 steps further: the stronger teacher for on-policy distillation",
            batch=_addition_batch, held_out=addition_held_out, answer_of=_first_line,
            sft_steps=500, version=3, max_new_tokens=5, seed=1, student="tiny:addition",
        ),
        TinyRecipe(
            name="tiny:chain",
            summary="chain arithmetic with a scratchpad (mixed levels), warm-started to a modest accuracy",
            batch=_chain_batch, held_out=chain_held_out, answer_of=chain_answer,
            sft_steps=600, version=2, batch_size=32, lr=2e-3, warmup_steps=20, schedule="cosine",
            clip_grad_norm=1.0, max_new_tokens=96,
        ),
        TinyRecipe(
            name="tiny:chain-teacher",
            summary="tiny:chain trained further on other problems: the teacher for on-policy distillation",
            batch=_chain_batch, held_out=chain_held_out, answer_of=chain_answer,
            sft_steps=900, version=2, batch_size=32, lr=2e-3, warmup_steps=20, schedule="cosine",
            clip_grad_norm=1.0, max_new_tokens=96, seed=1, student="tiny:chain",
        ),
    )
}

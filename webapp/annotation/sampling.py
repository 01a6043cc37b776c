"""Which rollouts (or benchmark samples) become annotation items: a sampling rule over plain candidates.

Django-free so it is tested on plain values. Filters first (last step only, only incorrect), then a
selection: ``random`` (N with a seed) or ``stratified`` by reward (candidates ranked by reward and cut into
equal-size strata; each stratum gives its share of N, so low-, mid- and high-reward rollouts are all
annotated even when most rollouts score the same).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from webapp.core.errors import InvalidInput

Strategy = Literal["random", "stratified"]
STRATEGIES: tuple[str, ...] = ("random", "stratified")
MAX_ITEMS = 5000  # one task; a bigger sample is several tasks


@dataclass(frozen=True)
class Candidate:
    """One rollout that may be sampled: its id and what the filters and strata look at."""

    id: int
    step: int
    reward: float | None
    correct: bool | None


@dataclass(frozen=True)
class SamplingRule:
    strategy: Strategy = "random"
    n: int = 20
    seed: int = 0
    last_step_only: bool = False
    only_incorrect: bool = False
    strata: int = 4  # stratified only: how many reward strata
    steps: tuple[int, ...] = field(default=())  # empty: every step

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = list(self.steps)
        return data


def sampling_rule_from_dict(data: dict[str, Any]) -> SamplingRule:
    """A validated rule; wrong fields raise InvalidInput naming each field and how to fix it."""
    known = set(SamplingRule.__dataclass_fields__)
    errors: dict[str, list[str]] = {}
    for key in sorted(set(data) - known):
        errors[f"sampling.{key}"] = [f"Unknown field; use one of {', '.join(sorted(known))}."]
    strategy = data.get("strategy", "random")
    if strategy not in STRATEGIES:
        errors["sampling.strategy"] = [f"{strategy!r} is not a strategy; use one of {', '.join(STRATEGIES)}."]
    ints = {name: data.get(name, getattr(SamplingRule, name)) for name in ("n", "seed", "strata")}
    for name, value in ints.items():
        if isinstance(value, bool) or not isinstance(value, int):
            errors[f"sampling.{name}"] = ["Give a whole number."]
    if isinstance(ints["n"], int) and not 1 <= ints["n"] <= MAX_ITEMS:
        errors["sampling.n"] = [f"Sample between 1 and {MAX_ITEMS} items."]
    if isinstance(ints["strata"], int) and not 1 <= ints["strata"] <= 20:
        errors["sampling.strata"] = ["Use between 1 and 20 reward strata."]
    for name in ("last_step_only", "only_incorrect"):
        if not isinstance(data.get(name, False), bool):
            errors[f"sampling.{name}"] = ["Give true or false."]
    steps = data.get("steps", [])
    if not isinstance(steps, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in steps
    ):
        errors["sampling.steps"] = [
            "Give a list of step numbers (whole numbers, 0 or more), or leave it empty."
        ]
    if errors:
        first = next(iter(errors.items()))
        raise InvalidInput(f"{first[0]}: {first[1][0]}", errors)
    return SamplingRule(
        strategy=strategy,
        n=ints["n"],
        seed=ints["seed"],
        strata=ints["strata"],
        last_step_only=data.get("last_step_only", False),
        only_incorrect=data.get("only_incorrect", False),
        steps=tuple(steps),
    )


def sample_candidates(candidates: Sequence[Candidate], rule: SamplingRule) -> list[int]:
    """The ids to annotate, in a stable order (step, then id). Fewer than ``rule.n`` when fewer qualify."""
    pool = list(candidates)
    if rule.steps:
        wanted = set(rule.steps)
        pool = [c for c in pool if c.step in wanted]
    if rule.last_step_only and pool:
        last = max(c.step for c in pool)
        pool = [c for c in pool if c.step == last]
    if rule.only_incorrect:
        pool = [c for c in pool if c.correct is False]
    pool.sort(key=lambda c: (c.step, c.id))
    rng = random.Random(rule.seed)
    if len(pool) <= rule.n:
        chosen = pool
    elif rule.strategy == "random":
        chosen = rng.sample(pool, rule.n)
    else:
        chosen = _stratified(pool, rule.n, rule.strata, rng)
    return [c.id for c in sorted(chosen, key=lambda c: (c.step, c.id))]


def _stratified(pool: list[Candidate], n: int, strata: int, rng: random.Random) -> list[Candidate]:
    """Rank by reward (missing rewards rank lowest), cut into ``strata`` near-equal strata, and draw each
    stratum's share of ``n`` (the remainder goes to the first strata); a stratum too small gives all it has
    and the shortfall is drawn at random from what is left."""
    ranked = sorted(pool, key=lambda c: (float("-inf") if c.reward is None else c.reward, c.step, c.id))
    strata = min(strata, len(ranked))
    bounds = [round(i * len(ranked) / strata) for i in range(strata + 1)]
    groups = [ranked[bounds[i] : bounds[i + 1]] for i in range(strata)]
    shares = [n // strata + (1 if i < n % strata else 0) for i in range(strata)]
    chosen: list[Candidate] = []
    for group, share in zip(groups, shares, strict=True):
        chosen.extend(rng.sample(group, min(share, len(group))))
    if len(chosen) < n:
        taken = {c.id for c in chosen}
        rest = [c for c in ranked if c.id not in taken]
        chosen.extend(rng.sample(rest, n - len(chosen)))
    return chosen


def _step_ranges(steps: Sequence[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1–3, 7, 9–10'."""
    parts: list[str] = []
    ordered = sorted(set(steps))
    start = prev = ordered[0]
    for step in [*ordered[1:], None]:
        if step is not None and step == prev + 1:
            prev = step
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if step is not None:
            start = prev = step
    return ", ".join(parts)


def describe_sampling(data: dict[str, Any]) -> str:
    """A task's stored sampling rule in words, e.g. "200 items stratified by reward (4 strata, seed 3) from
    steps 10–50, only incorrect completions". A stored rule is the validated ``as_dict`` (plus ``eval_run``
    for a benchmark task); a task made without a rule (an empty dict) says so instead of guessing."""
    if not data:
        return "No sampling rule recorded: every item given was taken."
    rule = sampling_rule_from_dict({k: v for k, v in data.items() if k != "eval_run"})
    noun = "item" if rule.n == 1 else "items"
    if rule.strategy == "stratified":
        text = f"up to {rule.n} {noun} stratified by reward ({rule.strata} strata, seed {rule.seed})"
    else:
        text = f"up to {rule.n} {noun} at random (seed {rule.seed})"
    if data.get("eval_run") is not None:
        text += f" from the samples of evaluation #{data['eval_run']}"
    elif rule.steps and rule.last_step_only:
        text += f" from the last of steps {_step_ranges(rule.steps)}"
    elif rule.steps:
        text += f" from step{'s' if len(rule.steps) > 1 else ''} {_step_ranges(rule.steps)}"
    elif rule.last_step_only:
        text += " from the last step"
    else:
        text += " from every step"
    if rule.only_incorrect:
        text += ", only incorrect completions"
    return text[0].upper() + text[1:]

"""Which two completions of one prompt become a pairwise item, and which side each is shown on.

Django-free so it is tested on plain values. Candidates are grouped by what makes two completions
comparable: a run's rollouts by (step, group), the samples GRPO drew for one prompt at one step; an
evaluation's samples by problem. Within a group every unordered pair is a candidate; pairs whose rewards
differ come first (a pair the verifier already tells apart is the most informative one to ask people
about, and the one a reward model learns from), and ``only_differing_outcome`` keeps only pairs where the
verifier's verdict (correct / incorrect) differs. Groups are visited in rounds, one pair per group per
round, so N pairs spread over N prompts before any prompt gives a second pair.

The side each completion is shown on is drawn once, with the rule's seed, and stored on the item: every
annotator sees the same order, and an annotator's habit of preferring one side cannot line up with the
source order.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from webapp.core.errors import InvalidInput

MAX_PAIRS = 5000  # one task; a bigger sample is several tasks
MAX_GROUP = 64  # completions of one prompt considered (64 * 63 / 2 = 2016 pairs)


@dataclass(frozen=True)
class PairCandidate:
    """One completion that may be paired: its id, its group, and what the ordering looks at."""

    id: int
    group: Hashable
    reward: float | None
    correct: bool | None


@dataclass(frozen=True)
class PairingRule:
    n: int = 20  # pairs
    seed: int = 0
    step: int | None = None  # a run's step; None: its last step (evaluations have no steps)
    only_differing_outcome: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ChosenPair:
    left: int  # candidate id shown on the left
    right: int
    swapped: bool  # True when the left one is the second of the pair in source order


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pairing_rule_from_dict(data: dict[str, Any]) -> PairingRule:
    """A validated rule; wrong fields raise InvalidInput naming each field (``pairing.<name>``)."""
    known = set(PairingRule.__dataclass_fields__)
    errors: dict[str, list[str]] = {}
    for key in sorted(set(data) - known):
        errors[f"pairing.{key}"] = [f"Unknown field; use one of {', '.join(sorted(known))}."]
    n, seed, step = data.get("n", 20), data.get("seed", 0), data.get("step")
    if not _whole(n) or not 1 <= n <= MAX_PAIRS:
        errors["pairing.n"] = [f"Give a whole number of pairs from 1 to {MAX_PAIRS}."]
    if not _whole(seed) or not 0 <= seed < 2**32:
        errors["pairing.seed"] = ["Give a whole number from 0 to 4294967295."]
    if step is not None and (not _whole(step) or step < 0):
        errors["pairing.step"] = ["Give a step number (0 or more), or leave it empty for the last step."]
    if not isinstance(data.get("only_differing_outcome", False), bool):
        errors["pairing.only_differing_outcome"] = ["Give true or false."]
    if errors:
        first = next(iter(errors.items()))
        raise InvalidInput(f"{first[0]}: {first[1][0]}", errors)
    return PairingRule(
        n=n, seed=seed, step=step, only_differing_outcome=data.get("only_differing_outcome", False)
    )


def _differ(a: PairCandidate, b: PairCandidate) -> bool:
    return a.reward is not None and b.reward is not None and a.reward != b.reward


def choose_pairs(candidates: Sequence[PairCandidate], rule: PairingRule) -> list[ChosenPair]:
    """Up to ``rule.n`` pairs, each inside one group, in a stable order for a given seed."""
    rng = random.Random(rule.seed)
    groups: dict[Hashable, list[PairCandidate]] = {}
    for c in sorted(candidates, key=lambda c: c.id):
        groups.setdefault(c.group, []).append(c)
    queues: list[list[tuple[PairCandidate, PairCandidate]]] = []
    for key in sorted(groups, key=repr):
        members = groups[key][:MAX_GROUP]
        pairs = list(itertools.combinations(members, 2))
        if rule.only_differing_outcome:
            pairs = [(a, b) for a, b in pairs if a.correct is not None and b.correct is not None
                     and a.correct != b.correct]  # fmt: skip
        rng.shuffle(pairs)
        pairs.sort(key=lambda p: not _differ(*p))  # stable: differing rewards first, shuffled within
        if pairs:
            queues.append(pairs)
    rng.shuffle(queues)
    ordered: list[tuple[PairCandidate, PairCandidate]] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        layer = [q[depth] for q in queues if depth < len(q)]
        layer.sort(key=lambda p: not _differ(*p))
        ordered.extend(layer)
        if len(ordered) >= rule.n:
            break
    chosen = []
    for a, b in ordered[: rule.n]:
        swapped = rng.random() < 0.5
        chosen.append(
            ChosenPair(left=b.id, right=a.id, swapped=True) if swapped else ChosenPair(a.id, b.id, False)
        )
    return chosen


def side_order(seed: int, count: int) -> list[bool]:
    """For an uploaded file: whether each row's second completion goes on the left (drawn with the seed)."""
    rng = random.Random(seed)
    return [rng.random() < 0.5 for _ in range(count)]


def describe_pairing(data: dict[str, Any], *, source_kind: str) -> str:
    """A pairwise task's stored rule in words, e.g. "Up to 20 pairs of completions of one prompt at step 7
    (rewards differing first, seed 0), only pairs whose verdicts differ"."""
    if source_kind == "upload":
        rows = data.get("rows")
        where = f" ({data['filename']})" if data.get("filename") else ""
        return f"Every pair of the uploaded file{where}: {rows} rows, sides drawn with seed {data.get('seed', 0)}"
    rule = pairing_rule_from_dict({k: v for k, v in data.items() if k in PairingRule.__dataclass_fields__})
    noun = "pair" if rule.n == 1 else "pairs"
    if source_kind == "benchmark":
        text = f"Up to {rule.n} {noun} of samples of one problem"
        if data.get("eval_run") is not None:
            text += f" of evaluation #{data['eval_run']}"
    else:
        where = (
            f"step {data.get('resolved_step', rule.step)}"
            if data.get("resolved_step", rule.step) is not None
            else "the last step"
        )
        text = f"Up to {rule.n} {noun} of completions of one prompt at {where}"
    text += f" (rewards differing first, seed {rule.seed})"
    if rule.only_differing_outcome:
        text += ", only pairs whose verdicts differ"
    return text

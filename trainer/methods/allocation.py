"""Rollout allocators: how many completions each prompt of a generation round gets (DESIGN.md registries).

Axis ``budget.allocator``, hook point ``allocator``. Hook signature: ``(groups, generate, params, group_size) -> None``. ``groups`` are
the round's prompts, empty; ``generate(groups, counts)`` samples ``counts[i]`` more completions for
``groups[i]`` in one engine call and scores them, appending to each group's rewards; the allocator calls
it once or several times (refinement rounds) and may mark groups ``abandoned``. Group sizes may therefore
differ; everything downstream works on ``group_ids`` (trainer/methods/group_stats.py).

Dynamic sampling (dropping silent groups and refilling) is not an allocator but a loop around one
(trainer/step/collect.py), so it composes with every entry here and with every prompt sampler.

In a data-parallel run each process allocates for its own share of the round's groups. Decisions taken
per group ('early_abandon', 'sara') are then exactly the 1-process ones; VIGOR's step-wide budget is dealt
over the groups of every process (all-gathered variances, the same deal on every process), and each process
generates its part of it (``generate`` is called in every VIGOR round, even with nothing for this process,
since each call is counted: a group's seed includes its call's step-wide number, trainer/step/collect.py).

Pure Python (no torch): the config validates allocator names in the web process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis
from trainer.samples import Sample

SILENT_TOL = 1e-6  # rewards closer than this count as equal: the group has no reward variance


@dataclass
class Group:
    """One prompt of a step and the completions generated for it so far (in generation order)."""

    sample: Sample
    prompt: str  # rendered model input
    rows: list[tuple[int, int]] = field(default_factory=list)  # (generation call, row in that call's batch)
    rewards: list[float] = field(default_factory=list)
    correct: list[bool] = field(default_factory=list)
    abandoned: bool = False  # no more completions after a decided probe (early abandonment)
    prior: tuple[float, float] = (
        1.0,
        1.0,
    )  # Beta prior on the prompt's success rate (the sampler's posterior)

    @property
    def size(self) -> int:
        return len(self.rewards)

    @property
    def silent(self) -> bool:
        """All rewards equal: every group-relative advantage is 0 (001:L23 "silent group")."""
        return not self.rewards or max(self.rewards) - min(self.rewards) < SILENT_TOL

    @property
    def variance(self) -> float:
        """Unbiased sample variance of the rewards (0 for fewer than two)."""
        n = len(self.rewards)
        if n < 2:
            return 0.0
        mean = sum(self.rewards) / n
        return sum((r - mean) ** 2 for r in self.rewards) / (n - 1)


Generate = Callable[[Sequence[Group], Sequence[int]], None]
AllocatorFn = Callable[[list[Group], Generate, Any, int], None]
ALLOCATORS: Axis[AllocatorFn] = Axis(
    "rollout allocator",
    "budget.allocator",
    "allocator",
    default="fixed",
    description="How many completions each prompt of a step gets.",
)


@ALLOCATORS.method("fixed")
def fixed(groups: list[Group], generate: Generate, params: Any, group_size: int) -> None:
    """Plain GRPO (Shao et al. 2024): every prompt gets ``rollout.num_generations`` completions, in one call."""
    generate(groups, [group_size] * len(groups))


class EarlyAbandonParams(BoundedModel):
    after: int = Field(
        4,
        ge=2,
        le=1024,
        description="Completions generated before deciding; a group whose probe rewards are all equal is abandoned "
        "there (must be below rollout.num_generations).",
    )


@ALLOCATORS.method("early_abandon", params=EarlyAbandonParams)
def early_abandon(
    groups: list[Group], generate: Generate, params: EarlyAbandonParams, group_size: int
) -> None:
    """Early abandonment (SARA's short probe): stop a group after a unanimous probe of a few completions.

    (SARA, 001:L97: "abandons saturated ones after a short probe".) Every prompt first gets ``after`` (k)
    completions; a group whose k rewards are all
    equal (all correct or all wrong) is abandoned with those k, the others are completed to
    ``num_generations``. Differs from SARA: the rule is the plain "probe is unanimous" test, not SARA's
    Beta-posterior SPRT with two thresholds, and the freed budget goes to fresh prompts only when
    ``budget.dynamic_sampling`` is on (abandoned groups are silent, so dynamic sampling drops and refills them).
    """
    k = params.after
    generate(groups, [k] * len(groups))
    for group in groups:
        group.abandoned = group.silent
    open_groups = [g for g in groups if not g.abandoned]
    if open_groups and group_size > k:
        generate(open_groups, [group_size - k] * len(open_groups))


def effective_probability(successes: int, n: int, group_size: int, prior: tuple[float, float]) -> float:
    """P(the completed group of ``group_size`` has both a success and a failure | ``successes`` of ``n`` so far).

    SARA's closed-form predictor of group effectiveness (001:L97) for binary outcomes: with p ~ Beta(a + s,
    b + n - s) the posterior, a probe that already has both outcomes is effective for sure; an all-success
    probe becomes effective unless the remaining m = group_size - n are all successes, probability
    E[p^m] = prod_{i<m} (a + i) / (a + b + i) (and symmetrically for all failures).
    """
    if 0 < successes < n:
        return 1.0
    m = group_size - n
    if m <= 0:
        return 0.0
    a, b = prior[0] + successes, prior[1] + n - successes
    same = a if successes == n else b  # the remaining draws must all repeat the probe's outcome
    p_all_same = 1.0
    for i in range(m):
        p_all_same *= (same + i) / (a + b + i)
    return 1.0 - p_all_same


class SARAParams(BoundedModel):
    probe: int = Field(
        2, ge=1, le=1024, description="Completions every prompt gets before the sequential test."
    )
    step: int = Field(
        2,
        ge=1,
        le=1024,
        description="Completions an undecided group gets per sequential round (one engine call each).",
    )
    abandon_below: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="Abandon a group whose posterior probability of ending effective (both a correct and an incorrect "
        "completion) falls below this.",
    )
    commit_above: float = Field(
        0.8, gt=0, le=1, description="Complete a group to num_generations once that probability reaches this."
    )


@ALLOCATORS.method("sara", params=SARAParams)
def sara(groups: list[Group], generate: Generate, params: SARAParams, group_size: int) -> None:
    """SARA's Beta-posterior sequential test: a short probe, then abandon, complete or sample more by the
    probability that the group ends effective.

    (Sequential adaptive rollout allocation, 001:L97.) Every prompt gets ``probe`` completions. Then, round by round (one engine call each), every
    undecided group's probability of ending *effective* (both a correct and an incorrect completion, so a
    non-zero GRPO advantage) is computed from its Beta posterior (``effective_probability``; the prior is
    the prompt sampler's posterior for that prompt with ``beta_learnability``, else Beta(1, 1)): below
    ``abandon_below`` the group is abandoned with what it has, at or above ``commit_above`` it is
    completed to ``num_generations``, in between it gets ``step`` more completions and is tested again.
    Differs from the paper: our thresholds are fixed probabilities rather than SPRT likelihood-ratio bounds,
    rounds are batched over groups, and the freed budget goes to fresh prompts only with
    ``budget.dynamic_sampling`` (abandoned groups are silent, so dynamic sampling drops and refills them).
    """
    generate(groups, [min(params.probe, group_size)] * len(groups))
    undecided = list(groups)
    while undecided:
        calls: list[tuple[Group, int]] = []
        still: list[Group] = []
        for group in undecided:
            left = group_size - group.size
            if left <= 0:
                continue
            p_eff = effective_probability(sum(group.correct), group.size, group_size, group.prior)
            if p_eff < params.abandon_below:
                group.abandoned = True
            elif p_eff >= params.commit_above:
                calls.append((group, left))
            else:
                calls.append((group, min(params.step, left)))
                still.append(group)
        if calls:
            generate([g for g, _ in calls], [n for _, n in calls])
        undecided = still


class VIGORParams(BoundedModel):
    initial_rollouts: int = Field(
        4, ge=2, le=1024, description="Completions every prompt starts with (at least 2 to see a variance)."
    )
    rollout_budget: int | None = Field(
        None,
        ge=1,
        le=4096 * 1024,
        description="Total completions per step; default prompts_per_step x num_generations (the same budget as GRPO).",
    )
    increment: int = Field(2, ge=1, le=1024, description="Completions added to a chosen group at a time.")
    rounds: int = Field(
        2, ge=1, le=32, description="Refinement rounds (one generation call each) that share the budget."
    )


def vigor_budget(params: VIGORParams, num_prompts: int, group_size: int) -> int:
    """The per-step rollout budget of VIGOR; by default what plain GRPO spends on the same prompts."""
    if params.rollout_budget is not None:
        return params.rollout_budget
    return num_prompts * group_size


@ALLOCATORS.method("vigor", params=VIGORParams)
def vigor(groups: list[Group], generate: Generate, params: VIGORParams, group_size: int) -> None:
    """VIGOR: a few completions each, then extra ones to the highest reward-variance groups until a fixed budget.

    (Variance-guided online rollout allocation, 001:L105.) Every prompt starts with ``initial_rollouts``; the
    rest of a fixed per-step budget (``rollout_budget``, default prompts x num_generations, the same as GRPO) is
    handed out over ``rounds`` refinement rounds. Each round takes an equal share of what is left and deals it
    out ``increment`` completions at a time to the groups with non-zero reward variance, highest
    variance first, going round again until the share is used (if every group is silent, all groups
    are eligible so the budget is still spent). Differs from the paper: increments are batched per round
    (one engine call each) instead of re-ranking after every single rollout. In a data-parallel run the
    budget and the deal span every process's groups (``_StepGroups``).
    """
    step = _StepGroups(groups)
    total = vigor_budget(params, step.count, group_size)
    initial = params.initial_rollouts
    generate(groups, [initial] * len(groups))
    remaining = total - initial * step.count
    for round_index in range(params.rounds):
        if remaining <= 0:
            break
        share = remaining // (params.rounds - round_index) or remaining
        counts = step.mine(_deal(step.stats(), share, params.increment))
        chosen = [i for i in range(len(groups)) if counts[i] > 0]
        generate([groups[i] for i in chosen], [counts[i] for i in chosen])  # maybe empty here: still one call
        remaining -= share


class _StepGroups:
    """This process's groups within the step's (every process's, in process order; just its own in one
    process): their number, everyone's (variance, size), and this process's part of a per-group list."""

    def __init__(self, groups: list[Group]) -> None:
        from trainer.distributed.context import current

        self.groups = groups
        self.dist = current()
        sizes = [len(groups)] if self.dist is None else self.dist.all_gather(len(groups))
        self.count = sum(sizes)
        self.start = sum(sizes[: self.dist.rank]) if self.dist is not None else 0

    def stats(self) -> list[tuple[float, int]]:
        mine = [(g.variance, g.size) for g in self.groups]
        if self.dist is None:
            return mine
        return [s for part in self.dist.all_gather(mine) for s in part]

    def mine(self, values: list[int]) -> list[int]:
        return values[self.start : self.start + len(self.groups)]


def _deal(stats: Sequence[tuple[float, int]], share: int, increment: int) -> list[int]:
    """Extra completions per group from each group's (reward variance, size): ``share`` dealt ``increment`` at
    a time, highest variance first (then smaller groups, then earlier ones)."""
    eligible = [i for i, (variance, _) in enumerate(stats) if variance > 0] or list(range(len(stats)))
    order = sorted(eligible, key=lambda i: (-stats[i][0], stats[i][1], i))
    counts = [0] * len(stats)
    left = share
    while left > 0:
        for i in order:
            give = min(increment, left)
            counts[i] += give
            left -= give
            if left == 0:
                break
    return counts


@ALLOCATORS.check("early_abandon")
def _probe_below_group(config: Any, params: EarlyAbandonParams) -> None:
    G = config.rollout.num_generations
    if params.after >= G:
        raise ValueError(
            f"budget.allocator 'early_abandon': after ({params.after}) must be below rollout.num_generations ({G}): "
            "the probe is the first part of a group"
        )


@ALLOCATORS.check("sara")
def _thresholds_ordered(config: Any, params: SARAParams) -> None:
    if params.abandon_below >= params.commit_above:
        raise ValueError(
            f"budget.allocator 'sara': abandon_below ({params.abandon_below}) must be below commit_above "
            f"({params.commit_above}): between them a group samples more before it is decided"
        )


@ALLOCATORS.check("vigor")
def _budget_covers_the_start(config: Any, params: VIGORParams) -> None:
    P, G = config.training.prompts_per_step, config.rollout.num_generations
    total = vigor_budget(params, P, G)
    if total < params.initial_rollouts * P:
        raise ValueError(
            f"budget.allocator 'vigor': rollout_budget ({total}) is below initial_rollouts x prompts_per_step "
            f"({params.initial_rollouts * P}): raise the budget or lower the initial rollouts"
        )

"""Rollout allocators: how many completions each prompt of a generation round gets (DESIGN.md registries).

Signature (one for the whole registry): ``(groups, generate, budget, group_size) -> None``. ``groups`` are
the round's prompts, empty; ``generate(groups, counts)`` samples ``counts[i]`` more completions for
``groups[i]`` in one engine call and scores them, appending to each group's rewards; the allocator calls
it once or several times (refinement rounds) and may mark groups ``abandoned``. Group sizes may therefore
differ; everything downstream works on ``group_ids`` (trainer/algorithms/group_stats.py).

Dynamic sampling (dropping silent groups and refilling) is not an allocator but a loop around one
(trainer/collect.py), so it composes with every entry here and with every prompt sampler.

Pure Python (no torch): the config validates allocator names in the web process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainer.registry import Registry
from trainer.samples import Sample

if TYPE_CHECKING:
    from trainer.config import RolloutBudgetConfig

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
    prior: tuple[float, float] = (1.0, 1.0)  # Beta prior on the prompt's success rate (the sampler's posterior)

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
AllocatorFn = Callable[[list[Group], Generate, "RolloutBudgetConfig", int], None]
ALLOCATORS: Registry[AllocatorFn] = Registry("rollout allocator")


@ALLOCATORS.register("fixed")
def fixed(groups: list[Group], generate: Generate, budget: RolloutBudgetConfig, group_size: int) -> None:
    """Plain GRPO (Shao et al. 2024): every prompt gets ``rollout.num_generations`` completions, in one call."""
    generate(groups, [group_size] * len(groups))


@ALLOCATORS.register("early_abandon")
def early_abandon(groups: list[Group], generate: Generate, budget: RolloutBudgetConfig, group_size: int) -> None:
    """Early abandonment of decided groups (SARA, 001:L97: "abandons saturated ones after a short probe").

    Every prompt first gets ``budget.early_abandon_after`` (k) completions; a group whose k rewards are all
    equal (all correct or all wrong) is abandoned with those k, the others are completed to
    ``num_generations``. Differs from SARA: the rule is the plain "probe is unanimous" test, not SARA's
    Beta-posterior SPRT with two thresholds, and the freed budget goes to fresh prompts only when
    ``budget.dynamic_sampling`` is on (abandoned groups are silent, so dynamic sampling drops and refills them).
    """
    k = budget.early_abandon_after
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


@ALLOCATORS.register("sara")
def sara(groups: list[Group], generate: Generate, budget: RolloutBudgetConfig, group_size: int) -> None:
    """SARA, sequential adaptive rollout allocation (001:L97): a short probe, then a two-threshold sequential test.

    Every prompt gets ``budget.sara_probe`` completions. Then, round by round (one engine call each), every
    undecided group's probability of ending *effective* (both a correct and an incorrect completion, so a
    non-zero GRPO advantage) is computed from its Beta posterior (``effective_probability``; the prior is
    the prompt sampler's posterior for that prompt with ``beta_learnability``, else Beta(1, 1)): below
    ``sara_abandon_below`` the group is abandoned with what it has, at or above ``sara_commit_above`` it is
    completed to ``num_generations``, in between it gets ``sara_step`` more completions and is tested again.
    Differs from the paper: our thresholds are fixed probabilities rather than SPRT likelihood-ratio bounds,
    rounds are batched over groups, and the freed budget goes to fresh prompts only with
    ``budget.dynamic_sampling`` (abandoned groups are silent, so dynamic sampling drops and refills them).
    """
    generate(groups, [min(budget.sara_probe, group_size)] * len(groups))
    undecided = list(groups)
    while undecided:
        calls: list[tuple[Group, int]] = []
        still: list[Group] = []
        for group in undecided:
            left = group_size - group.size
            if left <= 0:
                continue
            p_eff = effective_probability(sum(group.correct), group.size, group_size, group.prior)
            if p_eff < budget.sara_abandon_below:
                group.abandoned = True
            elif p_eff >= budget.sara_commit_above:
                calls.append((group, left))
            else:
                calls.append((group, min(budget.sara_step, left)))
                still.append(group)
        if calls:
            generate([g for g, _ in calls], [n for _, n in calls])
        undecided = still


def vigor_budget(budget: RolloutBudgetConfig, num_prompts: int, group_size: int) -> int:
    """The per-step rollout budget of VIGOR; by default what plain GRPO spends on the same prompts."""
    if budget.vigor_rollout_budget is not None:
        return budget.vigor_rollout_budget
    return num_prompts * group_size


@ALLOCATORS.register("vigor")
def vigor(groups: list[Group], generate: Generate, budget: RolloutBudgetConfig, group_size: int) -> None:
    """VIGOR (variance-guided online rollout allocation, 001:L105).

    Every prompt starts with ``budget.vigor_initial_rollouts``; the rest of a fixed per-step budget
    (``vigor_rollout_budget``, default prompts x num_generations, the same as GRPO) is handed out over
    ``vigor_rounds`` refinement rounds. Each round takes an equal share of what is left and deals it out
    ``vigor_increment`` completions at a time to the groups with non-zero reward variance, highest
    variance first, going round again until the share is used (if every group is silent, all groups
    are eligible so the budget is still spent). Differs from the paper: increments are batched per round
    (one engine call each) instead of re-ranking after every single rollout.
    """
    total = vigor_budget(budget, len(groups), group_size)
    initial = budget.vigor_initial_rollouts
    generate(groups, [initial] * len(groups))
    remaining = total - initial * len(groups)
    for round_index in range(budget.vigor_rounds):
        if remaining <= 0:
            break
        share = remaining // (budget.vigor_rounds - round_index) or remaining
        counts = _deal(groups, share, budget.vigor_increment)
        chosen = [i for i in range(len(groups)) if counts[i] > 0]
        generate([groups[i] for i in chosen], [counts[i] for i in chosen])
        remaining -= share


def _deal(groups: Sequence[Group], share: int, increment: int) -> list[int]:
    """Extra completions per group: ``share`` dealt ``increment`` at a time, highest variance first."""
    eligible = [i for i, g in enumerate(groups) if g.variance > 0] or list(range(len(groups)))
    order = sorted(eligible, key=lambda i: (-groups[i].variance, groups[i].size, i))
    counts = [0] * len(groups)
    left = share
    while left > 0:
        for i in order:
            give = min(increment, left)
            counts[i] += give
            left -= give
            if left == 0:
                break
    return counts

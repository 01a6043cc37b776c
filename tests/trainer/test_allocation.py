"""Rollout allocators (trainer/methods/allocation.py) with a scripted generate callback: hand-checkable counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from trainer.config import RolloutBudgetConfig
from trainer.methods.allocation import ALLOCATORS, Group
from trainer.samples import Sample


class Script:
    """A generate callback that hands out the next rewards of each prompt from a fixed script."""

    def __init__(self, rewards: dict[str, list[float]]) -> None:
        self.rewards = {k: list(v) for k, v in rewards.items()}
        self.calls: list[dict[str, int]] = []

    def __call__(self, groups: Sequence[Group], counts: Sequence[int]) -> None:
        self.calls.append({g.sample.id: c for g, c in zip(groups, counts, strict=True)})
        for g, c in zip(groups, counts, strict=True):
            for _ in range(c):
                r = self.rewards[g.sample.id].pop(0)
                g.rows.append((len(self.calls) - 1, 0))
                g.rewards.append(r)
                g.correct.append(r == 1.0)


def groups(*ids: str) -> list[Group]:
    return [Group(Sample(id=i, prompt=i), prompt=i) for i in ids]


def params(allocator: str, **values: object) -> Any:
    """The allocator's params as the config validates them (budget.allocator: {name, params})."""
    choice = RolloutBudgetConfig(allocator={"name": allocator, "params": values}).allocator
    assert choice == allocator
    return choice.params


def test_fixed_gives_every_prompt_the_group_size_in_one_call() -> None:
    script = Script({"a": [1.0] * 8, "b": [0.0] * 8})
    gs = groups("a", "b")
    ALLOCATORS.get("fixed")(gs, script, params("fixed"), 8)
    assert script.calls == [{"a": 8, "b": 8}]
    assert [g.size for g in gs] == [8, 8]


def test_early_abandon_stops_groups_whose_probe_is_unanimous() -> None:
    script = Script({"all_right": [1.0] * 8, "mixed": [1, 0, 0, 0, 1, 1, 0, 0], "all_wrong": [0.0] * 8})
    gs = groups("all_right", "mixed", "all_wrong")
    ALLOCATORS.get("early_abandon")(gs, script, params("early_abandon", after=2), 8)
    assert script.calls == [{"all_right": 2, "mixed": 2, "all_wrong": 2}, {"mixed": 6}]
    assert [(g.size, g.abandoned) for g in gs] == [(2, True), (8, False), (2, True)]


def test_early_abandon_probe_length_is_configurable() -> None:
    script = Script({"a": [0, 0, 0, 0]})
    gs = groups("a")
    ALLOCATORS.get("early_abandon")(gs, script, params("early_abandon", after=3), 4)
    assert gs[0].abandoned and gs[0].size == 3  # unanimous probe of 3 zeros: abandoned before the 4th


def test_vigor_spends_exactly_the_budget_on_the_highest_variance_groups() -> None:
    # Initial 2 each: 'hi' = [1, 0] (var 0.5), 'lo' = [1, 1] (silent), 'mid' = [0, 1] (var 0.5).
    script = Script({"hi": [1, 0] + [1, 0] * 8, "lo": [1.0] * 20, "mid": [0, 1] + [0, 1] * 8})
    gs = groups("hi", "lo", "mid")
    cfg = params("vigor", initial_rollouts=2, rollout_budget=18, increment=2, rounds=2)
    ALLOCATORS.get("vigor")(gs, script, cfg, 8)
    assert sum(g.size for g in gs) == 18
    # 12 extra over 2 rounds of 6, dealt 2 at a time to the two non-silent groups only.
    assert script.calls == [{"hi": 2, "lo": 2, "mid": 2}, {"hi": 4, "mid": 2}, {"hi": 2, "mid": 4}]
    assert [g.size for g in gs] == [8, 2, 8]


def test_vigor_spreads_the_budget_when_every_group_is_silent() -> None:
    script = Script({"a": [0.0] * 10, "b": [0.0] * 10})
    gs = groups("a", "b")
    cfg = params("vigor", initial_rollouts=2, rollout_budget=8, increment=1, rounds=1)
    ALLOCATORS.get("vigor")(gs, script, cfg, 4)
    assert [g.size for g in gs] == [4, 4]


def test_vigor_default_budget_is_what_grpo_spends() -> None:
    script = Script({k: [0, 1] * 10 for k in "abcd"})
    gs = groups(*"abcd")
    ALLOCATORS.get("vigor")(gs, script, params("vigor"), 8)
    assert sum(g.size for g in gs) == 4 * 8


def test_group_silence_and_variance() -> None:
    g = Group(Sample(id="x", prompt="x"), prompt="x", rewards=[1.0, 1.0, 1.0])
    assert g.silent and g.variance == 0.0
    g.rewards.append(0.0)
    assert not g.silent and g.variance == pytest.approx(0.25)


def test_unknown_allocator_lists_the_valid_names() -> None:
    from trainer.errors import ConfigError

    with pytest.raises(ConfigError, match="early_abandon, fixed, sara, vigor"):
        ALLOCATORS.get("nope")


def test_the_effective_probability_is_the_beta_posterior_predictive() -> None:
    from fractions import Fraction

    from trainer.methods.allocation import effective_probability

    assert effective_probability(1, 2, 8, (1, 1)) == 1.0  # both outcomes seen: effective whatever follows
    assert effective_probability(2, 2, 8, (1, 1)) == pytest.approx(2 / 3)  # 1 - E[p^6], p ~ Beta(3, 1)
    assert effective_probability(0, 8, 8, (1, 1)) == 0.0  # complete and unanimous
    # Against the exact Beta integral for an integer prior: P(the m remaining all fail) = B(a', b' + m) / B(a', b')
    a, b, s_, n, size = 2, 5, 0, 3, 6

    def beta_fn(x: int, y: int) -> Fraction:
        from math import factorial

        return Fraction(factorial(x - 1) * factorial(y - 1), factorial(x + y - 1))

    post_a, post_b = a + s_, b + n - s_
    all_fail = beta_fn(post_a, post_b + size - n) / beta_fn(post_a, post_b)
    assert effective_probability(s_, n, size, (a, b)) == pytest.approx(float(1 - all_fail))
    # a prior that expects failures makes an all-failure probe less promising
    assert effective_probability(0, 2, 8, (1, 9)) < effective_probability(0, 2, 8, (1, 1))


def test_sara_abandons_commits_or_samples_more_by_the_posterior() -> None:
    script = Script(
        {
            "mixed": [1, 0, 1, 1, 0, 0, 1, 0],  # both outcomes in the probe: completed at once
            "hopeless": [0.0]
            * 8,  # a prior that says this prompt is (almost) never solved: abandoned after the probe
            "unsure": [
                0,
                0,
                0,
                0,
                1,
                0,
                0,
                0,
            ],  # Beta(1, 1): all-wrong probes keep it undecided, then it is completed
        }
    )
    gs = groups("mixed", "hopeless", "unsure")
    gs[1].prior = (1.0, 60.0)
    budget = params("sara", probe=2, step=2, abandon_below=0.2, commit_above=0.8)
    ALLOCATORS.get("sara")(gs, script, budget, 8)
    assert script.calls[0] == {"mixed": 2, "hopeless": 2, "unsure": 2}
    assert script.calls[1] == {"mixed": 6, "unsure": 2}
    assert [(g.size, g.abandoned) for g in gs[:2]] == [(8, False), (2, True)]
    # unsure: 2 wrong -> P(eff) = 1 - E[(1-p)^6 | Beta(1, 3)] = 1 - 3/9 = 2/3 (sample 2 more); 4 wrong -> 1 - 5/9 < 0.8
    # and >= 0.2 (sample 2 more, one of them right) -> both outcomes: completed
    assert gs[2].size == 8 and not gs[2].abandoned
    assert all(g.size <= 8 for g in gs)


def test_sara_thresholds_must_leave_room_between_them() -> None:
    from trainer.config import config_from_dict
    from trainer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"allocator 'sara': abandon_below .* must be below commit_above"):
        sara = {"name": "sara", "params": {"abandon_below": 0.5, "commit_above": 0.5}}
        config_from_dict({"budget": {"allocator": sara}})

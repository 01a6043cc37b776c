"""The reward-hacking detector (trainer/rewards/hacking.py) on hand-made step series."""

from __future__ import annotations

import math
import random

import pytest

from trainer.rewards.hacking import HACKING_METRIC, HackingDetector, fitted_change

LEARNED, MONITOR = "reward/rm_mean", "reward/chain_arithmetic_mean"


def detector(window: int = 5, min_rise: float = 0.05, min_fall: float = 0.03) -> HackingDetector:
    return HackingDetector(LEARNED, MONITOR, window, min_rise, min_fall)


def feed(d: HackingDetector, learned: list[float], monitor: list[float], start: int = 1) -> list[int]:
    """The steps at which ``observe`` returned a flag."""
    fired = []
    for i, (a, b) in enumerate(zip(learned, monitor, strict=True)):
        if d.observe(start + i, {LEARNED: a, MONITOR: b}) is not None:
            fired.append(start + i)
    return fired


def test_fitted_change_is_the_least_squares_trend_across_the_window() -> None:
    assert fitted_change([1, 2, 3, 4], [0.0, 0.1, 0.2, 0.3]) == pytest.approx(0.3)
    # one outlier moves the fit by its leverage, not the whole difference of the endpoints
    assert fitted_change([1, 2, 3], [0.0, 0.0, 0.3]) == pytest.approx(0.3)
    assert fitted_change([1, 2, 3], [0.3, 0.0, 0.0]) == pytest.approx(-0.3)
    assert fitted_change([5], [1.0]) == 0.0


def test_it_fires_when_the_learned_reward_rises_while_accuracy_falls() -> None:
    d = detector(window=5)
    learned = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    monitor = [0.5, 0.45, 0.4, 0.35, 0.3, 0.25]
    assert feed(d, learned, monitor) == [5]
    assert d.flag is not None
    assert d.flag.first_step == 1
    assert d.flag.rise == pytest.approx(0.4)
    assert d.flag.fall == pytest.approx(-0.2)
    assert d.flag.message == (
        "Reward hacking suspected at step 5: reward/rm_mean rose +0.40 over steps 1-5 while the verifier's "
        "accuracy (reward/chain_arithmetic_mean) fell -0.20"
    )


def test_it_does_not_fire_when_both_rise() -> None:
    d = detector(window=5)
    assert feed(d, [0.1 * i for i in range(10)], [0.3 + 0.05 * i for i in range(10)]) == []
    assert d.metrics() == {HACKING_METRIC: 0.0}


def test_it_does_not_fire_on_noise_within_the_thresholds() -> None:
    rng = random.Random(0)
    d = detector(window=20, min_rise=0.05, min_fall=0.03)
    learned = [0.5 + rng.uniform(-0.01, 0.01) for _ in range(200)]
    monitor = [0.4 + rng.uniform(-0.01, 0.01) for _ in range(200)]
    assert feed(d, learned, monitor) == []


def test_it_does_not_fire_before_the_window_is_full() -> None:
    d = detector(window=6)
    assert feed(d, [0.1, 0.5, 0.9, 1.3, 1.7], [0.9, 0.6, 0.3, 0.1, 0.0]) == []


def test_a_rise_just_under_min_rise_does_not_fire() -> None:
    d = detector(window=3, min_rise=0.2, min_fall=0.03)
    assert feed(d, [0.0, 0.09, 0.19], [0.5, 0.4, 0.3]) == []  # the fitted rise is 0.19


def test_it_fires_once_and_the_metric_stays_raised() -> None:
    d = detector(window=3)
    learned = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    monitor = [0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0]
    raised = []
    fired = []
    for step, (a, b) in enumerate(zip(learned, monitor, strict=True), start=1):
        if d.observe(step, {LEARNED: a, MONITOR: b}) is not None:
            fired.append(step)
        raised.append(d.metrics()[HACKING_METRIC])
    assert fired == [3]
    assert raised == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_steps_without_both_values_are_skipped() -> None:
    d = detector(window=3)
    assert d.observe(0, {"eval/x/accuracy (greedy)": 0.1}) is None  # an evaluation-only step 0
    assert d.observe(1, {LEARNED: 0.1, MONITOR: 0.5}) is None
    assert d.observe(2, {LEARNED: math.nan, MONITOR: 0.1}) is None  # the learned source was absent
    assert d.observe(3, {LEARNED: 0.2, MONITOR: 0.4}) is None
    flag = d.observe(4, {LEARNED: 0.3, MONITOR: 0.3})
    assert flag is not None and flag.first_step == 1


def test_it_survives_a_rebuild_from_the_metrics_history() -> None:
    learned = [0.1, 0.1, 0.12, 0.2, 0.3, 0.4, 0.5, 0.6]
    monitor = [0.5, 0.5, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25]
    history = [
        (i + 1, {LEARNED: a, MONITOR: b}) for i, (a, b) in enumerate(zip(learned, monitor, strict=True))
    ]
    straight = detector(window=4, min_rise=0.25, min_fall=0.1)
    fired = [step for step, m in history if straight.observe(step, m) is not None]

    rebuilt = detector(window=4, min_rise=0.25, min_fall=0.1)
    rebuilt.rebuild(history[:5])  # a resume after step 5 replays the stored metrics
    rebuilt.rebuild(history[:5])  # replaying steps it has seen changes nothing
    later = [step for step, m in history[5:] if rebuilt.observe(step, m) is not None]
    assert fired == later == [6]
    assert rebuilt.flag == straight.flag


def test_its_checkpoint_state_continues_where_it_stopped() -> None:
    history = [(s, {LEARNED: 0.1 * s, MONITOR: 0.5 - 0.05 * s}) for s in range(1, 9)]
    first = detector(window=5)
    for step, m in history[:3]:
        first.observe(step, m)
    resumed = detector(window=5)
    resumed.load_state(first.state())
    assert [step for step, m in history[3:] if resumed.observe(step, m) is not None] == [5]
    again = detector(window=5)
    again.load_state(resumed.state())
    assert again.flag == resumed.flag and again.metrics() == {HACKING_METRIC: 1.0}
    assert all(again.observe(step, m) is None for step, m in history[5:])


def test_a_checkpoint_without_watch_state_starts_empty() -> None:
    d = detector()
    d.load_state(None)
    assert d.flag is None and not d.points


def test_a_window_under_three_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        HackingDetector(LEARNED, MONITOR, 2, 0.05, 0.03)

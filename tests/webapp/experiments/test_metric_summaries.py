"""metric_summaries: last, best and smoothed figures in one SQL query, checked against values worked out by
hand and against a plain Python reference on random series with gaps; the direction rule; the bounds."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.models import User

from webapp.core.errors import InvalidInput
from webapp.experiments.metric_summaries import (
    MAX_SUMMARY_KEYS,
    best_smoothed_per_experiment,
    metric_direction,
    metric_keys_of_runs,
    metric_summaries,
)
from webapp.experiments.models import Experiment, MetricPoint, Run
from webapp.experiments.services import run_launch

KEY = "rollout/reward_mean"


def store(run: Run, key: str, values: dict[int, float | None]) -> None:
    MetricPoint.objects.bulk_create(MetricPoint(run=run, step=s, key=key, value=v) for s, v in values.items())


def summary(run: Run, key: str = KEY, window: int = 10) -> dict[str, float | int]:
    return metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=[key], window=window)[run.pk][
        key
    ].as_dict()


def test_a_steady_climb_has_hand_computed_figures(run: Run) -> None:
    store(run, KEY, {s: s / 10 for s in range(1, 21)})  # 0.1 .. 2.0
    assert summary(run) == pytest.approx({
        "points": 20, "last_step": 20, "last": 2.0, "max": 2.0, "min": 0.1,
        "smooth_last": 1.55,  # mean of 1.1 .. 2.0
        "smooth_max": 1.55,
        "smooth_min": 0.55,  # the first full window: mean of 0.1 .. 1.0
    })  # fmt: skip


def test_a_one_step_spike_wins_the_raw_max_but_not_the_smoothed_best(
    run: Run, experiment: Experiment, alice: User
) -> None:
    steady = run_launch(experiment=experiment, actor=alice)
    store(run, KEY, {s: 0.9 if s == 15 else 0.3 for s in range(1, 31)})
    store(steady, KEY, {s: 0.5 for s in range(1, 31)})
    spiky, level = summary(run), summary(steady)
    assert spiky["max"] == 0.9 > level["max"] == 0.5
    assert spiky["smooth_max"] == pytest.approx(0.36)  # (9 x 0.3 + 0.9) / 10
    assert spiky["smooth_max"] < level["smooth_max"] == pytest.approx(0.5)


def test_nan_points_are_left_out_of_every_figure_and_the_window_spans_values(run: Run) -> None:
    values: dict[int, float | None] = {s: float(s) for s in range(1, 13)}
    values[3] = None  # NaN reported at step 3 and at the last steps
    values[13] = None
    values[14] = None
    store(run, KEY, values)
    assert summary(run) == pytest.approx({
        "points": 11, "last_step": 12, "last": 12.0, "max": 12.0, "min": 1.0,
        "smooth_last": 7.4,  # 2, 4, 5, ..., 12: the last ten values, step 3 skipped
        "smooth_max": 7.4,
        "smooth_min": 6.3,  # 1, 2, 4, ..., 11
    })  # fmt: skip


def test_a_run_shorter_than_the_window_has_one_window_of_all_its_points(run: Run) -> None:
    store(run, KEY, {1: 0.9, 2: 0.1, 3: 0.2})
    figures = summary(run)
    assert figures["smooth_max"] == figures["smooth_min"] == figures["smooth_last"] == pytest.approx(0.4)
    assert (figures["last"], figures["max"], figures["points"]) == (0.2, 0.9, 3)


def test_early_partial_windows_never_count_as_a_smoothed_best(run: Run) -> None:
    store(run, KEY, {s: 5.0 if s == 1 else 0.0 for s in range(1, 31)})
    figures = summary(run)
    assert figures["smooth_max"] == pytest.approx(0.5)  # the window of steps 1-10, not step 1 alone
    assert figures["max"] == 5.0


def test_a_run_whose_points_are_all_nan_has_no_summary(run: Run) -> None:
    store(run, KEY, {1: None, 2: None})
    assert metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=[KEY]) == {}


def reference(values: dict[int, float | None], window: int) -> dict[str, float | int]:
    """The figures in plain Python: the values in step order, NaN left out, every full trailing window."""
    series = [v for _, v in sorted(values.items()) if v is not None]
    means = [
        sum(series[max(0, i - window + 1) : i + 1]) / len(series[max(0, i - window + 1) : i + 1])
        for i in range(len(series))
    ]
    full = means[window - 1 :] if len(series) >= window else means[-1:]
    last_step = max(s for s, v in values.items() if v is not None)
    return {"points": len(series), "last_step": last_step, "last": series[-1], "max": max(series), "min": min(series),
            "smooth_last": means[-1], "smooth_max": max(full), "smooth_min": min(full)}  # fmt: skip


def test_the_query_matches_a_python_reference_on_random_series(experiment: Experiment, alice: User) -> None:
    rng = random.Random(7)
    runs = [run_launch(experiment=experiment, actor=alice) for _ in range(4)]
    expected: dict[tuple[int, str], dict[str, float | int]] = {}
    for run in runs:
        for key in ("a/reward", "b/kl"):
            n = rng.randint(1, 60)
            steps = sorted(rng.sample(range(1, 200), n))  # gaps between logged steps
            values = {s: (None if rng.random() < 0.15 else rng.gauss(0, 1)) for s in steps}
            values[steps[0]] = rng.gauss(0, 1)  # at least one value
            store(run, key, values)
            expected[(run.pk, key)] = reference(values, window=7)
    got = metric_summaries(
        runs=Run.objects.filter(pk__in=[r.pk for r in runs]), keys=["a/reward", "b/kl"], window=7
    )
    assert {(run_id, key) for run_id, by_key in got.items() for key in by_key} == set(expected)
    for (run_id, key), figures in expected.items():
        assert got[run_id][key].as_dict() == pytest.approx(figures), (run_id, key)


def test_only_the_runs_and_keys_asked_for_come_back(run: Run, experiment: Experiment, alice: User) -> None:
    other = run_launch(experiment=experiment, actor=alice)
    store(run, KEY, {1: 1.0})
    store(run, "actor/kl", {1: 2.0})
    store(other, KEY, {1: 3.0})
    got = metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=[KEY])
    assert list(got) == [run.pk]
    assert list(got[run.pk]) == [KEY]


@pytest.mark.parametrize(
    ("key", "direction"),
    [
        ("rollout/reward_mean", "max"), ("rollout/accuracy", "max"), ("actor/entropy", "max"),
        ("actor/pg_loss", "min"), ("actor/kl", "min"), ("teacher/reverse_kl", "min"), ("actor/kl_loss", "min"),
        ("perf/step_s", "min"), ("perf/peak_memory_gb", "min"), ("rollout/truncated_frac", "min"),
        ("perf/gen_tokens_per_s", "max"), ("eval/val_loss", "min"), ("trl/grad_norm", "max"),
        # a reward source's unscored share and call time: lower is better; its reward is not
        ("reward/judge_absent_frac", "min"), ("reward/dropped_frac", "min"), ("reward/rm_latency_s", "min"),
        ("reward/judge_latency", "min"), ("reward/judge_mean", "max"), ("reward/rm_mean", "max"),
    ],
)  # fmt: skip
def test_the_direction_rule_reads_the_last_segment_of_a_key(key: str, direction: str) -> None:
    assert metric_direction(key) == direction


def test_min_direction_keys_have_their_lowest_figures_as_best(run: Run) -> None:
    store(run, "actor/pg_loss", {s: 1.0 / s for s in range(1, 21)})
    result = metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=["actor/pg_loss"])[run.pk][
        "actor/pg_loss"
    ]
    assert result.best("min") == pytest.approx(0.05)
    assert result.smooth_best("min") == result.smooth_min < result.smooth_max


def test_more_keys_than_the_bound_is_refused_naming_the_field(run: Run) -> None:
    keys = [f"k/{i}" for i in range(MAX_SUMMARY_KEYS + 1)]
    with pytest.raises(InvalidInput) as err:
        metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=keys)
    assert "metrics" in err.value.fields
    assert metric_summaries(runs=Run.objects.filter(pk=run.pk), keys=keys[:MAX_SUMMARY_KEYS]) == {}


def test_the_keys_of_runs_come_once_each_sorted_and_say_when_cut(
    run: Run, experiment: Experiment, alice: User
) -> None:
    other = run_launch(experiment=experiment, actor=alice)
    store(run, "b", {1: 1.0, 2: 1.0})
    store(run, "a", {1: 1.0})
    store(other, "c", {1: None})
    store(other, "b", {5: 1.0})
    runs = Run.objects.filter(pk__in=[run.pk, other.pk])
    assert metric_keys_of_runs(runs=runs) == (["a", "b", "c"], False)
    assert metric_keys_of_runs(runs=runs, limit=2) == (["a", "b"], True)
    assert metric_keys_of_runs(runs=Run.objects.filter(pk=other.pk)) == (["b", "c"], False)


def test_each_experiment_gets_the_best_smoothed_figure_of_its_runs(
    run: Run, experiment: Experiment, alice: User
) -> None:
    second = run_launch(experiment=experiment, actor=alice)
    store(run, KEY, {s: 0.2 for s in range(1, 15)})
    store(second, KEY, {s: 0.6 for s in range(1, 15)})
    best = best_smoothed_per_experiment(runs=Run.objects.filter(experiment=experiment), key=KEY)
    assert best == {experiment.pk: pytest.approx(0.6)}
    assert best_smoothed_per_experiment(
        runs=Run.objects.filter(experiment=experiment), key=KEY, direction="min"
    ) == {experiment.pk: pytest.approx(0.2)}

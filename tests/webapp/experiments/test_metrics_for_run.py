"""metrics_for_run: raw points for short runs, SQL-bucketed points with min/max for long ones."""

from __future__ import annotations

from webapp.experiments.models import MetricPoint, Run
from webapp.experiments.selectors import metrics_for_run


def store(run: Run, key: str, values: dict[int, float | None]) -> None:
    MetricPoint.objects.bulk_create(MetricPoint(run=run, step=s, key=key, value=v) for s, v in values.items())


def test_a_short_run_comes_back_point_by_point(run: Run) -> None:
    store(run, "rollout/reward_mean", {1: 0.1, 2: 0.2, 3: 0.3})
    assert metrics_for_run(run=run) == {
        "rollout/reward_mean": [
            {"step": 1, "value": 0.1, "min": 0.1, "max": 0.1},
            {"step": 2, "value": 0.2, "min": 0.2, "max": 0.2},
            {"step": 3, "value": 0.3, "min": 0.3, "max": 0.3},
        ]
    }


def test_keys_and_since_step_select_what_comes_back(run: Run) -> None:
    store(run, "a", {1: 1.0, 2: 2.0, 3: 3.0})
    store(run, "b", {1: 1.0, 2: 2.0, 3: 3.0})
    result = metrics_for_run(run=run, keys=["a"], since_step=1)
    assert list(result) == ["a"]
    assert [p["step"] for p in result["a"]] == [2, 3]


def test_a_long_run_is_downsampled_to_at_most_max_points_per_key(run: Run) -> None:
    store(run, "loss", {s: 1.0 for s in range(1, 10_001)})
    points = metrics_for_run(run=run, max_points=500)["loss"]
    assert len(points) <= 500
    assert points[-1]["step"] == 10_000


def test_downsampling_keeps_a_one_step_spike_as_the_bucket_max(run: Run) -> None:
    values: dict[int, float | None] = {s: 0.0 for s in range(1, 5001)}
    values[2345] = 1000.0
    values[4000] = -7.0
    store(run, "actor/grad_norm", values)
    points = metrics_for_run(run=run, max_points=100)["actor/grad_norm"]
    assert max(p["max"] or 0.0 for p in points) == 1000.0
    assert min(p["min"] or 0.0 for p in points) == -7.0
    spike = next(p for p in points if p["max"] == 1000.0)
    assert 0 < (spike["value"] or 0.0) < 1000.0  # the mean of its bucket
    assert [p["step"] for p in points] == sorted(p["step"] for p in points)


def test_buckets_are_integers_of_consecutive_steps(run: Run) -> None:
    store(run, "x", {s: float(s) for s in range(1, 101)})
    points = metrics_for_run(run=run, max_points=10)["x"]
    assert [p["step"] for p in points] == list(range(10, 101, 10))
    assert (points[0]["min"], points[0]["max"], points[0]["value"]) == (1.0, 10.0, 5.5)


def test_nan_values_stay_null_and_do_not_poison_a_bucket(run: Run) -> None:
    store(run, "actor/kl", {1: None, 2: 2.0, 3: None, 4: 4.0})
    raw = metrics_for_run(run=run)["actor/kl"]
    assert [p["value"] for p in raw] == [None, 2.0, None, 4.0]
    bucketed = metrics_for_run(run=run, max_points=2)["actor/kl"]
    assert [(p["value"], p["min"], p["max"]) for p in bucketed] == [(2.0, 2.0, 2.0), (4.0, 4.0, 4.0)]


def test_a_run_without_metrics_gives_an_empty_mapping(run: Run) -> None:
    assert metrics_for_run(run=run) == {}

"""metrics_for_run: raw points for short runs, SQL-bucketed points with min/max for long ones, as columns."""

from __future__ import annotations

from webapp.experiments.models import MetricPoint, Run
from webapp.experiments.selectors import metrics_for_run


def store(run: Run, key: str, values: dict[int, float | None]) -> None:
    MetricPoint.objects.bulk_create(MetricPoint(run=run, step=s, key=key, value=v) for s, v in values.items())


def test_a_short_run_comes_back_point_by_point_as_columns(run: Run) -> None:
    store(run, "rollout/reward_mean", {1: 0.1, 2: 0.2, 3: 0.3})
    assert metrics_for_run(run=run) == {
        "rollout/reward_mean": {
            "step": [1, 2, 3], "value": [0.1, 0.2, 0.3], "min": [0.1, 0.2, 0.3], "max": [0.1, 0.2, 0.3],
        }
    }  # fmt: skip


def test_each_key_gets_its_own_series_ordered_by_step(run: Run) -> None:
    store(run, "b", {3: 3.0, 1: 1.0, 2: 2.0})
    store(run, "a", {2: 20.0, 1: 10.0})
    result = metrics_for_run(run=run)
    assert sorted(result) == ["a", "b"]
    assert (result["a"]["step"], result["a"]["value"]) == ([1, 2], [10.0, 20.0])
    assert (result["b"]["step"], result["b"]["value"]) == ([1, 2, 3], [1.0, 2.0, 3.0])


def test_keys_and_since_step_select_what_comes_back(run: Run) -> None:
    store(run, "a", {1: 1.0, 2: 2.0, 3: 3.0})
    store(run, "b", {1: 1.0, 2: 2.0, 3: 3.0})
    result = metrics_for_run(run=run, keys=["a"], since_step=1)
    assert list(result) == ["a"]
    assert result["a"]["step"] == [2, 3]


def test_a_long_run_is_downsampled_to_at_most_max_points_per_key(run: Run) -> None:
    store(run, "loss", {s: 1.0 for s in range(1, 10_001)})
    series = metrics_for_run(run=run, max_points=500)["loss"]
    assert len(series["step"]) <= 500
    assert len(series["value"]) == len(series["min"]) == len(series["max"]) == len(series["step"])
    assert series["step"][-1] == 10_000


def test_downsampling_keeps_a_one_step_spike_as_the_bucket_max(run: Run) -> None:
    values: dict[int, float | None] = {s: 0.0 for s in range(1, 5001)}
    values[2345] = 1000.0
    values[4000] = -7.0
    store(run, "actor/grad_norm", values)
    series = metrics_for_run(run=run, max_points=100)["actor/grad_norm"]
    assert max(v or 0.0 for v in series["max"]) == 1000.0
    assert min(v or 0.0 for v in series["min"]) == -7.0
    spike = series["max"].index(1000.0)
    assert 0 < (series["value"][spike] or 0.0) < 1000.0  # the mean of its bucket
    assert series["step"] == sorted(series["step"])


def test_downsampled_keys_each_get_their_own_buckets_in_step_order(run: Run) -> None:
    store(run, "b", {s: float(s) for s in range(1, 101)})
    store(run, "a", {s: -float(s) for s in range(1, 101)})
    result = metrics_for_run(run=run, max_points=10)
    assert list(result) == ["a", "b"]
    assert result["a"]["step"] == result["b"]["step"] == list(range(10, 101, 10))
    assert (result["a"]["max"][0], result["b"]["max"][0]) == (-1.0, 10.0)


def test_buckets_are_integers_of_consecutive_steps(run: Run) -> None:
    store(run, "x", {s: float(s) for s in range(1, 101)})
    series = metrics_for_run(run=run, max_points=10)["x"]
    assert series["step"] == list(range(10, 101, 10))
    assert (series["min"][0], series["max"][0], series["value"][0]) == (1.0, 10.0, 5.5)


def test_nan_values_stay_null_and_do_not_poison_a_bucket(run: Run) -> None:
    store(run, "actor/kl", {1: None, 2: 2.0, 3: None, 4: 4.0})
    raw = metrics_for_run(run=run)["actor/kl"]
    assert raw["value"] == [None, 2.0, None, 4.0]
    bucketed = metrics_for_run(run=run, max_points=2)["actor/kl"]
    assert (bucketed["value"], bucketed["min"], bucketed["max"]) == ([2.0, 4.0], [2.0, 4.0], [2.0, 4.0])


def test_a_run_without_metrics_gives_an_empty_mapping(run: Run) -> None:
    assert metrics_for_run(run=run) == {}

"""A finished run's figures are kept (StoredMetricSummary) and read back instead of its points; a running
run is always computed; a resume (new step) and a metric sent in after the end make them computed again."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.experiments.metric_summaries import forget_stored_summaries, metric_summaries
from webapp.experiments.models import Experiment, MetricPoint, Run, RunStatus, StoredMetricSummary
from webapp.experiments.services import run_launch

KEY, OTHER = "rollout/reward_mean", "actor/kl"


def finished_run(experiment: Experiment, alice: User, values: list[float], step: int | None = None) -> Run:
    run = run_launch(experiment=experiment, actor=alice)
    MetricPoint.objects.bulk_create(
        MetricPoint(run=run, step=s, key=KEY, value=v) for s, v in enumerate(values, 1)
    )
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, step=step or len(values))
    return run


def reads_points(fn: object) -> bool:
    with CaptureQueriesContext(connection) as queries:
        fn()  # type: ignore[operator]
    return any("OVER" in q["sql"] and "experiments_metricpoint" in q["sql"] for q in queries.captured_queries)


@pytest.mark.django_db
def test_a_finished_runs_figures_are_stored_once_then_read_without_its_points(
    experiment: Experiment, alice: User
) -> None:
    run = finished_run(experiment, alice, [0.1, 0.2, 0.3])
    runs = Run.objects.filter(pk=run.pk)
    first = metric_summaries(runs=runs, keys=[KEY, OTHER])
    assert first[run.pk][KEY].last == pytest.approx(0.3) and OTHER not in first[run.pk]
    stored = {r.key: r.points for r in StoredMetricSummary.objects.filter(run=run)}
    assert stored == {KEY: 3, OTHER: 0}  # "no value" is kept too, so it is not recomputed
    assert not reads_points(lambda: metric_summaries(runs=runs, keys=[KEY, OTHER]))
    assert reads_points(
        lambda: metric_summaries(runs=runs, keys=[KEY, "actor/entropy"])
    )  # a new key: computed
    again = metric_summaries(runs=runs, keys=[KEY, OTHER])
    assert again[run.pk][KEY].as_dict() == first[run.pk][KEY].as_dict() and OTHER not in again[run.pk]


@pytest.mark.django_db
def test_a_running_run_is_computed_every_time_and_never_stored(experiment: Experiment, alice: User) -> None:
    run = finished_run(experiment, alice, [0.5, 0.6])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    runs = Run.objects.filter(pk=run.pk)
    assert metric_summaries(runs=runs, keys=[KEY])[run.pk][KEY].last == pytest.approx(0.6)
    assert not StoredMetricSummary.objects.exists()
    MetricPoint.objects.create(run=run, step=3, key=KEY, value=0.9)
    assert metric_summaries(runs=runs, keys=[KEY])[run.pk][KEY].last == pytest.approx(0.9)


@pytest.mark.django_db
def test_a_resumed_run_that_finished_again_is_recomputed(experiment: Experiment, alice: User) -> None:
    run = finished_run(experiment, alice, [0.1, 0.2])
    runs = Run.objects.filter(pk=run.pk)
    metric_summaries(runs=runs, keys=[KEY])
    MetricPoint.objects.create(run=run, step=3, key=KEY, value=0.7)  # resumed, trained one more step
    Run.objects.filter(pk=run.pk).update(step=3)
    assert metric_summaries(runs=runs, keys=[KEY])[run.pk][KEY].last == pytest.approx(0.7)
    assert StoredMetricSummary.objects.get(run=run, key=KEY).run_step == 3


@pytest.mark.django_db
def test_forgetting_a_runs_figures_makes_a_late_metric_count(experiment: Experiment, alice: User) -> None:
    run = finished_run(experiment, alice, [0.1, 0.2])
    runs = Run.objects.filter(pk=run.pk)
    metric_summaries(runs=runs, keys=[KEY])
    MetricPoint.objects.filter(run=run, step=2).update(value=0.8)  # what the ingest API's upsert does
    forget_stored_summaries(run_id=run.pk)
    assert metric_summaries(runs=runs, keys=[KEY])[run.pk][KEY].last == pytest.approx(0.8)


@pytest.mark.django_db
def test_stored_and_computed_runs_mix_in_one_answer(experiment: Experiment, alice: User) -> None:
    done = finished_run(experiment, alice, [0.1, 0.2, 0.3])
    live = finished_run(experiment, alice, [0.4, 0.5])
    Run.objects.filter(pk=live.pk).update(status=RunStatus.RUNNING)
    runs = Run.objects.filter(pk__in=[done.pk, live.pk])
    metric_summaries(runs=runs, keys=[KEY])
    both = metric_summaries(runs=runs, keys=[KEY])
    assert (both[done.pk][KEY].last, both[live.pk][KEY].last) == (pytest.approx(0.3), pytest.approx(0.5))
    assert set(StoredMetricSummary.objects.values_list("run_id", flat=True)) == {done.pk}

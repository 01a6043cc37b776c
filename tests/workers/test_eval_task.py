"""``run_evaluation`` executed in-process (Celery's eager path) on the real tiny model: per-problem rows,
metrics, resume after an interruption without redoing finished problems, cancel, and failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import make_project, make_user
from webapp.benchmarks.models import EvalProblem, EvalRun, EvalSample
from workers.celery_app import app
from workers.eval_sink import DjangoEvalSink, EvalStopPoller
from workers.tasks_eval import run_evaluation

# Four problems, four samples each, one problem per generation batch (so cancel and interruption land
# between problems).
BENCHMARK = {"n_samples": 4, "max_problems": 4, "batch_size": 4, "bootstrap_samples": 50, "pass_k": [1, 2, 4]}


class WorkerKilled(BaseException):
    """Stands for SIGKILL: nothing in the task gets to handle it."""


@pytest.fixture
def owner(transactional_db: None, settings: Settings, tmp_path: Path) -> Any:
    """Committed rows: a trained run's step writer stores steps through a database connection of its own."""
    settings.RLVR_ENQUEUE = False  # these tests execute the task themselves
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    return make_user("alice")


def launch(owner: Any, model: str = "tiny:addition", name: str = "addition") -> EvalRun:
    from webapp.benchmarks.services import benchmark_create, eval_launch
    from webapp.experiments.services import experiment_create

    project = make_project(owner, name=f"lab-{name}")
    experiment = experiment_create(
        project=project, actor=owner, name="exp", config={"model": {"name_or_path": model}}
    )
    benchmark = benchmark_create(
        project=project,
        actor=owner,
        name=name,
        source="builtin",
        builtin="builtin:addition",
        config=dict(BENCHMARK),
    )
    row: EvalRun = eval_launch(benchmark=benchmark, actor=owner, experiments=[experiment])[0]
    return row


def test_the_eval_task_goes_to_the_eval_queue_and_is_acknowledged_late() -> None:
    assert run_evaluation.acks_late and run_evaluation.reject_on_worker_lost
    assert app.amqp.router.route({}, run_evaluation.name)["queue"].name == "eval"


def test_an_evaluation_cancelled_while_queued_is_skipped(owner: Any) -> None:
    from webapp.benchmarks.services import eval_cancel

    row = launch(owner)
    eval_cancel(eval_run=row, actor=owner)
    assert run_evaluation.apply(args=(row.pk,)).get() == "skipped"
    assert EvalRun.objects.get(pk=row.pk).status == "cancelled"


def test_a_model_folder_removed_after_launch_fails_with_a_message_saying_what_is_allowed(
    owner: Any, tmp_path: Path
) -> None:
    model = tmp_path / "gone-model"
    model.mkdir()
    row = launch(owner, model=str(model))  # launch checks the folder exists; the worker checks again
    model.rmdir()
    assert run_evaluation.apply(args=(row.pk,)).get() == "failed"
    row.refresh_from_db()
    assert "is not a folder under the allowed model folders" in row.error_message and row.traceback == ""
    assert "RLVR_MODEL_ROOTS" in row.error_message


@pytest.mark.slow
def test_an_interrupted_evaluation_resumes_without_redoing_finished_problems(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DjangoEvalSink, "flush_every", 1)
    reference = launch(owner, name="uninterrupted")
    assert run_evaluation.apply(args=(reference.pk,)).get() == "succeeded"
    reference.refresh_from_db()
    assert (reference.problems_total, reference.problems_done) == (4, 4)
    assert EvalSample.objects.filter(problem__eval_run=reference).count() == 16
    assert set(reference.metrics) >= {"avg@4", "pass@1 (n=4)", "pass@2 (n=4)", "pass@4 (n=4)", "maj@4"}
    assert (
        reference.ci["pass@1 (n=4)"][0]
        <= reference.metrics["pass@1 (n=4)"]
        <= reference.ci["pass@1 (n=4)"][1]
    )

    row = launch(owner, name="interrupted")
    stored_problem = DjangoEvalSink.on_problem

    def dies_after_two(self: DjangoEvalSink, problem: Any) -> None:
        stored_problem(self, problem)
        if EvalProblem.objects.filter(eval_run_id=self.eval_run_id).count() == 2:
            raise WorkerKilled

    monkeypatch.setattr(DjangoEvalSink, "on_problem", dies_after_two)
    with pytest.raises(WorkerKilled):
        run_evaluation(row.pk)  # the first delivery dies mid-way: status stays running
    assert EvalRun.objects.get(pk=row.pk).status == "running"
    monkeypatch.setattr(DjangoEvalSink, "on_problem", stored_problem)

    assert run_evaluation.apply(args=(row.pk,)).get() == "succeeded"  # the re-delivery

    row.refresh_from_db()
    assert (row.attempts, row.problems_done) == (2, 4)
    assert row.timings["generated_samples"] == 2 * 4  # only the two unfinished problems were generated
    assert sorted(EvalProblem.objects.filter(eval_run=row).values_list("problem_id", flat=True)) == sorted(
        EvalProblem.objects.filter(eval_run=reference).values_list("problem_id", flat=True)
    )
    assert row.metrics == reference.metrics  # same samples as an uninterrupted evaluation (seeded per batch)


def test_cancelling_a_running_evaluation_stops_it_between_problems(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.benchmarks.services import eval_cancel

    monkeypatch.setattr(DjangoEvalSink, "flush_every", 1)
    monkeypatch.setattr(EvalStopPoller, "interval_s", 0.0)
    row = launch(owner)
    stored_problem = DjangoEvalSink.on_problem

    def cancel_after_first(self: DjangoEvalSink, problem: Any) -> None:
        stored_problem(self, problem)
        eval_cancel(eval_run=EvalRun.objects.get(pk=self.eval_run_id), actor=owner)

    monkeypatch.setattr(DjangoEvalSink, "on_problem", cancel_after_first)
    assert run_evaluation.apply(args=(row.pk,)).get() == "cancelled"
    row.refresh_from_db()
    assert row.status == "cancelled" and row.problems_done == 1 and row.finished_at is not None


def test_a_checkpoint_of_a_trained_run_is_evaluated_at_its_step(owner: Any, random_model_dir: Path) -> None:
    from tests.workers.helpers import launch_run, tiny_experiment_config
    from webapp.benchmarks.services import benchmark_create, eval_launch
    from webapp.experiments.models import Checkpoint
    from workers.tasks import run_training

    project = make_project(owner, name="lab-ckpt")
    run = launch_run(owner, project, tiny_experiment_config(random_model_dir, max_steps=1, save_steps=1))
    assert run_training.apply(args=(run.pk,)).get() == "succeeded"
    checkpoint = Checkpoint.objects.get(run=run, step=1)
    benchmark = benchmark_create(
        project=project,
        actor=owner,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config={**BENCHMARK, "max_problems": 2},
    )
    (row,) = eval_launch(benchmark=benchmark, actor=owner, checkpoints=[checkpoint])

    assert run_evaluation.apply(args=(row.pk,)).get() == "succeeded"

    row.refresh_from_db()
    assert (row.target_kind, row.step, row.model_path, row.problems_done) == (
        "checkpoint",
        1,
        f"checkpoint:{checkpoint.pk}",
        2,
    )
    assert row.label.endswith("step 1") and "pass@1 (n=4)" in row.metrics

"""The ``training`` queue's reward-model training task: Bradley-Terry training of a new reward model version, or
a process reward model's training when the job names step ``labels`` (workers/tasks_prm.py).

Like the other tasks it takes an id and imports webapp and trainer inside its body. The web side
(webapp/rewards/training_services.py) stores the job and sends this task after commit; here the job is marked
running, its pairs are collected through the web app's selector, the trainer trains into
RLVR_HOME/reward-models/job-<id>/, progress (phase, step, total, the loss and held-out accuracy series) is stored
at most once a second, a cancel request stops it before the next step, and success creates the version. Late
acknowledgement re-delivers a job whose worker died: a finished one is then skipped, a running one starts again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Task

from workers.celery_app import app

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 1.0
MAX_SERIES_POINTS = 2000  # points of each live series kept in ``progress`` (the newest, after thinning)


class ProgressWriter:
    """Collects the trainer's per-step reports and stores them at most once a second (and on every measured
    accuracy); ``cancelled`` is what the last store learned about the job's cancel flag."""

    def __init__(self, job_id: int, store: Any) -> None:
        self.job_id, self.store = job_id, store
        self.progress: dict[str, Any] = {
            "phase": "training",
            "step": 0,
            "total": 0,
            "loss": [],
            "accuracy": [],
        }
        self.cancelled = False
        self._last = 0.0

    def phase(self, phase: str, **extra: Any) -> None:
        self.progress.update(phase=phase, **extra)
        self.flush()

    def on_step(self, report: Any) -> None:
        p = self.progress
        p.update(
            step=report.step, total=report.total, elapsed_s=round(report.elapsed_s, 1), eta_s=report.eta_s
        )
        p["loss"].append([report.step, round(report.loss, 6)])
        if report.held_out_accuracy is not None:
            p["accuracy"].append([report.step, round(report.held_out_accuracy, 6)])
        for key in ("loss", "accuracy"):
            if len(p[key]) > MAX_SERIES_POINTS:  # keep every other old point: the chart's shape stays
                p[key] = p[key][: MAX_SERIES_POINTS // 2 : 2] + p[key][MAX_SERIES_POINTS // 2 :]
        if report.held_out_accuracy is not None or time.monotonic() - self._last >= PROGRESS_EVERY_S:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        self.cancelled = self.store(job_id=self.job_id, progress=self.progress) or self.cancelled


@app.task(
    bind=True, acks_late=True, reject_on_worker_lost=True, name="workers.tasks_rewards.train_reward_model"
)
def train_reward_model(self: Task[Any, Any], job_id: int) -> str:
    """Train job ``job_id`` to its end; 'succeeded', 'failed', 'cancelled' or 'skipped' (gone, or finished)."""
    from django.http import Http404

    from trainer.errors import RLVRError
    from trainer.rewards.bradley_terry import RMTrainingStopped, train_reward_model
    from trainer.rewards.bt_config import RMTrainingConfig
    from webapp.core.errors import ApplicationError
    from webapp.rewards import training_services as services
    from webapp.rewards.training_selectors import pairs_for_source

    job = services.training_mark_started(job_id=job_id)
    if job is None:
        return "skipped"
    if "labels" in job.config:  # a process reward model: step labels, not pairs
        from workers.tasks_prm import run_prm_job

        return run_prm_job(job)
    writer = ProgressWriter(job.pk, services.training_progress)
    try:
        pairs = pairs_for_source(project=job.project, source=job.config["source"])
        writer.phase("loading the base model", pairs=len(pairs))
        if writer.cancelled:
            services.training_cancelled(job_id=job.pk, progress=writer.progress)
            return "cancelled"
        output_dir = services.training_output_dir(job=job)
        config = RMTrainingConfig(
            **job.config["hyper"], base_model=services.training_base_model_for_worker(job=job),
            output_dir=str(output_dir),
        )  # fmt: skip
        writer.phase("training")
        result = train_reward_model(
            config, pairs, on_progress=writer.on_step, should_stop=lambda: writer.cancelled
        )
        writer.phase("saving")
        services.training_finish(
            job=job, folder=str(output_dir), result=result.to_json(), progress=writer.progress
        )
    except RMTrainingStopped:
        services.training_cancelled(job_id=job.pk, progress=writer.progress)
        return "cancelled"
    except (RLVRError, ApplicationError, Http404) as err:
        services.training_fail(job_id=job.pk, message=getattr(err, "message", None) or str(err))
        return "failed"
    except Exception as err:
        logger.exception("reward training job %s failed", job_id)
        services.training_fail(job_id=job.pk, message=f"{type(err).__name__}: {err}")
        return "failed"
    return "succeeded"

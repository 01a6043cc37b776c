"""The ``eval`` queue's task: evaluate one benchmark on one model and record it (workers/eval_sink.py).

Like ``run_training`` it takes an id, imports the trainer inside its body (the web process imports this
module to enqueue and must never load torch) and records everything through webapp services. A second
delivery of an evaluation that was interrupted (worker killed; late acknowledgement re-delivers it)
resumes: the problems already stored are handed to the engine as ``done`` and are not generated again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Task

from workers.celery_app import app
from workers.failures import describe_failure

if TYPE_CHECKING:
    from webapp.benchmarks.models import EvalRun

logger = logging.getLogger(__name__)


@app.task(bind=True, acks_late=True, reject_on_worker_lost=True, name="workers.tasks_eval.run_evaluation")
def run_evaluation(self: Task[Any, Any], eval_run_id: int) -> str:
    """Evaluate ``eval_run_id`` to its end; returns the outcome ('succeeded', 'cancelled', 'failed') or
    'skipped' when it had already finished (a duplicate delivery, or cancelled while queued)."""
    from webapp.benchmarks import services

    row = services.eval_mark_started(eval_run_id=eval_run_id, worker=str(self.request.hostname or ""))
    if row.status != "running":
        return "skipped"
    if row.cancel_requested:
        services.eval_finish(eval_run_id=eval_run_id, status="cancelled", metrics={}, ci={}, timings={})
        return "cancelled"
    return _evaluate(eval_run_id, row)


def _evaluate(eval_run_id: int, row: EvalRun) -> str:
    from trainer.evaluation.config import benchmark_from_dict
    from trainer.evaluation.engine import ProblemResult, evaluate
    from trainer.verifiers.secrets import forget_secrets, provide_secrets
    from webapp.benchmarks import selectors, services
    from webapp.benchmarks.config_validation import eval_inputs_for_worker
    from webapp.rewards.selectors import judge_secrets_for_config
    from workers.eval_sink import DjangoEvalSink, EvalStopPoller

    sink = DjangoEvalSink(eval_run_id)
    stop = EvalStopPoller(eval_run_id)
    try:
        config_data, model_path = eval_inputs_for_worker(
            eval_run=row
        )  # checked again, resolved to server paths
        # The API keys its judges name, decrypted here for this process only (forgotten when it ends).
        provide_secrets(judge_secrets_for_config(project=row.benchmark.project, config=config_data))
        config = benchmark_from_dict(config_data, source=f"evaluation {eval_run_id}")
        done = [ProblemResult.from_dict(p) for p in selectors.eval_stored_problems(eval_run_id=eval_run_id)]
        result = evaluate(config, model_path, sink=sink, done=done, should_stop=stop)
    except Exception as err:
        try:
            sink.flush()  # keep what finished: a resumed attempt starts after it
        except Exception:
            logger.exception("evaluation %s: could not store its last problems", eval_run_id)
        return _fail(eval_run_id, err)
    finally:
        forget_secrets()
    status = "cancelled" if result.status == "cancelled" or stop.stopped else "succeeded"
    services.eval_finish(
        eval_run_id=eval_run_id, status=status, metrics=dict(result.metrics),
        ci={k: list(v) for k, v in result.ci.items()}, timings=dict(result.timings),
    )  # fmt: skip
    return status


def _fail(eval_run_id: int, err: Exception) -> str:
    """A trainer ``RLVRError`` is meant for the user and is shown as it is; anything else keeps its traceback."""
    from trainer.verifiers.secrets import scrub
    from webapp.benchmarks import services

    message, trace = describe_failure(err, f"evaluation {eval_run_id}")
    message, trace = scrub(message), scrub(trace)  # a judge's API key never reaches the page
    services.eval_fail(eval_run_id=eval_run_id, message=message, traceback_text=trace)
    return "failed"

"""A process reward model (PRM) training job on the ``training`` queue, run by ``train_reward_model``
(workers/tasks_rewards.py) when the job names ``labels``.

The job's labels are checked again here (webapp/rewards/training_prm.py), the step-labelled examples are built with
trainer/process/prm_training.py (the policy's samples of chain problems labelled by the chain oracle or by
Math-Shepherd's Monte-Carlo continuations, chunk by chunk so that a cancel is honoured and progress shows while
sampling; or an uploaded Math-Shepherd / PRM800K file), and ``train_prm`` trains into RLVR_HOME/reward-models/job-<id>/
(written beside and renamed in). Progress (phase, step, total, loss, held-out step accuracy and first-error accuracy)
is stored at most once a second and on every measured accuracy; success creates the PRM version with its held-out
figures. Imports webapp and trainer inside its functions, as every task does.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 1.0
MAX_SERIES_POINTS = 2000  # points of each live series kept in ``progress`` (the newest, after thinning)
SERIES = ("loss", "accuracy", "first_error_accuracy")  # accuracy: the held-out step accuracy
ROLLOUTS_PER_CHUNK = 256  # completions sampled (and labelled) between two progress stores / cancel checks


class PRMProgressWriter:
    """Collects the PRM trainer's per-step reports (and the labelling's) and stores them at most once a second, and
    on every measured accuracy; ``cancelled`` is what the last store learned about the job's cancel flag."""

    def __init__(self, job_id: int, store: Any) -> None:
        self.job_id, self.store = job_id, store
        self.progress: dict[str, Any] = {"phase": "labelling steps", "step": 0, "total": 0}
        self.progress.update({key: [] for key in SERIES})
        self.cancelled = False
        self._last = 0.0

    def phase(self, phase: str, **extra: Any) -> None:
        self.progress.update(phase=phase, **extra)
        self.flush()

    def labelled(self, done: int, problems: int, examples: int) -> None:
        """Problems sampled and labelled so far (stored at most once a second, and at the last)."""
        self.progress.update(labelled_problems=done, problems=problems, examples=examples)
        if done >= problems or time.monotonic() - self._last >= PROGRESS_EVERY_S:
            self.flush()

    def on_step(self, report: Any) -> None:
        p = self.progress
        p.update(
            step=report.step, total=report.total, elapsed_s=round(report.elapsed_s, 1), eta_s=report.eta_s
        )
        p["loss"].append([report.step, round(report.loss, 6)])
        measured = report.held_out_step_accuracy is not None
        if measured:
            p["accuracy"].append([report.step, round(report.held_out_step_accuracy, 6)])
        if report.held_out_first_error_accuracy is not None:
            p["first_error_accuracy"].append([report.step, round(report.held_out_first_error_accuracy, 6)])
        for key in SERIES:
            if len(p[key]) > MAX_SERIES_POINTS:  # keep every other old point: the chart's shape stays
                p[key] = p[key][: MAX_SERIES_POINTS // 2 : 2] + p[key][MAX_SERIES_POINTS // 2 :]
        if measured or time.monotonic() - self._last >= PROGRESS_EVERY_S:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        self.cancelled = self.store(job_id=self.job_id, progress=self.progress) or self.cancelled


def run_prm_job(job: Any) -> str:
    """Train the PRM job ``job`` (already marked running) to its end: 'succeeded', 'failed' or 'cancelled'."""
    from django.http import Http404

    from trainer.errors import RLVRError
    from trainer.process.prm_config import PRMTrainingConfig
    from trainer.process.prm_training import PRMTrainingStopped, train_prm
    from webapp.core.errors import ApplicationError
    from webapp.rewards import training_services as services
    from webapp.rewards.training_prm import prm_labels_for_worker, prm_training_finish

    writer = PRMProgressWriter(job.pk, services.training_progress)
    try:
        labels = prm_labels_for_worker(job=job)
        hyper = job.config["hyper"]
        examples, source = _examples(labels, job.config["labels"], hyper["device"], writer)
        steps = sum(1 for e in examples for y in e.labels if not math.isnan(y))  # nan: a step without a label
        writer.phase("loading the base model", examples=len(examples), labelled_steps=steps)
        if writer.cancelled:
            raise PRMTrainingStopped("cancelled before training")
        output_dir = services.training_output_dir(job=job)
        config = PRMTrainingConfig(
            **hyper, base_model=services.training_base_model_for_worker(job=job), output_dir=str(output_dir)
        )
        writer.phase("training")
        result = train_prm(
            config, examples, on_progress=writer.on_step, should_stop=lambda: writer.cancelled, source=source
        )
        writer.phase("saving")
        prm_training_finish(
            job=job, folder=str(output_dir), result=result.to_json(), progress=writer.progress
        )
    except PRMTrainingStopped:
        services.training_cancelled(job_id=job.pk, progress=writer.progress)
        return "cancelled"
    except (RLVRError, ApplicationError, Http404) as err:
        services.training_fail(job_id=job.pk, message=getattr(err, "message", None) or str(err))
        return "failed"
    except Exception as err:
        logger.exception("PRM training job %s failed", job.pk)
        services.training_fail(job_id=job.pk, message=f"{type(err).__name__}: {err}")
        return "failed"
    return "succeeded"


def _examples(
    labels: dict[str, Any], stored: dict[str, Any], device_name: str, writer: PRMProgressWriter
) -> tuple[list[Any], dict[str, Any]]:
    """The step-labelled examples the job's labels give, and their provenance (references as the job stored them,
    never a server path)."""
    from trainer.errors import DataError
    from trainer.process.prm_training import file_labels

    if labels["source"] == "file":
        writer.phase("reading step labels")
        examples, source = file_labels(
            Path(labels["path"]),
            labels["format"],
            max_examples=labels["max_examples"],
            neutral=labels["neutral"],
        )
        return examples, {**source, "dataset": labels["dataset"]}
    examples, tokens = _sampled_examples(labels, device_name, writer)
    if not examples:
        raise DataError(
            f"none of the {labels['problems'] * labels['samples_per_problem']} completions of {stored['policy']} "
            "could be labelled step by step (no line of working the chain oracle can check): use a policy that "
            "writes its working, e.g. tiny:chain-teacher"
        )
    source = {
        "kind": labels["source"], "scorer": "oracle_chain" if labels["source"] == "oracle" else "monte_carlo",
        "segmenter": "lines", "policy": stored["policy"], "tokens_generated": tokens,
        **{key: labels[key] for key in ("problems", "samples_per_problem", "level", "seed", "temperature",
                                        "max_new_tokens", "k") if key in labels},
    }  # fmt: skip
    return examples, source


def _sampled_examples(
    labels: dict[str, Any], device_name: str, writer: PRMProgressWriter
) -> tuple[list[Any], int]:
    """The policy's samples of the chain problems, labelled chunk by chunk; the tokens generated (samples and
    Monte-Carlo continuations). PRMTrainingStopped when a cancel arrives between two chunks."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import problems_off_the_benchmark
    from trainer.models.device import resolve_device
    from trainer.models.tiny_model import resolve_model_path
    from trainer.process.monte_carlo import MonteCarloParams
    from trainer.process.prm_training import (
        PRMTrainingStopped,
        monte_carlo_labels,
        oracle_labels,
        sample_rollouts,
    )
    from trainer.rollout.hf_engine import HFRolloutEngine
    from trainer.verifiers.chain_arithmetic import ChainArithmeticParams, ChainArithmeticVerifier

    writer.phase("loading the policy")
    device = resolve_device(device_name)
    path = resolve_model_path(labels["policy"])
    policy = AutoModelForCausalLM.from_pretrained(path)
    policy.to(device)  # type: ignore[arg-type]  # transformers' stub types .to's argument as a model
    engine = HFRolloutEngine(policy.eval(), AutoTokenizer.from_pretrained(path))
    problems = problems_off_the_benchmark(labels["problems"], labels["seed"], labels["level"])
    generator = torch.Generator(device=device).manual_seed(labels["seed"])
    sampling = {"max_new_tokens": labels["max_new_tokens"], "temperature": labels["temperature"]}
    k = labels["samples_per_problem"]
    per_chunk = max(1, ROLLOUTS_PER_CHUNK // k)
    examples: list[Any] = []
    tokens = 0
    writer.phase("labelling steps", labelled_problems=0, problems=len(problems), examples=0)
    with torch.inference_mode():
        for start in range(0, len(problems), per_chunk):
            if writer.cancelled:
                raise PRMTrainingStopped(f"stopped while labelling ({start} of {len(problems)} problems)")
            rollouts = sample_rollouts(
                engine, problems[start : start + per_chunk], k, generator=generator, **sampling
            )
            tokens += rollouts.generated_tokens
            if labels["source"] == "oracle":
                examples += oracle_labels(rollouts)
            else:
                params = MonteCarloParams(
                    k=labels["k"], max_prefixes=8192, max_new_tokens=labels["max_new_tokens"]
                )
                verifier = ChainArithmeticVerifier(ChainArithmeticParams())
                got, mc_tokens = monte_carlo_labels(
                    rollouts, engine, verifier, params, generator=generator, **sampling
                )
                examples += got
                tokens += mc_tokens
            writer.labelled(min(start + per_chunk, len(problems)), len(problems), len(examples))
    return examples, tokens

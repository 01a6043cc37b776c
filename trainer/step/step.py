"""One training step: its stages, in order, top to bottom. Each stage (trainer/step/stages.py) takes the values of
the stages before it that it reads and returns its own (trainer/step/state.py); the methods a config chose act
inside them at their hook points (trainer/methods/axes.py).

Every stage is timed (``StageClock``: two ``perf_counter`` calls a stage, under a microsecond) and reported as
``perf/<stage>_s``, so a slow step says which stage it spent its time in without a profiler
(benchmarks/step_profile.py splits them further). The times are host wall-clock: on an accelerator a stage that
only launches kernels is charged to the first later stage that waits for them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from trainer.sinks import StepReport
from trainer.step import stages
from trainer.step.run_setup import Run
from trainer.step.state import StepOutcome

STAGE_METRIC = "perf/{}_s"  # perf/collect_s, perf/update_policy_s, ... (trainer/step/step.py STAGES)
STAGES = (
    "collect",
    "score_with_policy",
    "score_steps",
    "shape_rewards",
    "score_with_teacher",
    "estimate_advantages",
    "build_loss_mask",
    "assign_token_credit",
    "update_policy",
    "report",
)


class StageClock:
    """Seconds per stage of one step, in the order they ran; ``metrics()`` names them ``perf/<stage>_s``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def metrics(self) -> dict[str, float]:
        return {STAGE_METRIC.format(name): s for name, s in self.seconds.items()}


def training_step(run: Run, step: int) -> StepReport:
    """One GRPO-family step (``step`` is 1-based). Returns the step's metrics and rollout records."""
    started = time.perf_counter()
    clock = StageClock()
    # prompt sampler, allocator -> completions -> verifier scores (or the asynchronous generator's)
    with clock.stage("collect"):
        collected = stages.collect(run, step)
    # vLLM / off-policy samples: the policy's logprobs, truncated importance weights
    with clock.stage("score_with_policy"):
        scored = stages.score_with_policy(run, step, collected)
    # process_reward: steps and their scores (None without the section)
    with clock.stage("score_steps"):
        steps = stages.score_steps(run, step, collected, scored)
    # reward_shaping: label-free rewards, length and overlong terms
    with clock.stage("shape_rewards"):
        shaped = stages.shape_rewards(run, step, collected)
    # teacher signals (OPD / OPSD), when a chosen method reads them
    with clock.stage("score_with_teacher"):
        signals = stages.score_with_teacher(run, step, collected, scored)
    # reward_fusion -> advantage -> advantage_shaping
    with clock.stage("estimate_advantages"):
        advantages = stages.estimate_advantages(run, step, collected, scored, shaped, signals)
    # loss_mask
    with clock.stage("build_loss_mask"):
        loss_mask = stages.build_loss_mask(run, step, collected, scored)
    # token_credit -> token_fusion -> loss_inputs
    with clock.stage("assign_token_credit"):
        credit = stages.assign_token_credit(
            run, step, scored, advantages, loss_mask, signals, steps=steps, shaped=shaped, collected=collected
        )
    # policy_loss, aggregation, regularizer; num_iterations optimizer steps
    with clock.stage("update_policy"):
        update = stages.update_policy(run, step, scored, loss_mask, credit, shaped)
    scored = update.scored or scored  # the policy's scores, when the update computed them
    # metrics and rollout records
    with clock.stage("report"):
        report = stages.report(
            run,
            StepOutcome(
                step,
                started,
                collected,
                scored,
                shaped,
                signals,
                advantages,
                loss_mask,
                credit,
                update,
                steps,
            ),
        )
    report.metrics.update(clock.metrics())
    return report

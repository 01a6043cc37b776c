"""One training step: its stages, in order, top to bottom. Each stage (trainer/step/stages.py) takes the values of
the stages before it that it reads and returns its own (trainer/step/state.py); the methods a config chose act
inside them at their hook points (trainer/methods/axes.py)."""

from __future__ import annotations

import time

from trainer.sinks import StepReport
from trainer.step import stages
from trainer.step.run_setup import Run
from trainer.step.state import StepOutcome


def training_step(run: Run, step: int) -> StepReport:
    """One GRPO-family step (``step`` is 1-based). Returns the step's metrics and rollout records."""
    started = time.perf_counter()
    # prompt sampler, allocator -> completions -> verifier scores (or the asynchronous generator's)
    collected = stages.collect(run, step)
    # vLLM / off-policy samples: the policy's logprobs, truncated importance weights
    scored = stages.score_with_policy(run, collected)
    # process_reward: steps and their scores (None without the section)
    steps = stages.score_steps(run, step, collected, scored)
    # reward_shaping: label-free rewards, length and overlong terms
    shaped = stages.shape_rewards(run, step, collected)
    # teacher signals (OPD / OPSD), when a chosen method reads them
    signals = stages.score_with_teacher(run, step, collected, scored)
    # reward_fusion -> advantage -> advantage_shaping
    advantages = stages.estimate_advantages(run, step, collected, scored, shaped, signals)
    # loss_mask
    loss_mask = stages.build_loss_mask(run, step, collected, scored)
    # token_credit -> token_fusion -> loss_inputs
    credit = stages.assign_token_credit(
        run, step, scored, advantages, loss_mask, signals, steps=steps, shaped=shaped, collected=collected
    )
    # policy_loss, aggregation, regularizer; num_iterations optimizer steps
    update = stages.update_policy(run, step, scored, loss_mask, credit, shaped)
    # metrics and rollout records
    return stages.report(
        run,
        StepOutcome(
            step, started, collected, scored, shaped, signals, advantages, loss_mask, credit, update, steps
        ),
    )

"""One training step: the stages, in order. Each is a function of the step's state (trainer/step/stages.py);
the methods a config chose act inside them through their hooks (trainer/methods/axes.py)."""

from __future__ import annotations

from collections.abc import Callable

from trainer.sinks import StepReport
from trainer.step import stages
from trainer.step.run_setup import Run
from trainer.step.state import StepState

STEP: tuple[Callable[[StepState], None], ...] = (
    stages.collect,  # prompt sampler, allocator -> completions -> verifier scores (or the async generator's)
    stages.score_with_policy,  # vLLM / off-policy samples: the policy's logprobs, truncated importance weights
    stages.shape_rewards,  # reward_shaping: label-free rewards, length and overlong terms
    stages.score_with_teacher,  # teacher signals (OPD / OPSD), when a chosen method reads them
    stages.estimate_advantages,  # reward_fusion -> advantage -> advantage_shaping
    stages.build_loss_mask,  # loss_mask
    stages.assign_token_credit,  # token_credit -> token_fusion -> loss_inputs
    stages.update_policy,  # policy_loss, aggregation, regularizer; num_iterations optimizer steps
    stages.report,  # metrics and rollout records
)


def training_step(run: Run, step: int) -> StepReport:
    """One GRPO-family step (``step`` is 1-based). Returns the step's metrics and rollout records."""
    state = StepState(run, step)
    for stage in STEP:
        stage(state)
    assert state.report is not None
    return state.report

"""What one training step carries from stage to stage (trainer/step/stages.py fills it in order)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

    from trainer.methods.axes import ActiveMethod
    from trainer.methods.policy_losses import LossExtras
    from trainer.rollout import RolloutBatch
    from trainer.sinks import StepReport
    from trainer.step.collect import StepRollouts
    from trainer.step.optimize import UpdateStats
    from trainer.step.policy_scoring import ImportanceWeights
    from trainer.step.run_setup import Run
    from trainer.step.teacher import TeacherSignals
    from trainer.verifiers.scoring import ScoreBatch


@dataclass
class StepState:
    """The step's rollouts and everything derived from them; each field is [N] or [N, T] over the step's
    completions (this process's share in a data-parallel run). None until the stage that makes it has run."""

    run: Run
    step: int
    started: float = field(default_factory=time.perf_counter)
    collected: StepRollouts | None = None
    scores: ScoreBatch | None = None  # verifier scores, then shaped (reward_shaping)
    rewards: Tensor | None = None  # [N] total reward, then fused with the teacher (reward_fusion)
    pseudo_correct: list[bool] = field(default_factory=list)  # what counts as correct for advantage shaping
    importance: ImportanceWeights | None = None  # [N, T] truncated IS weights when the sampler was not the policy
    signals: TeacherSignals | None = None  # teacher logprobs / entropies of the sampled tokens
    advantages: Tensor | None = None  # [N] one per completion
    loss_mask: Tensor | None = None  # [N, T] tokens in the loss
    token_advantages: Tensor | None = None  # [N, T]
    extras: LossExtras | None = None  # what the policy loss needs beyond advantages (segments, clip scales)
    segment_ids: Tensor | None = None  # [N, T] for the token view's 'segment' channel
    old_logprobs: Tensor | None = None  # [N, T]
    ref_logprobs: Tensor | None = None  # [N, T]
    updates: list[UpdateStats] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    report: StepReport | None = None

    @property
    def batch(self) -> RolloutBatch:
        assert self.collected is not None, "the collect stage runs first"
        return self.collected.batch

    @property
    def group_ids(self) -> Tensor:
        assert self.collected is not None, "the collect stage runs first"
        return self.collected.group_ids

    @property
    def methods(self) -> list[ActiveMethod]:
        return self.run.methods

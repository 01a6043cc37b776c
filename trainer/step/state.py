"""What the stages of a training step hand each other: one frozen value per stage (trainer/step/stages.py), passed
explicitly by ``training_step`` (trainer/step/step.py). A stage takes the values it reads and returns its own, so
a stage moved before the one whose output it needs fails: mypy sees the missing argument, Python the unbound
name. Tensors are [N] or [N, T] over the step's completions (this process's share in a data-parallel run).

The collect stage's value is ``StepRollouts`` (trainer/step/collect.py: the same whether the step generated its
rollouts or took them from the asynchronous generator); the teacher stage's is ``TeacherSignals | None``
(trainer/step/teacher.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

    from trainer.methods.policy_losses import LossExtras
    from trainer.rollout import RolloutBatch
    from trainer.step.collect import StepRollouts
    from trainer.step.optimize import UpdateStats
    from trainer.step.teacher import TeacherSignals
    from trainer.verifiers.scoring import ScoreBatch


@dataclass(frozen=True)
class ImportanceWeights:
    weights: Tensor  # [N, T] truncated weights (1 on padding)
    metrics: dict[str, float]  # async/is_* and the sampler-trainer KL


@dataclass(frozen=True)
class PolicyScores:
    """score_with_policy: the batch every later stage reads. When vLLM or an older policy sampled, its logprobs and
    entropies are the policy's own (the collected batch keeps the sampler's) and ``importance`` holds the
    truncated importance weights; otherwise it is the collected batch and ``importance`` is None."""

    batch: RolloutBatch  # [N, T]
    importance: ImportanceWeights | None
    # The update scores the batch in its own forward (trainer/step/policy_scoring.py update_rescores): ``batch``
    # still holds the sampler's logprobs and entropies, which no stage before the update reads, and the update
    # returns the policy's scores (``Update.scored``) for the report.
    deferred: bool = False

    @property
    def metrics(self) -> dict[str, float]:
        return {} if self.importance is None else self.importance.metrics


@dataclass(frozen=True)
class StepScores:
    """score_steps (``process_reward``, trainer/process/): each completion's steps and their scores."""

    spans: list[
        list[tuple[int, int]]
    ]  # [N] half-open token spans over the completion (trainer/process/steps.py)
    scores: list[list[float]]  # [N] one per span, in [0, 1]; nan: absent
    detail: list[dict[str, Any]]  # [N] each completion's details["process"] (trainer/process/records.py)
    metrics: dict[str, float]  # process/* (and process/mc_tokens, added to budget/tokens_generated)


@dataclass(frozen=True)
class ShapedRewards:
    """shape_rewards: the verifier scores after the ``reward_shaping`` hooks, and the moment they were final."""

    scores: ScoreBatch  # [N] shaped; shaping terms added as reward keys
    rewards: Tensor  # [N] float32, scores.total
    pseudo_correct: list[bool]  # [N] what counts as correct for advantage shaping
    metrics: dict[str, float]  # shaping/*
    gen_peak_memory_gb: float  # peak accelerator memory of generation and scoring
    finished_at: float  # time.perf_counter() when the rewards were final: perf/train_s counts from here


@dataclass(frozen=True)
class Advantages:
    """estimate_advantages: one advantage per completion, after reward fusion and the ``advantage_shaping`` hooks."""

    values: Tensor  # [N]
    metrics: dict[str, float]  # the advantage_shaping hooks'


@dataclass(frozen=True)
class LossMask:
    """build_loss_mask: the completion tokens in the loss."""

    mask: Tensor  # [N, T]


@dataclass(frozen=True)
class TokenCredit:
    """assign_token_credit: per-token advantages (token credit, token fusion, ``loss_inputs`` hooks) and what the
    policy loss needs beyond them."""

    token_advantages: Tensor  # [N, T]
    extras: LossExtras | None  # segment ids (HISPO), clip scales (GAPO); None for plain token / sequence PPO
    segment_ids: Tensor | None  # [N, T] for the token view's 'segment' channel
    metrics: dict[str, float]  # segment/* and actor/gapo_*


@dataclass(frozen=True)
class Update:
    """update_policy: the optimizer steps' statistics and the logprobs the rollout records show."""

    passes: tuple[UpdateStats, ...]  # one per optimizer step (algorithm.num_iterations)
    old_logprobs: Tensor  # [N, T] before the update (on-policy: the first pass's)
    ref_logprobs: Tensor | None  # [N, T] under the KL reference; None when beta is 0
    lr: float  # the learning rate after the scheduler's step
    train_s: (
        float  # seconds from the final rewards to the end of the update (teacher, credit, optimizer steps)
    )
    scored: PolicyScores | None = (
        None  # the policy's scores of a batch whose scoring was deferred to the update
    )


@dataclass(frozen=True)
class StepTimings:
    """The step's wall-clock phases (perf/gen_s, perf/verify_s, perf/train_s; perf/step_s is their sum)."""

    gen_s: float
    verify_s: float
    train_s: float

    @property
    def step_s(self) -> float:
        return self.gen_s + self.verify_s + self.train_s


@dataclass(frozen=True)
class StepOutcome:
    """Everything the report stage turns into metrics and rollout records: every stage's value, by name."""

    step: int
    started: float  # time.perf_counter() when the step began
    collected: StepRollouts
    scored: PolicyScores
    shaped: ShapedRewards
    signals: TeacherSignals | None
    advantages: Advantages
    loss_mask: LossMask
    credit: TokenCredit
    update: Update
    steps: StepScores | None = None  # process_reward's step scores; None without the section

    @property
    def timings(self) -> StepTimings:
        return StepTimings(self.collected.gen_s, self.collected.verify_s, self.update.train_s)

"""Step credit: step scores (a process reward) -> per-token process advantages added to the outcome's.

Axis ``process_reward.credit``, optional hook point ``step_credit`` (after ``token_credit``). Hook signature:
``(token_advantages [N, T], inputs: StepCreditInputs, params) -> StepCreditOutput``: the outcome's per-token
advantages (whatever estimator and token credit made them) come in, and go out with process credit added, or,
with PROF's filter, unchanged but with a ``keep`` row mask that the stage applies to the loss mask.

The process pipeline, for each completion (its steps are ``inputs.spans``, their scores ``inputs.scores``):

1. step rewards r_k from the scores s_k in [0, 1]: the score itself; with ``clip`` eta, min(s_k - eta, 0)
   (Clipping); with ``delta``, s_k - s_k' where k' is the next present step and the last present step keeps
   s_k (Delta). Both from "On Designing Effective RL Reward at Training Time for LLM Reasoning" (Clipping and
   Delta): with either, the return of any trajectory is bounded above, so repeating correct but unnecessary
   steps does not pay. Clipping is applied first when both are set (Delta then differences clipped rewards);
2. the process value of step k, from the rewards of this and the later present steps (the method: ``sum``
   return-to-go, ``mean``, ``last``, or PURE's ``min``);
3. every token of step k carries that value; the values are normalised within the group: mean and
   Bessel-corrected std over the group's *tokens* in the loss mask that carry a value (not over completions:
   the value enters the loss per token, so a group's process credit sums to zero over its tokens, and a long
   step weighs by its length), divided by std + ``eps``;
4. with ``success_gated`` (Posterior-GRPO), only the rollouts whose outcome is correct get process credit, and
   the normalisation runs over their tokens only;
5. ``token_advantages + weight * process``.

Absent scores (nan: a scorer that could not score a step) contribute nothing: the step's tokens get 0 process
credit, and its reward enters no other step's value; a step is never read as a 0 ("wrong") score. A completion
with no present step gets no process credit. Tokens outside ``inputs.mask`` get none either.

PROF's filter (``prof_filter`` set) replaces 1-5: the outcome advantages pass unchanged, and each group keeps its
correct rollouts with the highest mean step score and its incorrect ones with the lowest, balanced (see
``prof_keep``); the others' rows are zeroed here and in the loss mask. Differs from PROF, a sample selection made
before the advantages are computed: here the kept rollouts keep the advantages the estimator
computed over the whole group (the stage order: advantages, loss mask, then credit), and the balance rule, the
kept share and the ranking of unscored rollouts are ours.

Each group holds whole on one process in a data-parallel run, so nothing here needs the other processes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

Spans = Sequence[Sequence[tuple[int, int]]]  # [N][steps] half-open token spans over each completion


class ProfFilterParams(BoundedModel):
    """PROF's consistency filter: the share of each group that stays in the loss."""

    keep_fraction: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of each group's rollouts kept (rounded, at least 1): correct ones with the highest mean "
        "step score and incorrect ones with the lowest, as evenly split between correct and incorrect as the "
        "group allows (PROF, the PRocess cOnsistency Filter).",
    )


class StepCreditSettings(Protocol):
    """What the process-reward config section gives the step-credit pipeline (trainer/config/process_reward.py;
    ``StepCreditFields`` below carries these fields with their bounds)."""

    weight: float
    success_gated: bool
    clip: float | None
    delta: bool
    prof_filter: ProfFilterParams | None


class StepCreditFields(BoundedModel):
    """The process-reward section's step-credit fields, bounded and documented (the section derives from it)."""

    weight: float = Field(
        1.0,
        ge=0,
        le=100,
        description="Weight of the group-normalised process advantage added to the outcome's token advantage.",
    )
    success_gated: bool = Field(
        False,
        description="Give process credit only to rollouts whose outcome is correct, normalised among them "
        "(the success-gated process reward of Posterior-GRPO, P-GRPO).",
    )
    clip: float | None = Field(
        None,
        ge=0,
        le=1,
        description='Clipping ("On Designing Effective RL Reward at Training Time for LLM Reasoning"): step reward '
        "min(score - clip, 0), so no step pays and a trajectory's summed reward is bounded above by 0. Null: off.",
    )
    delta: bool = Field(
        False,
        description="Delta (same paper): step reward = this step's score minus the next step's (the last step keeps "
        "its score), so the sum from any step telescopes to that step's score and cannot grow with more steps.",
    )
    prof_filter: ProfFilterParams | None = Field(
        None,
        description="PROF, the PRocess cOnsistency Filter: instead of adding process credit, keep each group's "
        "correct rollouts with high mean step score and incorrect ones with low, balanced; the others leave the "
        "loss. Outcome-only advantages. Null: blend (add process credit).",
    )


@dataclass(frozen=True)
class StepCreditInputs:
    """What the step-credit hooks read: the steps, their scores and the outcomes, for the step's N completions."""

    spans: Spans  # [N][steps] (token_start, token_end), index 0 = first completion token
    scores: Sequence[Sequence[float]]  # [N][steps] in [0, 1]; nan = absent
    rewards: Tensor  # [N] outcome rewards (the shaped total)
    correct: Tensor  # [N] bool: the outcome counts as correct
    group_ids: Tensor  # [N] long
    mask: Tensor  # [N, T] the loss mask
    config: StepCreditSettings  # the process_reward section


@dataclass(frozen=True)
class StepCreditOutput:
    """The per-token advantages after process credit; ``keep`` [N] bool when rows leave the loss (PROF)."""

    token_advantages: Tensor  # [N, T]
    keep: Tensor | None = None  # [N] bool; None: every row stays
    metrics: dict[str, float] = field(default_factory=dict)  # process/credit_*, process/prof_*


class StepCreditParams(BoundedModel):
    normalize: Literal["group", "none"] = Field(
        "group",
        description="'group': mean/std over the group's tokens that carry a process value; 'none': the raw value "
        "(an oracle upper bound, or a scorer already calibrated as an advantage).",
    )
    eps: float = Field(1e-4, gt=0, le=1, description="Added to the group std before dividing (as GRPO's).")


StepCreditFn = Callable[["Tensor", StepCreditInputs, Any], StepCreditOutput]
STEP_CREDIT: Axis[StepCreditFn] = Axis(
    "step credit",
    "process_reward.credit",
    "step_credit",
    default="sum",
    description="How step scores become per-token process advantages added to the outcome's.",
)

Aggregate = Callable[[list[float]], float]  # the present rewards of this and later steps -> the step's value


def step_rewards(scores: Sequence[float], clip: float | None, delta: bool) -> list[float]:
    """The step rewards from one completion's scores (nan stays nan: absent); see the module docstring, step 1.

    >>> step_rewards([1.0, 0.5, 0.25], clip=None, delta=True)
    [0.5, 0.25, 0.25]
    >>> step_rewards([1.0, float("nan"), 0.25], clip=0.5, delta=False)
    [0.0, nan, -0.25]
    """
    rewards = [float(s) for s in scores]
    if clip is not None:
        rewards = [r if math.isnan(r) else min(r - clip, 0.0) for r in rewards]
    if delta:
        present = [k for k, r in enumerate(rewards) if not math.isnan(r)]
        out = list(rewards)
        for here, after in itertools.pairwise(present):
            out[here] = rewards[here] - rewards[after]
        rewards = out  # the last present step keeps its reward
    return rewards


def step_values(rewards: Sequence[float], aggregate: Aggregate) -> list[float]:
    """Each step's process value: ``aggregate`` of the present rewards from that step on; nan for an absent step
    (it gets no credit, whatever comes after it)."""
    values: list[float] = []
    for k, r in enumerate(rewards):
        later = [x for x in rewards[k:] if not math.isnan(x)]
        values.append(float("nan") if math.isnan(r) else aggregate(later))
    return values


def token_values(values: Sequence[Sequence[float]], spans: Spans, width: int) -> list[list[float]]:
    """[N][width]: each token carries its step's value (nan outside every step or for an absent step)."""
    rows = []
    for row_values, row_spans in zip(values, spans, strict=True):
        row = [float("nan")] * width
        for value, (start, end) in zip(row_values, row_spans, strict=True):
            start, end = max(start, 0), min(end, width)
            row[start:end] = [value] * max(end - start, 0)
        rows.append(row)
    return rows


def group_normalise(values: Tensor, present: Tensor, group_ids: Tensor, eps: float) -> Tensor:
    """(v - mean_g) / (std_g + eps) over the tokens where ``present`` is set, per group (std Bessel-corrected;
    a group with one such token has std 0); 0 elsewhere. values, present [N, T] -> [N, T]."""
    import torch

    num_groups = int(group_ids.max().item()) + 1
    token_groups = group_ids[:, None].expand_as(values).reshape(-1)  # [N*T]
    weight = present.reshape(-1).to(values.dtype)  # [N*T]
    flat = torch.where(present, values, torch.zeros_like(values)).reshape(-1)  # [N*T]
    zeros = torch.zeros(num_groups, dtype=values.dtype, device=values.device)
    counts = zeros.index_add(0, token_groups, weight)  # [G]
    means = zeros.index_add(0, token_groups, flat * weight) / counts.clamp(min=1)  # [G]
    centred = (flat - means[token_groups]) * weight  # [N*T]
    var = zeros.index_add(0, token_groups, centred**2) / (counts - 1).clamp(min=1)  # [G]
    normalised = centred / (var.sqrt()[token_groups] + eps)
    return normalised.reshape(values.shape) * present


def process_advantages(inputs: StepCreditInputs, aggregate: Aggregate, params: StepCreditParams) -> Tensor:
    """[N, T] process advantages (steps 1-4 of the module docstring), before ``weight``."""
    import torch

    cfg, mask = inputs.config, inputs.mask
    values = [step_values(step_rewards(scores, cfg.clip, cfg.delta), aggregate) for scores in inputs.scores]
    per_token = torch.tensor(
        token_values(values, inputs.spans, mask.shape[1]), dtype=torch.float32, device=mask.device
    ).reshape(mask.shape)  # [N, T], nan where no value
    present = ~torch.isnan(per_token) & mask.bool()  # [N, T]
    if cfg.success_gated:
        present = present & inputs.correct.bool()[:, None]
    if params.normalize == "none":
        return torch.where(present, per_token, torch.zeros_like(per_token))
    return group_normalise(per_token, present, inputs.group_ids, params.eps)


def mean_score(scores: Sequence[float]) -> float:
    """A completion's mean present step score; nan when none is present."""
    present = [s for s in scores if not math.isnan(s)]
    return sum(present) / len(present) if present else float("nan")


def prof_keep(
    scores: Sequence[Sequence[float]], correct: Sequence[bool], group_ids: Sequence[int], keep_fraction: float
) -> list[bool]:
    """PROF's consistency filter: per group of n, keep round(keep_fraction * n) (at least 1) rollouts: the correct
    ones with the highest mean step score and the incorrect ones with the lowest, half and half where the group
    has enough of each (the correct side takes an odd one), the other side filling what one side lacks.
    Rollouts without any present score rank after every scored one on both sides (ties: the earlier index).

    >>> prof_keep([[0.9], [0.2], [0.1], [0.8]], [True, True, False, False], [0, 0, 0, 0], 0.5)
    [True, False, True, False]
    """
    keep = [False] * len(correct)
    for group in sorted(set(group_ids)):
        rows = [i for i, g in enumerate(group_ids) if g == group]
        n_keep = max(1, round(keep_fraction * len(rows)))
        pos = [i for i in rows if correct[i]]
        neg = [i for i in rows if not correct[i]]
        n_pos = min(len(pos), n_keep - min(len(neg), n_keep // 2))
        n_neg = min(len(neg), n_keep - n_pos)

        def rank(i: int, sign: float) -> tuple[bool, float, int]:
            m = mean_score(scores[i])
            return (math.isnan(m), 0.0 if math.isnan(m) else sign * m, i)

        for i in sorted(pos, key=lambda i: rank(i, -1.0))[:n_pos]:  # highest mean score first
            keep[i] = True
        for i in sorted(neg, key=lambda i: rank(i, 1.0))[:n_neg]:  # lowest mean score first
            keep[i] = True
    return keep


def apply_step_credit(
    token_advantages: Tensor, inputs: StepCreditInputs, aggregate: Aggregate, params: StepCreditParams
) -> StepCreditOutput:
    """The shared body of every step-credit method: PROF's filter when configured, else the blend."""
    import torch

    cfg = inputs.config
    if cfg.prof_filter is not None:
        kept = prof_keep(
            inputs.scores,
            inputs.correct.bool().tolist(),
            inputs.group_ids.tolist(),
            cfg.prof_filter.keep_fraction,
        )
        keep = torch.tensor(kept, dtype=torch.bool, device=token_advantages.device)  # [N]
        return StepCreditOutput(
            token_advantages * keep[:, None],
            keep=keep,
            metrics={"process/prof_kept_frac": float(keep.float().mean()) if len(kept) else 0.0},
        )
    process = process_advantages(inputs, aggregate, params)  # [N, T]
    credited = process != 0
    metrics = {
        "process/credit_abs_mean": float(process[credited].abs().mean()) if bool(credited.any()) else 0.0,
        "process/credit_token_frac": float(credited.sum() / inputs.mask.sum().clamp(min=1)),
    }
    return StepCreditOutput(
        token_advantages + cfg.weight * process.to(token_advantages.dtype), metrics=metrics
    )


@STEP_CREDIT.method("sum", params=StepCreditParams)
def sum_credit(
    token_advantages: Tensor, inputs: StepCreditInputs, params: StepCreditParams
) -> StepCreditOutput:
    """Sum-form: a step's value is the sum of its and the later steps' rewards (the undiscounted return-to-go).

    The canonical summation-form credit (gamma = 1 here) that PURE ("Stop Summation: Min-Form Credit Assignment
    Is All Process Reward Model Needs for Reasoning") names as the cause of PRM reward hacking: many high-scored
    steps outweigh a bad one. Pair it with ``clip`` or ``delta``, or use ``min``.
    """
    return apply_step_credit(token_advantages, inputs, sum, params)


@STEP_CREDIT.method("mean", params=StepCreditParams)
def mean_credit(
    token_advantages: Tensor, inputs: StepCreditInputs, params: StepCreditParams
) -> StepCreditOutput:
    """Mean-form: a step's value is the mean reward of this and the later steps (bounded by the score range).

    One of the aggregation functions whose choice "matters a lot" in the ORM-vs-PRM study of PRM rewards for RL;
    the form is ours.
    """
    return apply_step_credit(token_advantages, inputs, lambda later: sum(later) / len(later), params)


@STEP_CREDIT.method("last", params=StepCreditParams)
def last_credit(
    token_advantages: Tensor, inputs: StepCreditInputs, params: StepCreditParams
) -> StepCreditOutput:
    """Last-step form: every step's value is the last present step's reward (the PRM read as an outcome model)."""
    return apply_step_credit(token_advantages, inputs, lambda later: later[-1], params)


@STEP_CREDIT.method("min", params=StepCreditParams)
def min_credit(
    token_advantages: Tensor, inputs: StepCreditInputs, params: StepCreditParams
) -> StepCreditOutput:
    """Min-form (PURE, "Stop Summation: Min-Form Credit Assignment Is All Process Reward Model Needs for
    Reasoning"): a step's value is the minimum of its and the later steps' rewards.

    The value is bounded by the score range however many steps follow, so a run of high-scored steps cannot
    outweigh one bad one. Differs from PURE, whose recipe is its own PPO-style training on PRM rewards, optionally
    supplemented by verifiable rewards on 10% of the data: here the exact min of the present step rewards is
    normalised within the group over tokens and added, times ``weight``, to whatever outcome advantage the
    estimator produced (the verifiable reward is always there; ``weight`` sets the mix).
    """
    return apply_step_credit(token_advantages, inputs, min, params)

"""Turn credit: per-turn scores of multi-turn episodes -> per-token advantages, on top of the outcome's.

Axis ``environment.turn_credit``, optional hook point ``turn_credit`` (right after ``token_credit``). Hook signature:
``(token_advantages [N, T], inputs: TurnCreditInputs, params) -> token_advantages [N, T]``: the outcome's
per-token advantages (every model token of an episode carries its advantage) come in, and go out with turn-level
credit. A turn is a model turn of the episode (its tokens: ``inputs.spans``, completion coordinates, the
environment's reply excluded); its score is the environment's reward of that turn (``inputs.scores``), nan when
the turn has none (a tool call, an environment that scores only the final answer, a scorer that failed).

- ``outcome`` (the default): the identity, every model token keeps the episode's advantage;
- ``tcpo``: TCPO's score-to-credit conversion (retrospective and hindsight delayed credit), group-normalised
  over tokens and added, times ``weight``;
- ``turn_segmented``: CrEST's turn-segmented verified advantages, each turn's own score normalised among the
  group's turns and mixed with the outcome advantage.

An absent score is never read as 0: its turn gets no turn credit (``tcpo``) or keeps the outcome advantage
(``turn_segmented``), and no other turn is compared with it. Tokens outside ``inputs.mask`` get 0.

The step calls the chosen method through ``apply_turn_credit`` (the one caller of the hook point). Each group
holds whole on one process in a data-parallel run, so nothing here needs the other processes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.errors import DataError
from trainer.methods.axes import ActiveMethod, Axis, NoParams, hooks_at
from trainer.methods.step_credit import group_normalise

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.methods.views import EpisodeView

MAX_TURNS = 64  # model turns of one episode (the environment driver's max_turns bound)
Spans = Sequence[Sequence[tuple[int, int]]]  # [N][K] half-open model-token spans over each completion


@dataclass(frozen=True)
class TurnCreditInputs:
    """What the turn-credit hooks read, for the step's N episodes (row i: completion i).

    ``spans[i]`` are episode i's model turns in order, non-overlapping, inside [0, T]; ``scores[i]`` their scores
    (nan: absent), one per span. Episodes may have different numbers of turns (at most ``MAX_TURNS``).
    """

    spans: Spans  # [N][K] (token_start, token_end), index 0 = first completion token
    scores: Sequence[Sequence[float]]  # [N][K] the turn's reward; nan = none / absent
    group_ids: Tensor  # [N] long
    mask: Tensor  # [N, T] the loss mask (model tokens only)
    rewards: Tensor  # [N] outcome rewards (the episodes' shaped totals)

    def __post_init__(self) -> None:
        n = self.mask.shape[0]
        sizes = {"spans": len(self.spans), "scores": len(self.scores)}
        sizes |= {"group_ids": self.group_ids.shape[0], "rewards": self.rewards.shape[0]}
        if self.mask.dim() != 2 or any(size != n for size in sizes.values()):
            raise ValueError(f"turn credit: mask {tuple(self.mask.shape)} [N, T] and {sizes} must agree on N")
        for i, (spans, scores) in enumerate(zip(self.spans, self.scores, strict=True)):
            if len(spans) != len(scores):
                raise ValueError(
                    f"turn credit: episode {i} has {len(spans)} turn spans but {len(scores)} scores"
                )
            if len(spans) > MAX_TURNS:
                raise ValueError(f"turn credit: episode {i} has {len(spans)} turns, more than {MAX_TURNS}")
            bad = [s for s in scores if math.isinf(s)]
            if bad:
                raise DataError(
                    f"turn credit: episode {i} has a turn reward {bad[0]}: an environment's turn reward must be a "
                    "finite number, or None when the turn has none"
                )


def turn_credit_inputs(
    episodes: Sequence[EpisodeView], group_ids: Tensor, mask: Tensor, rewards: Tensor
) -> TurnCreditInputs:
    """The inputs from the episodes' records (trainer/environments/records.py): each turn's ``model_span`` and
    ``reward`` (None -> nan, absent)."""
    return TurnCreditInputs(
        spans=[[(int(t.model_span[0]), int(t.model_span[1])) for t in e.turns] for e in episodes],
        scores=[[math.nan if t.reward is None else float(t.reward) for t in e.turns] for e in episodes],
        group_ids=group_ids,
        mask=mask,
        rewards=rewards,
    )


TurnCreditFn = Callable[["Tensor", TurnCreditInputs, Any], "Tensor"]
TURN_CREDIT: Axis[TurnCreditFn] = Axis(
    "turn credit",
    "environment.turn_credit",
    "turn_credit",
    default="outcome",
    description="How the per-turn scores of multi-turn episodes become per-token credit on top of the outcome's.",
)


def apply_turn_credit(
    token_advantages: Tensor, inputs: TurnCreditInputs, methods: Iterable[ActiveMethod], step: int | None
) -> tuple[Tensor, dict[str, float]]:
    """The ``turn_credit`` hooks of ``methods`` (the step's chosen methods), in order, and ``env/turn_*`` metrics:
    the share of turns with a score and the mean absolute change of the masked tokens' advantages."""
    before = token_advantages
    for hook, params in hooks_at("turn_credit", methods, step):
        token_advantages = hook(token_advantages, inputs, params)  # [N, T]
    turns = sum(len(s) for s in inputs.scores)
    scored = sum(not math.isnan(x) for row in inputs.scores for x in row)
    masked = inputs.mask.bool()
    shift = (token_advantages - before)[masked].abs()
    return token_advantages, {
        "env/turn_scored_frac": scored / turns if turns else 0.0,
        "env/turn_credit_shift_abs_mean": float(shift.mean()) if shift.numel() else 0.0,
    }


# --- shared tensors: turns as a padded [N, K] table, tokens mapped to their turn --------------------------------


def turn_table(inputs: TurnCreditInputs) -> tuple[Tensor, Tensor, Tensor]:
    """(scores [N, K] float64, nan = absent or padding; starts [N, K]; ends [N, K] long), K the most turns of an
    episode; padding turns are empty spans at T. Refuses spans outside [0, T], reversed or overlapping."""
    import torch

    n, width = inputs.mask.shape
    k = max((len(s) for s in inputs.spans), default=0)
    device = inputs.mask.device
    scores = torch.full((n, k), math.nan, dtype=torch.float64)
    starts = torch.full((n, k), width, dtype=torch.long)
    ends = torch.full((n, k), width, dtype=torch.long)
    for i, (row_spans, row_scores) in enumerate(zip(inputs.spans, inputs.scores, strict=True)):
        if row_spans:
            starts[i, : len(row_spans)] = torch.tensor([int(s) for s, _ in row_spans])
            ends[i, : len(row_spans)] = torch.tensor([int(e) for _, e in row_spans])
            scores[i, : len(row_scores)] = torch.tensor([float(x) for x in row_scores], dtype=torch.float64)
    overlapping = k > 1 and bool((starts[:, 1:] < ends[:, :-1]).any())
    if bool((starts < 0).any()) or bool((starts > ends).any()) or bool((ends > width).any()) or overlapping:
        raise ValueError(
            f"turn credit: turn spans must be in order, non-overlapping and inside [0, {width}] (the completion "
            f"width); got {[list(s) for s in inputs.spans if s][:4]}"
        )
    return scores.to(device), starts.to(device), ends.to(device)


def token_turns(starts: Tensor, ends: Tensor, width: int) -> Tensor:
    """[N, T] long: the index of the turn each token lies in, -1 outside every turn (spans ordered and disjoint:
    +k+1 at a span's start and -(k+1) at its end, summed along the row)."""
    import torch

    n, k = starts.shape
    marks = torch.arange(1, k + 1, device=starts.device).expand(n, k)  # [N, K]
    delta = torch.zeros(n, width + 1, dtype=torch.long, device=starts.device)
    delta.scatter_add_(1, starts, marks).scatter_add_(1, ends, -marks)
    return delta.cumsum(1)[:, :width] - 1  # [N, T]


def per_token(values: Tensor, turns: Tensor) -> Tensor:
    """[N, T]: each token carries its turn's value (``values`` [N, K]); nan outside every turn."""
    import torch

    if values.shape[1] == 0:
        return torch.full(turns.shape, math.nan, dtype=values.dtype, device=values.device)
    picked = values.gather(1, turns.clamp(min=0))  # [N, T]
    return torch.where(turns >= 0, picked, torch.full_like(picked, math.nan))


# --- outcome -------------------------------------------------------------------------------------------------------


@TURN_CREDIT.method("outcome", params=NoParams)
def outcome(token_advantages: Tensor, inputs: TurnCreditInputs, params: NoParams) -> Tensor:
    """Outcome only: every model token of an episode carries the episode's advantage (turn scores unused)."""
    return token_advantages


# --- TCPO --------------------------------------------------------------------------------------------------------


class TCPOParams(BoundedModel):
    weight: float = Field(
        1.0,
        ge=0,
        le=100,
        description="Weight of the group-normalised turn credit added to the outcome's token advantage.",
    )
    hindsight_gamma: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Hindsight delayed credit (TCPO): a turn that did not improve on the best earlier turn, followed "
        "by one that does, also gets gamma^distance times that later improvement. 0 turns it off.",
    )
    first_baseline: float | None = Field(
        None,
        ge=-1e6,
        le=1e6,
        description="What an episode's first scored turn is compared with. Null: the mean first scored turn of "
        "its group (the other rollouts of the prompt); a number: that fixed score.",
    )
    eps: float = Field(1e-4, gt=0, le=1, description="Added to the group std before dividing (as GRPO's).")


def first_turn_baseline(scores: Tensor, group_ids: Tensor, fixed: float | None) -> Tensor:
    """[N]: the score each episode's first scored turn is compared with: ``fixed``, or the mean of the first
    scored turns of the episode's group (episodes without one do not count; nan when none has one)."""
    import torch

    n, k = scores.shape
    if fixed is not None:
        return torch.full((n,), float(fixed), dtype=scores.dtype, device=scores.device)
    present = ~torch.isnan(scores)  # [N, K]
    has_any = present.any(1) if k else torch.zeros(n, dtype=torch.bool, device=scores.device)  # [N]
    first = scores.gather(1, present.int().argmax(1, keepdim=True)).squeeze(1) if k else scores.new_zeros(n)
    first = torch.where(has_any, first, torch.zeros_like(first))  # [N]
    groups = int(group_ids.max().item()) + 1 if n else 0
    zeros = torch.zeros(groups, dtype=scores.dtype, device=scores.device)
    sums = zeros.index_add(0, group_ids, first)  # [G]
    counts = zeros.index_add(0, group_ids, has_any.to(scores.dtype))  # [G]
    means = torch.where(counts > 0, sums / counts.clamp(min=1), torch.full_like(sums, math.nan))
    return means[group_ids]  # [N]


def tcpo_turn_credit(scores: Tensor, baseline: Tensor, gamma: float) -> Tensor:
    """[N, K] TCPO turn credit from turn scores [N, K] (nan: absent) and first-turn baselines [N]; nan for an
    absent turn.

    Retrospective: r_k = s_k - max(s_j, j < k present), or s_k - baseline for the first scored turn. Hindsight:
    a turn with r_k <= 0 whose nearest later improving turn m (r_m > 0) exists adds gamma^(m - k) * r_m.
    """
    import torch

    n, k = scores.shape
    present = ~torch.isnan(scores)  # [N, K]
    best = torch.where(present, scores, torch.full_like(scores, -math.inf)).cummax(1).values  # [N, K]
    prior = torch.cat([torch.full_like(scores[:, :1], -math.inf), best[:, :-1]], 1)  # best before turn k
    retro = torch.where(prior > -math.inf, scores - prior, scores - baseline[:, None])  # [N, K]
    retro = torch.where(present, retro, torch.full_like(retro, math.nan))
    index = torch.arange(k, device=scores.device).expand(n, k)  # [N, K]
    improving = present & (retro > 0)
    at_or_after = torch.where(improving, index, torch.full_like(index, k)).flip(1).cummin(1).values.flip(1)
    after = torch.cat([at_or_after[:, 1:], torch.full_like(index[:, :1], k)], 1)  # nearest improving m > k
    later = retro.gather(1, after.clamp(max=k - 1))  # [N, K] r_m
    gets = present & (retro <= 0) & (after < k)
    bonus = torch.where(gets, gamma ** (after - index).to(scores.dtype) * later, torch.zeros_like(retro))
    return retro + bonus


@TURN_CREDIT.method("tcpo", params=TCPOParams)
def tcpo(token_advantages: Tensor, inputs: TurnCreditInputs, params: TCPOParams) -> Tensor:
    """TCPO (turn-level credit assignment for verifier-guided multi-turn RL): turn scores become credit by
    comparison with references: progress or regression against the best earlier turn, plus hindsight credit for a
    turn that did not improve but was followed by one that did.

    Retrospective credit r_k = s_k - max of the earlier scored turns (the first scored turn against
    ``first_baseline``, by default its group's mean first scored turn); hindsight delayed credit adds
    ``hindsight_gamma``^(m - k) * r_m to a turn with r_k <= 0, m its nearest later turn with r_m > 0. Every token
    of turn k carries its credit; credits are normalised within the group over the tokens in the loss mask that
    carry one (mean and Bessel-corrected std), times ``weight``, and added to the outcome's token advantages.
    Differs from TCPO: its selective fixed-history counterfactual estimation (re-sampling high-surprisal turns
    from the same history) is not implemented: it needs new generations from a fixed history inside the step;
    the distance in the hindsight discount counts turns (unscored ones included), and the normalisation is ours.
    """
    import torch

    scores, starts, ends = turn_table(inputs)
    if scores.shape[1] == 0:
        return token_advantages * inputs.mask
    baseline = first_turn_baseline(scores, inputs.group_ids, params.first_baseline)  # [N]
    credit = tcpo_turn_credit(scores, baseline, params.hindsight_gamma)  # [N, K]
    values = per_token(credit, token_turns(starts, ends, inputs.mask.shape[1]))  # [N, T], nan: none
    present = ~torch.isnan(values) & inputs.mask.bool()
    normalised = group_normalise(values, present, inputs.group_ids, params.eps)  # [N, T], 0 where none
    return (token_advantages + params.weight * normalised.to(token_advantages.dtype)) * inputs.mask


# --- CrEST's turn-segmented advantages -----------------------------------------------------------------------------


class TurnSegmentedParams(BoundedModel):
    normalize: Literal["turn_index", "all"] = Field(
        "turn_index",
        description="'turn_index': a turn's score is normalised among the group's turns at the same position (the "
        "first turns together, ...); 'all': among every scored turn of the group.",
    )
    mix: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A scored turn's tokens get (1 - mix) x the outcome advantage + mix x the turn's own "
        "advantage; 0: the outcome only, 1: the turn's own only.",
    )
    eps: float = Field(1e-4, gt=0, le=1, description="Added to the std before dividing (as GRPO's).")


def turn_advantages(scores: Tensor, group_ids: Tensor, normalize: str, eps: float) -> Tensor:
    """[N, K]: each scored turn's score normalised (mean, Bessel-corrected std + eps) among the group's scored
    turns, all of them or those at the same turn index; 0 for an absent turn."""
    import torch

    n, k = scores.shape
    present = ~torch.isnan(scores)  # [N, K]
    if normalize == "all":
        return group_normalise(scores, present, group_ids, eps)
    # one cell per (group, turn index): [N*K]
    cells = (group_ids[:, None] * k + torch.arange(k, device=scores.device)).reshape(-1)
    flat = group_normalise(scores.reshape(-1, 1), present.reshape(-1, 1), cells, eps)  # [N*K, 1]
    return flat.reshape(n, k)


@TURN_CREDIT.method("turn_segmented", params=TurnSegmentedParams)
def turn_segmented(token_advantages: Tensor, inputs: TurnCreditInputs, params: TurnSegmentedParams) -> Tensor:
    """CrEST's turn-segmented verified advantages: each scored turn's tokens get the advantage of that turn's own
    score within the group, mixed with the episode's outcome advantage.

    A turn's advantage is its score normalised among the group's turns (``normalize``: at the same turn index, or
    all of them; each turn counts once, whatever its length); its tokens get token_advantage * (1 - ``mix``) +
    ``mix`` * turn advantage; tokens of turns without a score keep the outcome advantage. Differs from CrEST
    (hierarchical credit assignment with a privileged self-teacher): its entropy-gated self-teacher modulation
    of the tokens within a turn is not implemented (a teacher-guided token credit is a separate choice), and the
    mix with the outcome advantage is ours.
    """
    import torch

    scores, starts, ends = turn_table(inputs)
    if scores.shape[1] == 0:
        return token_advantages * inputs.mask
    advantage = turn_advantages(scores, inputs.group_ids, params.normalize, params.eps)  # [N, K]
    turns = token_turns(starts, ends, inputs.mask.shape[1])  # [N, T]
    own = per_token(advantage, turns).to(token_advantages.dtype)  # [N, T]
    scored = per_token((~torch.isnan(scores)).to(scores.dtype), turns) == 1  # [N, T]
    mixed = (1 - params.mix) * token_advantages + params.mix * torch.nan_to_num(own)
    return torch.where(scored, mixed, token_advantages) * inputs.mask


# --- config checks -----------------------------------------------------------------------------------------------


def _needs_turn_scores(config: Any, params: Any, name: str) -> None:
    """Refuse a turn-score method when the environment section says its environment scores no turn.

    ``config.environment.turn_rewards`` (read with getattr: absent or None means unknown, and nothing is refused)
    is for the environment section to answer from the chosen environment, e.g. False for a tool task whose only
    reward is the final answer's.
    """
    environment = getattr(config, "environment", None)
    if getattr(environment, "turn_rewards", None) is False:
        chosen = getattr(environment, "name", "the chosen environment")
        raise ValueError(
            f"environment.turn_credit {name!r} turns per-turn rewards into credit, but environment {chosen!r} gives "
            "no reward per turn (only the episode's): use turn_credit 'outcome', or an environment that scores "
            "each turn (self_correction)"
        )


for _name in ("tcpo", "turn_segmented"):

    @TURN_CREDIT.check(_name)
    def _check_turn_scores(config: Any, params: Any, _name: str = _name) -> None:
        _needs_turn_scores(config, params, _name)

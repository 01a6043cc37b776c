"""Rewards without labels and reward shaping, applied to a step's ScoreBatch right after the verifiers.

Axis ``shaping.reward_shaping`` (a list, applied in order), hook point ``reward_shaping``; hook signature
``(scores: ShapingState, params) -> None`` (it edits the state in place):
- label-free group rewards: ``majority_vote`` (test-time RL, TTRL-style; shared/METHODS.md RWD-S) and
  ``soft_consensus`` (the soft consensus share of OM-GRPO, shared/seeds 001:L73);
- ``overlong_penalty``: DAPO's soft overlong punishment (Yu et al. 2025); ``length_penalty``: a plain linear one.

Shaped terms appear as extra reward keys (``majority_vote``, ``overlong_penalty``, ``length_penalty``) in
the ScoreBatch, so the dashboard shows them in each rollout's reward breakdown and as
``reward/<key>_mean``; ``correct`` stays the primary verifier's (rollout/accuracy keeps measuring real
accuracy when reference answers exist).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from trainer.bounds import BoundedModel
from trainer.errors import VerifierError
from trainer.methods.axes import Axis, hooks_at
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.verifiers.extract import Extractor
from trainer.verifiers.numeric import parse_number
from trainer.verifiers.scoring import ScoreBatch

if TYPE_CHECKING:
    from trainer.methods.views import RunConfig

AnswerKey = str | None
LabelFreeRewardFn = Callable[[Sequence[AnswerKey]], list[float]]
LABEL_FREE_REWARDS: Registry[LabelFreeRewardFn] = Registry("label-free reward")
REWARD_SHAPING: Axis[Any] = Axis(
    "reward shaping",
    "shaping.reward_shaping",
    "reward_shaping",
    default=None,
    many=True,
    description="Rewards without labels and shaping terms, applied in order after the verifiers.",
)
AnswerExtractMode = Literal[
    "full", "first_line", "boxed", "last_number", "regex", "answer_tag"
]  # = verifiers.extract


class AnswerReading(BoundedModel):
    """How an answer is read from a completion (the verifiers' extraction modes)."""

    answer_extract: AnswerExtractMode = Field(
        "last_number",
        description="How the answer is read from a completion: full, first_line, boxed, last_number, regex, answer_tag.",
    )
    answer_pattern: str | None = Field(
        None, description="Regular expression for answer_extract='regex' (last match; group 'answer' or 1)."
    )
    answer_tag: str = Field("answer", max_length=100, description="Tag name for answer_extract='answer_tag'.")

    @model_validator(mode="after")
    def _extractor_builds(self) -> AnswerReading:
        try:
            self.extractor()
        except VerifierError as err:
            raise ValueError(f"answer_extract: {err}") from None
        return self

    def extractor(self) -> Extractor:
        return Extractor(self.answer_extract, self.answer_pattern, self.answer_tag)


class LabelFreeParams(AnswerReading):
    combine: Literal["replace", "add"] = Field(
        "replace",
        description="'replace': the label-free reward replaces the verifiers' total (as TTRL; the verifiers still run, "
        "so rollout/accuracy keeps measuring real accuracy when answers exist). 'add': it is added.",
    )
    weight: float = Field(1.0, gt=0, le=1000, description="Weight of the label-free reward.")


def answer_key(value: str | None) -> AnswerKey:
    """The form two answers must share to count as the same vote: a number's exact value (``0.5``,
    ``1/2`` and ``\\frac{1}{2}`` agree; ``50%`` stays a percentage), else the text without whitespace."""
    if value is None:
        return None
    parsed = parse_number(value)
    if parsed is not None:
        number, percent = parsed
        return f"{number}%" if percent else str(number)
    key = "".join(value.split())
    return key or None


def majority_answer(keys: Sequence[AnswerKey]) -> tuple[AnswerKey, int]:
    """The most frequent non-None key and its count; ties go to the key that appears first in the group.
    ``(None, 0)`` when no completion has an answer."""
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return None, 0
    best = max(counts.values())
    winner = next(k for k in keys if k is not None and counts[k] == best)  # first occurrence among the tied
    return winner, best


@LABEL_FREE_REWARDS.register("majority_vote")
def majority_vote(keys: Sequence[AnswerKey]) -> list[float]:
    """Majority-vote pseudo-label reward (test-time RL, TTRL, Zuo et al. 2025; shared/METHODS.md RWD-S rows,
    004:L291): 1.0 for completions whose answer equals the group's most frequent answer, else 0.0.

    Differs from TTRL: TTRL votes over a larger sample and trains on a subsample; here the vote is over the
    group itself (no extra rollouts). Ties go to the answer seen first; completions without an extractable
    answer neither vote nor get reward.
    """
    winner, _ = majority_answer(keys)
    return [1.0 if winner is not None and k == winner else 0.0 for k in keys]


@LABEL_FREE_REWARDS.register("soft_consensus")
def soft_consensus(keys: Sequence[AnswerKey]) -> list[float]:
    """Soft consensus (OM-GRPO, shared/seeds 001:L73): the share of the group that gave the same answer.

    Differs from OM-GRPO: no Contrast-Augmented Reward refinement (pairwise comparisons) and no answer-span
    masking here (that is a token-credit option). Completions without an answer get 0.
    """
    counts = Counter(k for k in keys if k is not None)
    return [counts[k] / len(keys) if k is not None else 0.0 for k in keys]


def overlong_penalty(length: int, max_length: int, buffer: int, factor: float) -> float:
    """DAPO soft overlong punishment (Yu et al. 2025), as verl computes it: 0 up to max_length - buffer
    tokens, then -factor * (length - (max_length - buffer)) / buffer, i.e. -factor at max_length."""
    if buffer <= 0:
        return 0.0
    exceed = length - (max_length - buffer)
    return min(-exceed / buffer * factor, 0.0)


@dataclass
class ShapedScores:
    scores: ScoreBatch  # total shaped; shaped terms added as extra reward keys
    pseudo_correct: list[bool]  # what rarity redistribution treats as correct (see shape_scores)
    metrics: dict[str, float]


def _group_positions(group_ids: Sequence[int]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(int(g), []).append(i)
    return groups


@dataclass
class LabelFreeResult:
    rewards: list[float]  # [N] unweighted label-free reward
    keys: list[AnswerKey]  # [N] the normalised answer each completion voted for (None: no answer)
    agrees: list[bool]  # [N] the completion's answer is its group's majority answer
    metrics: dict[str, float]


def label_free_rewards(
    texts: Sequence[str], group_ids: Sequence[int], name: str, reading: AnswerReading
) -> LabelFreeResult:
    """Per-completion label-free rewards (``name`` in LABEL_FREE_REWARDS), the answer keys they were computed
    from, and label_free/* metrics."""
    extract = reading.extractor()
    keys = [answer_key(extract(t).value) for t in texts]
    reward_fn = LABEL_FREE_REWARDS.get(name)
    rewards = [0.0] * len(texts)
    agrees = [False] * len(texts)
    agreement = []
    for positions in _group_positions(group_ids).values():
        group_keys = [keys[i] for i in positions]
        for i, r in zip(positions, reward_fn(group_keys), strict=True):
            rewards[i] = r
        winner, count = majority_answer(group_keys)
        for i in positions:
            agrees[i] = winner is not None and keys[i] == winner
        agreement.append(count / len(positions))
    metrics = {
        "label_free/majority_agreement": sum(agreement) / max(len(agreement), 1),
        "label_free/answered_frac": sum(k is not None for k in keys) / max(len(keys), 1),
    }
    return LabelFreeResult(rewards, keys, agrees, metrics)


def _majority_correct(keys: Sequence[AnswerKey], correct: Sequence[bool], group_ids: Sequence[int]) -> float:
    """Fraction of groups whose majority answer the primary verifier marks correct (pseudo-label accuracy)."""
    hits = []
    for positions in _group_positions(group_ids).values():
        winner, _ = majority_answer([keys[i] for i in positions])
        hits.append(winner is not None and any(correct[i] for i in positions if keys[i] == winner))
    return sum(hits) / max(len(hits), 1)


@dataclass
class ShapingState:
    """A scored step as the reward-shaping hooks see and edit it (all lists are per completion, [N])."""

    total: list[float]
    per_verifier: dict[str, list[float]]
    details: list[dict[str, dict[str, Any]]]
    pseudo_correct: list[bool]  # what rarity redistribution treats as correct
    correct: Sequence[bool]  # the primary verifier's verdicts (unchanged)
    texts: Sequence[str]
    lengths: Sequence[int]
    group_ids: Sequence[int]
    samples: Sequence[Sample]
    max_completion_length: int
    metrics: dict[str, float]

    def add(self, key: str, terms: list[float]) -> None:
        """Add ``terms`` to the total and record them as reward key ``key``."""
        self.total = [t + p for t, p in zip(self.total, terms, strict=True)]
        self.per_verifier[key] = terms


def _label_free(state: ShapingState, params: LabelFreeParams, name: str) -> None:
    vote = label_free_rewards(state.texts, state.group_ids, name, params)
    votes, keys = vote.rewards, vote.keys
    state.metrics.update(vote.metrics)
    weighted = [params.weight * v for v in votes]
    if params.combine == "replace":
        state.total = weighted
        state.pseudo_correct = vote.agrees
    else:
        state.total = [t + w for t, w in zip(state.total, weighted, strict=True)]
    state.per_verifier[name] = votes
    for i, key in enumerate(keys):
        state.details[i][name] = {"answer_key": key, "reward": votes[i]}
    if any(s.answer is not None for s in state.samples):  # pseudo-label accuracy needs references
        state.metrics["label_free/majority_correct"] = _majority_correct(keys, state.correct, state.group_ids)


@REWARD_SHAPING.method("majority_vote", params=LabelFreeParams)
def majority_vote_reward(state: ShapingState, params: LabelFreeParams) -> None:
    """Majority-vote pseudo-label reward (test-time RL, TTRL): 1 when a completion's answer is its group's most
    frequent one. Needs no reference answer."""
    _label_free(state, params, "majority_vote")


@REWARD_SHAPING.method("soft_consensus", params=LabelFreeParams)
def soft_consensus_reward(state: ShapingState, params: LabelFreeParams) -> None:
    """Soft consensus (OM-GRPO): the share of the group giving the same answer. Needs no reference answer."""
    _label_free(state, params, "soft_consensus")


for _name in ("majority_vote", "soft_consensus"):

    @REWARD_SHAPING.check(_name)
    def _decided_on_final_rewards(config: Any, params: Any, _name: str = _name) -> None:
        b = config.budget
        if b.dynamic_sampling or b.allocator.name != "fixed":
            what = "dynamic_sampling" if b.dynamic_sampling else f"allocator {b.allocator.name!r}"
            raise ValueError(
                f"shaping.reward_shaping {_name!r} is applied to whole groups after collection, but budget.{what} "
                "decides on the verifiers' rewards while generating: turn dynamic_sampling off and use allocator "
                "'fixed' with a label-free reward"
            )


class OverlongParams(BoundedModel):
    buffer: int = Field(
        4096,
        ge=1,
        le=131_072,
        description="Completions longer than max_completion_length - buffer tokens lose reward linearly, reaching "
        "-factor at max_completion_length (as verl's overlong_buffer). DAPO uses 4096 of 20480.",
    )
    factor: float = Field(1.0, gt=0, le=1000, description="The penalty at max_completion_length.")


@REWARD_SHAPING.method("overlong_penalty", params=OverlongParams)
def overlong_penalty_term(state: ShapingState, params: OverlongParams) -> None:
    """DAPO soft overlong punishment (Yu et al. 2025): a linear penalty over the last stretch before the length limit."""
    max_len = state.max_completion_length
    penalties = [overlong_penalty(int(n), max_len, params.buffer, params.factor) for n in state.lengths]
    state.add("overlong_penalty", penalties)
    state.metrics["shaping/overlong_penalty_mean"] = sum(penalties) / max(len(penalties), 1)
    state.metrics["shaping/overlong_penalized_frac"] = sum(p < 0 for p in penalties) / max(len(penalties), 1)


@REWARD_SHAPING.check("overlong_penalty")
def _buffer_below_limit(config: Any, params: OverlongParams) -> None:
    max_len = config.rollout.max_completion_length
    if params.buffer >= max_len:
        raise ValueError(
            f"shaping.reward_shaping 'overlong_penalty': buffer ({params.buffer}) must be below "
            f"rollout.max_completion_length ({max_len}): it is the last stretch of tokens before the limit "
            "(DAPO: 4096 of 20480)"
        )


class LengthPenaltyParams(BoundedModel):
    coef: float = Field(
        0.1, gt=0, le=1000, description="reward -= coef x completion tokens / max_completion_length."
    )


@REWARD_SHAPING.method("length_penalty", params=LengthPenaltyParams)
def length_penalty_term(state: ShapingState, params: LengthPenaltyParams) -> None:
    """Plain linear length penalty (the one DLER and 'think fast and right' refine): -coef x tokens / limit."""
    penalties = [-params.coef * int(n) / state.max_completion_length for n in state.lengths]
    state.add("length_penalty", penalties)
    state.metrics["shaping/length_penalty_mean"] = sum(penalties) / max(len(penalties), 1)


def shape_scores(
    scores: ScoreBatch,
    texts: Sequence[str],
    lengths: Sequence[int],
    group_ids: Sequence[int],
    samples: Sequence[Sample],
    cfg: RunConfig,
    step: int | None = None,
) -> ShapedScores:
    """Apply ``cfg.shaping.reward_shaping`` to a scored step, in order. All sequences are per completion ([N]);
    ``samples`` are the completions' prompts (one per completion). ``pseudo_correct`` is the verifier's
    ``correct`` unless a label-free reward *replaces* the reward, where the pseudo-label agreement plays the
    verified-correct role (for rarity redistribution). ``step``: the training step whose methods' schedules are
    asked (None outside a step: every method acts).
    """
    state = ShapingState(
        total=list(scores.total),
        per_verifier=dict(scores.per_verifier),
        details=[dict(d) for d in scores.details],
        pseudo_correct=list(scores.correct),
        correct=scores.correct,
        texts=texts,
        lengths=lengths,
        group_ids=group_ids,
        samples=samples,
        max_completion_length=cfg.rollout.max_completion_length,
        metrics={},
    )
    for hook, params in hooks_at("reward_shaping", [c.active() for c in cfg.shaping.reward_shaping], step):
        hook(state, params)
    shaped = replace(scores, total=state.total, per_verifier=state.per_verifier, details=state.details)
    return ShapedScores(scores=shaped, pseudo_correct=state.pseudo_correct, metrics=state.metrics)

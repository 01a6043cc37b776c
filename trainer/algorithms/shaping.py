"""Rewards without labels and reward shaping, applied to a step's ScoreBatch right after the verifiers.

- Label-free group rewards (registry ``LABEL_FREE_REWARDS``; signature ``(answer keys of one group) ->
  rewards``): ``majority_vote`` (test-time RL, TTRL-style; shared/METHODS.md RWD-S) and ``soft_consensus``
  (the soft consensus share of OM-GRPO, shared/seeds 001:L73).
- DAPO soft overlong punishment (Yu et al. 2025) and a plain linear length penalty.

Shaped terms appear as extra reward keys (``majority_vote``, ``overlong_penalty``, ``length_penalty``) in
the ScoreBatch, so the dashboard shows them in each rollout's reward breakdown and as
``reward/<key>_mean``; ``correct`` stays the primary verifier's (rollout/accuracy keeps measuring real
accuracy when reference answers exist).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trainer.config import ExperimentConfig, ShapingConfig
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.verifiers.extract import Extractor
from trainer.verifiers.numeric import parse_number
from trainer.verifiers.scoring import ScoreBatch

AnswerKey = str | None
LabelFreeRewardFn = Callable[[Sequence[AnswerKey]], list[float]]
LABEL_FREE_REWARDS: Registry[LabelFreeRewardFn] = Registry("label-free reward")


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


def label_free_rewards(texts: Sequence[str], group_ids: Sequence[int], sh: ShapingConfig) -> LabelFreeResult:
    """Per-completion label-free rewards, the answer keys they were computed from, and label_free/* metrics."""
    extract = Extractor(sh.answer_extract, sh.answer_pattern, sh.answer_tag)
    keys = [answer_key(extract(t).value) for t in texts]
    reward_fn = LABEL_FREE_REWARDS.get(sh.label_free_reward)
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


def shape_scores(
    scores: ScoreBatch,
    texts: Sequence[str],
    lengths: Sequence[int],
    group_ids: Sequence[int],
    samples: Sequence[Sample],
    cfg: ExperimentConfig,
) -> ShapedScores:
    """Apply ``cfg.shaping`` to a scored step: label-free reward (replace or add), overlong and length penalties.

    All sequences are per completion ([N]); ``samples`` are the completions' prompts (one per completion).

    ``pseudo_correct`` is the verifier's ``correct`` unless the majority vote *replaces* the reward, where
    the pseudo-label agreement plays the verified-correct role (for rarity redistribution).
    """
    sh, max_len = cfg.shaping, cfg.rollout.max_completion_length
    total = list(scores.total)
    per_verifier = dict(scores.per_verifier)
    details: list[dict[str, dict[str, Any]]] = [dict(d) for d in scores.details]
    pseudo_correct = list(scores.correct)
    metrics: dict[str, float] = {}
    if sh.label_free_reward != "none":
        vote = label_free_rewards(texts, group_ids, sh)
        votes, keys, metrics = vote.rewards, vote.keys, dict(vote.metrics)
        weighted = [sh.majority_vote_weight * v for v in votes]
        if sh.majority_vote_combine == "replace":
            total = weighted
            pseudo_correct = vote.agrees
        else:
            total = [t + w for t, w in zip(total, weighted, strict=True)]
        per_verifier[sh.label_free_reward] = votes
        for i, key in enumerate(keys):
            details[i][sh.label_free_reward] = {"answer_key": key, "reward": votes[i]}
        if any(s.answer is not None for s in samples):  # pseudo-label accuracy needs references
            metrics["label_free/majority_correct"] = _majority_correct(keys, scores.correct, group_ids)
    if sh.overlong_buffer > 0:
        penalties = [overlong_penalty(int(n), max_len, sh.overlong_buffer, sh.overlong_penalty_factor) for n in lengths]
        total = [t + p for t, p in zip(total, penalties, strict=True)]
        per_verifier["overlong_penalty"] = penalties
        metrics["shaping/overlong_penalty_mean"] = sum(penalties) / max(len(penalties), 1)
        metrics["shaping/overlong_penalized_frac"] = sum(p < 0 for p in penalties) / max(len(penalties), 1)
    if sh.length_penalty > 0:
        penalties = [-sh.length_penalty * int(n) / max_len for n in lengths]
        total = [t + p for t, p in zip(total, penalties, strict=True)]
        per_verifier["length_penalty"] = penalties
        metrics["shaping/length_penalty_mean"] = sum(penalties) / max(len(penalties), 1)
    shaped = replace(scores, total=total, per_verifier=per_verifier, details=details)
    return ShapedScores(scores=shaped, pseudo_correct=pseudo_correct, metrics=metrics)

"""Cue-GRPO rarity-aware credit redistribution (shared/seeds 001:L71).

Within each group, the *positive set* is the correct completions with a positive advantage. They are
clustered by a deterministic "strategy cue" (the ``cue`` parameter), and the group's positive advantage
mass M = sum of their advantages is redistributed inversely to cluster size n_c:

    A_i' = M * (A_i / n_c(i)) / sum_j (A_j / n_c(j))      (j over the positive set)

With equal positive advantages (binary rewards) each of the K clusters gets M / K, split evenly among its
members (M / (K n_c) each), as the paper describes; with unequal ones the order inside a cluster is kept.
The total positive mass of every group is unchanged; completions outside the positive set keep their
advantage. ``strength`` blends: A' = (1 - s) A + s A_redistributed.

Cues (ours; the paper's Strategy Cues are competition-math specific and its code was not consulted):
``answer_form`` the extracted answer's surface form, whitespace removed and lower-cased (so ``1/2``,
``0.5`` and ``\\frac{1}{2}`` are three forms of one correct answer); ``completion`` the whole completion
with whitespace collapsed (identical traces cluster); ``regex`` the sorted set of distinct, lower-cased
matches of a user pattern (e.g. strategy keywords). A completion with no cue value forms the cluster "".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from trainer.methods.axes import Axis
from trainer.methods.shaping import AnswerReading
from trainer.user_regex import PatternError, check_user_pattern, compile_user_pattern

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

ADVANTAGE_SHAPING: Axis[Any] = Axis(
    "advantage shaping",
    "shaping.advantage_shaping",
    "advantage_shaping",
    default=None,
    many=True,
    description="Advantages reshaped across a group after the estimator (rarity-aware redistribution).",
)


class RarityParams(AnswerReading):
    cue: Literal["answer_form", "completion", "regex"] = Field(
        "answer_form",
        description="The 'strategy cue' that clusters correct completions: 'answer_form' the extracted answer's "
        "surface form (whitespace removed, lower-cased: '1/2' and '0.5' differ); 'completion' the whole "
        "completion (whitespace collapsed); 'regex' the set of distinct matches of cue_pattern "
        "(e.g. '(?i)induction|modulo|substitut').",
    )
    cue_pattern: str | None = Field(None, description="Regular expression for cue='regex'.")
    strength: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Blend between the plain advantages (0) and the rarity-redistributed ones (1).",
    )

    @model_validator(mode="after")
    def _pattern_with_regex_cue(self) -> RarityParams:
        if self.cue == "regex":
            if not self.cue_pattern:
                raise ValueError("cue is 'regex' but cue_pattern is empty: give a pattern")
            try:
                check_user_pattern(self.cue_pattern, what="cue_pattern")
            except PatternError as err:
                raise ValueError(str(err)) from None
        elif self.cue_pattern is not None:
            raise ValueError("cue_pattern is only used with cue 'regex': remove it or set the cue")
        return self


def strategy_cues(texts: Sequence[str], params: RarityParams) -> list[str]:
    """One deterministic cue string per completion (see the module docstring)."""
    if params.cue == "answer_form":
        extract = params.extractor()
        values = [extract(t).value for t in texts]
        return ["".join(v.split()).lower() if v is not None else "" for v in values]
    if params.cue == "completion":
        return [" ".join(t.split()) for t in texts]
    assert params.cue_pattern is not None  # RarityParams' validator guarantees it
    pattern = compile_user_pattern(params.cue_pattern, what="rarity cue_pattern")  # RE2: linear time
    return ["|".join(sorted({m.group(0).lower() for m in pattern.finditer(t)})) for t in texts]


def redistribute_by_rarity(
    advantages: Tensor,
    cues: Sequence[str],
    correct: Sequence[bool],
    group_ids: Sequence[int],
    strength: float = 1.0,
) -> tuple[Tensor, dict[str, float]]:
    """Advantages [N] with each group's positive mass re-split by cluster rarity, and rarity/* metrics."""
    new = advantages.clone()
    values = advantages.tolist()
    groups: dict[int, list[int]] = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(int(g), []).append(i)
    clusters_per_group, moved, positive_mass = [], 0.0, 0.0
    for positions in groups.values():
        positive = [i for i in positions if correct[i] and values[i] > 0]
        if not positive:
            continue
        mass = sum(values[i] for i in positive)
        sizes = Counter(cues[i] for i in positive)
        clusters_per_group.append(len(sizes))
        positive_mass += mass
        norm = sum(values[j] / sizes[cues[j]] for j in positive)
        for i in positive:
            target = mass * (values[i] / sizes[cues[i]]) / norm
            blended = (1.0 - strength) * values[i] + strength * target
            moved += abs(blended - values[i])
            new[i] = blended
    metrics = {
        "rarity/clusters_mean": sum(clusters_per_group) / len(clusters_per_group)
        if clusters_per_group
        else 0.0,
        "rarity/groups_redistributed": float(sum(k > 1 for k in clusters_per_group)),
        # Half the absolute change is the mass that moved between clusters.
        "rarity/moved_mass_frac": moved / 2 / positive_mass if positive_mass > 0 else 0.0,
    }
    return new, metrics


@ADVANTAGE_SHAPING.method("rarity", params=RarityParams)
def rarity_advantages(
    advantages: Tensor, texts: Sequence[str], correct: Sequence[bool], group_ids: Tensor, params: RarityParams
) -> tuple[Tensor, dict[str, float]]:
    """Cue-GRPO rarity-aware credit redistribution: a group's positive advantage mass is split equally over the
    clusters of its correct completions, so rare solution forms get more credit.

    Hook signature (hook point ``advantage_shaping``): ``(advantages [N], texts, correct [N], group_ids [N], params)
    -> (advantages [N], metrics)``.
    """
    cues = strategy_cues(texts, params)
    return redistribute_by_rarity(advantages, cues, correct, group_ids.tolist(), params.strength)

"""Cue-GRPO rarity-aware credit redistribution (shared/seeds 001:L71).

Within each group, the *positive set* is the correct completions with a positive advantage. They are
clustered by a deterministic "strategy cue" (``shaping.rarity_cue``), and the group's positive advantage
mass M = sum of their advantages is redistributed inversely to cluster size n_c:

    A_i' = M * (A_i / n_c(i)) / sum_j (A_j / n_c(j))      (j over the positive set)

With equal positive advantages (binary rewards) each of the K clusters gets M / K, split evenly among its
members (M / (K n_c) each), as the paper describes; with unequal ones the order inside a cluster is kept.
The total positive mass of every group is unchanged; completions outside the positive set keep their
advantage. ``rarity_strength`` blends: A' = (1 - s) A + s A_redistributed.

Cues (ours; the paper's Strategy Cues are competition-math specific and its code was not consulted):
``answer_form`` the extracted answer's surface form, whitespace removed and lower-cased (so ``1/2``,
``0.5`` and ``\\frac{1}{2}`` are three forms of one correct answer); ``completion`` the whole completion
with whitespace collapsed (identical traces cluster); ``regex`` the sorted set of distinct, lower-cased
matches of a user pattern (e.g. strategy keywords). A completion with no cue value forms the cluster "".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from trainer.config import ShapingConfig
from trainer.user_regex import compile_user_pattern
from trainer.verifiers.extract import Extractor

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


def strategy_cues(texts: Sequence[str], sh: ShapingConfig) -> list[str]:
    """One deterministic cue string per completion (see the module docstring)."""
    if sh.rarity_cue == "answer_form":
        extract = Extractor(sh.answer_extract, sh.answer_pattern, sh.answer_tag)
        values = [extract(t).value for t in texts]
        return ["".join(v.split()).lower() if v is not None else "" for v in values]
    if sh.rarity_cue == "completion":
        return [" ".join(t.split()) for t in texts]
    assert sh.rarity_cue_pattern is not None  # ShapingConfig's validator guarantees it
    pattern = compile_user_pattern(sh.rarity_cue_pattern, what="shaping.rarity_cue_pattern")  # RE2: linear time
    return ["|".join(sorted({m.group(0).lower() for m in pattern.finditer(t)})) for t in texts]


def redistribute_by_rarity(
    advantages: Tensor, cues: Sequence[str], correct: Sequence[bool], group_ids: Sequence[int], strength: float = 1.0
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
        "rarity/clusters_mean": sum(clusters_per_group) / len(clusters_per_group) if clusters_per_group else 0.0,
        "rarity/groups_redistributed": float(sum(k > 1 for k in clusters_per_group)),
        # Half the absolute change is the mass that moved between clusters.
        "rarity/moved_mass_frac": moved / 2 / positive_mass if positive_mass > 0 else 0.0,
    }
    return new, metrics


def rarity_advantages(
    advantages: Tensor, texts: Sequence[str], correct: Sequence[bool], group_ids: Tensor, sh: ShapingConfig
) -> tuple[Tensor, dict[str, float]]:
    """``redistribute_by_rarity`` when ``shaping.rarity_redistribution`` is on; else the advantages unchanged."""
    if not sh.rarity_redistribution:
        return advantages, {}
    cues = strategy_cues(texts, sh)
    return redistribute_by_rarity(advantages, cues, correct, group_ids.tolist(), sh.rarity_strength)

"""The ``reward_watch`` section: which learned reward a run watches for hacking, against which verifier.

A run trained on a learned or judged reward (a ``reward_model`` or ``judge`` reward source) can list a
programmatic verifier of the task with weight 0 in ``algorithm.reward_weights``: it is computed on the same
rollouts and reported as ``reward/<key>_mean`` but not trained on (a *monitor*). The watch compares the two over a
sliding window (trainer/rewards/hacking.py) and flags the step where the learned reward keeps rising while the
monitor's accuracy falls, the signature of reward over-optimisation (Gao et al., "Scaling Laws for Reward Model
Overoptimization"). Torch-free: the web app resolves the same keys for the run page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from trainer.bounds import BoundedModel

# Reward sources whose score is a model's opinion rather than a programmatic check (trainer/verifiers/reward_model.py,
# trainer/verifiers/judge_endpoint.py): the ones a watch picks as "learned" when the config leaves it to the watch.
LEARNED_SOURCES = frozenset({"reward_model", "judge"})
MAX_WINDOW = 10_000


class RewardWatchConfig(BoundedModel):
    """Watching for reward hacking: the learned reward against a weight-0 monitor verifier on the same rollouts."""

    enabled: bool | None = Field(
        None,
        description="null: watch when both keys below resolve (a learned source with a non-zero weight and a "
        "programmatic verifier with weight 0); true: require them (an error says what is missing); false: no watch.",
    )
    learned: str | None = Field(
        None,
        max_length=100,
        description="The reward key (a verifier's label, else its name) of the learned reward to watch; null: the "
        "first 'reward_model' or 'judge' source with a non-zero weight in algorithm.reward_weights.",
    )
    verifier: str | None = Field(
        None,
        max_length=100,
        description="The key of the monitor verifier whose mean reward is the task's accuracy; null: the first "
        "programmatic verifier (not 'reward_model' or 'judge') with weight 0, computed on the same rollouts but "
        "not trained on.",
    )
    window: int = Field(
        20,
        ge=3,
        le=MAX_WINDOW,
        description="Steps in the sliding window; the watch fires once the last `window` steps show the learned "
        "reward rising and the monitor's accuracy falling (least-squares trend of each over the window).",
    )
    min_rise: float = Field(
        0.05,
        ge=0,
        le=1e6,
        description="The least rise of the learned reward across the window (the fitted trend's change from the "
        "window's first step to its last) that counts as rising, in the learned reward's own units (a raw "
        "Bradley-Terry score has no fixed scale: use the reward model's normalize 'sigmoid' for a 0-1 one).",
    )
    min_fall: float = Field(
        0.03,
        ge=0,
        le=1e6,
        description="The least fall of the monitor verifier's accuracy across the window (fitted trend) that counts "
        "as falling. Over-optimisation of a proxy reward shows as exactly this divergence (Gao et al., 'Scaling "
        "Laws for Reward Model Overoptimization').",
    )


@dataclass(frozen=True)
class WatchedKeys:
    """The two reward keys a watch compares; their metrics are ``reward/<key>_mean``."""

    learned: str
    verifier: str

    @property
    def learned_metric(self) -> str:
        return f"reward/{self.learned}_mean"

    @property
    def verifier_metric(self) -> str:
        return f"reward/{self.verifier}_mean"


def resolve_watch(
    watch: RewardWatchConfig, sources: Sequence[tuple[str, str]], weights: Sequence[float]
) -> WatchedKeys | None:
    """The keys ``watch`` compares, or None when there is no watch. ``sources`` are the config's verifiers as
    ``(registry name, key)`` in order and ``weights`` their reward weights. Raises ValueError, saying how to fix it,
    for a named key that is not a verifier's, a learned key that is the monitor, or ``enabled: true`` without both."""
    if watch.enabled is False or len(weights) != len(sources):  # a weight count mismatch is refused elsewhere
        return None
    keys = [key for _, key in sources]
    for field, named in (("learned", watch.learned), ("verifier", watch.verifier)):
        if named is not None and named not in keys:
            raise ValueError(
                f"reward_watch.{field} {named!r} is not a verifier's key ({', '.join(keys)}): name one of them, or "
                "leave it null to let the watch choose"
            )
    learned = watch.learned or next(
        (key for (name, key), w in zip(sources, weights, strict=True) if name in LEARNED_SOURCES and w != 0),
        None,
    )
    verifier = watch.verifier or next(
        (
            key
            for (name, key), w in zip(sources, weights, strict=True)
            if name not in LEARNED_SOURCES and w == 0 and key != learned
        ),
        None,
    )
    if learned is not None and learned == verifier:
        raise ValueError(
            f"reward_watch.learned and reward_watch.verifier are both {learned!r}: the watch compares a learned "
            "reward with a different, programmatic verifier"
        )
    if learned is None or verifier is None:
        if watch.enabled:
            missing = (
                "a learned reward source ('reward_model' or 'judge') with a non-zero weight, or reward_watch.learned"
                if learned is None
                else "a monitor verifier: a programmatic verifier of the task listed in verifiers with weight 0 in "
                "algorithm.reward_weights, or reward_watch.verifier"
            )
            raise ValueError(f"reward_watch.enabled is true but the config has no {missing}")
        return None
    return WatchedKeys(learned=learned, verifier=verifier)

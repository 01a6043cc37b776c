"""The task's score of a model turn: the run's verifiers, combined as the single-turn step combines them."""

from __future__ import annotations

from collections.abc import Sequence

from trainer.environments.base import AnswerScorer
from trainer.samples import Sample
from trainer.verifiers.base import Verifier, VerifierResult, absent_result
from trainer.verifiers.scoring import score_batch


def verifier_scorer(verifiers: Sequence[tuple[str, Verifier]], weights: Sequence[float]) -> AnswerScorer:
    """``(text, sample) -> VerifierResult``: the weighted total of ``verifiers`` (``build_verifiers``' output),
    ``correct`` from the first, the detail of each under its key; absent when a weighted source had no score."""
    if len(weights) != len(verifiers):
        raise ValueError(
            f"{len(weights)} weights for {len(verifiers)} verifiers: give one weight per verifier"
        )
    weight_of = {key: w for (key, _), w in zip(verifiers, weights, strict=True)}

    def score(text: str, sample: Sample) -> VerifierResult:
        batch = score_batch(verifiers, weights, [text], [sample])
        if batch.absent_rows(weight_of)[0]:
            missing = [k for k, flags in batch.absent.items() if flags[0] and weight_of.get(k, 0.0) != 0.0]
            return absent_result(f"no score from {', '.join(missing)}", verifiers=batch.details[0])
        return VerifierResult(reward=batch.total[0], correct=batch.correct[0], detail=batch.details[0])

    return score

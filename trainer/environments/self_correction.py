"""``self_correction``: no tools; each answer is scored, a wrong one is sent back for another try.

The verifier-guided multi-turn refinement setting of TCPO (a verifier score after every turn) and of Kumar et al.
2024, "Training Language Models to Self-Correct via Reinforcement Learning" (SCoRe): after every model turn the task's verifiers score it; a correct answer ends
the episode, a wrong one gets a short fixed reply ("That answer is not right; check your steps and answer again.")
and another turn, up to the episode's budget. Each turn's reward is its own score; the episode's reward is the last
turn's. Unlike SCoRe the reply never says what was wrong, and no turn is weighted over another here (turn-level
credit is the trainer's business).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from trainer.environments.base import (
    ENVIRONMENTS,
    AnswerScorer,
    EnvironmentParams,
    EnvState,
    ModelTurn,
    Observation,
)
from trainer.environments.tools import Tool
from trainer.samples import Sample
from trainer.verifiers.base import VerifierResult, error_result

RETRY_MESSAGE = "That answer is not right; check your steps and answer again."


class SelfCorrectionParams(EnvironmentParams):
    retry_message: str = Field(
        RETRY_MESSAGE, min_length=1, max_length=500, description="The reply to a wrong answer."
    )


@ENVIRONMENTS.register("self_correction")
class SelfCorrectionEnvironment:
    """Answer, be told when the answer is wrong, answer again: a reward per turn (its verifier score); the episode's
    reward is the last turn's."""

    name: ClassVar[str] = "self_correction"
    turn_rewards: ClassVar[bool] = True
    Params: ClassVar[type[EnvironmentParams]] = SelfCorrectionParams

    def __init__(self, params: SelfCorrectionParams, scorer: AnswerScorer) -> None:
        self.params = params
        self.scorer = scorer
        self.sample: Sample | None = None
        self.episode_id = ""
        self.scores: list[VerifierResult] = []

    def tools(self) -> Sequence[Tool]:
        return ()

    def reset(self, sample: Sample) -> Observation:
        self.sample, self.episode_id, self.scores = sample, uuid.uuid4().hex, []
        return Observation()

    def step(self, turn: ModelTurn) -> Observation:
        if self.sample is None or self._done:
            raise RuntimeError("step() before reset() or after the episode ended: call reset(sample) first")
        score = self.scorer(turn.text, self.sample)
        self.scores.append(score)
        info = {"correct": score.correct}
        if score.correct:
            return Observation(reward=score.reward, done=True, info=info)
        return Observation(text=self.params.retry_message, reward=score.reward, info=info)

    @property
    def _done(self) -> bool:
        return bool(self.scores) and self.scores[-1].correct

    def state(self) -> EnvState:
        return EnvState(self.episode_id, len(self.scores), self._done)

    def final_score(self) -> VerifierResult:
        if not self.scores:
            return error_result("the episode ended before the model took a turn")
        return self.scores[-1]

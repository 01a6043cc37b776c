"""The episode logic shared by the tool environments (``calculator``, ``python``).

A turn with tool calls gets their results (the driver runs and renders them) and no reward of its own; the first
turn without a call is the final answer: the episode is done and its reward is the task's score of that turn. An
episode cut by a budget before answering is scored on its last turn.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from trainer.environments.base import AnswerScorer, EnvState, ModelTurn, Observation
from trainer.environments.tools import Tool
from trainer.samples import Sample
from trainer.verifiers.base import VerifierResult, error_result


class ToolTask:
    """One tool-using episode; the registered tool environments are this with their own tools."""

    def __init__(self, tools: Sequence[Tool], scorer: AnswerScorer) -> None:
        self._tools = tuple(tools)
        self.scorer = scorer
        self.sample: Sample | None = None
        self.episode_id = ""
        self.turns = 0
        self.last_text: str | None = None
        self.score: VerifierResult | None = None

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def reset(self, sample: Sample) -> Observation:
        self.sample, self.episode_id = sample, uuid.uuid4().hex
        self.turns, self.last_text, self.score = 0, None, None
        return Observation()

    def step(self, turn: ModelTurn) -> Observation:
        if self.sample is None or self.score is not None:
            raise RuntimeError("step() before reset() or after the episode ended: call reset(sample) first")
        self.turns += 1
        self.last_text = turn.text
        if turn.tool_calls:
            return Observation()
        self.score = self.scorer(turn.text, self.sample)
        return Observation(reward=self.score.reward, done=True, info={"correct": self.score.correct})

    def state(self) -> EnvState:
        return EnvState(self.episode_id, self.turns, self.score is not None)

    def final_score(self) -> VerifierResult:
        if self.score is not None:
            return self.score
        if self.sample is None or self.last_text is None:
            return error_result("the episode ended before the model took a turn")
        return self.scorer(self.last_text, self.sample)

"""What the collect stage calls for a run with an ``environment`` section: episodes in, a rollout batch and its
scores out, the same two things a single-turn generation call and the verifiers give it.

Each episode's reward is its environment's final score (the run's verifiers, combined as the single-turn step
combines them, on the answer the environment took; or an OpenEnv server's rewards), under the reward key
``environment``; tool-use shaping, when any of its terms is set, adds its adjustment under ``tool_shaping``. A
rollout's details carry its episode (``details["episode"]``: turns, spans, tool calls; trainer/environments/records.py)
for the rollout browser and for turn-level credit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

import torch
from transformers import PreTrainedTokenizerBase

from trainer.environments.base import environment_factory
from trainer.environments.driver import Episode, run_episodes
from trainer.environments.limits import EpisodeLimits
from trainer.environments.records import EpisodeRecord, episode_from_json
from trainer.environments.scoring import verifier_scorer
from trainer.environments.turn_format import TURN_FORMATS
from trainer.errors import ConfigError
from trainer.methods.tool_shaping import TOOL_SHAPING_KEY, ToolShapingParams, tool_shaping
from trainer.rollout.base import RolloutBatch, SamplingParams, TokenEngine
from trainer.samples import Sample
from trainer.verifiers.base import Verifier
from trainer.verifiers.scoring import ScoreBatch

ENVIRONMENT_KEY = "environment"  # the reward key of an episode's final score
EPISODE_DETAIL = "episode"  # details[i] key of a rollout's episode record (JSON)


class EnvironmentSettings(Protocol):
    """The ``environment`` config section (trainer/config/environment.py) as the runner reads it."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> Any: ...

    @property
    def limits(self) -> EpisodeLimits: ...

    @property
    def turn_format(self) -> str: ...

    @property
    def tool_shaping(self) -> ToolShapingParams: ...


class EpisodeRunner:
    """Runs one generation call's episodes on a token-in engine and scores them."""

    def __init__(
        self,
        settings: EnvironmentSettings,
        engine: object,
        tokenizer: PreTrainedTokenizerBase,
        verifiers: Sequence[tuple[str, Verifier]],
        weights: Sequence[float],
    ) -> None:
        if not callable(getattr(engine, "generate_from_ids", None)):
            raise ConfigError(
                f"the {type(engine).__name__} engine cannot continue from token ids: multi-turn episodes run on the "
                "'hf' and 'vllm' engines"
            )
        self.engine = cast(TokenEngine, engine)
        self.settings, self.tokenizer = settings, tokenizer
        params = settings.params.model_dump() if hasattr(settings.params, "model_dump") else settings.params
        self.build = environment_factory(settings.name, params, verifier_scorer(verifiers, weights))
        self.turn_format = TURN_FORMATS[settings.turn_format]

    def run(
        self, items: Sequence[tuple[str, Sample]], params: SamplingParams, generator: torch.Generator
    ) -> tuple[RolloutBatch, ScoreBatch]:
        """``items``: (rendered prompt, sample) per episode; row i of both results is episode i."""
        episodes = [Episode(prompt, sample, self.build()) for prompt, sample in items]
        result = run_episodes(
            self.engine, self.tokenizer, episodes, params, generator, self.settings.limits, self.turn_format
        )
        return result.batch, episode_scores(result.episodes, self.settings.tool_shaping)


def episode_scores(episodes: Sequence[EpisodeRecord], shaping: ToolShapingParams) -> ScoreBatch:
    """The episodes' rewards as a ScoreBatch: the environment's final score (absent stays absent, never 0), plus
    the tool-use shaping adjustment when any of its terms is set; each row's details hold its episode."""
    rewards = [e.score.reward for e in episodes]
    absent = [e.score.absent for e in episodes]
    per_verifier = {ENVIRONMENT_KEY: [math.nan if a else r for r, a in zip(rewards, absent, strict=True)]}
    details: list[dict[str, dict[str, Any]]] = [
        {ENVIRONMENT_KEY: dict(e.score.detail), EPISODE_DETAIL: e.to_json()} for e in episodes
    ]
    total = [0.0 if a else r for r, a in zip(rewards, absent, strict=True)]
    if shaping.active:
        shaped = tool_shaping(episodes, shaping)
        per_verifier[TOOL_SHAPING_KEY] = list(shaped.adjustments)
        for i, (adjustment, counts) in enumerate(zip(shaped.adjustments, shaped.counts, strict=True)):
            total[i] += adjustment
            details[i][TOOL_SHAPING_KEY] = dict(counts)
    return ScoreBatch(
        total=total,
        per_verifier=per_verifier,
        correct=[bool(e.score.correct) and not e.score.absent for e in episodes],
        details=details,
        absent={ENVIRONMENT_KEY: absent},
    )


def episodes_of(details: Sequence[Mapping[str, Any]]) -> list[EpisodeRecord] | None:
    """The episode of every row from its details (None when the rows are single-turn completions)."""
    if not details or EPISODE_DETAIL not in details[0]:
        return None
    return [episode_from_json(d[EPISODE_DETAIL]) for d in details]


def environment_metrics(episodes: Sequence[EpisodeRecord], shaping: ToolShapingParams) -> dict[str, float]:
    """env/* metrics of a step's episodes: turns, how they ended, and the tool calls by status (tool_shaping's)."""
    n = len(episodes)
    if not n:
        return {}
    return {
        "env/turns_mean": sum(len(e.turns) for e in episodes) / n,
        "env/done_frac": sum(e.finish_reason == "done" for e in episodes) / n,
        "env/turn_budget_frac": sum(e.finish_reason == "turns" for e in episodes) / n,
        "env/token_budget_frac": sum(e.finish_reason == "length" for e in episodes) / n,
        **tool_shaping(episodes, shaping).metrics,
    }

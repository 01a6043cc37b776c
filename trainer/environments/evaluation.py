"""Held-out greedy accuracy of a model with an environment's tools and without them, on the same problems.

With the tool: each problem is one episode through ``run_episodes`` (the driver a training run uses, so the
tool calls, their replies and the budgets are exactly the run's), decoded greedily (top-k 1, as
``trainer/evaluation`` decodes a ``greedy: true`` benchmark), scored by the environment's final score. Without:
the same model continues the same prompt in one greedy generation with no stop string and nothing answering a
tool call it writes, up to the episode's whole token budget, and the completion is scored as it is by the same
scorer. The difference between the two, problem by problem, is what the tool adds for this model.

``paired_difference`` gives the mean per-problem difference (with minus without) and its standard error, the
comparison a paired benchmark reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from trainer.environments.base import AnswerScorer, Environment
from trainer.environments.driver import Episode, run_episodes
from trainer.environments.limits import EpisodeLimits
from trainer.environments.tool_calls import CALL_OPEN
from trainer.environments.turn_format import PLAIN, TurnFormat
from trainer.rollout.base import SamplingParams, TokenEngine
from trainer.samples import Sample

MAX_PROBLEMS = 10_000  # one evaluation's problems: each is a whole episode held in memory


@dataclass(frozen=True)
class ToolEvaluation:
    """Per-problem outcomes of one greedy evaluation; ``correct[i]`` is problem i's."""

    correct: tuple[bool, ...]
    # with the tool: the episode ran a call; without: the text holds a <tool_call>
    used_tool: tuple[bool, ...]
    texts: tuple[str, ...]  # the completion (with the tool: the whole episode, replies included)

    @property
    def accuracy(self) -> float:
        return sum(self.correct) / len(self.correct)

    @property
    def tool_rate(self) -> float:
        return sum(self.used_tool) / len(self.used_tool)


def greedy_params(max_new_tokens: int, batch_size: int = 256) -> SamplingParams:
    """Greedy decoding on a sampling engine: top-k 1 at temperature 1 (``BenchmarkConfig.sampling``'s greedy)."""
    return SamplingParams(
        max_new_tokens=max_new_tokens, temperature=1.0, top_p=1.0, top_k=1, batch_size=batch_size
    )


def _checked(samples: Sequence[Sample]) -> None:
    if not samples:
        raise ValueError("no problems to evaluate: give at least one sample")
    if len(samples) > MAX_PROBLEMS:
        raise ValueError(f"{len(samples)} problems; evaluate at most {MAX_PROBLEMS} at once")


def accuracy_with_tools(
    engine: TokenEngine,
    tokenizer: PreTrainedTokenizerBase,
    samples: Sequence[Sample],
    build: Callable[[], Environment],
    limits: EpisodeLimits,
    max_turn_tokens: int,
    turn_format: TurnFormat = PLAIN,
) -> ToolEvaluation:
    """Each sample as one greedy episode of the environment ``build`` makes (``environment_factory``'s builder);
    ``max_turn_tokens`` caps each model turn, ``limits`` the episode. Correct: the episode's final score says so
    (an absent score is not correct)."""
    _checked(samples)
    episodes = [Episode(s.prompt, s, build()) for s in samples]
    generator = torch.Generator(device="cpu").manual_seed(0)  # top-k 1 draws nothing; the engine wants one
    result = run_episodes(
        engine, tokenizer, episodes, greedy_params(max_turn_tokens), generator, limits, turn_format
    )
    return ToolEvaluation(
        correct=tuple(bool(e.score.correct) and not e.score.absent for e in result.episodes),
        used_tool=tuple(any(t.tool_calls for t in e.turns) for e in result.episodes),
        texts=tuple(result.batch.texts),
    )


def accuracy_without_tools(
    engine: TokenEngine,
    tokenizer: PreTrainedTokenizerBase,
    samples: Sequence[Sample],
    scorer: AnswerScorer,
    max_new_tokens: int,
) -> ToolEvaluation:
    """Each sample's prompt continued greedily in one generation (no stop strings, no tool run), scored as is."""
    _checked(samples)
    contexts = [list(tokenizer(s.prompt, add_special_tokens=False)["input_ids"]) for s in samples]
    generator = torch.Generator(device="cpu").manual_seed(0)
    out = engine.generate_from_ids(contexts, greedy_params(max_new_tokens), generator)
    scores = [scorer(text, s) for text, s in zip(out.texts, samples, strict=True)]
    return ToolEvaluation(
        correct=tuple(bool(r.correct) and not r.absent for r in scores),
        used_tool=tuple(CALL_OPEN in text for text in out.texts),
        texts=tuple(out.texts),
    )


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``a[i] - b[i]`` over problems and its standard error (the sample deviation over sqrt(n))."""

    mean: float
    stderr: float
    n: int


def paired_difference(a: Sequence[bool], b: Sequence[bool]) -> PairedDifference:
    if len(a) != len(b) or not a:
        raise ValueError(f"paired outcomes must be two equal, non-empty lists; got {len(a)} and {len(b)}")
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    return PairedDifference(mean, math.sqrt(var / n), n)

"""The multi-turn driver: N episodes at once, one engine call per round, environments stepped concurrently.

A round: every live episode's context (prompt and completion so far, as token ids) goes to the engine in one
``generate_from_ids`` call, which samples one model turn each (ending at EOS, at ``</tool_call>`` when the
environment has tools, or at the turn's token cap); then every live environment is stepped at once in a bounded
thread pool (its tool calls parsed and run, each under its deadline, then ``step``); then each reply is framed,
tokenised and appended (environment tokens: mask 0, logprob 0). An episode ends when its environment says done
("done"), after ``max_turns`` model turns ("turns"), or when ``max_total_tokens`` completion tokens are used
("length": the model's turn or the reply was cut to fit, or no room is left for another turn).

How it differs from re-rendering a conversation each turn (what chat-message rollouts in TRL/verifiers-style
loops do): the trajectory is never decoded and tokenised again (trajectory.py), so the ids trained are the ids
sampled, and the model's logprobs come from the sampling pass itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedTokenizerBase

from trainer.environments.base import Environment, ModelTurn, Observation
from trainer.environments.limits import EpisodeLimits
from trainer.environments.records import (
    EpisodeFinish,
    EpisodeRecord,
    MultiTurnBatch,
    ToolCallRecord,
    TurnFinish,
    TurnRecord,
)
from trainer.environments.tool_calls import CALL_CLOSE, render_tool_responses, run_tool_calls
from trainer.environments.tools import Tool
from trainer.environments.trajectory import ModelTokens, Trajectory, reply_ids, to_batch
from trainer.environments.turn_format import PLAIN, TurnFormat
from trainer.rollout.base import RolloutBatch, SamplingParams, TokenEngine
from trainer.samples import Sample


@dataclass(frozen=True)
class Episode:
    """One episode to run: the rendered prompt, its sample, and a fresh environment for it."""

    prompt: str
    sample: Sample
    env: Environment


def run_episodes(
    engine: TokenEngine,
    tokenizer: PreTrainedTokenizerBase,
    episodes: Sequence[Episode],
    params: SamplingParams,
    generator: torch.Generator,
    limits: EpisodeLimits,
    turn_format: TurnFormat = PLAIN,
) -> MultiTurnBatch:
    """Run every episode to its end; row i of the result is episode i (a group's episodes stay contiguous).

    ``params.max_new_tokens`` caps each model turn. The batch's ``completion_mask`` covers the whole trajectory,
    ``model_mask`` the model's tokens only (what the loss trains).
    """
    if not episodes:
        raise ValueError("no episodes to run: give at least one")
    workers = min(limits.max_concurrent_steps, len(episodes))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="env-step") as pool:
        return _Run(engine, tokenizer, episodes, limits, turn_format, pool).run(params, generator)


def _turn_finish(reason: str) -> TurnFinish:
    if reason in ("eos", "stop", "length"):
        return reason  # type: ignore[return-value]
    raise RuntimeError(f"the engine gave the finish reason {reason!r}; expected eos, stop or length")


@dataclass
class _Turn:
    """A model turn and what its environment made of it."""

    tokens: ModelTokens
    calls: tuple[ToolCallRecord, ...]
    observation: Observation


class _Run:
    def __init__(
        self,
        engine: TokenEngine,
        tokenizer: PreTrainedTokenizerBase,
        episodes: Sequence[Episode],
        limits: EpisodeLimits,
        turn_format: TurnFormat,
        pool: ThreadPoolExecutor,
    ) -> None:
        self.engine, self.tokenizer, self.episodes = engine, tokenizer, list(episodes)
        self.limits, self.format, self.pool = limits, turn_format, pool
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = int(pad)  # type: ignore[arg-type]
        self.tools: list[Sequence[Tool]] = [e.env.tools() for e in self.episodes]
        self.finish: list[EpisodeFinish | None] = [None] * len(self.episodes)
        self.with_sampler_logprobs = False
        self.device = torch.device("cpu")
        self.trajectories: list[Trajectory] = []

    def run(self, params: SamplingParams, generator: torch.Generator) -> MultiTurnBatch:
        starts = list(self.pool.map(lambda e: e.env.reset(e.sample), self.episodes))
        self.trajectories = trajectories = [
            Trajectory(
                self._encode(e.prompt) + self._encode(o.text, split=True), self.limits.max_total_tokens
            )
            for e, o in zip(self.episodes, starts, strict=True)
        ]
        stop = (CALL_CLOSE,) if self.limits.stop_at_tool_call and any(self.tools) else ()
        live = list(range(len(self.episodes)))
        while live:
            sampled = self._sample([trajectories[i] for i in live], params, generator, stop)
            turns = list(self.pool.map(self._step, live, sampled))
            for i, turn in zip(live, turns, strict=True):
                self.finish[i] = self._record(trajectories[i], turn)
            live = [i for i in live if self.finish[i] is None]
        scores = list(self.pool.map(lambda e: e.env.final_score(), self.episodes))
        reasons = [f for f in self.finish if f is not None]
        batch = to_batch(
            trajectories, reasons, self.tokenizer, self.pad_id, self.with_sampler_logprobs, self.device
        )
        records = [
            EpisodeRecord(tuple(t.turns), f, s) for t, f, s in zip(trajectories, reasons, scores, strict=True)
        ]
        return MultiTurnBatch(batch, records)

    def _encode(self, text: str, split: bool = False) -> list[int]:
        if not text:
            return []
        return list(self.tokenizer(text, add_special_tokens=False, split_special_tokens=split)["input_ids"])

    def _sample(
        self,
        trajectories: list[Trajectory],
        params: SamplingParams,
        generator: torch.Generator,
        stop: tuple[str, ...],
    ) -> list[ModelTokens]:
        """One engine call for every live episode; each turn cut to its episode's remaining budget (a prefix of a
        sampled sequence is a sample of that prefix, so the cut changes no logprob)."""
        cap = min(params.max_new_tokens, max(t.room for t in trajectories))
        out = self.engine.generate_from_ids(
            [t.context() for t in trajectories], replace(params, max_new_tokens=cap), generator, stop
        )
        if len(out) != len(trajectories):
            raise RuntimeError(f"the engine returned {len(out)} completions for {len(trajectories)} contexts")
        self.device = out.completion_ids.device
        self.with_sampler_logprobs = out.sampler_logprobs is not None
        return [self._turn_of(out, row, t.room) for row, t in enumerate(trajectories)]

    def _turn_of(self, out: RolloutBatch, row: int, room: int) -> ModelTokens:
        n = int(out.completion_mask[row].sum())
        keep = min(n, room)
        ids = out.completion_ids[row, :keep].tolist()
        sampler = out.sampler_logprobs
        return ModelTokens(
            ids=ids,
            logprobs=out.logprobs[row, :keep].tolist(),
            entropies=out.entropies[row, :keep].tolist(),
            sampler_logprobs=None if sampler is None else sampler[row, :keep].tolist(),
            finish=_turn_finish(out.finish_reasons[row]) if keep == n else "length",
            text=out.texts[row] if keep == n else str(self.tokenizer.decode(ids, skip_special_tokens=True)),
        )

    def _step(self, i: int, tokens: ModelTokens) -> _Turn:
        """Run the turn's tool calls and step episode ``i``'s environment (in a pool thread)."""
        calls = run_tool_calls(tokens.text, self.tools[i], self.limits.tools) if self.tools[i] else ()
        index = len(self.trajectories[i].turns)
        observation = self.episodes[i].env.step(ModelTurn(index, tokens.text, calls))
        return _Turn(tokens, calls, observation)

    def _record(self, trajectory: Trajectory, turn: _Turn) -> EpisodeFinish | None:
        """Append the turn and, if the episode goes on, the reply; return how the episode ended (None: not yet)."""
        model_span = trajectory.add_model(turn.tokens)
        env_span = (model_span[1], model_span[1])
        truncated = False
        finish: EpisodeFinish | None = None
        if turn.tokens.finish == "length" and trajectory.room == 0:
            finish = "length"  # the turn itself was cut by the episode's budget
        elif turn.observation.done:
            finish = "done"
        elif len(trajectory.turns) + 1 >= self.limits.max_turns:
            finish = "turns"
        else:
            parts = [render_tool_responses(turn.calls) if turn.calls else "", turn.observation.text]
            reply = "\n".join(p for p in parts if p)
            ids = reply_ids(self.tokenizer, self.format, reply, turn.tokens.finish)
            truncated = len(ids) > trajectory.room
            env_span = trajectory.add_environment(ids[: trajectory.room])
            finish = "length" if trajectory.room == 0 else None
        trajectory.turns.append(
            TurnRecord(
                model_span=model_span,
                env_span=env_span,
                finish=turn.tokens.finish,
                reward=turn.observation.reward,
                tool_calls=turn.calls,
                reply_truncated=truncated,
                info=turn.observation.info,
            )
        )
        return finish

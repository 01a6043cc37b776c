"""What a multi-turn rollout leaves besides its tokens: per-turn spans, rewards and tool calls, per episode."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trainer.jsonable import to_jsonable
from trainer.verifiers.base import VerifierResult

if TYPE_CHECKING:  # torch stays out: the web process validates environment configs through this package
    from trainer.rollout.base import RolloutBatch

# ok: the tool ran and returned; error: it failed or refused its input; timeout: cut off at its deadline;
# invalid: the call itself was malformed (not JSON, unknown tool, bad arguments, over a limit) and never ran.
ToolStatus = Literal["ok", "error", "timeout", "invalid"]
# How a model turn ended: its EOS, a stop string (e.g. </tool_call>), or a token limit.
TurnFinish = Literal["eos", "stop", "length"]
# How an episode ended: the environment said done, the turn budget, the token budget.
EpisodeFinish = Literal["done", "turns", "length"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a model turn: what was asked, what came back (as the model saw it) and how it ended."""

    name: str  # "" when the call could not be read
    arguments: dict[str, Any] | None  # None when the call could not be read
    result: str  # the text the model was shown (an error message for error / timeout / invalid)
    status: ToolStatus
    seconds: float  # wall time of the call (0 for an invalid one)


@dataclass(frozen=True)
class TurnRecord:
    """One model turn and the environment's reply, as [start, end) token spans of the completion.

    ``env_span`` is empty when the episode ended after the turn (no reply is appended then: no model turn would
    read it). ``reply_truncated``: the reply was cut to fit the episode's token budget.
    """

    model_span: tuple[int, int]
    env_span: tuple[int, int]
    finish: TurnFinish
    reward: float | None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    reply_truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # the environment's Observation.info for the turn

    @property
    def invalid_calls(self) -> int:
        return sum(c.status == "invalid" for c in self.tool_calls)


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode: its turns, how it ended, and the environment's final score (the rollout's reward)."""

    turns: tuple[TurnRecord, ...]
    finish_reason: EpisodeFinish
    score: VerifierResult

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types only, for a rollout record."""
        data: dict[str, Any] = to_jsonable(asdict(self))
        return data


def episode_from_json(data: dict[str, Any]) -> EpisodeRecord:
    """An ``EpisodeRecord`` back from its ``to_json`` (a rollout's details carry it through the step)."""

    def span(value: Any) -> tuple[int, int]:
        return int(value[0]), int(value[1])

    turns = tuple(
        TurnRecord(
            model_span=span(t["model_span"]),
            env_span=span(t["env_span"]),
            finish=t["finish"],
            reward=None if t["reward"] is None else float(t["reward"]),
            tool_calls=tuple(
                ToolCallRecord(c["name"], c["arguments"], c["result"], c["status"], float(c["seconds"]))
                for c in t["tool_calls"]
            ),
            reply_truncated=bool(t["reply_truncated"]),
        )
        for t in data["turns"]
    )
    score = data["score"]
    reward = float("nan") if score["reward"] is None else float(score["reward"])
    return EpisodeRecord(
        turns, data["finish_reason"], VerifierResult(reward, bool(score["correct"]), score["detail"])
    )


@dataclass
class MultiTurnBatch:
    """N episodes: ``batch`` holds the whole trajectories (``model_mask`` set), ``episodes`` the rest, row for row."""

    batch: RolloutBatch
    episodes: list[EpisodeRecord]

    @property
    def rewards(self) -> list[float]:
        return [e.score.reward for e in self.episodes]

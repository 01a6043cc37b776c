"""Tool-call shaping: per-episode reward adjustments from the tool calls of multi-turn episodes.

A plain function of the episodes, not a method on the ``shaping.reward_shaping`` axis: that axis's hooks see a
``ShapingState`` of the scored completions (texts, lengths, verifier rewards), which holds no episode, and every
term here is an additive knob of the environment (each 0 by default, so a run changes only when one is set), not
one choice among alternatives. The collect stage, which holds the episodes' records, calls ``tool_shaping`` with
the environment section's ``ToolShapingParams`` and adds the adjustments to the rewards as reward key
``TOOL_SHAPING_KEY`` (so the dashboard shows them in each rollout's breakdown), before the advantages.

Per episode, from every tool call of its turns (status as trainer/environments/records.py defines it)::

    valid_call_reward * min(#ok, max_rewarded_calls)
      - invalid_call_penalty * #invalid - error_penalty * #error - timeout_penalty * #timeout
      - cost_per_call * #calls

Torch-free: the web process builds the config schema from ``ToolShapingParams``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from trainer.bounds import BoundedModel

if TYPE_CHECKING:
    from trainer.methods.views import EpisodeView

TOOL_SHAPING_KEY = "tool_shaping"  # the reward key the adjustments are recorded under
STATUSES = ("ok", "error", "timeout", "invalid")


class ToolShapingParams(BoundedModel):
    """Tool-call validity rewards and cost shaping, each term 0 (off) by default.

    The format part of ToolRL ("ToolRL: Reward is All Tool Learning Needs", a principled reward design for tool
    use) and the per-call cost of search-aware shaping (SVRL's search-aware penalty on unnecessary tool calls,
    SEM's search-efficiency reward). Differs from ToolRL: no correctness reward matching tool names and
    parameters against a reference call (the episodes carry none; the environment's own score judges the
    answer), and the validity reward counts calls that ran and returned, capped per episode, instead of a
    per-response format check. Differs from SVRL and SEM: a flat cost per call, not conditioned on whether the
    call was needed.
    """

    valid_call_reward: float = Field(
        0.0,
        ge=0,
        le=100,
        description="Reward per tool call that ran and returned (status ok), for at most max_rewarded_calls calls "
        "of an episode: the format part of ToolRL's tool-use reward.",
    )
    max_rewarded_calls: int = Field(
        1,
        ge=0,
        le=64,
        description="Most calls of one episode that earn valid_call_reward, so calling more does not pay.",
    )
    invalid_call_penalty: float = Field(
        0.0,
        ge=0,
        le=100,
        description="Subtracted per malformed call (not JSON, unknown tool, bad arguments, over a limit): it never ran.",
    )
    error_penalty: float = Field(
        0.0, ge=0, le=100, description="Subtracted per call the tool failed or refused (status error)."
    )
    timeout_penalty: float = Field(
        0.0, ge=0, le=100, description="Subtracted per call cut off at its deadline (status timeout)."
    )
    cost_per_call: float = Field(
        0.0,
        ge=0,
        le=100,
        description="Subtracted per call, whatever its status: a tool-call cost in the manner of SVRL's "
        "search-aware penalty and SEM's search-efficiency reward.",
    )

    @property
    def active(self) -> bool:
        """Some term is set: the episodes' rewards change."""
        terms = (self.invalid_call_penalty, self.error_penalty, self.timeout_penalty, self.cost_per_call)
        return (self.valid_call_reward > 0 and self.max_rewarded_calls > 0) or any(t > 0 for t in terms)


@dataclass(frozen=True)
class ToolShaping:
    """Per episode: the reward adjustment and its calls by status; with ``env/tool_*`` metrics of the step."""

    adjustments: list[float]  # [N] added to each episode's reward
    counts: list[Counter[str]]  # [N] calls by status (ok, error, timeout, invalid)
    metrics: dict[str, float]


def call_counts(episode: EpisodeView) -> Counter[str]:
    """The episode's tool calls by status, over all its turns; refuses a status records.py does not define."""
    counts = Counter(call.status for turn in episode.turns for call in turn.tool_calls)
    unknown = sorted(set(counts) - set(STATUSES))
    if unknown:
        raise ValueError(f"tool shaping: unknown tool call status {unknown}; statuses: {', '.join(STATUSES)}")
    return counts


def adjustment(counts: Counter[str], params: ToolShapingParams) -> float:
    """One episode's reward adjustment from its calls by status (the module docstring's formula)."""
    calls = sum(counts.values())
    return (
        params.valid_call_reward * min(counts["ok"], params.max_rewarded_calls)
        - params.invalid_call_penalty * counts["invalid"]
        - params.error_penalty * counts["error"]
        - params.timeout_penalty * counts["timeout"]
        - params.cost_per_call * calls
    )


def tool_shaping(episodes: Sequence[EpisodeView], params: ToolShapingParams) -> ToolShaping:
    """Each episode's adjustment and the step's tool metrics: ``env/tool_calls_mean`` (calls per episode),
    ``env/tool_invalid_frac``, ``env/tool_error_frac``, ``env/tool_timeout_frac`` (shares of all calls; 0 without
    calls) and ``env/tool_reward_mean`` (mean adjustment).

    >>> from types import SimpleNamespace as NS
    >>> ok, bad = NS(status="ok"), NS(status="invalid")
    >>> episode = NS(turns=[NS(tool_calls=[ok, ok, bad])])
    >>> tool_shaping([episode], ToolShapingParams(valid_call_reward=0.5, invalid_call_penalty=1.0)).adjustments
    [-0.5]
    """
    counts = [call_counts(e) for e in episodes]
    adjustments = [adjustment(c, params) for c in counts]
    n, calls = len(episodes), sum(sum(c.values()) for c in counts)

    def share(status: str) -> float:
        return sum(c[status] for c in counts) / calls if calls else 0.0

    metrics = {
        "env/tool_calls_mean": calls / n if n else 0.0,
        "env/tool_invalid_frac": share("invalid"),
        "env/tool_error_frac": share("error"),
        "env/tool_timeout_frac": share("timeout"),
        "env/tool_reward_mean": sum(adjustments) / n if n else 0.0,
    }
    return ToolShaping(adjustments, counts, metrics)

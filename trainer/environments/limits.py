"""The budgets of one episode (turns, tokens, concurrency) and of its tool calls. Torch-free: configs carry them."""

from __future__ import annotations

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.environments.tool_calls import ToolLimits


class EpisodeLimits(BoundedModel):
    """The budgets of one episode and of the tool calls in it."""

    max_turns: int = Field(4, ge=1, le=64, description="Model turns an episode may take.")
    max_total_tokens: int = Field(
        1024,
        ge=1,
        le=131_072,
        description="Completion tokens of an episode, the model's and the environment's together (not the prompt).",
    )
    tools: ToolLimits = Field(
        default_factory=ToolLimits,
        description="Limits of the tool calls: calls per turn, argument and result sizes (a call's deadline is its tool's).",
    )
    stop_at_tool_call: bool = Field(
        True,
        description="End a model turn at </tool_call> (one call per turn); off: the model ends its turn itself and "
        "may make several calls in it.",
    )
    max_concurrent_steps: int = Field(
        16, ge=1, le=256, description="Environments stepped at once (threads; tool calls run inside them)."
    )

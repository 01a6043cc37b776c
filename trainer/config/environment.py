"""The ``environment`` section: multi-turn, tool-using episodes instead of one completion per prompt
(trainer/environments/). Null by default: a run without it is exactly what it was before environments existed.

``name`` and ``params`` choose a registered environment (``calculator``, ``python``, ``self_correction``, ``openenv``)
and are validated by its own params model; ``limits`` are the episode's budgets and its tool calls' limits;
``turn_credit`` says how per-turn rewards become token credit (trainer/methods/turn_credit.py); ``tool_shaping``
adds tool-use rewards and costs (trainer/methods/tool_shaping.py). Torch-free (the web process validates configs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

import trainer.methods  # noqa: F401  -- registers every method before the choice model is built
from trainer.bounds import BoundedModel
from trainer.config.choice import MethodChoice, choice_field, choice_model
from trainer.environments import ENVIRONMENTS, EpisodeLimits, environment_params
from trainer.errors import ConfigError
from trainer.methods.tool_shaping import ToolShapingParams
from trainer.methods.turn_credit import TURN_CREDIT

if TYPE_CHECKING:
    TurnCreditChoice = MethodChoice
else:
    TurnCreditChoice = choice_model(TURN_CREDIT)


def _environment_choices() -> dict[str, Any]:
    """``x-choices`` for the web form: each environment's name, description and params schema."""
    return {
        "x-default": "calculator",
        "x-choices": [
            {
                "name": name,
                "description": (ENVIRONMENTS.get(name).__doc__ or "").strip().split("\n\n")[0],
                "params": ENVIRONMENTS.get(name).Params.model_json_schema(),
            }
            for name in ENVIRONMENTS.names()
        ],
    }


class EnvironmentConfig(BoundedModel):
    """Multi-turn episodes: the model's turns, tool calls run under limits, the environment's replies, token-in
    token-out (model tokens trained, environment tokens masked out of the loss)."""

    name: str = Field(
        "calculator",
        max_length=64,
        description="The environment: 'calculator' (a safe arithmetic tool), 'python' (code run in the sandbox), "
        "'self_correction' (each answer scored, a wrong one answered with a retry prompt), 'openenv' (an OpenEnv "
        "environment server, driven over its WebSocket protocol).",
        json_schema_extra=_environment_choices(),  # type: ignore[arg-type]
    )
    params: Any = Field(
        default_factory=dict,
        validate_default=True,
        description="The environment's parameters (omitted ones take their defaults).",
    )
    limits: EpisodeLimits = Field(
        default_factory=EpisodeLimits,
        description="Budgets of one episode (turns, completion tokens of model and environment together) and of its "
        "tool calls (deadline, sizes, calls per turn).",
    )
    turn_format: Literal["plain", "chatml"] = Field(
        "plain",
        description="How an environment reply is framed before it is tokenised and appended: 'plain' (the reply "
        "text alone) or 'chatml' (<|im_start|>tool ... <|im_end|> and the next assistant header).",
    )
    turn_credit: TurnCreditChoice = choice_field(
        TURN_CREDIT,
        "How the episode's credit reaches each turn's tokens: 'outcome' (every model token carries the episode's "
        "advantage), 'tcpo' (TCPO's retrospective and hindsight credit from per-turn scores) or 'turn_segmented' "
        "(CrEST's turn-segmented verified advantages).",
    )
    tool_shaping: ToolShapingParams = Field(
        default_factory=ToolShapingParams,
        description="Tool-use reward shaping added to each episode's reward (ToolRL): rewards for calls that ran, "
        "penalties for invalid, failed and timed-out calls, a cost per call; all 0 by default.",
    )

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in ENVIRONMENTS:
            raise ValueError(
                f"unknown environment {value!r}; valid names are: {', '.join(ENVIRONMENTS.names())}"
            )
        return value

    @field_validator("params", mode="after")
    @classmethod
    def _parse_params(cls, value: Any, info: Any) -> Any:
        name = info.data.get("name")
        if name is None or name not in ENVIRONMENTS:
            return value
        if isinstance(value, ENVIRONMENTS.get(name).Params):
            return value
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"params of environment {name!r} must be a mapping of parameter names to values")
        try:
            return environment_params(name, value)
        except ConfigError as err:
            raise ValueError(str(err)) from None

    @property
    def turn_rewards(self) -> bool:
        """Whether the chosen environment rewards each turn (turn-level credit needs it)."""
        return bool(ENVIRONMENTS.get(self.name).turn_rewards)

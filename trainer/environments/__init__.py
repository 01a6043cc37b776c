"""Multi-turn, tool-using environments with token-in, token-out rollouts (see README.md).

Importing this package registers the built-in environments (calculator, python, self_correction, openenv) and
loads no torch: the web process validates environment configs through it. The driver (``driver.run_episodes``, with
torch) is imported from its module by the step.
"""

from trainer.environments import (  # noqa: F401 -- registers
    calculator,
    openenv_adapter,
    python_tool,
    self_correction,
)
from trainer.environments.base import (
    ENVIRONMENTS,
    AnswerScorer,
    Environment,
    EnvironmentParams,
    EnvState,
    ModelTurn,
    Observation,
    environment_factory,
    environment_params,
)
from trainer.environments.limits import EpisodeLimits
from trainer.environments.records import EpisodeRecord, MultiTurnBatch, ToolCallRecord, TurnRecord
from trainer.environments.scoring import verifier_scorer
from trainer.environments.tool_calls import ToolLimits
from trainer.environments.tools import Tool, ToolOutput
from trainer.environments.turn_format import CHATML, PLAIN, TURN_FORMATS, TurnFormat

__all__ = [
    "CHATML", "ENVIRONMENTS", "PLAIN", "TURN_FORMATS", "AnswerScorer", "EnvState", "Environment", "EnvironmentParams",
    "EpisodeLimits", "EpisodeRecord", "ModelTurn", "MultiTurnBatch", "Observation", "Tool",
    "ToolCallRecord", "ToolLimits", "ToolOutput", "TurnFormat", "TurnRecord", "environment_factory",
    "environment_params", "verifier_scorer",
]  # fmt: skip

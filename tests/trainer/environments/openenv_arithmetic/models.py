"""The Action and Observation of the arithmetic environment (OpenEnv pydantic models)."""

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class ArithmeticAction(Action):
    """The model's answer, as text."""

    answer: str = Field(..., max_length=200, description="The answer to the question")


class ArithmeticObservation(Observation):
    """The question and what the environment made of the last answer."""

    question: str = Field(default="", description="The question to answer")
    feedback: str = Field(default="", description="What the environment says about the last answer")
    attempts_left: int = Field(default=0, description="Answers still allowed")
    filler: str = Field(default="", description="Padding (tests of message size limits)")

"""The ``process_reward`` section: steps, a step scorer and step credit (trainer/process/). Null by default: a run
without it is exactly what it was before process rewards existed.

``segmenter`` and ``scorer`` are ``{name, params}`` choices validated by their registries (trainer/process/steps.py
``SEGMENTERS``, trainer/process/scorers.py ``STEP_SCORERS``); ``credit`` and the gating, clipping, delta and PROF
fields say how the step scores become token credit (trainer/methods/step_credit.py). Torch-free (the web process
validates configs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

import trainer.methods  # noqa: F401  -- registers every method before the choice model is built
from trainer.bounds import BoundedModel
from trainer.config.choice import MethodChoice, choice_field, choice_model
from trainer.methods.step_credit import STEP_CREDIT, StepCreditFields
from trainer.process.scorers import STEP_SCORERS
from trainer.process.steps import SEGMENTERS


def _choices(registry: Any, default: str) -> dict[str, Any]:
    """``x-choices`` and ``x-default`` for the web form, as method axes carry them: the default first, then by name."""
    names = [default] + [n for n in registry.names() if n != default]
    return {
        "x-default": default,
        "x-choices": [
            {
                "name": name,
                "description": registry.get(name).description,
                "params": registry.get(name).Params.model_json_schema(),
            }
            for name in names
        ],
    }


class _Choice(BoundedModel):
    """``{name, params}``: params validated by the named entry's ``Params`` (defaults filled in)."""

    name: str
    params: Any = Field(
        default_factory=dict,
        validate_default=True,
        description="The chosen entry's parameters (omitted ones take their defaults).",
    )

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @classmethod
    def _registry(cls) -> Any:
        raise NotImplementedError

    @field_validator("params", mode="after")
    @classmethod
    def _parse_params(cls, value: Any, info: Any) -> Any:
        name = info.data.get("name")
        if name is None or name not in cls._registry():
            return value
        entry = cls._registry().get(name)
        if isinstance(value, entry.Params):
            return value
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"params of {name!r} must be a mapping of parameter names to values")
        return entry.Params.model_validate(value or {})


class SegmenterChoice(_Choice):
    """Where steps end (trainer/process/steps.py)."""

    name: Literal["lines", "pattern", "entropy"] = Field(
        "lines",
        description="'lines': after separators (newline, '=', ';') and before the answer marker; 'pattern': where "
        "an RE2 pattern's matches end; 'entropy': after high-entropy tokens (EDU-PRM).",
    )

    @classmethod
    def _registry(cls) -> Any:
        return SEGMENTERS


class ScorerChoice(_Choice):
    """What scores each step (trainer/process/scorers.py)."""

    name: Literal["oracle_chain", "prm", "monte_carlo", "implicit"] = Field(
        "oracle_chain",
        description="'oracle_chain': the chain_arithmetic verifier's own step check (1 before the first wrong step, "
        "0 from it on); 'prm': a process reward model checkpoint scored at step ends (a token-classification head, "
        "or a causal LM scored Math-Shepherd style); 'monte_carlo': Math-Shepherd's Monte-Carlo estimate (the share "
        "of k continuations from each step's end that reach the right answer); 'implicit': PRIME's implicit PRM (Cui et "
        "al. 2025), a copy of the policy's start trained online on the verifier's verdicts, each step scored "
        "sigmoid(beta * its summed log-ratio to the frozen start).",
    )

    @classmethod
    def _registry(cls) -> Any:
        return STEP_SCORERS


if TYPE_CHECKING:  # a MethodChoice to the type checker; pydantic sees the axis's own model
    CreditChoice = MethodChoice
else:
    CreditChoice = choice_model(STEP_CREDIT)  # trainer/methods/step_credit.py owns the meaning


class ProcessRewardConfig(StepCreditFields):
    """Process rewards: segment each completion into steps, score every step, turn the scores into token credit."""

    segmenter: SegmenterChoice = Field(
        default_factory=SegmenterChoice,
        description="Where each completion's steps end.",
        json_schema_extra=_choices(SEGMENTERS, "lines"),  # type: ignore[arg-type]
    )
    scorer: ScorerChoice = Field(
        default_factory=ScorerChoice,
        description="What scores each step, in [0, 1] (absent scores never count as 0).",
        json_schema_extra=_choices(STEP_SCORERS, "oracle_chain"),  # type: ignore[arg-type]
    )
    credit: CreditChoice = choice_field(
        STEP_CREDIT,
        "How step scores become per-token process credit: the step's value from this and the later steps' "
        "rewards ('sum', 'mean', 'last', or PURE's min-form 'min'), normalised within the group.",
    )
    # weight, success_gated, clip, delta, prof_filter: StepCreditFields (trainer/methods/step_credit.py)

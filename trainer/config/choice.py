"""Config fields that choose a method: ``{name, params}`` validated by the chosen method's own model.

``choice_model(axis)`` builds the pydantic model of one axis (trainer/methods/axes.py) from its registry:
``name`` is an enum of the registered methods and ``params`` is validated by the named method's params
model (its defaults filled in, so a saved config records every value it ran with). A bare string is the
name with default parameters (``token_credit: ecr``). The schema carries ``x-choices``: each method's name,
one-line description and params schema, from which the web form builds its select and parameter fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, create_model, field_validator, model_validator

from trainer.bounds import BoundedModel
from trainer.methods.axes import ActiveMethod, Axis


class MethodChoice(BoundedModel):
    """One method on one axis and its parameters."""

    name: str
    params: Any = Field(
        default_factory=dict,
        validate_default=True,
        description="The chosen method's parameters, validated by its own model (each method's are listed, with their "
        "defaults and ranges, under x-choices); omitted ones take their defaults.",
    )

    _axis: Axis[Any]  # set on each axis's subclass

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name", mode="before")
    @classmethod
    def _known_name(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in cls._axis:
            raise ValueError(
                f"unknown {cls._axis.kind} {value!r}; valid names are: {', '.join(cls._axis.names())}"
            )
        return value

    @field_validator("params", mode="after")
    @classmethod
    def _parse_params(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.data.get("name")
        if name is None:  # the name was refused; that error is the one to show
            return value
        if value is not None and not isinstance(value, dict | BoundedModel):
            raise ValueError(
                f"params of {cls._axis.kind} {name!r} must be a mapping of parameter names to values"
            )
        return cls._axis.entry(name).parse_params(value)

    def active(self) -> ActiveMethod:
        return ActiveMethod(self._axis.entry(self.name), self.params)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):  # `alg.token_credit == "ecr"` reads naturally in checks and tests
            return self.name == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # mutable model


def choice_model(axis: Axis[Any]) -> type[MethodChoice]:
    """The ``{name, params}`` model of ``axis``; built when trainer.config is imported (methods registered)."""
    names = tuple(e.name for e in axis.choices())
    if not names:
        raise RuntimeError(f"no {axis.kind} is registered: import trainer.methods first")
    model = create_model(
        "".join(part.capitalize() for part in axis.config_field.rsplit(".", 1)[-1].split("_")) + "Choice",
        __base__=MethodChoice,
        name=(
            Literal[names],
            Field(
                description=f"The {axis.kind}: "
                + "; ".join(  # type: ignore[valid-type,arg-type]
                    f"'{e.name}': {e.description}" for e in axis.choices()
                )
            ),
        ),
    )
    model._axis = axis
    return model


def choice_field(axis: Axis[Any], description: str) -> Any:
    """A ``Field`` for an axis's config entry: its default method, and ``x-choices`` in the schema."""
    extra = {
        "x-axis": axis.config_field,
        "x-default": axis.default,
        "x-choices": [
            {"name": e.name, "description": e.description, "params": e.params.model_json_schema()}
            for e in axis.choices()
        ],
    }
    if axis.many:
        return Field(default_factory=list, max_length=32, description=description, json_schema_extra=extra)  # type: ignore[arg-type]
    default = axis.default
    return Field(  # type: ignore[call-overload]
        default_factory=lambda: {"name": default},
        validate_default=True,
        description=description,
        json_schema_extra=extra,
    )

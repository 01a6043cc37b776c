"""Validate an experiment config with the trainer's own pydantic model, reporting field paths.

``trainer.config`` is torch-free on purpose (tests/trainer/test_import_boundary.py), so the web process
validates with exactly the model the worker trains with. ``config_from_dict`` flattens pydantic's errors
into one text; here the same model is validated directly to keep each error's path
(``training.learning_rate``) for the API's ``extra.fields``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from trainer.config import ExperimentConfig
from trainer.errors import RLVRError, VerifierError
from webapp.core.errors import InvalidInput


def validate_experiment_config(config: Any, *, field: str = "config") -> dict[str, Any]:
    """The config with every default filled in, as JSON, or InvalidInput naming ``config.<path>``."""
    if not isinstance(config, dict):
        message = f"The config must be an object of sections, got {type(config).__name__}."
        raise InvalidInput(message, {field: [message]})
    try:
        validated = ExperimentConfig.model_validate(config)
    except ValidationError as err:
        raise InvalidInput(_summary(err, field), _fields(err, field)) from None
    except RLVRError as err:  # raised while building registry entries, e.g. a verifier's bad params
        path = f"{field}.verifiers" if isinstance(err, VerifierError) else field
        raise InvalidInput(f"Invalid experiment config: {err}", {path: [str(err)]}) from None
    return validated.model_dump(mode="json")


def _fields(err: ValidationError, field: str) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for e in err.errors():
        path = ".".join([field, *(str(p) for p in e["loc"])])
        fields.setdefault(path, []).append(e["msg"].removeprefix("Value error, "))
    return fields


def _summary(err: ValidationError, field: str) -> str:
    fields = _fields(err, field)
    path, messages = next(iter(fields.items()))
    more = len(fields) - 1
    return f"Invalid experiment config: {path}: {messages[0]}" + (f" (and {more} more)" if more else "")

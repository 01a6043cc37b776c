"""Reading configs: a dict, a YAML or JSON file, the JSON schema the web form is built from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from trainer.bounds import UnsafeInput, safe_yaml_load, strict_json_loads
from trainer.config.experiment import ExperimentConfig
from trainer.errors import ConfigError


def _format_validation_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


def config_from_dict(data: dict[str, Any], source: str = "config") -> ExperimentConfig:
    """Validate a plain dict (from YAML, JSON, an API body) into an ExperimentConfig or raise ConfigError."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections, got {type(data).__name__}")
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(err, source)) from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Load a YAML (.yaml/.yml) or JSON (.json) experiment file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist")
    text = p.read_text(encoding="utf-8")
    try:
        data = strict_json_loads(text) if p.suffix == ".json" else safe_yaml_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnsafeInput) as err:
        raise ConfigError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {err}") from None
    return config_from_dict(data or {}, source=str(p))


def config_schema() -> dict[str, Any]:
    """The JSON schema the web form is generated from."""
    return ExperimentConfig.model_json_schema()

"""Ready-made experiment configs shipped with the package."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml


def preset(name: str) -> dict[str, Any]:
    """The preset ``name`` (e.g. 'demo') as a plain dict, ready for ``config_from_dict``."""
    text = resources.files(__package__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data

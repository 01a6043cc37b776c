"""Shared values of the reward model tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JUDGE_URL = "http://judge.internal:8000/v1"
SECRET_VALUE = "sk-test-0123456789abcdefSECRETVALUE"


def write_checkpoint(
    folder: Path, *, architecture: str = "Qwen2ForSequenceClassification", labels: int = 1
) -> Path:
    """A checkpoint folder as far as the web process reads one: its config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"architectures": [architecture], "model_type": "qwen2"}
    if labels:
        config["id2label"] = {str(i): f"LABEL_{i}" for i in range(labels)}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def judge_params(**overrides: Any) -> dict[str, Any]:
    return {"base_url": JUDGE_URL, "model": "tiny-judge", "api_key_secret": "OPENAI_KEY", **overrides}

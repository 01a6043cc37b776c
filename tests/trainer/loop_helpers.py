"""Small configs for training-loop tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.config import ExperimentConfig, config_from_dict
from trainer.sinks import NullSink, StepReport


class Steps(NullSink):
    """A sink that keeps every step report."""

    def __init__(self) -> None:
        self.reports: list[StepReport] = []

    def on_step(self, report: StepReport) -> None:
        self.reports.append(report)


def tiny_config(model_dir: Path, out_dir: Path, **sections: dict[str, Any]) -> ExperimentConfig:
    """A few-second run: 2 prompts x 8 completions of 4 tokens, rewarded for containing a digit.

    The digit reward varies within groups even for an untrained model, so every step has a gradient.
    """
    data: dict[str, Any] = {
        "name": "test",
        "seed": 0,
        "model": {"name_or_path": str(model_dir)},
        "data": {"source": "demo", "size": 64},
        "rollout": {"num_generations": 8, "max_completion_length": 4},
        "verifiers": [{"name": "regex_format", "params": {"pattern": "[0-9]", "match": "search"}}],
        "training": {"max_steps": 2, "prompts_per_step": 2, "micro_batch_size": 8, "learning_rate": 1e-3},
        "checkpoint": {"output_dir": str(out_dir), "save_steps": 0},
    }
    for section, values in sections.items():
        if isinstance(values, dict):
            data.setdefault(section, {}).update(values)
        else:
            data[section] = values
    return config_from_dict(data)

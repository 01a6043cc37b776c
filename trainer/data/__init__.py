"""Prompt data: where samples come from, how a prompt is rendered, and which prompts each step sees.

``load_samples(cfg.data)`` gives the Samples of the configured source (the built-in addition demo, a
local JSONL/JSON/CSV/Parquet file, or a reasoning-gym task), with the prompt template already checked
against them; ``render_prompt`` turns one into model input; ``PromptSampler`` draws resumable batches.
"""

from __future__ import annotations

from trainer.data.demo_task import addition_prompt, demo_samples
from trainer.data.files import load_file_samples
from trainer.data.loading import load_samples
from trainer.data.reasoning_gym_tasks import reasoning_gym_samples, reasoning_gym_task_names
from trainer.data.sampler import PromptSampler
from trainer.data.templates import check_template, render_prompt

__all__ = [
    "PromptSampler",
    "addition_prompt",
    "check_template",
    "demo_samples",
    "load_file_samples",
    "load_samples",
    "reasoning_gym_samples",
    "reasoning_gym_task_names",
    "render_prompt",
]

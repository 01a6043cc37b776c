"""The ``data`` section of the experiment config: where prompts and reference answers come from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from trainer.bounds import MAX_SEED, BoundedModel


class DataConfig(BoundedModel):
    """Where prompts and reference answers come from, and how a prompt is shown to the model."""

    source: Literal["demo", "file", "reasoning_gym", "chain_arithmetic"] = Field(
        "demo",
        description="'demo': built-in 2-digit addition; 'file': a local JSONL/JSON/CSV/Parquet file; "
        "'reasoning_gym': a procedural task generated locally by the reasoning-gym package; "
        "'chain_arithmetic': built-in multi-step sums and products (after reasoning-gym's chain_sum and "
        "basic_arithmetic) whose reference solution writes out every intermediate result; data.task picks "
        "the level (easy, medium, hard, or mixed when empty) and data.task_config overrides its knobs.",
    )
    path: str | None = Field(
        None,
        description="Data file (source='file'): a local path for `rlvr train`; in the web app and API an uploaded "
        "data file of the project as 'dataset:<id>' (the server resolves it; other paths are refused).",
    )
    format: Literal["auto", "jsonl", "json", "csv", "parquet"] = Field(
        "auto", description="File format; 'auto' infers it from the file extension."
    )
    prompt_field: str = Field("prompt", description="Column holding the problem text (source='file').")
    answer_field: str | None = Field(
        "answer", description="Column holding the reference answer; null for label-free data."
    )
    id_field: str | None = Field(None, description="Column with a stable prompt id; default: the row number.")
    task: str | None = Field(
        None, description="reasoning-gym task name, e.g. 'basic_arithmetic', 'chain_sum', 'countdown'."
    )
    task_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra reasoning-gym task parameters (difficulty knobs such as min_terms, max_terms).",
    )
    size: int = Field(
        1000, ge=1, le=10_000_000, description="Number of prompts to generate (demo and reasoning_gym)."
    )
    data_seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed for generating procedural prompts (demo, reasoning_gym)."
    )
    prompt_template: str = Field(
        "{prompt}",
        description="Python format string applied to each sample; may use {prompt}. Ignored when "
        "use_chat_template is true (the prompt becomes the user message).",
    )
    use_chat_template: bool = Field(
        False, description="Render prompts with the tokenizer's chat template (instruct models)."
    )
    system_prompt: str | None = Field(None, description="System message when use_chat_template is true.")
    shuffle: bool = Field(True, description="Visit prompts in a seeded random order each epoch.")

    @model_validator(mode="after")
    def _check_source(self) -> DataConfig:
        if self.source == "file" and not self.path:
            raise ValueError("data.source is 'file' but data.path is empty: set data.path to a local file")
        if self.source == "reasoning_gym" and not self.task:
            raise ValueError(
                "data.source is 'reasoning_gym' but data.task is empty: name a task, e.g. 'chain_sum'"
            )
        if "{prompt}" not in self.prompt_template and not self.use_chat_template:
            raise ValueError("data.prompt_template must contain '{prompt}'")
        return self

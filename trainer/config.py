"""The experiment configuration: one validated pydantic object from the web form to ``train(config)``.

Field names follow TRL's ``GRPOConfig`` wherever the concept is the same (``num_generations``,
``max_completion_length``, ``epsilon_high``, ``loss_type``, ``scale_rewards`` ...), so TRL users feel at
home. Every field documents its unit, default and the paper it comes from; the JSON schema of this model
(``rlvr config-schema``) is what the web form is generated from.

Registry names (verifier, advantage estimator, token credit) are validated when the config is built, so
a typo fails before any model is loaded, with the list of valid names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from trainer.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    """Which policy to train. Any local Hugging Face causal-LM directory works."""

    name_or_path: str = Field(
        "tiny:addition",
        description="Local model directory loaded with AutoModelForCausalLM.from_pretrained, or "
        "'tiny:addition' for the built-in tiny model (built and warm-started locally on first use; "
        "see `rlvr init-model`). Nothing is downloaded from a hub.",
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="Parameter dtype. float32 on CPU; bfloat16 is the usual choice on GPUs."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Where to run: 'auto' picks a CUDA GPU when one is present, else the CPU."
    )


class DataConfig(_Section):
    """Where prompts and reference answers come from, and how a prompt is shown to the model."""

    source: Literal["demo", "file", "reasoning_gym"] = Field(
        "demo",
        description="'demo': built-in 2-digit addition; 'file': a local JSONL/JSON/CSV/Parquet file; "
        "'reasoning_gym': a procedural task generated locally by the reasoning-gym package.",
    )
    path: str | None = Field(None, description="Data file path (source='file').")
    format: Literal["auto", "jsonl", "json", "csv", "parquet"] = Field(
        "auto", description="File format; 'auto' infers it from the file extension."
    )
    prompt_field: str = Field("prompt", description="Column holding the problem text (source='file').")
    answer_field: str | None = Field(
        "answer", description="Column holding the reference answer; null for label-free data."
    )
    id_field: str | None = Field(
        None, description="Column with a stable prompt id; default: the row number."
    )
    task: str | None = Field(
        None, description="reasoning-gym task name, e.g. 'basic_arithmetic', 'chain_sum', 'countdown'."
    )
    task_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra reasoning-gym task parameters (difficulty knobs such as min_terms, max_terms).",
    )
    size: int = Field(1000, ge=1, description="Number of prompts to generate (demo and reasoning_gym).")
    data_seed: int = Field(0, description="Seed for generating procedural prompts (demo, reasoning_gym).")
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


class RolloutConfig(_Section):
    """How completions are sampled."""

    engine: Literal["hf"] = Field("hf", description="Rollout engine: 'hf' (transformers, CPU or GPU).")
    num_generations: int = Field(
        8, ge=2, description="Completions sampled per prompt: the GRPO group size G (TRL name)."
    )
    max_completion_length: int = Field(
        16, ge=1, description="Maximum new tokens per completion; longer ones end with finish reason 'length'."
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (TRL name).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (TRL name).")
    top_k: int = Field(0, ge=0, description="Top-k sampling; 0 disables it.")
    generation_batch_size: int = Field(
        256, ge=1, description="Completions generated together in one batch (bounds memory)."
    )


AdvantageName = str
TokenCreditName = str


class AlgorithmConfig(_Section):
    """The GRPO-family objective, one registry name per axis (see trainer/algorithms/)."""

    advantage_estimator: AdvantageName = Field(
        "grpo",
        description="'grpo' (group mean/std, Shao et al. 2024), 'dr_grpo' (no std, Liu et al. 2025), "
        "'rloo' (leave-one-out baseline, Ahmadian et al. 2024), 'reinforce_pp' (group mean, then batch "
        "whitening, Hu 2025).",
    )
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group",
        description="For 'grpo': divide by the group's std ('group'), the whole batch's std ('batch', "
        "Hu 2025 / DLER) or not at all ('none', as Dr. GRPO recommends). TRL name.",
    )
    loss_type: Literal["grpo", "bnpo", "dr_grpo", "dapo"] = Field(
        "dapo",
        description="Loss normalisation, as in TRL: 'grpo' mean over tokens then sequences; 'bnpo' "
        "mean over the micro-batch's tokens; 'dr_grpo' sum / (sequences x max_completion_length) "
        "(Liu et al. 2025); 'dapo' sum / tokens of the whole step (Yu et al. 2025).",
    )
    importance_sampling_level: Literal["token", "sequence"] = Field(
        "token",
        description="'token': PPO ratio per token; 'sequence': one length-normalised ratio per "
        "completion (GSPO, Zheng et al. 2025). TRL name.",
    )
    epsilon: float = Field(0.2, gt=0, description="Lower clip range: ratio >= 1 - epsilon (PPO).")
    epsilon_high: float | None = Field(
        None,
        description="Upper clip range (clip-higher, DAPO, Yu et al. 2025: 0.28); default: epsilon.",
    )
    beta: float = Field(
        0.0, ge=0, description="KL coefficient to the frozen reference model; 0 loads no reference."
    )
    kl_estimator: Literal["k3", "k1"] = Field(
        "k3", description="Per-token KL estimator (Schulman 2020): 'k3' unbiased low-variance, 'k1' log-ratio."
    )
    num_iterations: int = Field(
        1, ge=1, description="Optimizer passes over each batch of rollouts (mu in GRPO); >1 reuses them "
        "with stored old logprobs and PPO clipping.",
    )
    token_credit: TokenCreditName = Field(
        "uniform",
        description="How a completion's advantage becomes per-token advantages: 'uniform' copies it "
        "to every token; 'top_entropy' trains only on the top-q entropy tokens (Wang et al. 2025).",
    )
    top_entropy_quantile: float = Field(
        1.0, gt=0, le=1,
        description="Fraction of highest-entropy tokens kept (TRL name; Wang et al. 2025 use 0.2). "
        "Values below 1 switch token_credit to 'top_entropy'.",
    )
    mask_truncated_completions: bool = Field(
        False, description="Exclude completions cut at max_completion_length from the loss (DAPO overlong filtering)."
    )
    reward_weights: list[float] | None = Field(
        None, description="One weight per verifier for the total reward (TRL name); default all 1.0."
    )
    advantage_eps: float = Field(1e-4, gt=0, description="Added to the std before dividing (TRL uses 1e-4).")

    @property
    def clip_high(self) -> float:
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    @model_validator(mode="after")
    def _resolve(self) -> AlgorithmConfig:
        if self.top_entropy_quantile < 1.0 and self.token_credit == "uniform":
            # TRL turns entropy masking on by this field alone; do the same instead of silently ignoring it.
            object.__setattr__(self, "token_credit", "top_entropy")
        return self


class VerifierSpec(_Section):
    """One reward function: a verifier registry name and its parameters."""

    name: str = Field(description="Verifier registry name: exact, numeric, fuzzy_numeric, math, regex_format, reasoning_gym.")
    params: dict[str, Any] = Field(default_factory=dict, description="Verifier parameters (see its docs).")
    label: str | None = Field(None, description="Name used in metrics (reward/<label>_mean); default: name.")

    @property
    def key(self) -> str:
        return self.label or self.name


class TrainingConfig(_Section):
    """Optimisation."""

    max_steps: int = Field(100, ge=1, description="Training steps; one step = one batch of rollouts.")
    prompts_per_step: int = Field(
        4, ge=1, description="Prompts sampled per step; completions per step = prompts_per_step x "
        "num_generations (TRL: per_device_train_batch_size / num_generations).",
    )
    micro_batch_size: int = Field(
        64, ge=1, description="Completions per forward/backward pass; gradients accumulate over the step."
    )
    learning_rate: float = Field(1e-6, gt=0, description="AdamW learning rate (TRL name).")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1 (first-moment decay).")
    adam_beta2: float = Field(0.999, ge=0, lt=1, description="AdamW beta2 (second-moment decay).")
    max_grad_norm: float = Field(1.0, ge=0, description="Gradient clipping by global norm; 0 disables it.")
    warmup_steps: int = Field(0, ge=0, description="Linear learning-rate warm-up steps, then constant.")


class CheckpointConfig(_Section):
    """Where and how often a run saves what it needs to resume."""

    output_dir: str = Field("runs/latest", description="Run directory: checkpoints, metrics.jsonl, rollouts.")
    save_steps: int = Field(50, ge=0, description="Save a checkpoint every N steps (and at the end); 0: only at the end.")
    save_total_limit: int = Field(2, ge=1, description="Keep at most this many checkpoints (oldest removed first).")


class ExperimentConfig(_Section):
    """Everything one training run needs. YAML and JSON files load into it (`load_config`)."""

    name: str = Field("experiment", description="Human-readable run name.")
    seed: int = Field(0, description="Seed for sampling prompts and completions and for initialisation.")
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    verifiers: list[VerifierSpec] = Field(
        default_factory=lambda: [VerifierSpec(name="exact")],
        description="Reward functions; rewards are combined with algorithm.reward_weights.",
    )
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)

    @model_validator(mode="after")
    def _check_combinations(self) -> ExperimentConfig:
        from trainer.algorithms import ADVANTAGES, TOKEN_CREDIT
        from trainer.verifiers import VERIFIERS, build_verifier

        alg = self.algorithm
        if alg.advantage_estimator not in ADVANTAGES:
            raise ValueError(
                f"algorithm.advantage_estimator {alg.advantage_estimator!r} is unknown; "
                f"valid: {', '.join(ADVANTAGES.names())}"
            )
        if alg.token_credit not in TOKEN_CREDIT:
            raise ValueError(
                f"algorithm.token_credit {alg.token_credit!r} is unknown; valid: {', '.join(TOKEN_CREDIT.names())}"
            )
        if not self.verifiers:
            raise ValueError("verifiers is empty: add at least one, e.g. {name: exact}")
        keys = [v.key for v in self.verifiers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"verifier labels must be unique, got {keys}: set 'label' to tell them apart")
        for spec in self.verifiers:
            if spec.name not in VERIFIERS:
                raise ValueError(f"verifier {spec.name!r} is unknown; valid: {', '.join(VERIFIERS.names())}")
            build_verifier(spec.name, spec.params)  # bad params fail here, when the form is submitted
        if alg.reward_weights is not None and len(alg.reward_weights) != len(self.verifiers):
            raise ValueError(
                f"algorithm.reward_weights has {len(alg.reward_weights)} entries but there are "
                f"{len(self.verifiers)} verifiers: give one weight per verifier"
            )
        if alg.clip_high < alg.epsilon * 0.5:
            raise ValueError("algorithm.epsilon_high is far below epsilon; clip-higher needs epsilon_high >= epsilon")
        if alg.advantage_estimator == "rloo" and self.rollout.num_generations < 2:
            raise ValueError("rloo needs rollout.num_generations >= 2")
        if alg.advantage_estimator != "grpo" and alg.scale_rewards != "group":
            raise ValueError(
                f"algorithm.scale_rewards only applies to advantage_estimator 'grpo' (got "
                f"{alg.advantage_estimator!r}); leave it at 'group'"
            )
        return self

    @property
    def completions_per_step(self) -> int:
        return self.training.prompts_per_step * self.rollout.num_generations

    @property
    def reward_weights(self) -> list[float]:
        return self.algorithm.reward_weights or [1.0] * len(self.verifiers)


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
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {err}") from None
    return config_from_dict(data or {}, source=str(p))


def config_schema() -> dict[str, Any]:
    """The JSON schema the web form is generated from."""
    return ExperimentConfig.model_json_schema()

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
import string
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from trainer.bounds import (
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_SEED,
    BoundedModel,
    UnsafeInput,
    safe_yaml_load,
    strict_json_loads,
)
from trainer.errors import ConfigError
from trainer.rubrics.config import RubricConfig
from trainer.user_regex import PatternError, check_user_pattern


class _Section(BoundedModel):
    """A config section: unknown keys refused, every value bounded (trainer/bounds.py)."""


class ModelConfig(_Section):
    """Which policy to train. Any local Hugging Face causal-LM directory works."""

    name_or_path: str = Field(
        "tiny:addition",
        description="Local model directory loaded with AutoModelForCausalLM.from_pretrained, or "
        "'tiny:addition' for the built-in tiny model (built and warm-started locally on first use; "
        "see `rlvr init-model`). Nothing is downloaded from a hub. Configs from the web app and API may name "
        "only tiny: models, 'checkpoint:<id>' of a run in the same project, or folders under RLVR_MODEL_ROOTS.",
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="Parameter dtype. float32 on CPU; bfloat16 is the usual choice on GPUs."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Where to run: 'auto' picks a CUDA GPU when one is present, else the CPU."
    )
    attn_implementation: Literal["auto", "eager", "sdpa", "flash_attention_2"] = Field(
        "auto",
        description="Attention kernel passed to from_pretrained: 'auto' lets transformers choose (sdpa); "
        "'flash_attention_2' needs the flash-attn package and a CUDA GPU.",
    )
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in the backward pass: less memory, about 30% more compute."
    )
    autocast_bf16: bool = Field(
        False,
        description="Run forward passes under bfloat16 autocast on CUDA while keeping float32 master "
        "weights (ignored on CPU).",
    )
    lora_r: int = Field(
        0, ge=0, le=1024,
        description="LoRA rank (Hu et al. 2021, through peft); 0 trains all weights. With LoRA the KL "
        "reference is the base model with the adapter disabled (no second copy in memory).",
    )
    lora_alpha: float = Field(16.0, gt=0, le=10_000, description="LoRA scaling numerator: the update is (alpha / r) * B A.")
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the LoRA branch input.")
    lora_target_modules: Annotated[list[str], Field(max_length=MAX_LIST_ITEMS)] | Literal["all-linear"] = Field(
        "all-linear",
        description="Modules that get adapters: 'all-linear' or names such as ['q_proj', 'v_proj'].",
    )


class DataConfig(_Section):
    """Where prompts and reference answers come from, and how a prompt is shown to the model."""

    source: Literal["demo", "file", "reasoning_gym"] = Field(
        "demo",
        description="'demo': built-in 2-digit addition; 'file': a local JSONL/JSON/CSV/Parquet file; "
        "'reasoning_gym': a procedural task generated locally by the reasoning-gym package.",
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
    size: int = Field(1000, ge=1, le=10_000_000, description="Number of prompts to generate (demo and reasoning_gym).")
    data_seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed for generating procedural prompts (demo, reasoning_gym).")
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

    engine: Literal["hf", "vllm"] = Field(
        "hf",
        description="Rollout engine: 'hf' (transformers, CPU or GPU) or 'vllm' (vLLM offline API colocated "
        "with the trainer; CUDA only, optional extra `pip install 'rlvr-studio[vllm]'`).",
    )
    vllm_gpu_memory_utilization: float = Field(
        0.3, gt=0, le=0.95,
        description="Fraction of GPU memory vLLM may take for weights and KV cache (engine 'vllm'); the "
        "rest is left to training. TRL's colocate default is 0.3.",
    )
    num_generations: int = Field(
        8, ge=2, le=1024, description="Completions sampled per prompt: the GRPO group size G (TRL name)."
    )
    max_completion_length: int = Field(
        16, ge=1, le=131_072, description="Maximum new tokens per completion; longer ones end with finish reason 'length'."
    )
    temperature: float = Field(1.0, gt=0, le=100, description="Sampling temperature (TRL name).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (TRL name).")
    top_k: int = Field(0, ge=0, le=1_000_000, description="Top-k sampling; 0 disables it.")
    generation_batch_size: int = Field(
        256, ge=1, le=65_536, description="Completions generated together in one batch (bounds memory)."
    )
    seed_per_prompt: bool = Field(
        False,
        description="Sample each group with its own torch.Generator seeded from (seed, step, global group "
        "index), so a group's completions do not depend on which process generates it or what else is in the "
        "batch (one generation call per group). Forced on when training.num_processes > 1, which makes a "
        "data-parallel run sample exactly what a 1-process run with this option samples.",
    )


AdvantageName = str
TokenCreditName = str


class AlgorithmConfig(_Section):
    """The GRPO-family objective, one registry name per axis (see trainer/algorithms/)."""

    advantage_estimator: AdvantageName = Field(
        "grpo",
        description="'grpo' (group mean/std, Shao et al. 2024), 'dr_grpo' (no std, Liu et al. 2025), "
        "'rloo' (leave-one-out baseline, Ahmadian et al. 2024), 'reinforce_pp' (group mean, then "
        "whitening over all the step's completion tokens, each completion weighted by its length, as verl's "
        "reinforce_plus_plus_baseline; Hu 2025).",
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
    importance_sampling_level: Literal["token", "sequence", "segment"] = Field(
        "token",
        description="'token': PPO ratio per token; 'sequence': one length-normalised ratio per "
        "completion (GSPO, Zheng et al. 2025), in the paper's GSPO-token form so per-token advantages "
        "(token credit, teacher fusion) keep their per-token gradient. TRL name. 'segment': one "
        "length-normalised ratio per entropy-derived segment, with a soft entropy saliency weight (HISPO; "
        "see the segment_* fields).",
    )
    epsilon: float = Field(0.2, gt=0, le=10, description="Lower clip range: ratio >= 1 - epsilon (PPO).")
    epsilon_high: float | None = Field(
        None, gt=0, le=10,
        description="Upper clip range (clip-higher, DAPO, Yu et al. 2025: 0.28); default: epsilon.",
    )
    beta: float = Field(
        0.0, ge=0, le=100, description="KL coefficient to the frozen reference model; 0 loads no reference."
    )
    kl_estimator: Literal["k3", "k1"] = Field(
        "k3", description="Per-token KL estimator (Schulman 2020): 'k3' unbiased low-variance, 'k1' log-ratio."
    )
    num_iterations: int = Field(
        1, ge=1, le=64, description="Optimizer passes over each batch of rollouts (mu in GRPO); >1 reuses them "
        "with stored old logprobs and PPO clipping.",
    )
    token_credit: TokenCreditName = Field(
        "uniform",
        description="How a completion's advantage becomes per-token advantages: 'uniform' copies it "
        "to every token; 'top_entropy' trains only on the top-q entropy tokens (Wang et al. 2025); 'ecr' "
        "redistributes it over tokens by the teacher-minus-policy gap, entropy-damped and zero-sum per "
        "completion (UECR-GRPO's ECR; needs a teacher, see the teacher section).",
    )
    top_entropy_quantile: float = Field(
        1.0, gt=0, le=1,
        description="Fraction of highest-entropy tokens kept (TRL name; Wang et al. 2025 use 0.2). "
        "Values below 1 switch token_credit to 'top_entropy'.",
    )
    mask_truncated_completions: bool = Field(
        False, description="Exclude completions cut at max_completion_length from the loss (DAPO overlong filtering)."
    )
    reward_weights: list[Annotated[float, Field(ge=-1000, le=1000)]] | None = Field(
        None, max_length=MAX_LIST_ITEMS, description="One weight per verifier for the total reward (TRL name); default all 1.0."
    )
    advantage_eps: float = Field(1e-4, gt=0, le=1, description="Added to the std before dividing (TRL uses 1e-4).")
    # Clip rule and importance-sampling unit (issue 5 part 4; trainer/algorithms/policy_losses.py, segments.py).
    clip_mode: Literal["fixed", "gapo"] = Field(
        "fixed",
        description="'fixed': the same clip range [1 - epsilon, 1 + epsilon_high] for every completion (PPO). "
        "'gapo': advantage-adaptive clip range per completion, wider for completions whose |advantage| is "
        "large relative to the step (rare correct answers in low-success groups), GAPO; the form is in gapo_max_scale's help.",
    )
    gapo_max_scale: float = Field(
        3.0, ge=1, le=100,
        description="GAPO: a completion's clip range is epsilon x s (lower) and epsilon_high x s "
        "(upper) with s = clamp(|A_i| / rms(A), 1, gapo_max_scale), rms over the step's non-zero advantages. "
        "The abstract gives no formula; this one widens the range in proportion to the learning signal.",
    )
    dual_clip: bool = Field(
        False,
        description="Dual-clip PPO (Ye et al. 2020, 'Mastering Complex Control in MOBA Games'): for negative "
        "advantages the per-token loss is capped at dual_clip_c x |A|, so a token whose ratio exploded "
        "cannot dominate the step. As verl's clip_ratio_c.",
    )
    dual_clip_c: float = Field(
        3.0, gt=1, le=1000, description="Dual-clip bound c (> 1; Ye et al. 2020 and verl use 3)."
    )
    segment_boundary_quantile: float = Field(
        0.9, gt=0, lt=1,
        description="HISPO segments: a token starts a new segment when its sampling entropy is at "
        "or above this quantile of the step's completion-token entropies (0.9: the top 10% 'forking' tokens "
        "may open segments). The abstract does not give the boundary rule; this is ours.",
    )
    segment_min_tokens: int = Field(
        4, ge=1, le=131_072,
        description="HISPO segments: minimum tokens per segment; a high-entropy token closer than this to the "
        "previous boundary does not open a new one (avoids one-token segments, i.e. token-level IS).",
    )
    segment_saliency_temperature: float = Field(
        1.0, ge=0, le=100,
        description="HISPO soft saliency: segment weight w_s proportional to exp(mean entropy of s / T), "
        "rescaled so a completion's token-weighted mean weight is 1. 0 turns saliency off (all weights 1).",
    )

    # Teacher-guided token credit and answer-span masking (issue 5 parts 2-3; trainer/algorithms/token_credit.py,
    # answer_span.py).
    ecr_strength: float = Field(
        1.0, gt=0, le=100,
        description="ECR (UECR-GRPO), token_credit 'ecr': token t of a completion with "
        "advantage A gets A x w_t, w_t = 1 + s (d_t - mean d), d_t = sign(A) (log pi_teacher - log pi_old)(y_t) "
        "x (1 - H_teacher,t / log V); s = ecr_strength, lowered per completion when needed so that every "
        "w_t >= ecr_min_weight. The weights average 1, so each completion keeps its total credit and every "
        "token keeps the sign of A. The abstract gives no formula; this is ours.",
    )
    ecr_min_weight: float = Field(
        0.1, ge=0, lt=1,
        description="ECR: the smallest token weight w_t the redistribution may give (> 0 keeps every "
        "token's sign strictly; 0 allows a token's credit to reach exactly 0).",
    )
    answer_span_mask: bool = Field(
        False,
        description="OM-GRPO answer-span masking: take the tokens of the answer span "
        "out of the loss, so the answer-level reward trains the reasoning tokens only. The span is the last "
        "match of answer_span_pattern in the completion text; a token is masked when its characters overlap it.",
    )
    answer_span_pattern: str = Field(
        r"-?\d+(?:[.,/]\d+)*",
        description="Regular expression for the answer span (answer_span_mask; OM-GRPO). The LAST match "
        "in the completion is the answer; with a group named 'answer' (or exactly one group) only that "
        "group's characters are masked. Default: the last number. For boxed answers: '\\\\boxed\\{(?P<answer>[^}]*)\\}'.",
    )

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

    name: str = Field(max_length=100, description="Verifier registry name: exact, numeric, fuzzy_numeric, math, regex_format, reasoning_gym.")
    params: dict[str, Any] = Field(default_factory=dict, description="Verifier parameters (see its docs).")
    label: str | None = Field(None, max_length=100, description="Name used in metrics (reward/<label>_mean); default: name.")

    @property
    def key(self) -> str:
        return self.label or self.name


class TrainingConfig(_Section):
    """Optimisation."""

    max_steps: int = Field(100, ge=1, le=10_000_000, description="Training steps; one step = one batch of rollouts.")
    prompts_per_step: int = Field(
        4, ge=1, le=4096, description="Prompts sampled per step; completions per step = prompts_per_step x "
        "num_generations (TRL: per_device_train_batch_size / num_generations).",
    )
    micro_batch_size: int = Field(
        64, ge=1, le=65_536, description="Completions per forward/backward pass; gradients accumulate over the step."
    )
    memory_budget_gb: float | None = Field(
        None, gt=0, le=16_384,
        description="Peak memory per process (GiB) a step may use; null: no limit. When set, the run sizes "
        "itself at start (trainer/memory.py): the micro-batch size (at most micro_batch_size; gradient "
        "accumulation covers the rest of the step) from a forward/backward probe at the longest prompt plus "
        "max_completion_length, and the hf engine's generation batches (at most rollout.generation_batch_size) "
        "from the model's KV-cache bytes per token. On CUDA the probe is measured by the allocator; on CPU it is "
        "estimated from the activations saved for backward. Reported as perf/micro_batch_size and "
        "perf/generation_batch_size. The update does not depend on the split, except with loss_type 'bnpo' "
        "(a mean per micro-batch, as TRL defines it).",
    )
    learning_rate: float = Field(1e-6, gt=0, le=1, description="AdamW learning rate (TRL name).")
    weight_decay: float = Field(0.0, ge=0, le=10, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1 (first-moment decay).")
    adam_beta2: float = Field(0.999, ge=0, lt=1, description="AdamW beta2 (second-moment decay).")
    max_grad_norm: float = Field(1.0, ge=0, le=1e6, description="Gradient clipping by global norm; 0 disables it.")
    warmup_steps: int = Field(0, ge=0, le=10_000_000, description="Linear learning-rate warm-up steps, then constant.")
    num_processes: int = Field(
        1, ge=1, le=64,
        description="Data-parallel processes on this host (torch.distributed under torchrun; gloo on CPU, "
        "NCCL on CUDA, one GPU each): every process draws the same prompts_per_step prompts and generates, "
        "scores and trains on its contiguous share of the groups; gradients and step-wide loss normalisers "
        "are summed over processes, so the update equals the 1-process update on the same global batch "
        "(DDP semantics, Li et al. 2020 'PyTorch Distributed'). prompts_per_step must be divisible by it.",
    )
    collective_timeout_s: int = Field(
        120, ge=10, le=3600,
        description="With num_processes > 1: how long a collective (gradient all-reduce, metric gather) waits "
        "for a silent process before the run fails (a process that exits is noticed at once). Periodic "
        "evaluation runs in every process, so no process waits for it.",
    )
    fsdp: bool = Field(
        False,
        description="With num_processes >= 2: shard the policy's (and the KL reference's) parameters, gradients "
        "and optimizer state over the processes (PyTorch FSDP2, fully_shard per decoder layer; Zhao et al. "
        "2023 'PyTorch FSDP'), for models that do not fit one device. The update is the same as without it "
        "(gradients summed over processes); checkpoints hold full weights in the usual format, so a run can "
        "resume with or without fsdp. Not with LoRA or the vllm engine yet.",
    )


class CheckpointConfig(_Section):
    """Where and how often a run saves what it needs to resume."""

    output_dir: str = Field("runs/latest", description="Run directory: checkpoints, metrics.jsonl, rollouts.")
    save_steps: int = Field(50, ge=0, le=10_000_000, description="Save a checkpoint every N steps (and at the end); 0: only at the end.")
    save_total_limit: int = Field(2, ge=1, le=1000, description="Keep at most this many checkpoints (oldest removed first).")


AnswerExtractMode = Literal["full", "first_line", "boxed", "last_number", "regex", "answer_tag"]  # = verifiers.extract


class ShapingConfig(_Section):
    """Rewards without labels (majority vote, soft consensus) and reward / advantage shaping (DAPO overlong
    punishment, length penalty, Cue-GRPO rarity redistribution), applied after the verifiers score a step."""

    label_free_reward: Literal["none", "majority_vote", "soft_consensus"] = Field(
        "none",
        description="'majority_vote': test-time RL reward (TTRL-style majority-vote pseudo-label): 1 for a completion whose extracted answer equals the most frequent answer of its group "
        "(ties: the answer seen first), else 0. 'soft_consensus': the share of the group giving the same answer "
        "(OM-GRPO). Needs no reference answer, so it works with data.answer_field null.",
    )
    majority_vote_combine: Literal["replace", "add"] = Field(
        "replace",
        description="'replace': the label-free reward replaces the verifiers' total (as TTRL; the verifiers "
        "still run, so rollout/accuracy keeps measuring real accuracy when answers exist). 'add': it is added.",
    )
    majority_vote_weight: float = Field(1.0, gt=0, le=1000, description="Weight of the label-free reward.")
    answer_extract: AnswerExtractMode = Field(
        "last_number",
        description="How the answer is read from a completion for voting and for the 'answer_form' rarity cue: "
        "the verifiers' extraction modes (full, first_line, boxed, last_number, regex, answer_tag).",
    )
    answer_pattern: str | None = Field(
        None, description="Regular expression for answer_extract='regex' (last match; group 'answer' or 1)."
    )
    answer_tag: str = Field("answer", description="Tag name for answer_extract='answer_tag'.")
    overlong_buffer: int = Field(
        0, ge=0, le=131_072,
        description="DAPO soft overlong punishment (Yu et al. 2025): completions longer than "
        "max_completion_length - overlong_buffer tokens lose reward linearly, reaching -overlong_penalty_factor "
        "at max_completion_length (as verl's overlong_buffer). 0 turns it off. DAPO uses 4096 of 20480.",
    )
    overlong_penalty_factor: float = Field(
        1.0, gt=0, le=1000, description="DAPO soft overlong punishment: the penalty at max_completion_length."
    )
    length_penalty: float = Field(
        0.0, ge=0, le=1000,
        description="Plain length penalty: reward -= length_penalty x completion tokens / max_completion_length "
        "(the linear penalty that DLER and 'think fast and right' refine). 0 turns it off.",
    )
    rarity_redistribution: bool = Field(
        False,
        description="Cue-GRPO rarity-aware credit redistribution: among a group's correct "
        "completions with positive advantage, cluster by a deterministic cue (rarity_cue) and give each cluster "
        "an equal share of the group's positive advantage mass (split evenly inside it), so rare solution forms "
        "get more credit. The group's total positive mass is unchanged.",
    )
    rarity_cue: Literal["answer_form", "completion", "regex"] = Field(
        "answer_form",
        description="The 'strategy cue' that clusters correct completions: 'answer_form' the extracted answer's "
        "surface form (whitespace removed, lower-cased: '1/2' and '0.5' differ); 'completion' the whole "
        "completion (whitespace collapsed); 'regex' the set of distinct matches of rarity_cue_pattern "
        "(e.g. '(?i)induction|modulo|substitut').",
    )
    rarity_cue_pattern: str | None = Field(None, description="Regular expression for rarity_cue='regex'.")
    rarity_strength: float = Field(
        1.0, ge=0, le=1,
        description="Blend between the plain advantages (0) and the rarity-redistributed ones (1).",
    )


class EvaluationConfig(_Section):
    """Periodic evaluation during training: benchmark metrics (Avg@k, Pass@k) every few steps, reported as
    eval/<benchmark>/<metric> in that step's metrics."""

    # issue 7; trainer/evaluate.py. The seeds' training curves: Avg@k 001:L3, Pass@k 001:L13.

    eval_every: int = Field(
        0, ge=0, le=10_000_000,
        description="Evaluate the current policy every N steps (after the step's update); 0 turns it off. "
        "RLVR papers plot benchmark accuracy over training steps (e.g. Pass@k during RL).",
    )
    benchmarks: list[str | dict[str, Any]] = Field(
        default_factory=list, max_length=64,
        description="Benchmarks: built-in names ('builtin:addition', 'builtin:chain_sum-easy', ...; see "
        "trainer/eval_suite.py), paths to benchmark YAML/JSON files, or inline BenchmarkConfig mappings.",
    )
    n_samples: int | None = Field(
        None, ge=1, le=1024,
        description="Override each benchmark's n_samples (the n of Avg@n / Pass@k, Chen et al. 2021) to keep "
        "periodic evaluation cheap; null keeps the benchmark's own.",
    )
    max_problems: int | None = Field(
        None, ge=1, le=10_000_000, description="Evaluate only the first N problems of each benchmark during training."
    )


class RolloutBudgetConfig(_Section):
    """Rollout budget and prompt selection (VIGOR, SARA, DAPO dynamic sampling, ThinkPrior). The defaults are
    plain GRPO: uniform prompts, num_generations each."""

    # issue 5 part 5; trainer/collect.py, trainer/allocation.py, trainer/data/beta_sampler.py.

    allocator: str = Field(
        "fixed",
        description="How many completions each prompt gets: 'fixed' (num_generations each, GRPO); 'vigor' "
        "(a few each, then extra ones to the highest reward-variance groups until a fixed budget, VIGOR); 'early_abandon' (stop a group after a unanimous probe of "
        "early_abandon_after completions, SARA); 'sara' (SARA's Beta-posterior sequential test: a "
        "short probe, then abandon, complete or sample more by the probability that the group ends effective).",
    )
    dynamic_sampling: bool = Field(
        False,
        description="DAPO dynamic sampling (Yu et al. 2025): drop groups whose rewards "
        "are all equal (no gradient) and draw more prompts until prompts_per_step informative groups or "
        "max_generation_rounds rounds.",
    )
    max_generation_rounds: int = Field(
        3, ge=1, le=100,
        description="Dynamic sampling: most rounds of prompt drawing per step (DAPO's max_num_gen_batches); "
        "when they run out the step trains on the informative groups found so far.",
    )
    vigor_initial_rollouts: int = Field(
        4, ge=2, le=1024, description="VIGOR: completions every prompt starts with (at least 2 to see a variance)."
    )
    vigor_rollout_budget: int | None = Field(
        None, ge=1, le=4096 * 1024,
        description="VIGOR: total completions per step; default prompts_per_step x num_generations "
        "(the same budget as GRPO).",
    )
    vigor_increment: int = Field(
        2, ge=1, le=1024, description="VIGOR: completions added to a chosen group at a time."
    )
    vigor_rounds: int = Field(
        2, ge=1, le=32, description="VIGOR: refinement rounds (one generation call each) that share the budget."
    )
    sara_probe: int = Field(
        2, ge=1, le=1024, description="sara: completions every prompt gets before the sequential test."
    )
    sara_step: int = Field(
        2, ge=1, le=1024, description="sara: completions an undecided group gets per sequential round (one engine call each)."
    )
    sara_abandon_below: float = Field(
        0.2, gt=0, lt=1,
        description="sara: abandon a group whose posterior probability of ending effective (both a correct and an "
        "incorrect completion) falls below this.",
    )
    sara_commit_above: float = Field(
        0.8, gt=0, le=1,
        description="sara: complete a group to num_generations once that probability reaches this.",
    )
    early_abandon_after: int = Field(
        4, ge=2, le=1024,
        description="early_abandon (SARA's short probe): completions generated before deciding; a group "
        "whose probe rewards are all equal is abandoned there (must be below num_generations).",
    )
    prompt_sampler: str = Field(
        "uniform",
        description="Which prompts a step draws: 'uniform' (seeded epochs, the usual data loader); "
        "'beta_learnability' (a Beta posterior per prompt from observed successes, optionally "
        "initialised from an anchor model's pass rates; picks the highest expected learnability p(1-p), "
        "ThinkPrior).",
    )
    prior_file: str | None = Field(
        None,
        description="beta_learnability: a JSON object {prompt id: pass rate} or JSONL lines {\"id\": ..., "
        "\"pass_rate\": ...} from an anchor model's verifier-scored pass rates (ThinkPrior's offline "
        "prior); prompts not listed start from Beta(1, 1).",
    )
    prior_strength: float = Field(
        8.0, gt=0, le=1e6,
        description="beta_learnability: pseudo-counts the anchor pass rate p is worth: Beta(1 + s p, 1 + s (1 - p)) "
        "(ThinkPrior does not give its form).",
    )
    thompson: bool = Field(
        True,
        description="beta_learnability: score each prompt with p(1-p) at a p drawn from its posterior "
        "(Thompson sampling, explores); false: the posterior expectation of p(1-p) (greedy).",
    )


class TeacherConfig(_Section):
    """Teacher signals (on-policy distillation, OPD / OPSD): an external
    teacher (OPD) or the policy shown privileged context (OPSD) scores every sampled token; fusion decides
    how that score meets the verifier reward. Defaults: no teacher."""

    # issue 5 parts 1-2; trainer/teacher.py, trainer/algorithms/fusion.py.

    name_or_path: str | None = Field(
        None,
        description="External teacher (mode 'external'): a local Hugging Face causal-LM directory that uses "
        "the policy's tokenizer, or 'tiny:addition-teacher' (the stronger built-in tiny teacher, built by "
        "`rlvr init-model --teacher`). It scores the student's sampled tokens: on-policy distillation "
        "(OPD). null: no external teacher.",
    )
    mode: Literal["external", "self"] = Field(
        "external",
        description="'external': the model at name_or_path is the teacher (OPD). 'self': the policy itself, "
        "shown privileged context (the reference answer) through privileged_template, is the teacher "
        "(on-policy self-distillation, OPSD); no second model is loaded.",
    )
    privileged_template: str = Field(
        "Reference answer: {answer}\n{prompt}",
        description="OPSD (mode 'self'): the teacher's view of a problem, a Python format string over "
        "the raw problem text {prompt} and its reference answer {answer}; the result is rendered like a "
        "student prompt (data.prompt_template or the chat template), then scores the student's tokens.",
    )
    fusion: Literal["none", "opd", "additive", "modulated", "puu"] = Field(
        "none",
        description="How the teacher meets the verifier. 'none': the teacher is only "
        "recorded (dashboard channels, teacher/* metrics) unless token_credit is 'ecr'. 'opd': per-token "
        "advantage opd_coef x (log pi_teacher - log pi_old) on the sampled tokens, the verifier is ignored "
        "(reverse KL on student samples) until opd_until_step. 'additive': A_t = A_verifier,t + "
        "additive_coef x gap_t (weighted-additive). 'modulated': A_t = A_verifier,t x w_t "
        "with w_t = clamp(exp(modulation_strength x sign(A) x gap_t), 1/modulation_max, modulation_max) "
        "(teacher-modulated rescaling). 'puu': reward + puu_coef x length-normalised teacher gap, "
        "combined before group normalisation (PUU of UECR-GRPO; pair with token_credit 'ecr').",
    )
    opd_coef: float = Field(
        1.0, gt=0, le=1000, description="fusion 'opd': scale of the per-token reverse-KL advantage (1 = plain OPD)."
    )
    opd_until_step: int | None = Field(
        None, ge=1, le=10_000_000,
        description="OPD-then-RL: with fusion 'opd', steps 1..opd_until_step distil from the teacher "
        "and later steps train on the verifier reward alone (the paper switches on the OPD validation score; "
        "here at a fixed step). null: OPD for the whole run.",
    )
    additive_coef: float = Field(
        0.1, gt=0, le=1000,
        description="fusion 'additive': lambda in A_t = A_verifier + lambda x gap_t (the OPD paper shows a "
        "fixed lambda can collapse entropy when the gap dwarfs the bounded verifier advantage).",
    )
    modulation_strength: float = Field(
        1.0, gt=0, le=1000, description="fusion 'modulated': alpha in w_t = exp(alpha x sign(A) x gap_t), clamped."
    )
    modulation_max: float = Field(
        2.0, gt=1, le=1000,
        description="fusion 'modulated': w_t is clamped to [1/modulation_max, modulation_max], so the teacher "
        "rescales a token's credit but never flips its sign.",
    )
    puu_coef: float = Field(
        0.1, gt=0, le=1000,
        description="fusion 'puu' (UECR-GRPO's Path-Utility Unification): reward + puu_coef x "
        "mean over the completion's tokens of (log pi_teacher - log pi_old), before group normalisation; "
        "the sampling policy is the anchor.",
    )

    @property
    def enabled(self) -> bool:
        """Whether a teacher scores the rollouts (an external model, or the policy with privileged context)."""
        return self.mode == "self" or self.name_or_path is not None


class ExperimentConfig(_Section):
    """Everything one training run needs. YAML and JSON files load into it (`load_config`)."""

    name: str = Field("experiment", max_length=MAX_NAME_CHARS, description="Human-readable run name.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed for sampling prompts and completions and for initialisation.")
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    verifiers: list[VerifierSpec] = Field(
        default_factory=lambda: [VerifierSpec(name="exact")], max_length=64,
        description="Reward functions; rewards are combined with algorithm.reward_weights.",
    )
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    shaping: ShapingConfig = Field(default_factory=ShapingConfig)
    budget: RolloutBudgetConfig = Field(default_factory=RolloutBudgetConfig)
    teacher: TeacherConfig = Field(default_factory=TeacherConfig)
    rubric: RubricConfig | None = Field(
        None,
        description="A rubric as an extra reward (trainer/rubrics/): criteria scored by rules or an LLM judge, "
        "aggregated by 'weighted_sum' or 'rank' (RLVR^2) and added to the verifiers' "
        "total with rubric.reward_weight; null: no rubric.",
    )

    @model_validator(mode="after")
    def _check_budget(self) -> ExperimentConfig:
        """Allocator / prompt sampler names and their sizes against the group size and batch."""
        from trainer.allocation import ALLOCATORS
        from trainer.data.prompt_samplers import PROMPT_SAMPLERS

        b, G, P = self.budget, self.rollout.num_generations, self.training.prompts_per_step
        if b.allocator not in ALLOCATORS:
            raise ValueError(f"budget.allocator {b.allocator!r} is unknown; valid: {', '.join(ALLOCATORS.names())}")
        if b.prompt_sampler not in PROMPT_SAMPLERS:
            raise ValueError(
                f"budget.prompt_sampler {b.prompt_sampler!r} is unknown; valid: {', '.join(PROMPT_SAMPLERS.names())}"
            )
        if b.allocator == "early_abandon" and b.early_abandon_after >= G:
            raise ValueError(
                f"budget.early_abandon_after ({b.early_abandon_after}) must be below rollout.num_generations ({G}): "
                "the probe is the first part of a group"
            )
        if b.allocator == "sara" and b.sara_abandon_below >= b.sara_commit_above:
            raise ValueError(
                f"budget.sara_abandon_below ({b.sara_abandon_below}) must be below sara_commit_above "
                f"({b.sara_commit_above}): between them a group samples more before it is decided"
            )
        if b.allocator == "vigor" and (b.vigor_rollout_budget or P * G) < b.vigor_initial_rollouts * P:
            raise ValueError(
                f"budget.vigor_rollout_budget ({b.vigor_rollout_budget or P * G}) is below vigor_initial_rollouts x "
                f"prompts_per_step ({b.vigor_initial_rollouts * P}): raise the budget or lower the initial rollouts"
            )
        if b.prior_file is not None and b.prompt_sampler != "beta_learnability":
            raise ValueError("budget.prior_file is only read by prompt_sampler 'beta_learnability': set it or drop the file")
        return self

    @model_validator(mode="after")
    def _check_rubric(self) -> ExperimentConfig:
        if self.rubric is None:
            return self
        clashing = [v.key for v in self.verifiers if v.key == "rubric" or v.key.startswith("rubric/")]
        if clashing:
            raise ValueError(f"verifier label(s) {clashing} clash with the rubric's reward keys: relabel them")
        if self.rubric.uses_judge and self.rollout.engine != "hf":
            raise ValueError("rubric judge criteria run through the 'hf' engine: set rollout.engine to 'hf'")
        return self

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

    @model_validator(mode="after")
    def _check_shaping(self) -> ExperimentConfig:
        """Clip rules, IS units and shaping that cannot work together or with this rollout length."""
        from trainer.errors import VerifierError
        from trainer.verifiers.extract import Extractor

        alg, sh, max_len = self.algorithm, self.shaping, self.rollout.max_completion_length
        if alg.clip_mode == "gapo" and alg.epsilon * alg.gapo_max_scale >= 1:
            raise ValueError(
                f"algorithm.epsilon x gapo_max_scale = {alg.epsilon * alg.gapo_max_scale:g} >= 1 would let GAPO's "
                "lower clip bound 1 - epsilon x s reach 0: lower gapo_max_scale or epsilon"
            )
        if alg.importance_sampling_level == "segment" and alg.segment_min_tokens >= max_len:
            raise ValueError(
                f"algorithm.segment_min_tokens ({alg.segment_min_tokens}) >= rollout.max_completion_length "
                f"({max_len}): every completion would be one segment; use importance_sampling_level 'sequence' "
                "(GSPO) or lower segment_min_tokens"
            )
        if sh.overlong_buffer >= max_len:
            raise ValueError(
                f"shaping.overlong_buffer ({sh.overlong_buffer}) must be below rollout.max_completion_length "
                f"({max_len}): it is the last stretch of tokens before the limit (DAPO: 4096 of 20480)"
            )
        if sh.label_free_reward != "none" or sh.rarity_cue == "answer_form":
            try:
                Extractor(sh.answer_extract, sh.answer_pattern, sh.answer_tag)
            except VerifierError as err:
                raise ValueError(f"shaping.answer_extract: {err}") from None
        if sh.label_free_reward != "none" and (self.budget.dynamic_sampling or self.budget.allocator != "fixed"):
            raise ValueError(
                "shaping.label_free_reward is applied to whole groups after collection, but budget."
                f"{'dynamic_sampling' if self.budget.dynamic_sampling else 'allocator ' + repr(self.budget.allocator)} "
                "decides on the verifiers' rewards while generating: turn dynamic_sampling off and use "
                "allocator 'fixed' with a label-free reward"
            )
        shaped_keys = {"majority_vote", "soft_consensus", "overlong_penalty", "length_penalty"}
        clash = shaped_keys.intersection(v.key for v in self.verifiers)
        if clash:
            raise ValueError(
                f"verifier label(s) {sorted(clash)} are reserved for shaping terms in the reward breakdown: "
                "give the verifier another label"
            )
        if sh.rarity_cue == "regex":
            if not sh.rarity_cue_pattern:
                raise ValueError("shaping.rarity_cue is 'regex' but rarity_cue_pattern is empty: give a pattern")
            try:
                check_user_pattern(sh.rarity_cue_pattern, what="shaping.rarity_cue_pattern")
            except PatternError as err:
                raise ValueError(str(err)) from None
        elif sh.rarity_cue_pattern is not None:
            raise ValueError("shaping.rarity_cue_pattern is only used with rarity_cue 'regex': remove it or set the cue")
        return self

    @model_validator(mode="after")
    def _check_teacher(self) -> ExperimentConfig:
        """Teacher, fusion, ECR and answer-span settings that cannot work (trainer/teacher.py, fusion.py)."""
        t, alg = self.teacher, self.algorithm
        if t.mode == "self" and t.name_or_path is not None:
            raise ValueError(
                "teacher.mode 'self' uses the policy as its own teacher (OPSD): remove teacher.name_or_path, "
                "or set mode 'external' to distil from that model"
            )
        uses = [f"teacher.fusion {t.fusion!r}"] if t.fusion != "none" else []
        uses += ["algorithm.token_credit 'ecr'"] if alg.token_credit == "ecr" else []
        if uses and not t.enabled:
            raise ValueError(
                f"{' and '.join(uses)} need a teacher: set teacher.name_or_path (e.g. 'tiny:addition-teacher', "
                "built by `rlvr init-model --teacher`) or teacher.mode 'self' (the policy with the reference answer)"
            )
        if t.mode == "self":
            if "{answer}" not in t.privileged_template:
                raise ValueError(
                    "teacher.privileged_template must contain '{answer}': OPSD's teacher is the policy shown the "
                    "reference answer; without it teacher and student are the same and every gap is 0"
                )
            if self.data.source == "file" and self.data.answer_field is None:
                raise ValueError("teacher.mode 'self' (OPSD) needs reference answers: set data.answer_field")
        try:  # plain {prompt} / {answer} only: '{prompt.__class__}' would read Python internals (shared web app)
            fields = {name for _, name, _, _ in string.Formatter().parse(t.privileged_template) if name is not None}
        except ValueError as err:
            fields = {f"({err})"}
        if not fields <= {"prompt", "answer"}:
            raise ValueError(
                f"teacher.privileged_template is not a valid format string (fields {sorted(fields)}): use only "
                "{prompt} and {answer}, and double literal braces as {{ }}"
            )
        if t.opd_until_step is not None and t.fusion != "opd":
            raise ValueError(
                f"teacher.opd_until_step is the OPD-then-RL switch; it needs teacher.fusion 'opd' (got {t.fusion!r})"
            )
        if alg.token_credit == "ecr" and t.fusion == "opd" and t.opd_until_step is None:
            raise ValueError(
                "algorithm.token_credit 'ecr' redistributes the verifier advantage, which teacher.fusion 'opd' "
                "discards: use fusion 'puu' (UECR-GRPO), 'none', or set teacher.opd_until_step (OPD-then-RL)"
            )
        if alg.answer_span_mask:
            try:
                check_user_pattern(alg.answer_span_pattern, what="algorithm.answer_span_pattern")
            except PatternError as err:
                raise ValueError(str(err)) from None
        return self

    @model_validator(mode="after")
    def _check_distributed(self) -> ExperimentConfig:
        """Data-parallel runs (issue 8): the batch must split evenly, and methods whose statistics span the
        whole step are refused rather than silently computed per process."""
        n = self.training.num_processes
        if self.training.fsdp:
            self._check_fsdp()
        if n == 1:
            return self
        P = self.training.prompts_per_step
        if P % n:
            raise ValueError(
                f"training.prompts_per_step ({P}) must be divisible by training.num_processes ({n}): each "
                "process trains on an equal share of the groups"
            )
        alg, b = self.algorithm, self.budget
        step_wide = [
            ("algorithm.advantage_estimator 'reinforce_pp'", alg.advantage_estimator == "reinforce_pp"),
            ("algorithm.scale_rewards 'batch'", alg.scale_rewards == "batch"),
            (f"algorithm.token_credit {alg.token_credit!r}", alg.token_credit in ("top_entropy", "ecr")),
            ("algorithm.importance_sampling_level 'segment' (HISPO)", alg.importance_sampling_level == "segment"),
            ("algorithm.clip_mode 'gapo'", alg.clip_mode == "gapo"),
            ("budget.dynamic_sampling", b.dynamic_sampling),
            (f"budget.allocator {b.allocator!r}", b.allocator != "fixed"),
            (f"budget.prompt_sampler {b.prompt_sampler!r}", b.prompt_sampler != "uniform"),
            ("a teacher (teacher.name_or_path / teacher.mode 'self')", self.teacher.enabled),
            ("a rubric", self.rubric is not None),
            ("rollout.engine 'vllm'", self.rollout.engine == "vllm"),
        ]
        refused = [name for name, used in step_wide if used]
        if refused:
            raise ValueError(
                f"training.num_processes {n} does not support {', '.join(refused)}: their statistics span the "
                "whole step (or the engine is per process) and are not yet computed across processes; use "
                "num_processes 1 or the default for that field"
            )
        if not self.rollout.seed_per_prompt:  # sampling must not depend on which process generates a group
            object.__setattr__(self.rollout, "seed_per_prompt", True)
        return self

    def _check_fsdp(self) -> None:
        """training.fsdp (trainer/fsdp.py) shards over processes and handles full (non-LoRA) hf-engine models."""
        if self.training.num_processes < 2:
            raise ValueError(
                "training.fsdp shards the model over processes: set training.num_processes to 2 or more "
                "(one per GPU), or turn fsdp off"
            )
        if self.model.lora_r > 0:
            raise ValueError(
                "training.fsdp with model.lora_r > 0 is not supported yet: use LoRA without fsdp, or fsdp without LoRA"
            )
        if self.rollout.engine == "vllm":
            raise ValueError(
                "training.fsdp with rollout.engine 'vllm' is not supported (vLLM holds its own whole copy of the "
                "weights): use rollout.engine 'hf' with fsdp, or vllm without fsdp"
            )

    @model_validator(mode="after")
    def _check_evaluation(self) -> ExperimentConfig:
        """Every periodic-evaluation benchmark must resolve now, not at the first eval step."""
        ev = self.evaluation
        if ev.eval_every and not ev.benchmarks:
            raise ValueError("evaluation.eval_every is set but evaluation.benchmarks is empty: add e.g. 'builtin:addition'")
        if ev.eval_every:
            from trainer.errors import RLVRError
            from trainer.eval_suite import resolve_training_benchmarks

            try:
                resolve_training_benchmarks(ev)  # unknown names, missing files, bad fields: at submit time
            except RLVRError as err:
                raise ValueError(f"evaluation.benchmarks: {err}") from None
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
        data = strict_json_loads(text) if p.suffix == ".json" else safe_yaml_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnsafeInput) as err:
        raise ConfigError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {err}") from None
    return config_from_dict(data or {}, source=str(p))


def config_schema() -> dict[str, Any]:
    """The JSON schema the web form is generated from."""
    return ExperimentConfig.model_json_schema()

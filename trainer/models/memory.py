"""Memory planning: micro-batch and generation-batch sizes that keep a step within ``training.memory_budget_gb``.

A step has two phases that never overlap with the ``hf`` engine, so one budget bounds both:

* **generation**: the resident state (weights of the policy, reference and teacher; AdamW's two moments)
  plus, per sequence, its KV cache at full length (prompt + ``max_completion_length`` tokens, from the
  model config: 2 x layers x kv-heads x head-dim x bytes) and the float32 sampling buffers over the
  vocabulary (log-softmax, filtered logits, probabilities, entropy terms);
* **policy update**: the resident state plus gradients plus, per sequence of the micro-batch, the
  activations kept for backward and the logits. This part is *measured* with a forward/backward probe on
  random tokens at the worst-case length: by the CUDA allocator's peak on a GPU, and from the bytes of the
  tensors autograd saves for backward on CPU (which keeps no allocator statistics; the estimate leaves out
  short-lived temporaries, hence the headroom below).

Peak(n) is linear in the rows n, so two probes (1 and 2 rows) give its intercept and slope, and the largest n
that fits is the micro-batch size (gradient accumulation covers the rest of the step: the update is the same
whatever the split, trainer/step/optimize.py). The probe preserves every RNG state and leaves no gradients behind,
so a budgeted run samples and trains exactly as the same run with that micro-batch size set by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from trainer.errors import ConfigError
from trainer.models.device import allocated_bytes, peak_allocated_bytes, reset_peak_memory
from trainer.models.logprobs import completion_logprobs

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from trainer.config import ExperimentConfig
    from trainer.samples import Sample

GIB = 2**30
HEADROOM = 0.9  # plan to 90% of the budget: allocator rounding and temporaries the estimate does not see
_SAMPLING_BUFFERS = 6  # float32 [B, V] tensors alive at once while sampling one token (hf engine)
_LONGEST_PROMPTS_TOKENIZED = 64  # prompts tokenized to find the longest (chosen by character length)


@dataclass(frozen=True)
class MemoryPlan:
    """What the planner decided and the figures it decided from (bytes)."""

    budget_bytes: int
    resident_bytes: int  # weights (policy, reference, teacher) + AdamW moments of the trainable parameters
    gathered_bytes: int  # FSDP: the rest of the policy's weights, all-gathered for generation (0 unsharded)
    update_fixed_bytes: int  # gradients and the probe's row-independent part
    update_bytes_per_row: int  # activations + logits of one sequence of ``seq_len`` tokens
    generation_bytes_per_row: int  # KV cache of one full-length sequence + sampling buffers
    seq_len: int  # longest prompt (tokens) + max_completion_length
    micro_batch_size: int
    generation_batch_size: int
    measured: bool  # True: CUDA allocator peaks; False: CPU estimate from saved activations

    def update_peak_bytes(self, rows: int) -> int:
        return self.resident_bytes + self.update_fixed_bytes + rows * self.update_bytes_per_row

    def generation_peak_bytes(self, rows: int) -> int:
        return self.resident_bytes + self.gathered_bytes + rows * self.generation_bytes_per_row

    def describe(self) -> str:
        how = "measured on the GPU" if self.measured else "estimated on CPU"
        micro, gen = self.micro_batch_size, self.generation_batch_size
        return (
            f"memory plan ({how}) for a {self.budget_bytes / GIB:.2f} GiB budget at {self.seq_len} tokens: "
            f"micro_batch_size {micro} (update peak ~{self.update_peak_bytes(micro) / GIB:.2f} GiB), "
            f"generation batches of {gen} (~{self.generation_peak_bytes(gen) / GIB:.2f} GiB); "
            f"resident {self.resident_bytes / GIB:.2f} GiB, {self.update_bytes_per_row / 2**20:.1f} MiB per "
            f"training row, {self.generation_bytes_per_row / 2**20:.1f} MiB per generated row"
        )

    def metrics(self) -> dict[str, float]:
        return {
            "perf/micro_batch_size": float(self.micro_batch_size),
            "perf/generation_batch_size": float(self.generation_batch_size),
            "perf/memory_budget_gb": self.budget_bytes / GIB,
        }


def _storage_bytes(t: torch.Tensor) -> tuple[tuple[str, int], int]:
    """(key identifying ``t``'s storage, its bytes). A sharded (FSDP DTensor) parameter counts its local shard;
    a storage FSDP has freed between all-gathers counts the tensor's own bytes."""
    local = t.to_local() if hasattr(t, "to_local") else t
    try:
        st = local.untyped_storage()
        return (str(local.device), st.data_ptr()), st.nbytes()
    except RuntimeError:
        return ("id", id(t)), local.numel() * local.element_size()


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of distinct storages among ``tensors`` (tied weights counted once)."""
    seen: dict[tuple[str, int], int] = {}
    for t in tensors:
        if t.numel():
            key, n = _storage_bytes(t)
            seen[key] = n
    return sum(seen.values())


def module_bytes(modules: Iterable[torch.nn.Module | None]) -> int:
    """Parameters and buffers of the given modules, each storage once."""
    tensors: list[torch.Tensor] = []
    for m in modules:
        if m is not None:
            tensors.extend(m.parameters())
            tensors.extend(m.buffers())
    return tensor_bytes(tensors)


def adam_state_bytes(params: Sequence[torch.nn.Parameter]) -> int:
    """AdamW keeps two moments per trainable parameter, in the parameter's dtype."""
    return 2 * sum(_storage_bytes(p)[1] for p in params)


def kv_bytes_per_token(model: PreTrainedModel) -> int:
    """KV-cache bytes one token costs in every layer: 2 (K and V) x layers x kv-heads x head-dim x dtype bytes."""
    cfg = model.config.get_text_config()
    layers = getattr(cfg, "num_hidden_layers", None)
    heads = getattr(cfg, "num_attention_heads", None)
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or (cfg.hidden_size // heads if heads else None)
    if not (layers and kv_heads and head_dim):
        raise ConfigError(
            f"cannot size generation batches for a {type(cfg).__name__}: its config lacks num_hidden_layers / "
            "num_key_value_heads / head_dim; set training.memory_budget_gb to null and size "
            "rollout.generation_batch_size and training.micro_batch_size by hand"
        )
    dtype_bytes = next(model.parameters()).element_size()
    return 2 * int(layers) * int(kv_heads) * int(head_dim) * dtype_bytes


def longest_prompt_tokens(
    samples: Sequence[Sample], config: ExperimentConfig, tokenizer: PreTrainedTokenizerBase
) -> int:
    """Token length of the longest rendered prompt, from the prompts longest in characters (tokenizing every
    prompt of a large dataset would cost more than it tells)."""
    from trainer.data.templates import render_prompt

    if not samples:
        return 1
    by_chars = sorted(samples, key=lambda s: len(s.prompt), reverse=True)[:_LONGEST_PROMPTS_TOKENIZED]
    texts = [render_prompt(s, config.data, tokenizer) for s in by_chars]
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return max(1, *(len(x) for x in ids))


def _probe_update(
    model: PreTrainedModel,
    rows: int,
    prompt_len: int,
    completion_len: int,
    temperature: float,
    device: torch.device,
) -> tuple[int | None, int]:
    """Bytes one forward/backward of ``rows`` random sequences needs on top of what is resident *with the
    gradients already allocated* (as they are from a step's second micro-batch on): (the CUDA allocator's peak,
    None on CPU; the bytes autograd saved for backward plus the float32 logits). Allocating the gradients
    first matters: otherwise their allocation during backward dominates a small probe's peak and hides how
    the peak grows with the rows."""
    vocab = model.get_output_embeddings().weight.shape[0]
    gen = torch.Generator(device="cpu").manual_seed(0)
    prompt = torch.randint(0, vocab, (rows, prompt_len), generator=gen).to(device)
    completion = torch.randint(0, vocab, (rows, completion_len), generator=gen).to(device)
    ones_p, ones_c = torch.ones_like(prompt), torch.ones_like(completion)
    saved: dict[tuple[str, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.numel():
            key, n = _storage_bytes(t)
            saved[key] = n
        return t

    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    before = allocated_bytes(device)
    reset_peak_memory(device)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logp, entropy = completion_logprobs(model, prompt, ones_p, completion, ones_c, temperature)
        loss = logp.float().sum() + 0.0 * entropy.float().sum()
    loss.backward()
    peak = peak_allocated_bytes(device)
    del logp, entropy, loss
    for p in model.parameters():
        p.grad = None
    logits = rows * completion_len * vocab * 4 * 3  # float32 logits, log-softmax and its gradient
    estimate = sum(saved.values()) + logits
    return (peak - before if before is not None and peak is not None else None), estimate


def plan_memory(
    config: ExperimentConfig,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    samples: Sequence[Sample],
    device: torch.device,
    frozen_modules: Sequence[torch.nn.Module | None] = (),
) -> MemoryPlan:
    """Size micro-batches and generation batches for ``training.memory_budget_gb`` (must be set).

    ``frozen_modules``: other models resident during the step (reference, teacher, judge). Raises a
    ConfigError that says what to change when not even one sequence fits.
    """
    budget_gb = config.training.memory_budget_gb
    assert budget_gb is not None
    budget = int(budget_gb * GIB)
    trainable = [p for p in model.parameters() if p.requires_grad]
    resident = module_bytes([model, *frozen_modules]) + adam_state_bytes(trainable)
    # DTensor parameters report their global numel: the difference is what gathering them for generation adds
    gathered = max(sum(p.numel() * p.element_size() for p in model.parameters()) - module_bytes([model]), 0)
    prompt_len = longest_prompt_tokens(samples, config, tokenizer)
    completion_len = config.rollout.max_completion_length
    temperature = config.rollout.temperature

    was_training = model.training
    model.train()
    devices = [device] if device.type != "cpu" else []
    with torch.random.fork_rng(devices=devices, device_type=device.type if devices else "cuda"):
        _probe_update(
            model, 1, prompt_len, completion_len, temperature, device
        )  # one-time allocations (cuBLAS workspace)
        one_measured, one_estimate = _probe_update(model, 1, prompt_len, completion_len, temperature, device)
        two_measured, two_estimate = _probe_update(model, 2, prompt_len, completion_len, temperature, device)
    model.train(was_training)
    # The saved-activation slope is a floor: allocator rounding can make two small measured peaks look equal.
    per_row = max(two_estimate - one_estimate, 1)
    one = one_estimate
    if one_measured is not None and two_measured is not None:
        per_row, one = max(two_measured - one_measured, per_row), one_measured
    grads = sum(_storage_bytes(p)[1] for p in trainable)
    fixed = max(one - per_row, 0) + grads

    vocab = model.get_output_embeddings().weight.shape[0]
    per_gen_row = kv_bytes_per_token(model) * (prompt_len + completion_len) + _SAMPLING_BUFFERS * vocab * 4

    usable = int(budget * HEADROOM)
    micro = (usable - resident - fixed) // per_row
    gen = (usable - resident - gathered) // per_gen_row
    if micro < 1 or gen < 1:
        need = max(resident + fixed + per_row, resident + gathered + per_gen_row) / HEADROOM
        raise ConfigError(
            f"training.memory_budget_gb = {budget_gb} is below what one sequence of {prompt_len + completion_len} "
            f"tokens needs (~{need / GIB:.2f} GiB: {resident / GIB:.2f} GiB resident weights and optimizer state, "
            f"{per_row / GIB:.3f} GiB per training row, {per_gen_row / GIB:.3f} GiB per generated row): raise the "
            "budget, shorten rollout.max_completion_length, or turn on model.gradient_checkpointing or LoRA (model.lora_r)"
        )
    micro = min(int(micro), config.training.micro_batch_size)
    gen = min(int(gen), config.rollout.generation_batch_size)
    group = config.rollout.num_generations
    if gen >= group:  # whole groups per batch: each distinct prompt is prefilled once (hf engine)
        gen -= gen % group
    return MemoryPlan(
        budget_bytes=budget,
        resident_bytes=resident,
        gathered_bytes=gathered,
        update_fixed_bytes=fixed,
        update_bytes_per_row=per_row,
        generation_bytes_per_row=per_gen_row,
        seq_len=prompt_len + completion_len,
        micro_batch_size=micro,
        generation_batch_size=gen,
        measured=allocated_bytes(device) is not None,
    )

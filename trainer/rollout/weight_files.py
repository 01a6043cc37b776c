"""Policy weights handed to vLLM as files: one safetensors file per policy version under the run's directory.

vLLM's supported way to replace weights in a running engine is ``reload_weights`` from a directory (the V1
engine core owns the model; on the CPU backend linear weights are repacked at load, so tensors cannot be
copied in from outside). The trainer writes version N after its N-th optimizer step; a colocated engine or a
rollout server that can see the directory loads it. Writes are atomic (a hidden temporary directory renamed
into place), so a reader never sees half a file, and only the newest ``keep`` versions stay on disk.

Names are the Hugging Face checkpoint's (LoRA merged: trainer.models.lora.merged_named_weights). A model
with tied input and output embeddings gets an explicit ``lm_head.weight``: vLLM reloads its output layer
from that name and would otherwise keep the old one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import Tensor

from trainer.models.lora import merged_named_weights

WEIGHTS_FILE = "model.safetensors"
_VERSION_DIR = re.compile(r"^v(\d{6,})$")


def checkpoint_weight_name(name: str) -> str:
    """A trainer parameter name as the Hugging Face checkpoint (and vLLM's loader) names it: without
    torch.compile's ``_orig_mod.``, DDP's ``module.``, activation checkpointing's ``_checkpoint_wrapped_module.``
    and peft's ``base_layer.``."""
    for prefix in ("_orig_mod.", "module."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.replace("_checkpoint_wrapped_module.", "").replace(".base_layer.", ".")


def checkpoint_tensors(model: torch.nn.Module) -> dict[str, Tensor]:
    """The policy's weights under checkpoint names, contiguous on the CPU, with the output layer explicit."""
    tensors = {
        checkpoint_weight_name(n): t.detach().to("cpu").contiguous().clone()
        for n, t in merged_named_weights(model)
    }
    if "lm_head.weight" not in tensors:
        tied = tensors.get("model.embed_tokens.weight")
        if tied is not None:
            tensors["lm_head.weight"] = tied.clone()
    return tensors


class WeightFiles:
    """Versioned weight directories ``<root>/v000012/model.safetensors``. The root belongs to one run's engine:
    what an earlier run (or attempt) left there is removed first, so it can never be mistaken for this one's."""

    def __init__(self, root: Path, keep: int = 2) -> None:
        self.root = Path(root)
        self.keep = keep
        shutil.rmtree(self.root, ignore_errors=True)

    def path(self, version: int) -> Path:
        return self.root / f"v{version:06d}"

    @staticmethod
    def version_of(directory: Path) -> int:
        m = _VERSION_DIR.match(Path(directory).name)
        if m is None:
            raise ValueError(f"{directory} is not a weight-file version directory (v000012)")
        return int(m.group(1))

    def write(self, model: torch.nn.Module, version: int) -> Path:
        """Write ``model``'s weights as ``version`` and drop versions older than the newest ``keep``."""
        return self.write_tensors(checkpoint_tensors(model), version)

    def write_tensors(self, tensors: dict[str, Tensor], version: int) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        final, tmp = self.path(version), self.root / f".tmp-v{version:06d}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        save_file(tensors, str(tmp / WEIGHTS_FILE))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        self.prune(self.keep)
        return final

    def versions(self) -> list[int]:
        if not self.root.is_dir():
            return []
        return sorted(int(m.group(1)) for c in self.root.iterdir() if (m := _VERSION_DIR.match(c.name)))

    def prune(self, keep: int) -> None:
        for old in self.versions()[:-keep]:
            shutil.rmtree(self.path(old), ignore_errors=True)

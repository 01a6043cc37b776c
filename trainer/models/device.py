"""Device and dtype selection: the only module that names CUDA (STYLE.md habit 6)."""

from __future__ import annotations

import contextlib

import torch

from trainer.errors import ConfigError

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(name: str) -> torch.device:
    """'auto' -> the first CUDA GPU if present, else CPU. Asking for 'cuda' without one is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("model.device is 'cuda' but no CUDA GPU is visible: use 'auto' or 'cpu'")
    return torch.device(name)


def resolve_dtype(name: str) -> torch.dtype:
    return _DTYPES[name]


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager[object]:
    """bfloat16 autocast for forward passes on CUDA when ``bf16`` (model.autocast_bf16): matmuls run in bf16,
    reductions such as log-softmax stay float32, and the weights and optimizer stay in their own dtype.
    A no-op on CPU, where bf16 autocast is slower than float32 on most processors."""
    if bf16 and device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def reset_peak_memory(device: torch.device) -> None:
    """Start a new peak-memory window (CUDA); the CPU peak is the process's lifetime peak RSS."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def allocated_bytes(device: torch.device) -> int | None:
    """Bytes the CUDA caching allocator has handed out now; None on CPU, which keeps no allocator statistics."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return int(torch.cuda.memory_allocated(device))
    return None


def peak_allocated_bytes(device: torch.device) -> int | None:
    """The CUDA allocator's peak since ``reset_peak_memory``; None on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))
    return None


def peak_memory_gb(device: torch.device) -> float:
    """Peak memory since ``reset_peak_memory``: allocated CUDA memory on a GPU, else the process's peak RSS."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (2**30 if sys.platform == "darwin" else 2**20)

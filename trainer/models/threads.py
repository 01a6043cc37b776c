"""How many threads torch may use in a process that shares the machine's cores with other torch processes.

torch sizes its intra-op pool to every core it sees. Two such processes on two cores (the embedded stack's
training worker and its evaluation worker, or a model build beside a training run) each run two threads that
wait on each other's cores: training was seen to run about 14 times slower. So whoever starts several
torch processes (``rlvr stack``, webapp/stack.py) divides the cores this process may run on
(``os.sched_getaffinity``: a container's or ``taskset``'s limit, not the host's count) among them and hands
each its share in ``RLVR_TORCH_THREADS`` (and ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``, which torch reads
at import); the process applies it with ``apply_torch_threads`` before its first torch work.

Torch-free at import: the stack process (Django, never torch) sizes the shares. ``processor()`` names the processor
and the instruction-set extensions its kernels use (recorded with shipped weights and trained results: another
processor rounds differently).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

THREADS_ENV = "RLVR_TORCH_THREADS"


def available_cpus() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def torch_thread_shares(cpus: int, processes: int) -> list[int]:
    """Threads for each of ``processes`` torch processes sharing ``cpus`` cores: an equal split, the remainder
    to the first ones (the stack starts the training worker first), at least one each (with more processes
    than cores, one thread each oversubscribes least).

    >>> torch_thread_shares(2, 2), torch_thread_shares(8, 2), torch_thread_shares(5, 2), torch_thread_shares(1, 2)
    ([1, 1], [4, 4], [3, 2], [1, 1])
    """
    if processes < 1 or cpus < 1:
        raise ValueError(f"cpus and processes must be at least 1, got {cpus} and {processes}")
    return [max(1, cpus // processes + (i < cpus % processes)) for i in range(processes)]


def thread_env(threads: int) -> dict[str, str]:
    """The environment that gives a child process ``threads`` torch threads (and as many OpenMP / MKL ones)."""
    value = str(threads)
    return {THREADS_ENV: value, "OMP_NUM_THREADS": value, "MKL_NUM_THREADS": value}


def threads_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """``RLVR_TORCH_THREADS`` as a positive int; None when unset; ValueError naming the variable when bad."""
    raw = (os.environ if environ is None else environ).get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_ENV} must be a positive whole number of threads, got {raw!r}")
    return int(raw)


def apply_torch_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """Set torch's intra-op threads from ``RLVR_TORCH_THREADS`` (nothing when it is unset); the count set."""
    threads = threads_from_env(environ)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    return threads


# The instruction-set extensions whose kernels round differently (torch picks its CPU kernels by them).
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "asimd", "sve")


def processor() -> str:
    """The processor's model name and the kernel-relevant extensions it has ('model | avx2 avx512f'): the same
    model trained from the same weights gives other floats on a processor whose kernels round otherwise."""
    name, flags = "unknown", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown":
                name = " ".join(value.split())
            elif key.strip() in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:  # not Linux
        name = platform.processor() or platform.machine() or "unknown"
    return f"{name} | {' '.join(f for f in ISA_FLAGS if f in flags)}"

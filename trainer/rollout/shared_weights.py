"""Policy weights handed to another process on this host through shared memory, one buffer per version.

The asynchronous run's ``hf`` generator is a process of its own (trainer/step/generator_process.py) that must
sample step s with exactly the policy of version v(s), while the trainer has moved on. At each publish the
trainer copies its state dict into one fresh flat shared-memory buffer (an anonymous memory file: one copy, one
file descriptor, however many tensors), passes the descriptor over a Unix socket and closes its own; the memory
lives as long as the generator holds it. The generator keeps the versions it has not loaded yet and copies
exactly the one a step needs into its own model. Versioned safetensors files (trainer/rollout/weight_files.py) serve vLLM, which can
only reload from a directory; here a file round trip would only add a serialisation and a disk write per step.

The layout (names, dtypes, shapes, byte offsets) is fixed at the start, so a buffer is only bytes; offsets are
aligned to 64 bytes, so every tensor's view is aligned for its dtype.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import dataclass

import torch
from torch import Tensor

_ALIGN = 64  # bytes: every tensor starts on a cache line (and is aligned for any dtype)


@dataclass(frozen=True)
class WeightSlot:
    """One state-dict entry's place in the flat buffer."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int  # bytes from the buffer's start
    nbytes: int


@dataclass(frozen=True)
class WeightLayout:
    """Where each entry of a model's state dict lies in a flat uint8 buffer (the same on both sides)."""

    slots: tuple[WeightSlot, ...]
    nbytes: int

    @staticmethod
    def of(state: dict[str, Tensor]) -> WeightLayout:
        slots, offset = [], 0
        for name, t in state.items():
            nbytes = t.numel() * t.element_size()
            slots.append(WeightSlot(name, t.dtype, tuple(t.shape), offset, nbytes))
            offset += -(-nbytes // _ALIGN) * _ALIGN
        return WeightLayout(tuple(slots), max(offset, _ALIGN))

    def pack(self, state: dict[str, Tensor]) -> int:
        """A fresh shared-memory file holding ``state`` (whose entries must match the layout); returns its open
        descriptor, which the caller sends and closes. A tensor on an accelerator is copied to the host."""
        if state.keys() != {s.name for s in self.slots}:
            raise ValueError("the state dict's entries changed since the layout was taken")
        fd = _memory_file(self.nbytes)
        with mmap.mmap(fd, self.nbytes) as mm:
            self._fill(mm, state)  # its tensors over the mapping are gone when it returns, so it can close
        return fd

    def _fill(self, mm: mmap.mmap, state: dict[str, Tensor]) -> None:
        flat = torch.frombuffer(mm, dtype=torch.uint8)
        with torch.no_grad():
            for slot, view in zip(self.slots, self.views(flat), strict=True):
                view.copy_(state[slot.name].detach())

    def open(self, fd: int) -> Tensor:
        """The buffer behind a received descriptor, mapped (copy-on-write: reading copies nothing); the
        descriptor is closed, the mapping lives as long as the returned tensor."""
        try:
            mm = mmap.mmap(fd, self.nbytes, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)
        return torch.frombuffer(mm, dtype=torch.uint8)

    def views(self, flat: Tensor) -> list[Tensor]:
        """Each entry of ``flat`` as a tensor of its dtype and shape (no copy)."""
        return [
            flat[s.offset : s.offset + s.nbytes].view(s.dtype).view(s.shape)
            if s.nbytes
            else torch.empty(s.shape, dtype=s.dtype)
            for s in self.slots
        ]

    def unpack(self, flat: Tensor) -> dict[str, Tensor]:
        """``flat`` as a state dict of views into it (``load_state_dict`` copies them into a model)."""
        return {s.name: v for s, v in zip(self.slots, self.views(flat), strict=True)}


def _memory_file(nbytes: int) -> int:
    """An open descriptor of an anonymous file of ``nbytes`` in memory (Linux ``memfd_create``; elsewhere an
    unlinked temporary file)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rlvr-policy-weights", os.MFD_CLOEXEC)
    else:
        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, nbytes)
    return fd

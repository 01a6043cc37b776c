"""Memory of the data-parallel gradient all-reduce: the old flat all-reduce with cloned slices against the
bucketed in-place one (trainer/distributed/context.py ``all_reduce_grads``), in 2 gloo processes on CPU.

    .venv/bin/python benchmarks/grad_memory.py                      # the tiny model and a 512 x 8 Qwen2
    .venv/bin/python benchmarks/grad_memory.py --bucket-mb 8 --out /tmp/grad_memory.json

Each model (random weights, built locally with ``trainer.models.tiny_model.build_tiny_model``: the tiny model's
architecture, and hidden 512 x 8 layers) is loaded in 2 spawned ranks; every rank fills each parameter's
gradient with its own random values and runs both implementations on the same gradients. What is measured
is the extra memory at the all-reduce's peak, over the gradients already held (which is what one process
holds: without a second rank there is no all-reduce): the analytic figure from the buffers each
implementation creates, and the kernel's peak resident set size (VmHWM, reset through /proc/self/clear_refs
just before the call) minus the resident size just before it. glibc is told to map every allocation over
64 KiB afresh (MALLOC_MMAP_THRESHOLD_), so freed buffers go back to the kernel and a later call cannot hide
its buffers in memory a previous one left resident. The two implementations' results are compared bit for
bit. The ratio is (gradients + extra) / gradients: the gradient memory of 2 processes against 1.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault(
    "MALLOC_MMAP_THRESHOLD_", str(64 * 1024)
)  # read by glibc at start-up: the spawned ranks

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from trainer.distributed.context import GRAD_BUCKET_BYTES, DistContext, grad_buckets

MIB = 1024 * 1024
MODELS = {
    "tiny (128 x 4)": {"hidden": 128, "layers": 4, "heads": 4},
    "qwen2 512 x 8": {"hidden": 512, "layers": 8, "heads": 8},
}


def old_all_reduce_grads(params: list[torch.nn.Parameter]) -> None:
    """``DistContext.all_reduce_grads`` before the buckets: one flat copy of every gradient, then a clone of
    each slice, while the old gradients are still referenced (peak extra: twice the gradients)."""
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    offset = 0
    for p, g in zip(params, grads, strict=True):
        n = g.numel()
        p.grad = flat[offset : offset + n].view_as(g).clone()
        offset += n


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field} (this benchmark needs Linux)")


def _measure(fn: Any, params: list[torch.nn.Parameter]) -> tuple[int, float]:
    """(peak resident bytes over the resident size before ``fn(params)``, seconds)."""
    dist.barrier()
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident size
    before = _kib("VmRSS")
    start = time.perf_counter()
    fn(params)
    seconds = time.perf_counter() - start
    return (_kib("VmHWM") - before) * 1024, seconds


def _rank(rank: int, model_dir: str, store: str, bucket_bytes: int, out: str) -> None:
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.disable_progress_bar()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    params = [p for p in model.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(rank)
    originals = [torch.randn(p.shape, generator=gen) for p in params]
    dist.all_reduce(torch.zeros(1))  # gloo's first-call set-up is not the all-reduce's memory

    def fresh() -> None:
        for p, o in zip(params, originals, strict=True):
            p.grad = o.clone()

    fresh()
    new_bytes, new_s = _measure(lambda ps: DistContext(rank, 2).all_reduce_grads(ps, bucket_bytes), params)
    new_grads = [p.grad for p in params]
    fresh()
    old_bytes, old_s = _measure(old_all_reduce_grads, params)
    identical = all(
        p.grad is not None and g is not None and torch.equal(p.grad, g)
        for p, g in zip(params, new_grads, strict=True)
    )
    grad_bytes = sum(o.numel() * o.element_size() for o in originals)
    sizes = [o.numel() * o.element_size() for o in originals]
    flat_buckets = [b for b in grad_buckets(originals, bucket_bytes) if len(b) > 1]
    result = {
        "rank": rank,
        "params": sum(o.numel() for o in originals),
        "grad_bytes": grad_bytes,
        "identical": identical,
        "buckets": len(grad_buckets(originals, bucket_bytes)),
        "new": {
            "analytic_extra": max((sum(sizes[i] for i in b) for b in flat_buckets), default=0),
            "measured_extra": new_bytes,
            "seconds": new_s,
        },
        "old": {"analytic_extra": 2 * grad_bytes, "measured_extra": old_bytes, "seconds": old_s},
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


def run_model(name: str, shape: dict[str, int], bucket_bytes: int, work: Path) -> list[dict[str, Any]]:
    from transformers.utils import logging

    from trainer.models.tiny_model import build_tiny_model

    logging.disable_progress_bar()
    model_dir = build_tiny_model(work / name.replace(" ", "_"), **shape)
    out = work / (name.replace(" ", "_") + "-out")
    out.mkdir()
    mp.start_processes(
        _rank,
        args=(str(model_dir), str(out / "store"), bucket_bytes, str(out)),
        nprocs=2,
        start_method="spawn",
    )
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bucket-mb", type=float, default=GRAD_BUCKET_BYTES / MIB)
    parser.add_argument("--out", default=None, help="write every rank's figures to this JSON file")
    args = parser.parse_args()
    bucket_bytes = int(args.bucket_mb * MIB)
    results: dict[str, Any] = {"bucket_bytes": bucket_bytes, "torch": torch.__version__, "models": {}}
    print(
        f"bucket cap {bucket_bytes / MIB:g} MiB; extra = peak bytes over the gradients held, rank 0 "
        "(max over ranks for the measured figure)"
    )
    print(
        f"{'model':<16}{'params':>12}{'grads MiB':>11}{'impl':>6}{'analytic MiB':>14}{'measured MiB':>14}"
        f"{'2p/1p':>7}{'s':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape in MODELS.items():
            ranks = run_model(name, shape, bucket_bytes, Path(tmp))
            results["models"][name] = ranks
            r0 = ranks[0]
            grads = r0["grad_bytes"]
            for impl in ("old", "new"):
                measured = max(r[impl]["measured_extra"] for r in ranks)
                print(
                    f"{name:<16}{r0['params']:>12,}{grads / MIB:>11.1f}{impl:>6}"
                    f"{r0[impl]['analytic_extra'] / MIB:>14.1f}{measured / MIB:>14.1f}"
                    f"{(grads + measured) / grads:>7.2f}{r0[impl]['seconds']:>7.3f}"
                )
            print(
                f"{'':<16}{r0['buckets']} buckets; old and new results bit-identical: "
                f"{all(r['identical'] for r in ranks)}"
            )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

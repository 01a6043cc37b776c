"""The data-parallel gradient all-reduce in buckets, in place (trainer/distributed/context.py ``all_reduce_grads``):
the bucket plan, and a real 2-rank gloo group (two forked processes, a second or two) checking the sums."""

from __future__ import annotations

import traceback
from pathlib import Path

import torch

from tests.trainer.fork_ranks import run_forked_ranks
from trainer.distributed.context import DistContext, grad_buckets

KIB = 1024
# [shape, dtype] of each parameter: with a 4 KiB cap, 256 float32 (1 KiB) tensors share buckets, the 2048-element
# one (8 KiB) is alone, and the float64 and bfloat16 runs are bucketed apart from their float32 neighbours.
LAYOUT: list[tuple[tuple[int, ...], torch.dtype]] = [
    ((16, 16), torch.float32),
    ((256,), torch.float32),
    ((2048,), torch.float32),
    ((8, 32), torch.float32),
    ((64,), torch.float64),
    ((32,), torch.float64),
    ((128,), torch.bfloat16),
    ((16, 16), torch.float32),
]
MISSING_ON_RANK1 = 1  # no gradient on rank 1 (it shares a flat bucket with parameter 0)


def _grad(i: int, rank: int) -> torch.Tensor:
    """Small integers, so every sum is exact in every dtype (bfloat16 included)."""
    shape, dtype = LAYOUT[i]
    gen = torch.Generator().manual_seed(100 * i + rank)
    return torch.randint(-8, 9, shape, generator=gen).to(dtype)


def _expected(i: int) -> torch.Tensor:
    rank1 = torch.zeros_like(_grad(i, 1)) if i == MISSING_ON_RANK1 else _grad(i, 1)
    return _grad(i, 0) + rank1


def test_buckets_fill_up_to_the_cap_in_order_and_an_oversized_gradient_is_alone() -> None:
    grads = [torch.zeros(256) for _ in range(5)]  # 1 KiB each
    grads.insert(2, torch.zeros(4096))  # 16 KiB: over the cap
    buckets = grad_buckets(grads, bucket_bytes=3 * KIB)
    assert buckets == [[0, 1], [2], [3, 4, 5]]
    for bucket in buckets:
        nbytes = sum(grads[i].numel() * grads[i].element_size() for i in bucket)
        assert nbytes <= 3 * KIB or len(bucket) == 1


def test_gradients_of_different_dtypes_never_share_a_bucket() -> None:
    grads = [
        torch.zeros(4),
        torch.zeros(4, dtype=torch.float64),
        torch.zeros(4, dtype=torch.float64),
        torch.zeros(4, dtype=torch.bfloat16),
        torch.zeros(4),
    ]
    assert grad_buckets(grads, bucket_bytes=KIB) == [[0], [1, 2], [3], [4]]


def _rank_main(rank: int, store: str, result_dir: str) -> None:
    import torch.distributed as dist

    out = Path(result_dir) / f"rank{rank}.txt"
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
        params = [torch.nn.Parameter(torch.zeros(shape, dtype=dtype)) for shape, dtype in LAYOUT]
        for i, p in enumerate(params):
            if not (rank == 1 and i == MISSING_ON_RANK1):
                p.grad = _grad(i, rank)
        before = [p.grad for p in params]
        DistContext(rank=rank, world_size=2).all_reduce_grads(params, bucket_bytes=4 * KIB)
        for i, (p, g) in enumerate(zip(params, before, strict=True)):
            assert p.grad is not None and p.grad.dtype == LAYOUT[i][1], (
                f"parameter {i}: no gradient or a changed dtype"
            )
            if g is not None:
                assert p.grad is g and p.grad.data_ptr() == g.data_ptr(), f"parameter {i}: gradient replaced"
            assert torch.equal(p.grad, _expected(i)), f"parameter {i}: {p.grad} != {_expected(i)}"
        dist.destroy_process_group()
        out.write_text("ok")
    except BaseException:  # the parent reads what went wrong
        out.write_text(traceback.format_exc())


def test_two_ranks_sum_gradients_in_place_and_a_missing_gradient_takes_the_sum(tmp_path: Path) -> None:
    results = run_forked_ranks(
        _rank_main,
        lambda r: (r, str(tmp_path / "store"), str(tmp_path)),
        tmp_path,
        "a rank hung in the gradient all-reduce",
    )
    for r in range(2):
        assert results[r] == "ok", f"rank {r}"

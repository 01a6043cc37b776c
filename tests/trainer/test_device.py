"""trainer/models/device.py: bf16 autocast only where it applies (model.autocast_bf16)."""

from __future__ import annotations

import pytest
import torch

from trainer.models.device import autocast


def test_autocast_is_a_no_op_on_cpu_and_when_off() -> None:
    layer = torch.nn.Linear(4, 4)
    for device, bf16 in ((torch.device("cpu"), True), (torch.device("cpu"), False)):
        with autocast(device, bf16):
            assert layer(torch.ones(1, 4)).dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU: bf16 autocast applies on CUDA only"
)
def test_autocast_runs_matmuls_in_bf16_on_cuda_and_keeps_float32_weights() -> None:
    device = torch.device("cuda")
    layer = torch.nn.Linear(4, 4).to(device)
    with autocast(device, True):
        out = layer(torch.ones(1, 4, device=device))
        assert out.dtype == torch.bfloat16
        assert torch.log_softmax(out, -1).dtype == torch.float32  # reductions stay float32
    assert layer.weight.dtype == torch.float32
    with autocast(device, False):
        assert layer(torch.ones(1, 4, device=device)).dtype == torch.float32

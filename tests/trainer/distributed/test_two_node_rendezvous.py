"""A run over two nodes (issue: one run across several hosts): two torchrun agents on loopback meet at a c10d
rendezvous, one hosting it, and train as one data-parallel group. Their result equals one host's with the
same number of processes; a node that never arrives fails the run after the join timeout, naming who came."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.processes import live_processes
from tests.trainer.distributed.nodes_helpers import Recorder, node_spec, two_node_runs
from tests.trainer.loop_helpers import tiny_config
from trainer.distributed.launch import DistributedRunError
from trainer.models.checkpoint import latest_checkpoint
from trainer.step.loop import train

pytestmark = pytest.mark.slow
_MEASURED = re.compile(r"time|latency|_s$|per_s|throughput|memory|mem_|_gb")


@pytest.fixture(autouse=True)
def _one_thread_per_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _config(model_dir: Path, out: Path, nodes: int, processes: int, **training: Any) -> Any:
    return tiny_config(
        model_dir,
        out,
        training={
            "num_nodes": nodes,
            "num_processes": processes,
            "max_steps": 3,
            "prompts_per_step": 4,
            "learning_rate": 1e-2,
            "node_join_timeout_s": 60,
            **training,
        },
        checkpoint={"save_steps": 0},
    )


def test_two_nodes_of_one_process_train_exactly_like_one_node_of_two(
    random_model_dir: Path, tmp_path: Path
) -> None:
    one_host = Recorder()
    train(_config(random_model_dir, tmp_path / "one", 1, 2), one_host)
    sinks, results = two_node_runs(_config(random_model_dir, tmp_path / "two", 2, 1))

    assert [r.status for r in results] == ["succeeded", "succeeded"]
    main = [s for s in sinks if s.steps]  # the node whose process got global rank 0 reports the run
    assert len(main) == 1 and [s.step for s in main[0].steps] == [1, 2, 3] and main[0].ended == "succeeded"
    assert all(not s.errors for s in sinks)
    assert main[0].info is not None and "x 2 processes" in main[0].info.device
    for s1, s2 in zip(one_host.steps, main[0].steps, strict=True):
        assert set(s1.metrics) == set(s2.metrics)
        for key, value in s1.metrics.items():
            if not _MEASURED.search(key):  # wall-clock and memory readings differ run to run
                assert s2.metrics[key] == pytest.approx(value, rel=1e-6, abs=1e-6), key
        assert [(r.group, r.completion, r.reward) for r in s2.rollouts] == [
            (r.group, r.completion, r.reward) for r in s1.rollouts
        ]
    a = load_file(_latest(tmp_path / "one") / "model.safetensors")
    b = load_file(_latest(tmp_path / "two") / "model.safetensors")
    start = load_file(random_model_dir / "model.safetensors")
    assert max(float((a[k] - start[k]).abs().max()) for k in a) > 1e-2  # training moved the weights
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=0, atol=1e-6)


def test_a_node_that_never_joins_fails_the_run_after_the_join_timeout(
    random_model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "alone"
    config = _config(random_model_dir, out, 2, 1, node_join_timeout_s=10)
    sink = Recorder()
    spec = node_spec(
        0, is_host=True, join_timeout_s=10, membership=lambda: "joined: node-0; did not join: node-1"
    )
    t0 = time.monotonic()
    with pytest.raises(DistributedRunError) as err:
        train(config, sink, node=spec)
    assert time.monotonic() - t0 < 60
    message = str(err.value)
    assert "did not all join the rendezvous" in message and "(10s)" in message, message
    assert "joined: node-0; did not join: node-1" in message
    assert sink.errors and sink.errors[0][0] == message
    assert live_processes(str(out.resolve()), "torch.distributed.run") == []


def _latest(run_dir: Path) -> Path:
    ckpt = latest_checkpoint(run_dir)
    assert ckpt is not None
    return ckpt

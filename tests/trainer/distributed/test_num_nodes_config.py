"""training.num_nodes: validated against the global batch, counted in the data-parallel group, and refused by
``train`` when no node of a rendezvous was given (the run needs its other hosts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.loop_helpers import tiny_config
from trainer.distributed.rendezvous import NodeSpec, endpoint_of
from trainer.errors import ConfigError
from trainer.step.loop import train


def test_num_nodes_defaults_to_one_and_multiplies_the_processes(tmp_path: Path) -> None:
    assert tiny_config(tmp_path, tmp_path / "a").training.num_nodes == 1
    config = tiny_config(
        tmp_path, tmp_path / "b", training={"num_nodes": 2, "num_processes": 2, "prompts_per_step": 4}
    )
    assert config.world_size == 4
    assert config.seeds_per_prompt  # seeded by global group index, as one process would sample


def test_the_global_batch_must_split_over_nodes_times_processes(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"divisible by training.num_nodes x training.num_processes \(2 x 2 = 4\)"
    ):
        tiny_config(
            tmp_path, tmp_path / "c", training={"num_nodes": 2, "num_processes": 2, "prompts_per_step": 6}
        )
    with pytest.raises(ConfigError, match="num_nodes"):
        tiny_config(tmp_path, tmp_path / "d", training={"num_nodes": 0})
    with pytest.raises(ConfigError, match="num_nodes"):
        tiny_config(tmp_path, tmp_path / "e", training={"num_nodes": 65, "prompts_per_step": 65})


def test_train_refuses_a_multi_node_run_without_its_rendezvous(tmp_path: Path) -> None:
    config = tiny_config(tmp_path, tmp_path / "f", training={"num_nodes": 2, "prompts_per_step": 2})
    with pytest.raises(ConfigError, match=r"training\.num_nodes is 2: this run spans several hosts"):
        train(config)


def test_a_node_spec_replaces_standalone_with_a_c10d_rendezvous() -> None:
    spec = NodeSpec(
        num_nodes=2,
        endpoint=endpoint_of("10.0.0.1", 29400),
        rdzv_id="run-7-round-1",
        is_host=False,
        name="gpu@host b/1",
        local_addr="10.0.0.2",
        join_timeout_s=30,
    )
    assert spec.torchrun_args() == [
        "--nnodes=2",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=10.0.0.1:29400",
        "--rdzv-id=run-7-round-1",
        "--rdzv-conf=is_host=false,join_timeout=30",
        "--local-addr=10.0.0.2",
    ]
    assert spec.workdir_name() == "node-gpu@host_b_1"
    assert endpoint_of("::1", 5) == "[::1]:5"

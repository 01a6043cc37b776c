"""vLLM in server mode across hosts: every node of a run uses the same rollout server, the one the config
names, and each node's worker checks it against its own allow-list (RLVR_ROLLOUT_SERVERS) before it joins;
a node whose worker does not list it fails the run saying so, instead of generating somewhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.workers.helpers import launch_run, make_project, make_user
from trainer.config import config_from_dict
from trainer.errors import ConfigError
from webapp.experiments import services
from webapp.experiments.config_paths import run_config_for_worker
from webapp.experiments.models import Run, RunNode
from webapp.experiments.nodes import node_mark_ready, node_register, node_start_round
from workers.nodes import train_node

SERVER = "http://rollout:8100"


def _config(mode: str = "server") -> dict[str, Any]:
    return {
        "name": "vllm-nodes",
        "model": {"name_or_path": "tiny:addition"},
        "data": {"source": "demo", "size": 32},
        "rollout": {
            "num_generations": 4,
            "max_completion_length": 4,
            "engine": "vllm",
            "vllm_mode": mode,
            **({"vllm_server_url": SERVER} if mode == "server" else {}),
        },
        "training": {"max_steps": 2, "prompts_per_step": 2, "num_nodes": 2, "num_processes": 1},
    }


def test_two_nodes_take_a_shared_rollout_server_and_refuse_colocated_vllm() -> None:
    config = config_from_dict(_config())
    assert config.world_size == 2 and config.rollout.vllm_server_url == SERVER
    with pytest.raises(
        ConfigError, match=r"num_processes 1 on 2 nodes does not support .*vllm_mode 'colocated'"
    ):
        config_from_dict(_config("colocated"))


def _never_trains(*args: Any, **kwargs: Any) -> str:
    raise AssertionError("a node whose worker does not list the rollout server must not train")


def test_each_node_checks_the_rollout_server_against_its_own_workers_allow_list(
    real_services: None, settings: SettingsWrapper, tmp_path: Path
) -> None:
    settings.RLVR_ENQUEUE = False  # this test plays the node tasks itself
    settings.RLVR_ROLLOUT_SERVERS = [SERVER]
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner), _config())
    round_ = node_start_round(run_id=run.pk)
    host = node_register(
        run_id=run.pk,
        round=round_,
        index=0,
        name="host-a",
        address="127.0.0.1",
        endpoint=lambda: "127.0.0.1:1",
    )
    assert host is not None and host.node.is_host
    services.run_mark_started(run_id=run.pk, worker="host-a")
    node_mark_ready(node_id=host.node.pk, resume_from=None)
    run.refresh_from_db()
    # what every node task trains with: the same server, checked again on the worker that runs it
    assert run_config_for_worker(run=run)["rollout"]["vllm_server_url"] == SERVER

    settings.RLVR_ROLLOUT_SERVERS = []  # the second host's worker lists no rollout server
    assert train_node(run.pk, round_, 1, "host-b", _never_trains, _never_trains) == "failed"
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error_message.startswith("node host-b: ") and "RLVR_ROLLOUT_SERVERS" in run.error_message
    joined = RunNode.objects.get(run=run, round=round_, index=1)
    assert (joined.state, joined.message) == ("failed", run.error_message)
    assert Run.objects.filter(pk=run.pk, status="failed").count() == 1

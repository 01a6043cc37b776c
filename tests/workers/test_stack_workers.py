"""``rlvr stack``'s workers: training has a worker of its own, so evaluations and verifier jobs (the ``eval``
and ``default`` queues) never wait behind a training run."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from webapp.core.tasks_by_name import QUEUES, RUN_EVALUATION, RUN_TRAINING, RUN_VERIFICATION_JOB
from webapp.stack import Child, Stack, StackError, workers


def queues_of(argv: list[str]) -> set[str]:
    return set(argv[argv.index("-Q") + 1].split(","))


def test_the_stack_serves_every_queue_and_training_alone_on_its_own_worker(tmp_path: Path) -> None:
    children = workers(tmp_path)
    served = [queues_of(child.argv) for child in children]
    assert set().union(*served) == set(QUEUES)
    training = next(child for child in children if RUN_TRAINING.queue in queues_of(child.argv))
    assert queues_of(training.argv) == {RUN_TRAINING.queue}
    assert training.argv[training.argv.index("-c") + 1] == "1"  # one run at a time on the GPU
    others = [child for child in children if child is not training]
    assert any({RUN_EVALUATION.queue, RUN_VERIFICATION_JOB.queue} <= queues_of(c.argv) for c in others)


def test_each_stack_worker_has_its_own_stable_node_name_and_log(tmp_path: Path) -> None:
    children = workers(tmp_path)
    names = [child.argv[child.argv.index("-n") + 1] for child in children]
    assert len(set(names)) == len(names) and all("%h" in name for name in names)
    assert len({child.log_path for child in children}) == len(children)
    assert workers(tmp_path)[0].argv == children[0].argv  # the same on every start: recovery finds its rows


def test_each_stack_worker_gets_its_share_of_the_cores_as_torch_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLVR_TORCH_THREADS", raising=False)
    assert [c.own_env["RLVR_TORCH_THREADS"] for c in workers(tmp_path, cpus=2)] == ["1", "1"]
    assert [c.own_env["OMP_NUM_THREADS"] for c in workers(tmp_path, cpus=8)] == ["4", "4"]
    assert len(workers(tmp_path)) == 2  # the default: this process's affinity mask


def test_a_thread_count_the_user_set_is_given_to_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_TORCH_THREADS", "3")
    assert [c.own_env["RLVR_TORCH_THREADS"] for c in workers(tmp_path, cpus=2)] == ["3", "3"]
    monkeypatch.setenv("RLVR_TORCH_THREADS", "many")
    with pytest.raises(StackError, match="RLVR_TORCH_THREADS must be a positive whole number"):
        workers(tmp_path)


@pytest.mark.timeout(120)
def test_a_child_the_stack_starts_runs_torch_with_its_share_of_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLVR_TORCH_THREADS", raising=False)
    training = workers(tmp_path, cpus=2)[0]
    probe = Child(
        "probe",
        [
            sys.executable,
            "-c",
            "import os, torch; print(os.environ['RLVR_TORCH_THREADS'], torch.get_num_threads())",
        ],
        tmp_path / "probe.log",
        own_env=training.own_env,
    )
    stack = Stack("127.0.0.1", 0, demo=False, force_migrate=False, out=io.StringIO())
    stack._start(probe)  # as the stack starts its workers
    assert probe.process is not None and probe.process.wait(timeout=100) == 0
    assert probe.log_path.read_text().split() == ["1", "1"]

"""``rlvr stack``'s workers: training has a worker of its own, so evaluations and verifier jobs (the ``eval``
and ``default`` queues) never wait behind a training run."""

from __future__ import annotations

from pathlib import Path

from webapp.core.tasks_by_name import QUEUES, RUN_EVALUATION, RUN_TRAINING, RUN_VERIFICATION_JOB
from webapp.stack import workers


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

"""Two "hosts" on one machine for multi-node tests: two torchrun agents on loopback, one hosting the rendezvous."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from trainer.distributed.rendezvous import NodeSpec, endpoint_of, rendezvous_port
from trainer.sinks import NullSink, RunInfo, StepReport, TrainResult
from trainer.step.loop import train

LOOPBACK = "127.0.0.1"


class Recorder(NullSink):
    """What one node's launcher relayed."""

    def __init__(self) -> None:
        self.info: RunInfo | None = None
        self.steps: list[StepReport] = []
        self.checkpoints: list[int] = []
        self.ended: str | None = None
        self.errors: list[tuple[str, str]] = []

    def on_start(self, info: RunInfo) -> None:
        self.info = info

    def on_step(self, report: StepReport) -> None:
        self.steps.append(report)

    def on_checkpoint(self, step: int, path: str) -> None:
        self.checkpoints.append(step)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self.ended = status

    def on_error(self, message: str, traceback_text: str) -> None:
        self.errors.append((message, traceback_text))


def node_spec(
    index: int,
    is_host: bool,
    endpoint: str | None = None,
    nodes: int = 2,
    join_timeout_s: int = 60,
    membership: Callable[[], str] | None = None,
) -> NodeSpec:
    return NodeSpec(
        num_nodes=nodes,
        endpoint=endpoint or endpoint_of(LOOPBACK, rendezvous_port(LOOPBACK)),
        rdzv_id="test-run",
        is_host=is_host,
        name=f"node-{index}",
        local_addr=LOOPBACK,
        join_timeout_s=join_timeout_s,
        membership=membership,
    )


def two_node_runs(config: Any, resume_from: Any = None) -> tuple[list[Recorder], list[TrainResult]]:
    """Train ``config`` as two nodes (threads of this process, each launching its own torchrun agent)."""
    host = node_spec(0, is_host=True)
    specs = [host, node_spec(1, is_host=False, endpoint=host.endpoint)]
    sinks = [Recorder(), Recorder()]
    results: list[Any] = [None, None]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = train(config, sinks[i], resume_from=resume_from, log=lambda m: None, node=specs[i])
        except BaseException as err:  # re-raised in the test's thread
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    if errors:
        raise errors[0]
    return sinks, results

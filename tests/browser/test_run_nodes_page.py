"""The run page of a finished run over two hosts, in a real browser: the Nodes section lists both nodes of the
round, which one hosted the rendezvous, and opens to each node's last log lines, shown as text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
HOSTILE = "<img src=x onerror=alert(1)>"


def _finished_two_node_run() -> Any:
    from webapp.experiments import services
    from webapp.experiments.nodes import node_register, node_start_round, node_update

    config = {
        "name": "browser", "data": {"source": "demo", "size": 32},
        "rollout": {"num_generations": 4, "max_completion_length": 4},
        "training": {"max_steps": 2, "prompts_per_step": 2, "num_nodes": 2, "num_processes": 1},
    }  # fmt: skip
    run = seed_run(config=config)

    def record() -> None:
        round_ = node_start_round(run_id=run.pk)
        for index in range(2):
            reg = node_register(
                run_id=run.pk,
                round=round_,
                index=index,
                name=f"gpu-{'ab'[index]}@host-{'ab'[index]}",
                address=f"10.0.0.{11 + index}",
                endpoint=lambda: "10.0.0.11:29400",
            )
            assert reg is not None
            node_update(
                node_id=reg.node.pk,
                state="finished",
                message="succeeded",
                log_tail=f"--- rank{index}.log ---\nstep 2 done on node {index}\n{HOSTILE}",
            )
        services.run_mark_started(run_id=run.pk, worker="gpu-a@host-a")
        services.run_finish(run_id=run.pk, status="succeeded", final_metrics={})

    off_the_page_thread(record)
    return run


def test_the_run_page_lists_both_nodes_and_opens_to_their_logs(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = _finished_two_node_run()
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    section = page.locator("#run-nodes")
    assert section.is_visible()
    assert "2 nodes \u00d7 1 process" in section.inner_text()
    summaries = section.locator("details.node summary")
    assert summaries.count() == 2
    assert "hosts the rendezvous at 10.0.0.11:29400" in summaries.nth(0).inner_text()
    assert "hosts the rendezvous" not in summaries.nth(1).inner_text()
    summaries.nth(1).click()
    log = section.locator("details.node").nth(1).locator("pre")
    assert log.is_visible() and HOSTILE in log.inner_text()  # the text itself, not an element
    assert page.locator("#run-nodes img").count() == 0
    screenshot(page, "two-node-run")
    assert page.js_errors == []

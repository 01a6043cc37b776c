"""A run over two hosts launched from the experiment form in a real browser: two real Celery workers stand for
two hosts (distinct node names, loopback address), know each other only through torchrun's rendezvous, and
the run page shows both nodes with their logs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.browser.test_full_flow import fill_experiment_form
from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    make_project,
    make_user,
    redis_url,
    wait_for,
    worker_env,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def test_a_two_node_run_launched_from_the_form_trains_on_two_workers_and_shows_both_nodes(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    random_model_dir: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from django.conf import settings

    from webapp.experiments.models import Run, RunNode

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    roots = list(dict.fromkeys([*settings.RLVR_MODEL_ROOTS, tmp_path_factory.getbasetemp()]))
    env = {**worker_env(tmp_path / "data", roots), "RLVR_NODE_ADDRESS": "127.0.0.1", "OMP_NUM_THREADS": "1"}
    clear_queues(redis_url())
    hosts = [
        CeleryWorker(env, tmp_path / f"{name}.log", f"{name}@%h").start() for name in ("host-a", "host-b")
    ]
    try:
        sign_in("alice", PASSWORD)
        page.goto(f"/projects/{project.pk}/experiments/new/")
        fill_experiment_form(page, random_model_dir, max_steps=3)
        page.fill("[data-path='training.num_nodes']", "2")
        page.fill("[data-path='training.node_join_timeout_s']", "120")
        page.click("#experiment-form button[type=submit]")
        page.wait_for_url(re.compile(r"/experiments/\d+/$"))
        page.click("button:has-text('Launch run')")
        page.wait_for_url(re.compile(r"/runs/\d+/$"))
        run = Run.objects.latest("id")
        assert run.config["training"]["num_nodes"] == 2

        wait_for(
            lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed"), 300, "the run", hosts[1]
        )
        run.refresh_from_db()
        assert (run.status, run.step, run.error_message) == ("succeeded", 3, "")
        nodes = RunNode.objects.filter(run=run)
        wait_for(
            lambda: not nodes.filter(state__in=("joining", "training")).exists(), 60, "the nodes", hosts[0]
        )
        assert sorted(n.name for n in nodes) == sorted(h.node for h in hosts)  # one node task on each worker
        assert [n.is_host for n in nodes].count(True) == 1

        page.goto(f"/runs/{run.pk}/")
        for host in hosts:
            page.get_by_text(host.node).first.wait_for()
        screenshot(page, "two-host-run")
        assert page.js_errors == []
    finally:
        for host in hosts:
            host.stop()
        clear_queues(redis_url())

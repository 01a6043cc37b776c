"""The pages of a run over several hosts: the runs table says how the run is laid out ("2 nodes × 1 process"),
and the run page lists every node of every round with its rendezvous role, state and last log lines, which
are the node's own output and shown escaped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Run
from webapp.experiments.nodes import node_register, node_start_round, node_update
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project

HOSTILE = "<script>alert('node')</script>"


def _two_node_run(project: Project, alice: User) -> Run:
    config = {**SMALL_CONFIG, "training": {**SMALL_CONFIG["training"], "num_nodes": 2, "num_processes": 1}}
    experiment = experiment_create(project=project, actor=alice, name="two-hosts", config=config)
    run = run_launch(experiment=experiment, actor=alice)
    round_ = node_start_round(run_id=run.pk)
    for index, name in enumerate(["gpu-a@host-a", "gpu-b@host-b"]):
        reg = node_register(
            run_id=run.pk,
            round=round_,
            index=index,
            name=name,
            address=f"10.0.0.{11 + index}",
            endpoint=lambda: "10.0.0.11:29400",
        )
        assert reg is not None
        node_update(
            node_id=reg.node.pk,
            state="finished",
            message="succeeded",
            log_tail=f"--- torchrun.log ---\nstep 1 of {name}\n{HOSTILE}",
        )
    return run


@pytest.mark.django_db
def test_the_runs_table_and_the_run_page_show_the_nodes_with_their_logs_escaped(
    project: Project, alice: User, join: Callable[[User, str | None], User], bob: User
) -> None:
    run = _two_node_run(project, alice)
    one_host = run_launch(experiment=run.experiment, actor=alice)  # the same experiment, also 2 x 1
    client = Client()
    client.force_login(join(bob, "viewer"))  # the least trusted member sees the nodes

    table = client.get(f"/experiments/{run.experiment_id}/").content.decode()
    assert table.count("2 nodes \u00d7 1 process") == 2 and one_host.pk != run.pk

    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="run-nodes"' in html
    assert "gpu-a@host-a" in html and "gpu-b@host-b" in html
    assert 'hosts the rendezvous at <span class="mono">10.0.0.11:29400</span>' in html
    assert html.count("hosts the rendezvous") == 1  # only the first node to register hosts it
    assert "step 1 of gpu-b@host-b" in html
    assert HOSTILE not in html and "&lt;script&gt;alert(&#x27;node&#x27;)&lt;/script&gt;" in html

    outsider = Client()
    outsider.force_login(join(User.objects.create_user("eve", password="pw-eve-123"), None))
    assert outsider.get(f"/runs/{run.pk}/").status_code in (403, 404)


@pytest.mark.django_db
def test_a_one_host_run_has_no_nodes_section(project: Project, alice: User) -> None:
    experiment = experiment_create(project=project, actor=alice, name="one-host", config=SMALL_CONFIG)
    run = run_launch(experiment=experiment, actor=alice)
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-nodes"' not in html
    assert "1 process" in client.get(f"/experiments/{experiment.pk}/").content.decode()

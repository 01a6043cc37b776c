"""An outside run whose client could not deliver some rollouts says so beside its status, live, on a page
that is already open: a success with rollouts missing is never a silent one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def send(project: Any, **items: Any) -> None:
    from django.contrib.auth.models import User

    from webapp.ingest.schema import parse_batch
    from webapp.ingest.services import ingest_batch

    body = {
        "version": 1,
        "run": {"project": project.slug, "key": "outside", "name": "trl-grpo", "source": "trl"},
        **items,
    }
    off_the_page_thread(
        lambda: ingest_batch(user=User.objects.get(username="alice"), batch=parse_batch(body))
    )


def test_the_count_of_missing_rollouts_appears_beside_the_status_as_it_is_reported(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    from webapp.experiments.models import Run

    project = seed_run().experiment.project
    send(project, metrics=[{"step": 1, "values": {"rollout/reward_mean": 0.5}}])
    run = Run.objects.get(external_key="outside")
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")
    assert not page.is_visible("#run-dropped-badge") and not page.is_visible("#run-dropped")

    send(project, rollouts_dropped=2, finish={"status": "succeeded"})

    page.wait_for_function("() => !document.getElementById('run-dropped-badge').hidden")
    # the count and the end arrive as separate live events: the status may follow the badge by a moment
    page.wait_for_function("() => document.getElementById('run-status').textContent.trim() === 'succeeded'")
    assert page.inner_text("#run-dropped-badge") == "2 rollouts missing"
    assert "2 rollout(s) of this run could not be delivered" in page.inner_text("#run-dropped")
    assert page.js_errors == []

"""A run building its model before step 1 says so, from the database, on a fresh page load: the run page
shows the build's label, count and time left instead of "step 0 / N", the experiment and project pages
say "building model", and ``rlvr stack``'s progress line names the build."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.test import Client

from webapp.experiments.models import Run
from webapp.experiments.services import run_mark_started, run_record_phase, run_record_step
from webapp.stack import progress_line

LABEL = "Building the built-in model tiny:addition (warm-start SFT, once)"


def building(run: Run, done: int = 300, total: int = 1200) -> Run:
    run_mark_started(run_id=run.pk, worker="w1")
    run_record_phase(
        run_id=run.pk,
        name="building_model",
        label=LABEL,
        subject="tiny:addition",
        done=done,
        total=total,
        elapsed_s=60.0,
        eta_s=180.0,
    )
    run.refresh_from_db()
    return run


def visible(html: str, element_id: str) -> bool:
    tag = re.search(rf'<[^>]*id="{element_id}"[^>]*>', html)
    assert tag is not None, element_id
    return "display: none" not in tag.group(0)


def test_the_run_page_shows_the_build_in_place_of_step_zero(
    run: Run, browser_as: Callable[[str | None], Client]
) -> None:
    building(run)
    html = browser_as("owner").get(f"/runs/{run.pk}/").content.decode()
    assert LABEL in html and "300 / 1200 steps" in html
    assert re.search(r"about (3m 0s|2m 5\ds) left", html)
    assert 'id="phase-bar" style="width: 25.0%"' in html
    assert (
        visible(html, "run-phase") and not visible(html, "step-progress") and not visible(html, "step-text")
    )


def test_the_run_page_shows_steps_again_after_the_first_one(
    run: Run, browser_as: Callable[[str | None], Client]
) -> None:
    building(run, done=1200)
    run_record_step(run_id=run.pk, step=1, max_steps=20, metrics={}, rollouts=[])
    html = browser_as("owner").get(f"/runs/{run.pk}/").content.decode()
    assert not visible(html, "run-phase") and visible(html, "step-progress")
    assert "step 1 / 20" in html


def test_the_experiment_and_project_pages_say_building_model(
    run: Run, browser_as: Callable[[str | None], Client]
) -> None:
    building(run)
    client = browser_as("owner")
    experiment_html = client.get(f"/experiments/{run.experiment_id}/").content.decode()
    assert "building model" in experiment_html and f"0 / {run.max_steps}" not in experiment_html
    assert "building model" in client.get(f"/projects/{run.experiment.project_id}/").content.decode()


def test_the_stack_progress_line_names_the_build_and_the_time_left(run: Run) -> None:
    building(run)
    line, finished = progress_line(run.pk)
    assert f"{LABEL} 300/1200, about" in line and "left" in line and not finished

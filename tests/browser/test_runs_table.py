"""The runs table in a real browser, the whole journey: 30 runs of a learning-rate x temperature sweep, one of
them with a single lucky batch. From the project page the user opens the runs table, (re-)adds the
learning-rate column from the column chooser, sorts by the smoothed reward and finds the truly best run on
top (sorting by the raw best puts the lucky one there instead), groups by learning rate, filters, saves the
view, gets it back after a reload and from a link, then selects 3 runs and lands on the compare page."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LEARNING_RATES = [1e-5, 3e-5, 1e-4, 3e-4, 1e-3]
LEVEL = {1e-5: 0.30, 3e-5: 0.45, 1e-4: 0.70, 3e-4: 0.55, 1e-3: 0.20}  # the reward each rate levels off at
TEMPERATURES = [0.7, 1.0]
STEPS = 40
SMOOTHED = "metric:rollout/reward_mean:smoothed"
RAW_BEST = "metric:rollout/reward_mean:best"
LR = "config:training.learning_rate"


def seed_sweep() -> tuple[Any, dict[str, Any], dict[int, float]]:
    """alice's project with 30 runs (5 rates x 2 temperatures x 3 seeds) and their reward series: the "best"
    run levels off at 0.82; the "spiky" one sits at 0.30 with one batch of 0.99 at step 25."""
    from django.test import override_settings

    from tests.workers.helpers import make_project, make_user
    from webapp.experiments.models import MetricPoint, Run
    from webapp.experiments.services import experiment_create, run_launch

    owner = make_user("alice")
    project = make_project(owner, "Sweep")
    rng = random.Random(3)
    runs: list[Any] = []
    lr_of: dict[int, float] = {}
    points: list[Any] = []
    with override_settings(RLVR_ENQUEUE=False):  # seeded runs never reach a worker
        for lr in LEARNING_RATES:
            for temperature in TEMPERATURES:
                config = {
                    "name": "sweep", "data": {"source": "demo", "size": 32},
                    "rollout": {"num_generations": 4, "max_completion_length": 4, "temperature": temperature},
                    "training": {"max_steps": STEPS, "prompts_per_step": 2, "learning_rate": lr},
                }  # fmt: skip
                experiment = experiment_create(
                    project=project, actor=owner, name=f"lr{lr:g}-t{temperature:g}", config=config
                )
                for _ in range(3):
                    run = run_launch(experiment=experiment, actor=owner)
                    runs.append(run)
                    lr_of[run.pk] = lr
    best, spiky = runs[13], runs[1]  # lr 1e-4 and lr 1e-5
    for run in runs:
        level = (
            0.82
            if run is best
            else LEVEL[lr_of[run.pk]] + (0.02 if run.config["rollout"]["temperature"] == 1.0 else 0.0)
        )
        for step in range(1, STEPS + 1):
            value = 0.99 if (run is spiky and step == 25) else level + rng.uniform(-0.04, 0.04)
            points.append(MetricPoint(run=run, step=step, key="rollout/reward_mean", value=value))
    MetricPoint.objects.bulk_create(points)
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(status="succeeded", step=STEPS)
    failed = [runs[4].pk, runs[22].pk]
    Run.objects.filter(pk__in=failed).update(status="failed")
    return project, {"best": best, "spiky": spiky, "runs": runs, "failed": failed}, lr_of


def first_row(page: Any) -> int:
    return int(page.locator("#rt-table tbody tr[data-run-id]").first.get_attribute("data-run-id"))


def wait_ready(page: Any) -> None:
    page.wait_for_selector("#rt-table[data-ready='1']")


def whole_table_screenshot(page: Any, screenshot: Callable[[Any, str], Path], name: str) -> None:
    """The table scrolled back to its first column, in a window tall enough for all 30 rows."""
    page.eval_on_selector(".rt-scroll", "e => { e.scrollLeft = 0; e.scrollTop = 0; }")
    page.set_viewport_size({"width": 1400, "height": 1600})
    screenshot(page, name)
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_rank_group_filter_save_and_compare_runs_in_the_runs_table(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    project, named, lr_of = seed_sweep()
    best, spiky = named["best"], named["spiky"]
    sign_in("alice", PASSWORD)

    page.goto(f"/projects/{project.pk}/")
    page.click("#runs-table-link")
    page.wait_for_url(re.compile(rf"/projects/{project.pk}/runs/"))
    wait_ready(page)
    assert page.locator("#rt-table tbody tr[data-run-id]").count() == 30
    # the defaults: the reward's smoothed and last figures, and the config fields that differ
    for col in (SMOOTHED, "metric:rollout/reward_mean:last", LR, "config:rollout.temperature"):
        assert page.locator(f"#rt-table th[data-col='{col}']").count() == 1, col

    # the column chooser: take the learning rate off and put it back; add the raw best reward
    page.click("#rt-columns-toggle")
    page.fill("#rt-config-search", "learning_rate")
    page.uncheck(f"#rt-choose-config input[data-col='{LR}']")
    assert page.locator(f"#rt-table th[data-col='{LR}']").count() == 0
    page.check(f"#rt-choose-config input[data-col='{LR}']")
    page.check("#rt-choose-metrics input[data-key='rollout/reward_mean'][data-stat='best']")
    page.click("#rt-columns-toggle")
    assert page.locator(f"#rt-table th[data-col='{LR}']").count() == 1

    # the raw best puts the lucky batch on top; the smoothed figure puts the run that held its level there
    page.click(f"#rt-table th[data-col='{RAW_BEST}'] button")
    assert first_row(page) == spiky.pk
    page.click(f"#rt-table th[data-col='{SMOOTHED}'] button")
    assert page.get_attribute(f"#rt-table th[data-col='{SMOOTHED}']", "aria-sort") == "descending"
    assert first_row(page) == best.pk
    top = page.locator("#rt-table tbody tr[data-run-id]").first
    assert top.locator(f"a[href='/runs/{best.pk}/']").count() == 1
    whole_table_screenshot(page, screenshot, "ungrouped-sorted-by-smoothed-reward")

    # grouped by learning rate: five groups of six, the best run's rate first
    page.select_option("#rt-group", LR)
    groups = page.locator("#rt-table tbody tr.rt-group")
    assert groups.count() == 5
    assert groups.first.get_attribute("data-group") == "0.0001"
    assert "6 runs" in groups.first.inner_text() and "best" in groups.first.inner_text()
    assert first_row(page) == best.pk
    whole_table_screenshot(page, screenshot, "grouped-by-learning-rate")

    # the status filter: only the failed runs, then all again
    page.check("#rt-status-filter input[value='failed']")
    page.wait_for_function("() => document.querySelector('#rt-table').dataset.rows === '2'")
    assert {
        int(r.get_attribute("data-run-id")) for r in page.locator("#rt-table tbody tr[data-run-id]").all()
    } == set(named["failed"])
    page.uncheck("#rt-status-filter input[value='failed']")
    page.wait_for_function("() => document.querySelector('#rt-table').dataset.rows === '30'")

    # filters: the learning rate up to 1e-4 (three rates), then a smoothed reward above 0.42 as well
    page.fill(f"#rt-table input.rt-filter[data-col='{LR}']", "<=1e-4")
    page.wait_for_function("() => document.querySelector('#rt-table').dataset.rows === '18'")
    page.fill(f"#rt-table input.rt-filter[data-col='{SMOOTHED}']", ">0.42")
    expected = sum(
        1 for run in named["runs"] if lr_of[run.pk] in (3e-5, 1e-4)
    )  # 1e-5 runs (the spiky one too) stay below
    page.wait_for_function(f"() => document.querySelector('#rt-table').dataset.rows === '{expected}'")
    assert page.locator("#rt-table tbody tr.rt-group").count() == 2
    assert page.locator(f"#rt-table tbody tr[data-run-id='{spiky.pk}']").count() == 0

    # save the view; the address names it and holds the state
    page.fill("#rt-view-name", "lr sweep")
    page.click("#rt-save")
    page.wait_for_selector("#rt-message:has-text('Saved the view')")
    view_id = int(page.eval_on_selector("#rt-view", "s => s.value"))
    assert f"view={view_id}" in page.url

    page.reload()
    wait_ready(page)
    assert page.input_value("#rt-view") == str(view_id)
    assert page.input_value(f"#rt-table input.rt-filter[data-col='{LR}']") == "<=1e-4"
    assert page.locator("#rt-table tbody tr.rt-group").count() == 2
    assert first_row(page) == best.pk

    # a link with just the view's id brings back the saved arrangement too
    page.goto(f"/projects/{project.pk}/runs/?view={view_id}")
    wait_ready(page)
    assert page.input_value("#rt-group") == LR
    assert page.get_attribute(f"#rt-table th[data-col='{SMOOTHED}']", "aria-sort") == "descending"
    assert page.get_attribute("#rt-table", "data-rows") == str(expected)
    assert page.is_hidden("#rt-view-changed")

    # select three runs and compare them
    chosen = [
        int(r.get_attribute("data-run-id")) for r in page.locator("#rt-table tbody tr[data-run-id]").all()[:3]
    ]
    for run_id in chosen:
        page.check(f"#rt-table tr[data-run-id='{run_id}'] input.rt-select")
    assert page.inner_text("#rt-compare") == "Compare selected (3)"
    page.click("#rt-compare")
    page.wait_for_url(re.compile(r"/compare/\?runs="))
    shown = sorted(int(x) for x in page.url.split("runs=")[1].split(","))
    assert shown == sorted(chosen)
    for run_id in chosen:
        assert page.locator(f"#config-diff thead a[href='/runs/{run_id}/']").count() == 1
    assert page.js_errors == []

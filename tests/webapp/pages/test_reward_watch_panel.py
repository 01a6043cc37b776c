"""The run page's "Learned reward vs verifier" panel: shown to every member for a watched run, with the flag's text
escaped; absent for a run without a watch; the page stays a 404 for outsiders."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client

from webapp.experiments.models import Run
from webapp.experiments.services import run_log_event, run_record_step

WATCHED = {
    "verifiers": [{"name": "regex_format", "label": "rm", "params": {"pattern": "[0-9]"}}, {"name": "chain_arithmetic"}],
    "algorithm": {"reward_weights": [1.0, 0.0]},
    "reward_watch": {"learned": "rm"},
}  # fmt: skip


def watched(run: Run) -> Run:
    run.config = {**run.config, **WATCHED}
    run.save(update_fields=["config"])
    return run


def test_a_viewer_sees_the_panel_and_the_flag_escaped(
    run: Run, browser_as: Callable[[str | None], Client]
) -> None:
    watched(run)
    run_record_step(run_id=run.pk, step=5, max_steps=10, metrics={"watch/hacking": 1.0}, rollouts=[])
    run_log_event(
        run_id=run.pk, level="warning", kind="reward_hacking", step=5, message="<b>boom</b> at step 5"
    )
    response = browser_as("viewer").get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Learned reward vs verifier" in html and 'id="reward-watch-chart"' in html
    assert "&lt;b&gt;boom&lt;/b&gt; at step 5" in html and "<b>boom</b>" not in html
    assert response.context["page_data"]["reward_watch"]["flag"]["step"] == 5
    assert "js/reward_watch.js" in html and "{#" not in html  # no template comment leaks into the page


def test_a_run_without_a_watch_has_no_panel(run: Run, browser_as: Callable[[str | None], Client]) -> None:
    response = browser_as("owner").get(f"/runs/{run.pk}/")
    assert 'id="reward-watch"' not in response.content.decode()
    assert response.context["page_data"]["reward_watch"] is None


def test_an_outsider_gets_a_404(run: Run, browser_as: Callable[[str | None], Client]) -> None:
    assert browser_as("outsider").get(f"/runs/{watched(run).pk}/").status_code == 404

"""The pages under the Content-Security-Policy (webapp/accounts/csp.py) in a real browser: the policy
arrives, and nothing the pages load (their scripts, plotly.js, the websocket, inline styles) is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step, token_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

# Init scripts run before the page's own and are not subject to its policy: they see every violation.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline")));
"""


def seed_rubric(run: Any) -> Any:
    from django.contrib.auth.models import User

    from webapp.rubrics.services import rubric_create

    alice = User.objects.get(username="alice")
    return rubric_create(
        project=run.experiment.project, actor=alice, name="r", criteria=[{"name": "ok", "scorer": "human"}]
    )


def watch_csp(page: Any) -> list[str]:
    """Console lines that report a refused resource (Chromium logs each CSP violation as an error)."""
    refused: list[str] = []
    page.on(
        "console", lambda msg: refused.append(msg.text) if "Content Security Policy" in msg.text else None
    )
    page.context.add_init_script(RECORD_VIOLATIONS)
    return refused


def test_the_pages_load_under_the_policy_without_a_violation(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    run = seed_run()
    rubric = seed_rubric(run)
    for step in (1, 2):  # so that plotly.js draws the run's and the comparison's charts
        store_step(
            run, step, [token_record(step, 0, 0, ["4"])], {"rollout/reward_mean": step / 4, "actor/kl": 0.01}
        )
    refused = watch_csp(page)
    response = page.goto("/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    sign_in("alice", PASSWORD)
    paths = [
        "/",
        f"/projects/{run.experiment.project_id}/",
        f"/experiments/{run.experiment_id}/",
        f"/runs/{run.pk}/",
        f"/projects/{run.experiment.project_id}/compare/?runs={run.pk}",
        f"/runs/{run.pk}/rollouts/",
        f"/projects/{run.experiment.project_id}/rubrics/",
        f"/rubrics/{rubric.pk}/",
        "/admin/",
    ]
    for path in paths:
        page.goto(path)
        page.wait_for_load_state("networkidle")
        if path.startswith("/runs/") and path.endswith(f"{run.pk}/"):
            page.wait_for_selector("#charts .js-plotly-plot")
        assert page.evaluate("window.__csp") == [], path
    assert refused == []
    assert page.js_errors == []


def test_a_delete_button_still_asks_first_without_an_inline_handler(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    from webapp.rubrics.models import Rubric

    run = seed_run()
    rubric = seed_rubric(run)
    refused = watch_csp(page)
    sign_in("alice", PASSWORD)
    page.goto(f"/rubrics/{rubric.pk}/")
    questions: list[str] = []

    def dismiss(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.click("button.danger")
    page.wait_for_timeout(300)
    assert questions == ["Delete this rubric?"]
    assert Rubric.objects.filter(pk=rubric.pk).exists()
    assert refused == []

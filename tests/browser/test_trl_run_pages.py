"""A run trained by TRL's GRPOTrainer (for real, on the tiny model, through rlvr_client/trl.py) is a
first-class run in a real browser: the compare page overlays it with a native run of the same project, and
the token view colours a TRL completion's tokens by its advantage.

With RLVR_SCREENSHOTS set, the two pages are also saved as trl_compare.png and trl_token_view.png in the
folder it names (a value without a slash, such as 1, means /work/notes/screens)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step, token_record
from tests.integrations.trl_helpers import tiny_grpo_trainer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

BACKGROUNDS_JS = """() => Array.from(document.querySelectorAll('#tv-tokens .tok'), (e) => {
  const m = (getComputedStyle(e).backgroundColor.match(/[\\d.]+/g) || []).map(Number);
  return m.length === 3 ? [...m, 1] : m;
})"""
TRACES_JS = """(key) => {
  const chart = document.querySelector(`#compare-charts .chart[data-key="${key}"]`);
  return chart && chart.data ? chart.data.filter((t) => t.meta === "smoothed").map((t) => ({name: t.name, steps: Array.from(t.x)})) : null;
}"""


def keep_screenshot(page: Any, name: str) -> None:
    wanted = os.environ.get("RLVR_SCREENSHOTS")
    if wanted:
        folder = Path(wanted if os.sep in wanted else "/work/notes/screens")
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / name), full_page=True)


def native_and_trl_runs(live_server_url: str, model_dir: Path, work: Path) -> tuple[Any, Any]:
    """alice's project with a native run (3 steps of metrics, seeded) and a TRL run trained here, 3 steps."""
    from rlvr_client.trl import instrument
    from webapp.accounts.tokens import issue_token
    from webapp.experiments.models import Run

    native = seed_run()
    for step in (1, 2, 3):
        store_step(
            native,
            step,
            [token_record(step, 0, s, ["4", "2"]) for s in range(2)],
            metrics={"rollout/reward_mean": 0.2 * step, "actor/entropy": 1.0 / step},
        )
    project = native.experiment.project
    trainer = tiny_grpo_trainer(model_dir, work / "trl-out")
    instrument(
        trainer,
        project=project.slug,
        name="trl-grpo",
        url=live_server_url,
        token=issue_token(native.created_by).token,
        spool_dir=work / "spool",
    )
    trainer.train()
    return native, Run.objects.get(experiment__project=project, source="trl")


def test_the_compare_page_overlays_a_trl_run_and_a_native_run(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    live_server_url: str,
    warm_model_dir: Path,
    tmp_path: Path,
) -> None:
    native, trl_run = native_and_trl_runs(live_server_url, warm_model_dir, tmp_path)
    sign_in("alice", PASSWORD)

    page.goto(f"/projects/{native.experiment.project.pk}/compare/?runs={native.pk},{trl_run.pk}")
    page.wait_for_function(f"() => ({TRACES_JS})('rollout/reward_mean') !== null")
    traces = page.evaluate(TRACES_JS, "rollout/reward_mean")
    screenshot(page, "compare")
    keep_screenshot(page, "trl_compare.png")

    native_trace, trl_trace = traces
    assert native_trace["name"] == f"#{native.pk} {native.experiment.name}"
    assert trl_trace["name"].startswith(f"#{trl_run.pk} trl-grpo") and "TRL" in trl_trace["name"]
    assert native_trace["steps"] == trl_trace["steps"] == [1, 2, 3]
    heading = page.locator(f"#config-diff thead th:has(a[href='/runs/{trl_run.pk}/'])")
    assert "TRL" in heading.inner_text()
    assert page.js_errors == []


def test_the_token_view_colours_a_trl_completion_by_its_advantage(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    live_server_url: str,
    warm_model_dir: Path,
    tmp_path: Path,
) -> None:
    _, trl_run = native_and_trl_runs(live_server_url, warm_model_dir, tmp_path)
    rollouts = trl_run.rollouts.order_by("step", "group", "sample_index")
    best, worst = max(rollouts, key=lambda r: r.advantage), min(rollouts, key=lambda r: r.advantage)
    assert best.advantage > 0.1 > -0.1 > worst.advantage, (
        "the seeded tiny run has groups whose rewards differ"
    )
    sign_in("alice", PASSWORD)

    colours = {}
    for rollout in (best, worst):
        page.goto(f"/runs/{trl_run.pk}/rollouts/?rollout={rollout.pk}")
        page.wait_for_selector(f"#tv-tokens[data-ready='1'][data-rollout='{rollout.pk}']", timeout=30_000)
        assert page.get_attribute("#tv-tokens", "data-channel") == "advantage"
        assert page.locator("#tv-tokens .tok").count() == rollout.length
        colours[rollout.pk] = page.evaluate(BACKGROUNDS_JS)
        if rollout is best:
            screenshot(page, "token-view")
            keep_screenshot(page, "trl_token_view.png")

    # one advantage per TRL completion, on every token in the loss: all its tokens one colour, blue above 0
    # and red below (static/js/token_view.js's diverging scale)
    for rollout, (channel, other) in ((best, (2, 0)), (worst, (0, 2))):
        spans = colours[rollout.pk]
        assert all(c == spans[0] for c in spans) and spans[0][3] > 0.2, spans
        assert spans[0][channel] > spans[0][other], spans
    assert page.js_errors == []

"""Charts people can work with, in a real browser (static/js/charts.js, run.js, compare.js; docs/charts.md):
search, pins and custom panels that follow the member from run to run, the x-axis by step, wall-clock or
tokens, the min/max band of a downsampled long run kept right on live steps, and the compare page with
eight runs: smoothing and log scale redraw it, and nothing widens the page sideways. Metric rows are
written straight to the database (no training)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

# About what a native run logs (37 keys), perf/elapsed_s and perf/tokens_total among them.
KEYS = [
    *(f"rollout/{k}" for k in ("reward_mean", "reward_std", "accuracy", "response_len_mean", "response_len_max",
                               "truncated_frac", "zero_std_frac", "advantage_abs_mean")),
    *(f"actor/{k}" for k in ("loss", "pg_loss", "entropy", "clip_frac", "grad_norm", "lr", "kl")),
    *(f"perf/{k}" for k in ("step_s", "gen_s", "verify_s", "train_s", "gen_tokens_per_s", "train_tokens_per_s",
                            "step_tokens", "elapsed_s", "tokens_total", "gen_peak_memory_gb", "update_peak_memory_gb",
                            "peak_memory_gb")),
    *(f"budget/{k}" for k in ("rollouts_generated", "rollouts_used", "prompts_drawn", "cumulative_rollouts")),
    "reward/regex_format_mean", "reward/exact_mean", "eval/addition/accuracy", "eval/addition/reward_mean",
    "teacher/gap_mean", "rarity/groups_redistributed",
]  # fmt: skip
SECONDS_PER_STEP = 2.5
TOKENS_PER_STEP = 640.0


def value(key: str, step: int) -> float:
    if key == "perf/elapsed_s":
        return SECONDS_PER_STEP * step
    if key == "perf/tokens_total":
        return TOKENS_PER_STEP * step
    return 1.0 + 0.5 * math.sin(step / 7 + len(key)) + 0.01 * step


def write_metrics(
    run: Any, steps: range, keys: list[str], at: Callable[[str, int], float] = value, offset: float = 0.0
) -> None:
    from webapp.experiments.models import MetricPoint, Run

    MetricPoint.objects.bulk_create(
        [MetricPoint(run=run, step=s, key=k, value=at(k, s) + offset) for s in steps for k in keys],
        batch_size=5000,
    )
    Run.objects.filter(pk=run.pk).update(step=steps[-1])


def other_run(run: Any, name: str, config: dict[str, Any] | None = None) -> Any:
    """Another run in ``run``'s project (never sent to a worker)."""
    from django.test import override_settings

    from tests.workers.helpers import launch_run

    with override_settings(RLVR_ENQUEUE=False):
        return launch_run(run.created_by, run.experiment.project, config or run.config, name=name)


def open_run(page: Any, run: Any) -> None:
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_selector("body[data-charts-ready='1']")


def pin(page: Any, key: str) -> None:
    page.locator(f"#charts .chart-box[data-key='{key}'] button.pin").click()
    page.wait_for_selector("body[data-layout-state='saved']")


def pinned_keys(page: Any) -> list[str]:
    return page.eval_on_selector_all("#pinned-grid > .chart-box", "els => els.map(e => e.dataset.key)")


def plots_fit(page: Any) -> bool:
    """No plot wider than its box, and the page no wider than the window."""
    return page.evaluate("""() => document.scrollingElement.scrollWidth <= window.innerWidth &&
        [...document.querySelectorAll('.chart-box')].every(b => b.offsetParent === null ||
            b.querySelector('.main-svg').getBoundingClientRect().width <= b.getBoundingClientRect().width + 1)""")


def traces(page: Any, selector: str) -> list[dict[str, Any]]:
    return page.eval_on_selector(
        selector,
        """div => div.data.map(t => ({
        meta: t.meta, name: t.name, visible: t.visible, fill: t.fill || null,
        x: Array.from(t.x), y: Array.from(t.y), customdata: Array.from(t.customdata || [])}))""",
    )


def test_search_pins_panels_and_the_x_axis_follow_the_member_from_run_to_run(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.workspaces.models import ChartLayout

    first = seed_run()
    second = other_run(first, "second")
    write_metrics(first, range(1, 31), KEYS)
    write_metrics(second, range(1, 21), [k for k in KEYS if k != "perf/tokens_total"])
    sign_in("alice", PASSWORD)
    open_run(page, first)
    assert page.text_content("#chart-count") == f"{len(KEYS)} charts"

    page.fill("#chart-search", "reward MEAN")  # every word, any case
    expected = [k for k in KEYS if "reward" in k and "mean" in k]
    page.wait_for_function(
        f"() => document.getElementById('chart-count').textContent === '{len(expected)} of {len(KEYS)} charts'"
    )
    visible = page.eval_on_selector_all(
        "#charts .chart-box:not([hidden])", "els => els.map(e => e.dataset.key)"
    )
    assert sorted(visible) == sorted(expected)
    assert page.is_hidden("#group-actor") and page.is_visible("#group-reward")
    pin(page, "rollout/reward_mean")
    page.fill("#chart-search", "kl")
    pin(page, "actor/kl")
    page.fill("#chart-search", "")
    pin(page, "perf/step_s")
    assert pinned_keys(page) == ["rollout/reward_mean", "actor/kl", "perf/step_s"]
    assert plots_fit(page)

    page.reload()
    page.wait_for_selector("body[data-charts-ready='1']")
    order = page.eval_on_selector_all("#charts .chart-box", "els => els.slice(0, 3).map(e => e.dataset.key)")
    assert (
        order == pinned_keys(page) == ["rollout/reward_mean", "actor/kl", "perf/step_s"]
    )  # on top, in pin order
    assert page.get_attribute("#charts .chart-box[data-key='actor/kl'] button.pin", "aria-pressed") == "true"

    open_run(page, second)  # another run of the project: the same pins
    assert pinned_keys(page) == ["rollout/reward_mean", "actor/kl", "perf/step_s"]
    assert plots_fit(page)
    page.click("#add-panel")
    page.fill("#panel-title", "Reward against entropy")
    page.fill("#panel-series-search", "reward_mean")
    page.check("#panel-series-list input[value='rollout/reward_mean']")
    page.fill("#panel-series-search", "entropy")
    page.check("#panel-series-list input[value='actor/entropy']")
    assert page.text_content("#panel-series-count") == "2 of at most 12 series chosen"
    page.click("#panel-save")
    page.wait_for_selector("body[data-layout-state='saved']")
    panel = traces(page, "#panel-grid .chart")
    assert [(t["meta"], t["name"]) for t in panel] == [
        ("raw", "rollout/reward_mean (raw)"), ("smoothed", "rollout/reward_mean"),
        ("raw", "actor/entropy (raw)"), ("smoothed", "actor/entropy")]  # fmt: skip
    assert panel[1]["x"] == list(range(1, 21))

    tokens = page.locator("#x-axis option[value='tokens']")
    assert tokens.is_disabled() and "perf/tokens_total" in (tokens.get_attribute("title") or "")
    page.select_option("#x-axis", "time")
    page.wait_for_selector("body[data-layout-state='saved']")
    reward = traces(page, "#charts .chart-box[data-key='rollout/reward_mean'] .chart")
    assert reward[3]["x"] == pytest.approx([SECONDS_PER_STEP * s for s in range(1, 21)])  # 50 s: in seconds
    assert reward[3]["customdata"] == list(range(1, 21))  # the hover still names the step
    assert (
        page.evaluate(
            "document.querySelector('#charts .chart-box[data-key=\"actor/kl\"] .chart').layout.xaxis.title.text"
        )
        == "wall-clock (seconds)"
    )
    assert traces(page, "#panel-grid .chart")[1]["x"] == pytest.approx(
        [SECONDS_PER_STEP * s for s in range(1, 21)]
    )
    assert plots_fit(page)
    screenshot(page, "run-pinned-panel-wallclock")

    spec = ChartLayout.objects.get(project=first.experiment.project, user=first.created_by).spec
    assert spec["pinned"] == ["rollout/reward_mean", "actor/kl", "perf/step_s"] and spec["x_axis"] == "time"
    assert [(p["title"], p["series"]) for p in spec["panels"]] == [
        ("Reward against entropy", ["rollout/reward_mean", "actor/entropy"])
    ]
    page.reload()
    page.wait_for_selector("body[data-charts-ready='1']")
    assert page.input_value("#x-axis") == "time" and page.locator("#panel-grid .chart-box").count() == 1
    assert page.js_errors == []


def spiky(key: str, step: int) -> float:
    """A slow rise with step-to-step noise (a band all along) and one spike at step 1500."""
    return 10.0 if step == 1500 else 0.5 + step / 1500 + 0.6 * math.sin(step * 2.3)


def test_a_long_downsampled_run_draws_its_min_max_band_and_keeps_it_right_on_live_steps(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.experiments.selectors import MAX_METRIC_POINTS
    from webapp.experiments.services import run_mark_started, run_record_step

    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    steps = range(1, 3001)
    assert len(steps) > MAX_METRIC_POINTS
    write_metrics(run, steps, ["rollout/reward_mean"], spiky)
    write_metrics(run, steps, ["actor/lr"], lambda key, step: 1e-6)  # bucketed too, but min == max: no band
    sign_in("alice", PASSWORD)
    open_run(page, run)
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")
    pin(page, "rollout/reward_mean")

    low, high, raw, _smoothed = traces(page, "#pinned-grid .chart-box[data-key='rollout/reward_mean'] .chart")
    assert (low["visible"], high["visible"], high["fill"]) == (True, True, "tonexty")
    assert (
        len(raw["x"]) <= MAX_METRIC_POINTS and max(high["y"]) == 10.0
    )  # the one-step spike survives as a max
    assert max(raw["y"]) < 5  # ...while the bucket's mean is diluted
    assert all(lo <= r <= hi for lo, r, hi in zip(low["y"], raw["y"], high["y"], strict=True))
    lr = traces(page, "#charts .chart-box[data-key='actor/lr'] .chart")
    assert lr[0]["visible"] is False and lr[1]["visible"] is False

    def live_step() -> None:
        run_record_step(
            run_id=run.pk,
            step=3001,
            max_steps=run.max_steps,
            metrics={"rollout/reward_mean": 0.75},
            rollouts=[],
        )

    off_the_page_thread(live_step)
    page.wait_for_function("""() => {
        const d = document.querySelector("#pinned-grid .chart-box[data-key='rollout/reward_mean'] .chart").data;
        return d[2].x[d[2].x.length - 1] === 3001; }""")
    after = traces(page, "#pinned-grid .chart-box[data-key='rollout/reward_mean'] .chart")
    assert len({len(t["x"]) for t in after}) == 1  # all four traces extended together
    assert [t["y"][-1] for t in after[:3]] == [0.75, 0.75, 0.75] and after[0]["x"][-1] == after[1]["x"][
        -1
    ] == 3001
    screenshot(page, "run-pinned-band")
    assert page.js_errors == []


def long_config(base: dict[str, Any], i: int) -> dict[str, Any]:
    template = (
        f"Run {i} of the sweep. " + "Answer with one number only, no words. " * 6 + "X" * 120 + " {prompt}"
    )
    return {
        **base,
        "data": {**base["data"], "prompt_template": template},
        "training": {**base["training"], "learning_rate": 1e-5 * (i + 1)},
    }


def test_compare_eight_runs_smoothing_and_log_redraw_and_the_page_never_scrolls_sideways(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.workspaces.models import ChartLayout

    first = seed_run()
    runs = [first] + [
        other_run(first, f"sweep-member-with-a-long-name-{i}", long_config(first.config, i))
        for i in range(1, 8)
    ]
    for i, run in enumerate(runs):
        write_metrics(
            run,
            range(1, 41),
            ["rollout/reward_mean", "actor/kl", "actor/entropy", "perf/elapsed_s"],
            offset=0.12 * i,
        )
    panel = {"id": "p1", "title": "Reward and entropy", "series": ["rollout/reward_mean", "actor/entropy"]}
    ChartLayout.objects.create(
        project=first.experiment.project,
        user=first.created_by,
        spec={"pinned": ["actor/kl"], "panels": [panel]},
    )  # saved on a run page
    ids = ",".join(str(r.pk) for r in runs)
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{first.experiment.project_id}/compare/?runs={ids}")
    page.wait_for_selector("body[data-charts-ready='1']")
    chart = "#compare-charts .chart-box[data-key='rollout/reward_mean'] .chart"
    before = traces(page, chart)
    labels = [f"#{r.pk} {r.experiment.name}" for r in runs]
    assert [t["name"] for t in before if t["meta"] == "smoothed"] == labels
    assert page.eval_on_selector_all("#compare-legend li", "els => els.map(e => e.textContent)") == labels
    assert pinned_keys(page) == ["actor/kl"]  # the pins and panels of the member's layout
    assert [t["name"] for t in traces(page, "#panel-grid .chart")] == [
        f"{label} · {key}" for label in labels for key in panel["series"]
    ]

    page.eval_on_selector(
        "#smoothing", "e => { e.value = '0'; e.dispatchEvent(new Event('input')); }"
    )  # the raw line
    flat = traces(page, chart)
    assert flat[1]["y"] == pytest.approx(flat[0]["y"]) and flat[1]["y"] != pytest.approx(before[1]["y"])
    page.check("#log-scale")
    assert page.evaluate(f'document.querySelector("{chart}").layout.yaxis.type') == "log"
    assert page.locator("#x-axis option[value='tokens']").is_disabled()  # no run logged perf/tokens_total
    assert not page.locator("#x-axis option[value='time']").is_disabled()

    assert page.is_visible("#config-diff tr.differs") and page.is_hidden("#config-diff tr.same")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    box = page.eval_on_selector("#diff-scroll", "b => ({scroll: b.scrollWidth, client: b.clientWidth})")
    assert box["scroll"] > box["client"]  # the table scrolls inside its own box instead
    page.eval_on_selector("#diff-scroll", "b => { b.scrollLeft = b.scrollWidth; }")
    field_left = page.eval_on_selector(
        "#config-diff tr.differs .diff-field", "c => c.getBoundingClientRect().left"
    )
    scroll_left = page.eval_on_selector("#diff-scroll", "b => b.getBoundingClientRect().left")
    assert abs(field_left - scroll_left) < 3  # the field column stays in view
    page.check("#diff-all")
    assert page.is_visible("#config-diff tr.same")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    page.uncheck("#diff-all")
    page.eval_on_selector("#diff-scroll", "b => { b.scrollLeft = 0; }")
    assert plots_fit(page)
    screenshot(page, "compare-eight-runs")
    assert page.js_errors == []

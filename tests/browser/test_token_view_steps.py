"""The token view draws a rollout's steps (process rewards) as bands over their tokens, with each step's score, the
step the scorer blamed and the oracle's first wrong step; a "steps" checkbox hides them; a rollout without steps
looks as before, and a malformed record says its step data is unreadable instead of breaking the page. A run really
trained with a ``prm`` scorer (a tiny PRM trained in the fixture) shows, on one of its completions, the steps, the
step the PRM blamed and the chain oracle's first wrong step."""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, long_tokens, seed_run, store_step, token_record
from tests.workers.prm_helpers import train_tiny_prm
from trainer.sinks import TOKEN_CHANNELS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LINES = [["3", "+", "4", "=", "7", "\n"], ["7", "*", "2", "=", "15", "\n"], ["15", "-", "1", "=", "14", "\n"],
         ["Answer", ":", " 14"]]  # fmt: skip
TOKENS = [t for line in LINES for t in line]
SPANS = [[0, 6], [6, 12], [12, 18], [18, 21]]
SCORES = [0.9, 0.7, 0.3, None]  # the PRM's first score below 0.5 is step 3 (index 2); the oracle says step 2
SCREENSHOT = Path("/tmp/p3-token-view.png")


def process(**changes: Any) -> dict[str, Any]:
    return {"spans": SPANS, "scores": SCORES, "blamed": 2, "oracle_first_wrong": 1, "scorer": "prm",
            "segmenter": "lines", **changes}  # fmt: skip


def record(sample_index: int, details: dict[str, Any]) -> Any:
    r = token_record(1, 0, sample_index, TOKENS, details=details, correct=False, reward=0.0)
    step_of = [next(k for k, (s, e) in enumerate(SPANS) if s <= i < e) for i in range(len(TOKENS))]
    scores = [math.nan if score is None else score for score in SCORES]
    r.token_values["step_score"] = [scores[k] for k in step_of]
    return r


def open_token_view(page: Any, run_id: int, rollout_id: int) -> None:
    page.goto(f"/runs/{run_id}/rollouts/?rollout={rollout_id}")
    page.wait_for_selector(f"#tv-tokens[data-ready='1'][data-rollout='{rollout_id}']", timeout=30_000)


def backgrounds(page: Any) -> list[str]:
    return page.eval_on_selector_all("#tv-tokens .tok", "ts => ts.map(t => t.style.backgroundColor)")


def test_steps_show_as_bands_with_the_blamed_and_the_really_wrong_step(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    hostile = "<img src=x onerror=window.__xss=1>"
    store_step(
        run,
        1,
        [
            record(0, {"chain": {"reason": "line 2 is wrong"}, "process": process()}),
            record(1, {"process": process(spans=[[0, 6], [6, 12], [12, 18], [18, 99]])}),  # past the tokens
            record(2, {"chain": {"reason": "ok"}}),
            record(3, {"process": process(scorer=hostile, blamed=None, oracle_first_wrong=None)}),
        ],
    )
    ids = {r.sample_index: r.pk for r in run.rollouts.all()}
    sign_in("alice", PASSWORD)

    open_token_view(page, run.pk, ids[0])
    assert page.get_attribute("#tv-tokens", "data-steps") == "shown"
    bands = page.locator("#tv-tokens .tv-step")
    assert bands.count() == 4
    assert page.locator("#tv-tokens .tok").count() == len(TOKENS)  # every token still there, once
    for k, (start, end) in enumerate(SPANS):  # each band holds exactly its step's tokens
        held = page.eval_on_selector_all(
            f"#tv-tokens .tv-step[data-step='{k}'] .tok", "ts => ts.map(t => +t.dataset.i)"
        )
        assert held == list(range(start, end))
    legend = page.inner_text("#tv-steps-legend")
    assert "4 steps (scored by prm, cut by lines)" in legend
    assert page.inner_text("#tv-steps-legend .tv-steps-blamed") == "PRM blamed step 3"
    assert page.inner_text("#tv-steps-legend .tv-steps-wrong") == "really wrong: step 2"
    blamed = page.locator("#tv-tokens .tv-step.blamed")
    wrong = page.locator("#tv-tokens .tv-step.wrong")
    assert blamed.get_attribute("data-step") == "2" and wrong.get_attribute("data-step") == "1"
    assert blamed.get_attribute("aria-label") == "step 3 of 4: score 0.300 (prm); PRM blamed this step"
    assert wrong.get_attribute("title") == (
        "step 2 of 4: score 0.700 (prm); really wrong: the oracle's first wrong step"
    )
    assert page.inner_text("#tv-tokens .tv-step.blamed .tv-step-mark.blamed") == "PRM blamed"
    assert page.inner_text("#tv-tokens .tv-step.wrong .tv-step-mark.wrong") == "really wrong"
    assert page.inner_text("#tv-tokens .tv-step[data-step='0'] .tv-step-tag") == "step 1: 0.90"
    assert (
        page.get_attribute("#tv-tokens .tv-step[data-step='3']", "aria-label")
        == "step 4 of 4: score no score (prm)"
    )
    bar = page.eval_on_selector("#tv-tokens .tv-step.blamed", "e => getComputedStyle(e).borderBottomWidth")
    assert bar == "6px"
    options = page.eval_on_selector_all("#tv-channel option", "os => os.map(o => o.value)")
    assert "step_score" in TOKEN_CHANNELS and "step_score" in options  # the per-token channel can colour too
    page.select_option("#tv-channel", "step_score")
    assert "red below 0.5" in page.inner_text("#tv-legend")
    assert page.eval_on_selector("#tv-tokens .tok[data-i='14']", "e => e.style.backgroundColor").startswith(
        "rgba(178, 24, 43"
    )  # step 3 (0.3): red
    assert page.eval_on_selector(
        "#tv-tokens .tok[data-i='19']", "e => e.classList.contains('na')"
    )  # no score
    page.select_option("#tv-channel", "advantage")

    page.hover("#tv-tokens .tok[data-i='14']")  # a token of step 3: its step and score on hover
    page.wait_for_selector(".tv-tip:not([hidden]) tr[data-key='step']")
    assert page.inner_text(".tv-tip tr[data-key='step'] td") == "3 of 4: score 0.300"
    page.locator("#tv").screenshot(path=str(SCREENSHOT))
    shutil.copy(screenshot(page, "token-view-steps"), SCREENSHOT.with_name("p3-token-view-full.png"))

    # The checkbox hides the bands from the keyboard; the token colouring underneath stays as it was.
    coloured = backgrounds(page)
    assert any(coloured)
    page.focus("#tv-steps-toggle")
    page.keyboard.press("Space")
    assert page.get_attribute("#tv-tokens", "data-steps") == "hidden"
    assert (
        page.eval_on_selector("#tv-tokens .tv-step.blamed", "e => getComputedStyle(e).borderBottomWidth")
        == "0px"
    )
    assert page.locator("#tv-tokens .tv-step-tag").first.is_hidden()
    assert backgrounds(page) == coloured
    page.keyboard.press("Space")
    assert page.get_attribute("#tv-tokens", "data-steps") == "shown"
    page.select_option("#tv-channel", "entropy")  # another channel recolours under the bands
    assert backgrounds(page) != coloured and page.locator("#tv-tokens .tv-step").count() == 4

    # Spans past the stored tokens: the tokens render, the steps say they cannot be read.
    open_token_view(page, run.pk, ids[1])
    assert page.inner_text("#tv-steps-legend .tv-steps-error") == "step data unreadable"
    assert page.locator("#tv-tokens .tv-step").count() == 0
    assert page.locator("#tv-tokens .tok").count() == len(TOKENS)
    assert page.is_hidden("#tv-steps-toggle")

    # No step data: nothing changes (no legend line, no checkbox, no bands).
    open_token_view(page, run.pk, ids[2])
    assert page.is_hidden("#tv-steps-legend") and page.is_hidden("#tv-steps-toggle")
    assert page.get_attribute("#tv-tokens", "data-steps") == "none"
    assert page.locator("#tv-tokens .tv-step, #tv-tokens .tv-step-tag").count() == 0
    assert page.inner_text("#tv-tokens") == "3+4=7↵\n7*2=15↵\n15-1=14↵\nAnswer:·14"

    # A scorer's name is data: shown as text, never markup.
    open_token_view(page, run.pk, ids[3])
    assert hostile in page.inner_text("#tv-steps-legend")
    assert page.inner_text("#tv-steps-legend .tv-steps-blamed") == f"{hostile} blamed no step"
    assert page.locator("#tv img").count() == 0
    assert page.evaluate("() => window.__xss") is None
    assert page.js_errors == []


def test_64_steps_over_8k_tokens_render_every_token_in_its_band(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    n, steps = 8192, 64
    width = n // steps
    spans = [[k * width, (k + 1) * width] for k in range(steps)]
    scores = [round(1 - k / steps, 4) for k in range(steps)]
    details = {"process": process(spans=spans, scores=scores, blamed=32, oracle_first_wrong=30)}
    run = seed_run()
    store_step(run, 1, [token_record(1, 0, 0, long_tokens(n), details=details, finish_reason="length")])
    rollout = run.rollouts.get()
    sign_in("alice", PASSWORD)

    open_token_view(page, run.pk, rollout.pk)
    assert page.locator("#tv-tokens .tv-step").count() == steps
    assert page.locator("#tv-tokens .tv-step .tok").count() == n
    last = page.eval_on_selector_all(
        "#tv-tokens .tv-step[data-step='63'] .tok", "ts => ts.map(t => +t.dataset.i)"
    )
    assert last == list(range(n - width, n))
    assert page.inner_text("#tv-steps-legend .tv-steps-blamed") == "PRM blamed step 33"
    timing = page.evaluate("() => window.__tokenViewTiming")
    print(f"8192 tokens, 64 steps: fetch {timing['fetch_ms']:.0f} ms, render {timing['render_ms']:.0f} ms")
    assert timing["render_ms"] < 5000
    assert page.js_errors == []


@pytest.fixture(scope="module")
def prm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny_prm(tmp_path_factory.getbasetemp() / "token-view-prm")


@pytest.mark.timeout(600)
def test_a_run_trained_with_a_prm_shows_its_blamed_step_beside_the_oracles_first_wrong_step(
    page: Any, sign_in: Callable[[str, str], Any], settings: Any, prm_folder: Path,
    screenshot: Callable[[Any, str], Path],
) -> None:  # fmt: skip
    from workers.tasks import run_training

    settings.RLVR_MODEL_ROOTS = [*settings.RLVR_MODEL_ROOTS, prm_folder.parent]
    config = {
        "name": "prm-run", "model": {"name_or_path": "tiny:chain-teacher"},
        "data": {"source": "chain_arithmetic", "task": "mixed", "size": 64},
        "verifiers": [{"name": "chain_arithmetic"}],
        "rollout": {"num_generations": 8, "max_completion_length": 64},
        "training": {"max_steps": 1, "prompts_per_step": 2, "micro_batch_size": 8},
        "process_reward": {"scorer": {"name": "prm", "params": {"model": str(prm_folder)}}},
    }  # fmt: skip
    run = seed_run(config=config)
    assert (
        run_training.apply(args=(run.pk,)).get() == "succeeded"
    )  # trained in this process, stored for the page
    records = [(r, r.details.get("process") or {}) for r in run.rollouts.order_by("group", "sample_index")]
    assert records and all(p.get("scorer") == "prm" for _, p in records)
    both = [(r, p) for r, p in records if p["blamed"] is not None and p["oracle_first_wrong"] is not None]
    assert both, [(p.get("blamed"), p.get("oracle_first_wrong")) for _, p in records]
    rollout, process = max(both, key=lambda rp: len(rp[1]["spans"]))  # the completion with the most steps
    steps, blamed, wrong = len(process["spans"]), process["blamed"], process["oracle_first_wrong"]
    sign_in("alice", PASSWORD)

    open_token_view(page, run.pk, rollout.pk)
    assert page.get_attribute("#tv-tokens", "data-steps") == "shown"
    assert page.locator("#tv-tokens .tv-step").count() == steps
    assert f"{steps} step" in page.inner_text("#tv-steps-legend")
    assert "scored by prm" in page.inner_text("#tv-steps-legend")
    assert page.inner_text("#tv-steps-legend .tv-steps-blamed") == f"PRM blamed step {blamed + 1}"
    assert page.inner_text("#tv-steps-legend .tv-steps-wrong") == f"really wrong: step {wrong + 1}"
    assert page.get_attribute("#tv-tokens .tv-step.blamed", "data-step") == str(blamed)
    assert page.get_attribute("#tv-tokens .tv-step.wrong", "data-step") == str(wrong)
    score = process["scores"][blamed]
    assert f"score {score:.3f} (prm)" in str(page.get_attribute("#tv-tokens .tv-step.blamed", "aria-label"))
    screenshot(page, "token-view-prm-run")
    assert page.js_errors == []

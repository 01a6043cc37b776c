"""The rollout browser and token view in a real browser: untrusted text stays text, token values match
the API, and an 8k-token completion renders every token and stays responsive."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, long_tokens, seed_run, store_step, token_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

XSS_TEXTS = ['<img src=x onerror="window.__xss=1">', "<script>window.__xss=1</script>"]


def open_token_view(page: Any, run_id: int, rollout_id: int) -> None:
    page.goto(f"/runs/{run_id}/rollouts/?rollout={rollout_id}")
    page.wait_for_selector("#tv-tokens[data-ready='1']", timeout=30_000)


def test_model_text_with_markup_is_shown_literally_and_never_runs(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    records = [
        token_record(1, 0, i, ["<img", " src=x", ' onerror="window.__xss=1">'] if i == 0 else ["<script>", "window.__xss=1", "</script>"],
                     prompt=XSS_TEXTS[i], details={"regex_format": {"extracted": XSS_TEXTS[1 - i], "reason": XSS_TEXTS[i]}})
        for i in range(2)
    ]  # fmt: skip
    store_step(run, 1, records)
    sign_in("alice", PASSWORD)

    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    page.locator(".rb-prompt-btn").first.click()
    page.wait_for_selector(".rb-card")
    page.locator(".rb-tokens-btn").first.click()
    page.wait_for_selector("#tv-tokens[data-ready='1']")
    screenshot(page, "xss-rollouts")

    assert page.evaluate("typeof window.__xss") == "undefined"
    table = page.inner_text("#rb-table")
    assert XSS_TEXTS[0] in table and XSS_TEXTS[1] in table
    assert page.locator("#rb-table img, #rb-group img, #tv img, main script:not(#rollouts-data)").count() == 0
    assert 'onerror="window.__xss=1">' in page.inner_text("#rb-group-cards")
    assert page.inner_text("#tv-tokens") == '<img·src=x·onerror="window.__xss=1">'
    assert page.js_errors == []


def test_switching_the_channel_and_hovering_a_token_shows_the_api_value(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    tokens = ["Let", " me", " think", ".\n", "\t2", " +", " 2", " =", " 4"]
    store_step(run, 1, [token_record(1, 0, s, tokens) for s in range(4)])
    store_step(run, 2, [token_record(2, 0, s, tokens[:5]) for s in range(4)])
    rollout = run.rollouts.get(step=1, sample_index=1)
    sign_in("alice", PASSWORD)

    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    assert page.input_value("#rb-step-number") == "2"
    page.locator("body").press("ArrowLeft")  # keyboard step picker
    page.wait_for_function("() => document.querySelector('#rb-step-number').value === '1'")
    page.wait_for_selector(f"#rb-table tr[data-id='{rollout.pk}']")
    page.locator(f"#rb-table tr[data-id='{rollout.pk}'] .rb-tokens-btn").click()
    page.wait_for_selector(f"#tv-tokens[data-ready='1'][data-rollout='{rollout.pk}']")
    assert page.get_attribute("#tv-tokens", "data-channel") == "advantage"
    assert page.inner_text("#tv-tokens") == "Let·me·think.↵\n→2·+·2·=·4"

    page.select_option("#tv-channel", "entropy")
    assert page.get_attribute("#tv-tokens", "data-channel") == "entropy"
    assert "entropy" in page.inner_text("#tv-legend") and "max" in page.inner_text("#tv-legend")
    page.hover("#tv-tokens .tok[data-i='6']")
    page.wait_for_selector(".tv-tip:not([hidden]) tr[data-key='entropy']")
    screenshot(page, "token-view-entropy")

    shown = float(page.get_attribute(".tv-tip tr[data-key='entropy']", "data-value"))
    text = page.inner_text(".tv-tip tr[data-key='entropy'] td")
    api = page.evaluate(f"fetch('/api/runs/{run.pk}/rollouts/{rollout.pk}/').then(r => r.json())")
    assert shown == pytest.approx(api["channels"]["entropy"][6], rel=1e-6)
    assert float(text) == pytest.approx(api["channels"]["entropy"][6], rel=1e-5)
    assert page.inner_text(".tv-tip tr[data-key='token id'] td") == str(api["token_ids"][6])
    background = page.eval_on_selector("#tv-tokens .tok[data-i='6']", "e => e.style.backgroundColor")
    assert background.startswith("rgba(")

    page.focus("#tv-tokens .tok[data-i='2']")  # keyboard users get the same values
    assert page.inner_text("#tv-panel tr[data-key='text'] td") == '" think"'
    assert page.js_errors == []


def test_an_8k_token_completion_renders_every_token_and_stays_responsive(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    n = 8192
    store_step(run, 1, [token_record(1, 0, 0, long_tokens(n), finish_reason="length")])
    rollout = run.rollouts.get()
    sign_in("alice", PASSWORD)

    started = time.monotonic()
    open_token_view(page, run.pk, rollout.pk)
    assert page.locator("#tv-tokens .tok").count() == n
    assert page.get_attribute("#tv-tokens", "data-tokens") == str(n)

    # Recolouring all 8k spans and answering a hover must each take well under a frame budget's worth.
    recolour_ms = page.evaluate(
        """() => { const t = performance.now(); const s = document.querySelector('#tv-channel');
                   s.value = 'ratio'; s.dispatchEvent(new Event('change')); return performance.now() - t; }"""
    )
    page.hover(f"#tv-tokens .tok[data-i='{n - 1}']")
    page.wait_for_selector(f"#tv-panel tr[data-key='index'][data-value='{n - 1}']")
    screenshot(page, "token-view-8k")
    assert recolour_ms < 1000, recolour_ms
    assert time.monotonic() - started < 30
    assert page.js_errors == []

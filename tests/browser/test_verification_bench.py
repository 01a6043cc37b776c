"""Verifiers in a real browser: define a math verifier from the project page, save a test case, score a
pasted completion on the test bench (verdict, extracted answer, reason; markup stays text), and pick the
saved version in the experiment form; run the metamorphic audit of the version."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import make_project, make_user

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_define_a_verifier_run_the_bench_audit_it_and_pick_it_for_an_experiment(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    owner = make_user("alice")
    project = make_project(owner, "Lab")
    sign_in("alice", PASSWORD)

    page.goto(f"/projects/{project.pk}/")
    page.click("text=Verifiers")
    page.fill("#vf-name", "Final answer")
    page.select_option("#vf-verifier", "math")
    assert "timeout_s" in (page.text_content("#vf-param-table") or "")  # the schema's parameter help (folded)
    page.fill("#vf-params", json.dumps({"extract": "boxed"}))
    page.click("#verifier-create button[type=submit]")
    page.wait_for_selector("#version-table")
    assert "v1" in page.inner_text("#version-table") and "math" in page.inner_text("#version-table")

    page.fill("#case-form textarea[name=completion]", "so \\boxed{\\dfrac12}")
    page.fill("#case-form textarea[name=reference]", "0.5")
    page.click("#case-form button[type=submit]")
    page.wait_for_selector("#case-table")
    assert "cases pass" in page.inner_text("h1")

    page.fill("#bench-completion", "The answer is \\boxed{\\frac{1}{2}}.")
    page.fill("#bench-reference", "0.5")
    page.click("#bench-run")
    page.wait_for_selector("#bench-result[data-ready='1']", timeout=60_000)
    assert page.inner_text("#bench-verdict") == "accepted"
    assert "1/2" in page.inner_text("#bench-extracted") or "frac" in page.inner_text("#bench-extracted")
    assert page.inner_text("#bench-reason") == "equivalent"
    screenshot(page, "bench-accepted")

    evil = '<img src=x onerror="window.__xss=1">'
    page.fill("#bench-completion", evil)
    page.click("#bench-run")
    page.wait_for_function("document.getElementById('bench-verdict').textContent === 'rejected'", timeout=60_000)
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("#bench img").count() == 0

    page.click("text=Audit & rescore v1")
    page.click("#audit-run")
    page.wait_for_selector("#audit-table[data-ready='1']", timeout=60_000)
    audit = page.inner_text("#audit-table")
    assert "dfrac_no_braces" in audit and "thousands_comma" in audit
    assert "variants accepted" in page.inner_text("#audit-summary")
    screenshot(page, "audit")

    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.wait_for_selector("#verifier-picker option >> nth=1", state="attached")
    page.select_option("#verifier-picker", index=1)
    page.click("#verifier-picker-replace")
    entries = json.loads(page.input_value("#cfg-verifiers"))
    assert entries == [{"name": "math", "params": entries[0]["params"], "label": "final_answer"}]
    assert entries[0]["params"]["extract"] == "boxed"
    screenshot(page, "picker")
    assert page.js_errors == []

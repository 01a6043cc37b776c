"""The token view offers every recorded channel: teacher logprob / entropy and the derived teacher gap."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step
from trainer.sinks import TOKEN_CHANNELS, RolloutRecord

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def teacher_record(tokens: list[str]) -> RolloutRecord:
    n = len(tokens)
    values = {
        channel: [-0.1 * (i + 1) - 0.01 * c for i in range(n)] for c, channel in enumerate(TOKEN_CHANNELS)
    }
    values["logprob"] = [-1.0] * n
    values["teacher_logprob"] = [-0.25 * i for i in range(n)]  # gap = 1 - 0.25 i
    values["teacher_entropy"] = [0.5 + i for i in range(n)]
    return RolloutRecord(
        step=1,
        prompt_id="row-1",
        group=0,
        sample_index=0,
        prompt="2+2=",
        completion="".join(tokens),
        finish_reason="eos",
        reward=1.0,
        rewards={"exact": 1.0},
        correct=True,
        details={},
        advantage=0.5,
        token_ids=[1000 + i for i in range(n)],
        tokens=tokens,
        token_values=values,
        answer="4",
    )


def test_teacher_channels_can_colour_the_tokens_and_show_on_hover(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    store_step(run, 1, [teacher_record(["4", "<eos>", "x"])])
    rollout = run.rollouts.get()
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/rollouts/?rollout={rollout.pk}")
    page.wait_for_selector("#tv-tokens[data-ready='1']", timeout=30_000)

    options = page.eval_on_selector_all("#tv-channel option", "os => os.map(o => o.value)")
    assert {"teacher_logprob", "teacher_entropy", "teacher_gap"} <= set(options)
    page.select_option("#tv-channel", "teacher_gap")
    assert page.get_attribute("#tv-tokens", "data-channel") == "teacher_gap"
    assert "teacher gap" in page.inner_text("#tv-legend")
    page.hover("#tv-tokens .tok[data-i='2']")
    page.wait_for_selector(".tv-tip:not([hidden]) tr[data-key='teacher_gap'][data-value]")
    assert float(page.get_attribute(".tv-tip tr[data-key='teacher_gap']", "data-value")) == pytest.approx(0.5)
    assert float(page.get_attribute(".tv-tip tr[data-key='teacher_entropy']", "data-value")) == pytest.approx(
        2.5
    )
    screenshot(page, "token-view-teacher-gap")
    assert page.js_errors == []

"""The rollout browser reads well, in a real browser: flat advantages give every token one light tint by
their sign and the legend says they are flat, every token's text contrasts with its colour, verifier details wrap between words with no
empty sections, a step opens on its most informative group, and the title names the studio once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step, token_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

# WCAG 2 contrast of each element's text with its background, composited over the background of `base`.
CONTRASTS_JS = """([selector, base]) => {
  const rgba = (css) => { const m = css.match(/[\\d.]+/g).map(Number); return m.length === 3 ? [...m, 1] : m; };
  const under = rgba(getComputedStyle(document.querySelector(base)).backgroundColor);
  const lum = ([r, g, b]) => [r, g, b].map((c) => { const x = c / 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  return Array.from(document.querySelectorAll(selector), (e) => {
    const style = getComputedStyle(e);
    const [r, g, b, a] = rgba(style.backgroundColor);
    const bg = [r, g, b].map((c, i) => a * c + (1 - a) * under[i]);
    const [hi, lo] = [lum(bg), lum(rgba(style.color))].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  });
}"""
TOKENS = ["#tv-tokens .tok", "#tv-tokens"]
LEGEND_STOPS = ["#tv-legend .tv-leg-stop", "body"]


def open_rollout(page: Any, sign_in: Callable[[str, str], Any], **channels: list[float]) -> None:
    n = len(next(iter(channels.values())))
    record = token_record(1, 0, 0, [f"t{i} " for i in range(n)])
    record.token_values = {**record.token_values, **channels}
    run = seed_run()
    store_step(run, 1, [record])
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/rollouts/?rollout={run.rollouts.get().pk}")
    page.wait_for_selector("#tv-tokens[data-ready='1']", timeout=30_000)


def test_flat_advantages_give_every_token_one_light_tint_and_the_legend_says_they_are_flat(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    open_rollout(
        page, sign_in, advantage=[-0.5] * 12
    )  # uniform token credit: the rollout's advantage everywhere
    screenshot(page, "flat-advantages")

    backgrounds = page.eval_on_selector_all(
        "#tv-tokens .tok", "es => es.map((e) => getComputedStyle(e).backgroundColor)"
    )
    assert len(set(backgrounds)) == 1, backgrounds  # one colour: no token stands out
    r, _g, b, a = (float(x) for x in backgrounds[0].removeprefix("rgba(").removesuffix(")").split(","))
    assert r > b and 0.1 < a <= 0.3, backgrounds[0]  # red for a negative advantage, light, not full strength
    assert page.get_attribute("#tv-legend", "data-flat") == "1"
    legend = page.inner_text("#tv-legend")
    assert "advantage is flat" in legend and "-0.5" in legend
    assert min(page.evaluate(CONTRASTS_JS, TOKENS)) >= 7
    assert page.js_errors == []


@pytest.mark.parametrize("channel", ["advantage", "logprob", "entropy", "ratio", "ref_gap", "loss_mask"])
def test_every_token_text_contrasts_at_least_4_5_to_1_with_its_colour(
    page: Any, sign_in: Callable[[str, str], Any], channel: str
) -> None:
    n = 41
    open_rollout(
        page, sign_in,
        advantage=[-1 + i / 20 for i in range(n)], logprob=[-6 * i / n for i in range(n)],
        old_logprob=[0.0] * n, entropy=[3 * i / n for i in range(n)], loss_mask=[float(i % 2) for i in range(n)],
    )  # fmt: skip
    page.select_option("#tv-channel", channel)
    assert page.get_attribute("#tv-tokens", "data-channel") == channel

    contrasts = page.evaluate(CONTRASTS_JS, TOKENS)
    assert min(contrasts) >= 4.5, sorted(contrasts)[:3]
    legend = page.evaluate(CONTRASTS_JS, LEGEND_STOPS)  # the scale's ends, printed on their own colours
    assert legend and min(legend) >= 4.5, legend
    assert page.js_errors == []


def test_verifier_details_wrap_between_words_and_show_no_empty_sections(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    reason = "the completion never writes a final answer after the marker, so nothing could be compared"
    run = seed_run()
    records = [
        token_record(1, 0, s, ["4", "<eos>"], completion="working " * 60, prompt="What is 2 + 2? Think first. " * 8,
                     details={"regex_format": {"extracted": "9" * 300, "reason": reason}, "math": {},
                              "allocation": {"group_size": 4, "round": 0, "abandoned": False}})
        for s in range(2)
    ]  # fmt: skip
    store_step(run, 1, records)
    sign_in("alice", PASSWORD)
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    screenshot(page, "verifier-details")

    headings = page.eval_on_selector_all(
        "#rb-table tbody tr:first-child .rb-details dt.rb-verifier", "es => es.map((e) => e.textContent)"
    )
    assert sorted(headings) == ["allocation", "regex_format"]  # "math" said nothing: no heading for it
    allocation = page.locator(
        "#rb-table tbody tr:first-child .rb-details dl", has_text="allocation"
    ).inner_text()
    assert "group size" in allocation and "4" in allocation and "abandoned" not in allocation
    # Each word of the reason lies on one line: the browser broke lines between words only.
    split_words = page.eval_on_selector(
        "#rb-table tbody tr:first-child .rb-details dl:has(.rb-verifier:text-is('regex_format')) dd:nth-of-type(2)",
        """(dd) => { const text = dd.firstChild, out = [];
                     for (const m of text.textContent.matchAll(/\\S+/g)) {
                       const r = document.createRange(); r.setStart(text, m.index); r.setEnd(text, m.index + m[0].length);
                       if (new Set(Array.from(r.getClientRects(), (x) => Math.round(x.top))).size > 1) out.push(m[0]);
                     }
                     return [dd.textContent, out]; }""",
    )
    assert split_words == [reason, []]
    page_width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert page_width[0] <= page_width[1], (
        page_width
    )  # the 300-digit answer wrapped instead of widening the page
    assert page.js_errors == []


def test_a_step_opens_on_its_most_informative_group_and_the_title_names_the_studio_once(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    run = seed_run()
    spread = {0: (0.0, 0.0), 1: (0.3, -0.3), 2: (0.9, -0.9)}  # group 0: every completion scored the same
    store_step(run, 1, [
        token_record(1, g, s, ["4"], advantage=spread[g][s % 2], reward=1.0 if g == 0 or s % 2 == 0 else 0.0)
        for g in range(3) for s in range(2)
    ])  # fmt: skip
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")

    first = page.locator("#rb-table tbody tr").first.get_attribute("data-id")
    assert run.rollouts.get(pk=int(first)).group == 2
    assert page.title() == f"Rollouts · run {run.pk} · RLVR Studio"
    assert page.js_errors == []

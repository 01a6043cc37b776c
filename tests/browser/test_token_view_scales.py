"""Each token-view channel is coloured on its own kind of scale, in a real browser: logprobs sequential with a
percentile floor, entropy sequential from 0, the policy ratio on a log scale whose float noise stays clear,
and a group's cards wrap within the page instead of running off its side."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step, token_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

# every span's computed background as [r, g, b, alpha]; a span without one reads rgba(0, 0, 0, 0)
BACKGROUNDS_JS = """() => Array.from(document.querySelectorAll('#tv-tokens .tok'), (e) => {
  const m = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
  return m.length === 3 ? [...m, 1] : m;
})"""


def seeded_rollout(page: Any, sign_in: Callable[[str, str], Any], **channels: list[float]) -> int:
    """One rollout whose listed channels replace token_record's; returns its run id after signing in."""
    n = len(next(iter(channels.values())))
    record = token_record(1, 0, 0, [f"t{i} " for i in range(n)])
    record.token_values = {**record.token_values, **channels}
    run = seed_run()
    store_step(run, 1, [record])
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/rollouts/?rollout={run.rollouts.get().pk}")
    page.wait_for_selector("#tv-tokens[data-ready='1']", timeout=30_000)
    return int(run.pk)


def colour_by(page: Any, channel: str) -> list[list[float]]:
    page.select_option("#tv-channel", channel)
    assert page.get_attribute("#tv-tokens", "data-channel") == channel
    return page.evaluate(BACKGROUNDS_JS)


def bar_stops(page: Any) -> list[list[float]]:
    """The legend bar's gradient stops, left to right, as [r, g, b, alpha]."""
    gradient = page.eval_on_selector("#tv-legend .tv-leg-bar", "e => getComputedStyle(e).backgroundImage")
    stops = [[float(x) for x in m.split(",")] for m in re.findall(r"rgba?\(([^)]*)\)", gradient)]
    return [s if len(s) == 4 else [*s, 1.0] for s in stops]


def test_varying_logprobs_get_clearly_different_colours_despite_one_outlier(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    n = 100
    logprob = [-0.05 - 2.95 * (i % 10) / 9 for i in range(n)]  # -0.05 … -3.0, ten of each
    logprob[37] = -25.0  # one very unlikely token must not wash the others out
    seeded_rollout(page, sign_in, logprob=logprob)

    colours = colour_by(page, "logprob")
    screenshot(page, "logprob")

    likely, unlikely = colours[0], colours[9]  # -0.05 and -3.0
    assert likely[3] <= 0.05 and unlikely[3] >= 0.6, (likely, unlikely)
    assert colours[37][3] == pytest.approx(unlikely[3], abs=0.01)  # below the floor: full colour, no stronger
    by_logprob = sorted(range(n), key=lambda i: logprob[i])
    alphas = [colours[i][3] for i in by_logprob]
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(alphas)), "lower logprob must never be paler"
    assert len({round(c[3], 2) for c in colours}) >= 5
    legend = page.inner_text("#tv-legend")
    assert "2nd-percentile floor" in legend and "-25" in legend
    assert page.get_attribute("#tv-legend", "data-scale") == "sequential"
    assert page.js_errors == []


def test_a_ratio_of_pure_float_noise_leaves_every_token_uncoloured(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    old = [-0.5, -1.25, -2.0, -0.75, -3.5, -0.125]
    noise = [1e-7, -1e-7, 2e-7, -2e-7, 1e-7, 0.0]
    seeded_rollout(page, sign_in, old_logprob=old, logprob=[o + d for o, d in zip(old, noise, strict=True)])

    colours = colour_by(page, "ratio")

    assert [c[3] for c in colours] == [0.0] * len(old), colours
    assert "1 ± 0.001" in page.inner_text("#tv-legend")
    assert page.js_errors == []


def test_a_ratio_of_1_3_is_coloured_and_a_ratio_of_0_8_the_other_way(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    old = [-0.5, -1.25, -2.0, -0.75, -0.375, -0.25]
    delta = [1e-7, -1e-7, 0.0, math.log(1.3), math.log(0.8), math.log(1.05)]
    seeded_rollout(page, sign_in, old_logprob=old, logprob=[o + d for o, d in zip(old, delta, strict=True)])

    colours = colour_by(page, "ratio")
    screenshot(page, "ratio")

    assert [c[3] for c in colours[:3]] == [0.0, 0.0, 0.0]
    up, down, slight = colours[3], colours[4], colours[5]
    assert up[3] >= 0.6 and up[2] > up[0], up  # blue: the new policy likes the token more
    assert down[3] >= 0.4 and down[0] > down[2], down  # red: less
    assert 0 < slight[3] < down[3] < up[3]  # log(1.3) > |log(0.8)| > log(1.05)
    stops = bar_stops(page)
    assert stops[0][:3] == down[:3] and stops[-1][:3] == up[:3] and stops[1][3] == 0.0
    assert page.get_attribute("#tv-legend", "data-scale") == "ratio"
    assert page.js_errors == []


def test_higher_entropy_is_coloured_more_strongly_on_a_scale_from_zero(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    entropy = [0.0, 0.1, 0.5, 1.0, 2.0, 3.0]
    seeded_rollout(page, sign_in, entropy=entropy)

    colours = colour_by(page, "entropy")

    alphas = [c[3] for c in colours]
    assert alphas[0] == 0.0 and alphas == sorted(alphas) and len(set(alphas)) == len(alphas), alphas
    assert alphas[-1] >= 0.8
    # the legend's bar runs from clear at 0 to exactly the colour of the highest-entropy token
    stops = bar_stops(page)
    assert stops[0][3] == 0.0 and stops[-1] == pytest.approx(colours[-1], abs=1e-3)
    assert "0 … max 3" in page.inner_text("#tv-legend")
    assert page.js_errors == []


def test_the_loss_mask_shows_two_colours(page: Any, sign_in: Callable[[str, str], Any]) -> None:
    seeded_rollout(page, sign_in, loss_mask=[1.0, 0.0, 1.0, 0.0])

    colours = colour_by(page, "loss_mask")

    assert colours[0] == colours[2] and colours[1] == colours[3] and colours[0] != colours[1]
    assert min(c[3] for c in colours) > 0
    assert "2 of 4 tokens in the loss" in page.inner_text("#tv-legend")


def test_group_cards_wrap_within_the_page_and_long_completions_wrap_inside_them(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    records = [token_record(1, 0, s, ["4", "<eos>"], completion=f"The answer is {s}.") for s in range(10)]
    records[3].completion = "9" * 600  # no break opportunity at all
    store_step(run, 1, records)
    sign_in("alice", PASSWORD)
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    page.locator(".rb-prompt-btn").first.click()
    page.wait_for_function("() => document.querySelectorAll('#rb-group-cards .rb-card').length === 10")
    screenshot(page, "group-cards-1000")

    layout = page.evaluate(
        """() => { const cards = Array.from(document.querySelectorAll('#rb-group-cards .rb-card'));
                   const box = document.querySelector('#rb-group-cards').getBoundingClientRect();
                   return { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
                            rows: new Set(cards.map((c) => Math.round(c.getBoundingClientRect().top))).size,
                            right: Math.max(...cards.map((c) => c.getBoundingClientRect().right)), boxRight: box.right,
                            cardsScroll: document.querySelector('#rb-group-cards').scrollWidth,
                            cardsClient: document.querySelector('#rb-group-cards').clientWidth }; }"""
    )
    assert layout["scroll"] <= layout["client"], layout
    assert layout["cardsScroll"] <= layout["cardsClient"], layout
    assert layout["rows"] > 1 and layout["right"] <= layout["boxRight"] + 0.5, layout
    long_card = run.rollouts.get(sample_index=3).pk
    long_text = page.locator(f"#rb-group-cards .rb-card[data-id='{long_card}'] .rb-card-text")
    assert long_text.evaluate("e => e.scrollWidth <= e.clientWidth")

    page.set_viewport_size({"width": 360, "height": 800})  # a phone: one column, still inside the viewport
    narrow = page.evaluate(
        """() => Array.from(document.querySelectorAll('#rb-group-cards .rb-card'),
                            (c) => c.getBoundingClientRect().right <= document.documentElement.clientWidth)"""
    )
    assert all(narrow), narrow
    assert page.js_errors == []

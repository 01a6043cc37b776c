"""The experiment form's words, in a real browser: a long help text is folded after a whole word (never cut
inside one) and unfolds whole, and every character of its labels and help has a glyph in the page's fonts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

# Every help paragraph of the form, opened sections included: its shown text, the full text, and whether
# its box clips anything (a line clamp hides the rest of a text and cuts the last visible word).
HELPS_JS = """() => Array.from(document.querySelectorAll('#experiment-form p.help'), (p) => ({
  shown: (p.querySelector('.help-text') || p).textContent.trim(),
  full: (p.title || p.textContent).trim(),
  folded: Boolean(p.querySelector('.help-more')),
  clipped: p.scrollHeight > p.clientHeight + 1,
}))"""

# The characters of every label, help text and option of the form that a font has no glyph for: each
# character is drawn on a canvas in its element's font and compared with a code point no font has
# (U+0378, unassigned), which the browser draws as the same missing-glyph box.
MISSING_GLYPHS_JS = """() => {
  const canvas = document.createElement('canvas');
  canvas.width = 64; canvas.height = 64;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const draw = (font, ch) => {
    ctx.clearRect(0, 0, 64, 64); ctx.font = font; ctx.fillText(ch, 8, 40);
    return Array.from(ctx.getImageData(0, 0, 64, 64).data).join(',');
  };
  const missing = [];
  const nodes = document.querySelectorAll('#experiment-form label, #experiment-form .label, #experiment-form p.help, #experiment-form option, #experiment-form summary');
  for (const node of nodes) {
    const style = getComputedStyle(node);
    const font = `${style.fontStyle} ${style.fontWeight} 24px ${style.fontFamily}`;
    const box = draw(font, '\\u0378');
    for (const ch of new Set(Array.from(node.textContent).filter((c) => c.codePointAt(0) > 0x7e))) {
      if (draw(font, ch) === box) missing.push(`${ch} (U+${ch.codePointAt(0).toString(16).toUpperCase()}) in "${node.textContent.trim().slice(0, 60)}"`);
    }
  }
  return missing;
}"""


def open_new_form(page: Any, sign_in: Callable[[str, str], Any]) -> None:
    from tests.workers.helpers import make_project, make_user

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.wait_for_selector("#cfg-verifiers-editor .list-row select")
    page.select_option("#ed-verifiers-0-name", "exact")  # its parameters' help names punctuation
    page.evaluate("document.querySelectorAll('#experiment-form details').forEach((d) => { d.open = true; })")


def test_a_long_help_text_is_folded_after_a_whole_word_and_unfolds_whole(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    open_new_form(page, sign_in)
    helps = page.evaluate(HELPS_JS)
    screenshot(page, "help-folded")

    assert [h for h in helps if h["clipped"]] == []
    folded = [h for h in helps if h["folded"]]
    assert folded, "the form has long help texts: some must be folded"
    for h in folded:
        assert h["shown"].endswith("…"), h
        kept = h["shown"].removesuffix("…").rstrip()
        assert h["full"].startswith(kept) and h["full"][len(kept)] in " ,;:(—-", h  # cut after a whole word
    assert all(h["shown"] == h["full"] for h in helps if not h["folded"])

    more = page.locator("#experiment-form p.help .help-more").first
    help_text = more.locator("xpath=..")
    more.click()
    assert more.get_attribute("aria-expanded") == "true"
    assert help_text.locator(".help-text").inner_text() == help_text.get_attribute("title")
    assert page.js_errors == []


def test_every_character_of_the_labels_and_help_has_a_glyph(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    open_new_form(page, sign_in)
    assert page.evaluate(MISSING_GLYPHS_JS) == []
    assert page.js_errors == []

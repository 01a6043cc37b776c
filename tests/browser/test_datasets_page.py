"""Uploading a training dataset in a real browser: choose a JSONL file with the file input, see its preview
and a row without a prompt listed as an error before anything is stored, map the answer column, drop a
fixed file on the drop zone (a synthetic drop event carrying a DataTransfer), save it, and find it in the
list with its "Use in a new experiment" link."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

DROP_JS = """([name, text]) => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([text], name, {type: "application/json"}));
  const zone = document.getElementById("drop-zone");
  zone.dispatchEvent(new DragEvent("dragenter", {dataTransfer: transfer, bubbles: true, cancelable: true}));
  const dragging = zone.classList.contains("dragging");
  zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true}));
  return dragging;
}"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


GOOD = [
    {"question": f"{i}+{i}=", "result": str(2 * i), "level": "easy" if i < 4 else "<b>hard</b>"}
    for i in range(6)
]
BAD = [GOOD[0], {"result": "2", "level": "easy"}, *GOOD[2:]]  # row 2 has no question


def test_a_dataset_is_previewed_fixed_by_dropping_a_good_file_and_saved(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path], tmp_path: Path
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.datafiles.models import Dataset

    project = make_project(make_user("alice"), "Lab")
    bad_file = tmp_path / "math_bad.jsonl"
    bad_file.write_text(jsonl(BAD))
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/")
    page.click(".actions a:has-text('Datasets')")
    page.wait_for_url(re.compile(rf"/projects/{project.pk}/datasets/$"))
    assert page.locator("#no-datasets").is_visible()

    page.set_input_files("#file-input", str(bad_file))
    page.wait_for_selector("#preview:not([hidden]):not([data-loading])")
    assert page.locator("#preview-facts").inner_text() == "math_bad.jsonl · JSONL · 6 rows · 3 columns"
    assert page.input_value("#prompt-field") == "question"  # guessed from the usual names
    assert page.input_value("#answer-field") == ""  # "result" is not one: label-free until mapped
    assert page.locator("#answer-none").is_visible()  # ... and the page says so
    assert page.input_value("#dataset-name") == "math_bad"
    page.select_option("#answer-field", "result")
    page.wait_for_selector("#preview:not([data-loading])")
    assert not page.locator("#answer-none").is_visible()  # chosen: nothing left to say
    assert page.locator("#row-errors").is_visible()
    assert page.locator("#row-errors-title").inner_text() == "1 of 6 rows is invalid"
    error = page.locator("#row-error-table tbody tr")
    assert error.count() == 1
    assert error.locator("td").nth(0).inner_text() == "2"
    assert error.locator("td").nth(2).inner_text() == "question"
    assert "the 'question' field is missing or null" in error.locator("td").nth(3).inner_text()
    assert page.locator("#preview-table thead th.mapped").count() == 2
    assert page.locator("#preview-table tbody tr").count() == 6
    assert page.locator("#preview-table tbody tr.bad td").first.inner_text() == "2"
    assert (
        page.locator("#preview-table tbody td", has_text="<b>hard</b>").count() == 2
    )  # markup shown as text
    assert page.locator("#preview-table b").count() == 0
    assert page.locator("#save-button").is_disabled()
    screenshot(page, "01-preview-with-errors")
    assert not Dataset.objects.exists()  # nothing is stored by a preview

    assert (
        page.evaluate(DROP_JS, ["math_good.jsonl", jsonl(GOOD)]) is True
    )  # the zone lights up while dragged over
    page.wait_for_selector("#preview-facts:has-text('math_good.jsonl')")
    page.select_option("#answer-field", "result")
    page.wait_for_selector("#preview:not([data-loading])")
    assert not page.locator("#row-errors").is_visible()
    assert page.locator("#save-button").is_enabled()
    assert page.locator("#save-hint").inner_text() == "All 6 rows are valid."
    assert page.input_value("#dataset-name") == "math_good"
    page.fill("#dataset-name", "Math drills")
    page.click("#save-button")

    page.wait_for_url(re.compile(r"/datasets/\?saved=\d+"))
    dataset = Dataset.objects.get()
    assert (dataset.name, dataset.rows, dataset.prompt_field, dataset.answer_field) == (
        "Math drills",
        6,
        "question",
        "result",
    )
    row = page.locator(f"#dataset-{dataset.pk}")
    assert row.locator(".ds-name").inner_text() == "Math drills"
    assert "question → result" in row.inner_text()
    link = page.locator("#saved-notice a", has_text="Use in a new experiment")
    assert link.get_attribute("href") == f"/projects/{project.pk}/experiments/new/?dataset={dataset.pk}"
    screenshot(page, "02-list-after-save")
    assert not page.js_errors, page.js_errors


GUESSED = [{"question": f"{i}+1=", "final_answer": str(i + 1)} for i in range(4)]
EMPTY_ANSWER = [GUESSED[0], {"question": "1+1=", "final_answer": ""}, *GUESSED[2:]]


def test_a_guessed_answer_column_flags_empty_answers_and_is_confirmed_before_saving(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path], tmp_path: Path
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.datafiles.models import Dataset

    project = make_project(make_user("alice"), "Lab")
    empty = tmp_path / "gsm_empty.jsonl"
    empty.write_text(jsonl(EMPTY_ANSWER))
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/datasets/")

    page.set_input_files("#file-input", str(empty))
    page.wait_for_selector("#preview:not([hidden]):not([data-loading])")
    assert page.input_value("#answer-field") == "final_answer"  # guessed from its name, not label-free
    assert page.locator("#answer-guessed").is_visible()
    assert page.locator("#answer-guessed-name").inner_text() == "final_answer"
    assert not page.locator("#answer-none").is_visible()
    error = page.locator("#row-error-table tbody tr")
    assert error.count() == 1  # the row with an empty answer is flagged
    assert [error.locator("td").nth(i).inner_text() for i in (0, 2)] == ["2", "final_answer"]
    screenshot(page, "01-guessed-answer-with-an-empty-one")

    page.evaluate(DROP_JS, ["gsm.jsonl", jsonl(GUESSED)])
    page.wait_for_selector("#preview-facts:has-text('gsm.jsonl')")
    page.wait_for_selector("#preview:not([data-loading])")
    assert not page.locator("#row-errors").is_visible()
    assert page.locator("#save-button").is_disabled()  # the guess is a proposal until confirmed
    assert page.locator("#save-hint").inner_text() == "Confirm the answer column (or pick another) to save."
    page.check("#answer-confirm")
    assert page.locator("#save-button").is_enabled()
    page.click("#save-button")

    page.wait_for_url(re.compile(r"/datasets/\?saved=\d+"))
    dataset = Dataset.objects.get()
    assert (dataset.prompt_field, dataset.answer_field) == ("question", "final_answer")
    assert not page.js_errors, page.js_errors

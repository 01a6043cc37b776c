"""Two experiments start from the same base model and both evaluate it: the results table shows that model
once (naming both experiments), and the evaluation page's tables keep their short columns on one line at
1400 px (no wrapped "c / n", counts or finish reasons)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


PROMPT = (
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her "
    "friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck egg. "
    "How much in dollars does she make every day at the farmers' market?"
)


def problem(index: int, right: list[bool]) -> Any:
    """A word problem as a real benchmark stores it: a long id, a seed, long completions, one truncated."""
    from trainer.evaluation.engine import ProblemResult, SampleResult

    samples = []
    for i, ok in enumerate(right):
        answer = 18 if ok else 20 + i
        text = f"She has 16 - 3 - 4 = 9 eggs left, and 9 * $2 = ${answer}. The answer is {answer}."
        tokens = [word + " " for word in text.split(" ")]
        samples.append(SampleResult(
            index=i, text=text, token_ids=list(range(len(tokens))), tokens=tokens, logprobs=[-0.1] * len(tokens),
            finish_reason="length" if i == 2 else "eos", length=len(tokens), reward=1.0 if ok else 0.0, correct=ok,
            extracted_answer=str(answer), rewards={"math": 1.0 if ok else 0.0},
        ))  # fmt: skip
    return ProblemResult(
        f"gsm8k/test/{index:04d}", PROMPT, "18", seed=1234 + index, samples=samples, index=index
    )


def seed() -> Any:
    """alice's project with two experiments on tiny:addition, each base model evaluated (3 problems x 4)."""
    from django.test import override_settings

    from tests.workers.helpers import make_project, make_user
    from webapp.benchmarks.results import eval_record_problems
    from webapp.benchmarks.services import benchmark_create, eval_finish, eval_launch
    from webapp.experiments.services import experiment_create

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    model = {"model": {"name_or_path": "tiny:addition"}}
    experiments = [
        experiment_create(project=project, actor=owner, name=name, config=model) for name in ("grpo", "dapo")
    ]
    benchmark = benchmark_create(
        project=project, actor=owner, name="addition", source="builtin", builtin="builtin:addition",
        config={"n_samples": 4, "max_problems": 3, "batch_size": 4, "bootstrap_samples": 20},
    )  # fmt: skip
    with override_settings(RLVR_ENQUEUE=False):
        rows = eval_launch(benchmark=benchmark, actor=owner, experiments=experiments)
    for i, row in enumerate(rows):
        eval_record_problems(
            eval_run_id=row.pk,
            problems=[problem(p, [True, p > i, False, True]) for p in range(3)],
        )  # fmt: skip
        metrics = {
            "avg@4": 0.5 + i / 10,
            "pass@1 (n=4)": 0.5 + i / 10,
            "pass@4 (n=4)": 1.0,
            "response_len_mean": 2.0,
        }
        ci = {k: [v - 0.125, v + 0.125] for k, v in metrics.items()}
        eval_finish(eval_run_id=row.pk, status="succeeded", metrics=metrics, ci=ci, timings={})
    return project, rows


def test_a_shared_base_model_is_one_row_and_the_eval_tables_do_not_wrap(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    project, evals = seed()
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/benchmarks/")
    page.wait_for_selector("table#results tbody tr")
    rows = page.locator("table#results tbody tr[data-kind='base']")
    assert rows.count() == 1
    assert "tiny:addition (base)" in rows.inner_text() and "base of grpo, dapo" in rows.inner_text()
    screenshot(page, "01-results-table")

    page.goto(f"/evals/{evals[0].pk}/")
    page.wait_for_selector("#problem-table tbody tr")
    page.click("#problem-table tbody tr >> nth=0")
    page.wait_for_selector("#sample-table tbody tr")
    page.wait_for_selector("#metric-table tbody tr")
    # one line per short cell: the height of the cell's text (not of the cell: a row is as tall as its
    # tallest cell) stays under two lines
    tall = page.evaluate(
        """() => Array.from(document.querySelectorAll(
             '#metric-table td.num, #problem-table td.num, #sample-table td:not(.text)'))
           .filter((td) => {
             const text = document.createRange();
             text.selectNodeContents(td);
             return text.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(td).lineHeight);
           })
           .map((td) => td.textContent)"""
    )
    assert tall == [], f"wrapped cells: {tall}"
    screenshot(page, "02-eval-page")
    assert not page.js_errors, page.js_errors

"""The compare page's config diff in a real browser reads a TRL run's flat config as native paths: beta is
one row (``algorithm.beta``, the same in both runs, its cell naming TRL's ``beta``), the differing fields
are the ones both runs report, and the fields TRL did not send appear only under "Show all fields"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

NATIVE = {
    "name": "native", "data": {"source": "demo", "size": 32}, "algorithm": {"beta": 0.04},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 20, "prompts_per_step": 2, "learning_rate": 1e-4},
}  # fmt: skip
TRL = {"beta": 0.04, "learning_rate": 1e-4, "num_generations": 8, "output_dir": "/scratch/trl-out"}


def native_and_trl_runs() -> tuple[Any, Any]:
    from webapp.experiments.models import Experiment, Run, RunSource, RunStatus

    native = seed_run(config=NATIVE)
    experiment = Experiment.objects.create(project=native.experiment.project, name="trl-grpo", config=TRL)
    trl = Run.objects.create(
        experiment=experiment, config=TRL, source=RunSource.TRL, status=RunStatus.SUCCEEDED
    )
    return native, trl


def rows(page: Any, path: str) -> Any:
    return page.locator(f"#config-diff tbody tr[data-path='{path}']")


def test_a_trl_run_and_a_native_run_show_one_row_for_beta(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    native, trl = native_and_trl_runs()
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{native.experiment.project.pk}/compare/?runs={native.pk},{trl.pk}")

    assert page.locator("#diff-summary").inner_text().startswith("2 of ")
    assert "not reported by the outside run" in page.locator("#diff-summary").inner_text()
    assert rows(page, "rollout.num_generations").is_visible()  # 4 against 8
    assert not rows(page, "algorithm.beta").is_visible()  # the same in both: hidden until "Show all fields"
    assert not rows(page, "rollout.temperature").is_visible()  # TRL did not send it

    page.check("#diff-all")
    beta = rows(page, "algorithm.beta")
    assert beta.count() == 1 and rows(page, "beta").count() == 0
    cells = beta.locator("td")
    assert cells.nth(0).inner_text() == "0.04"
    assert cells.nth(1).inner_text() == "0.04 beta"  # the value, and TRL's own name for the field
    assert rows(page, "rollout.temperature").locator("td").nth(1).inner_text() == "—"
    screenshot(page, "compare-trl-native-config")
    assert page.js_errors == []

"""The absence rule on real tiny training steps: a reward source that has no score for half the samples.

``half`` (registered by the fixture below, test-only) is absent for every odd row of each batch it scores and
otherwise rewards a deterministic function of the text, so each group of 8 has 4 scored and 4 absent members. A
second source (``digit``, weight 0.5) scores every row. ``reward_absence.mode`` decides what the absent rows mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from tests.trainer.eval_helpers import PROBLEMS, SCRIPT, ScriptedEngine
from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.errors import ConfigError, RewardSourceError
from trainer.evaluation.config import BenchmarkConfig
from trainer.evaluation.engine import evaluate
from trainer.samples import Sample
from trainer.sinks import NullSink, RolloutRecord, StepReport
from trainer.step.loop import train
from trainer.step.run_setup import build_run
from trainer.step.step import training_step
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, absent_result

HALF = "test_half_absent"
PRIMARY = "test_absent_on_2"
EPS = 1e-4  # grpo's advantage_eps


class _NoParams(VerifierParams):
    pass


class HalfAbsent:
    """Absent for odd rows of each scored batch ("the judge timed out"); else (sum of character codes % 5) / 4."""

    name: ClassVar[str] = HALF
    Params: ClassVar[type[VerifierParams]] = _NoParams

    def __init__(self, params: _NoParams) -> None:
        pass

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return [
            absent_result("timeout after 30 s (3 tries)", latency_s=30.0)
            if i % 2
            else VerifierResult((sum(map(ord, text)) % 5) / 4, True, {"reason": "scored"})
            for i, text in enumerate(completions)
        ]


class AbsentOnTwo:
    """Exact match, except that a completion '2' gets no score (an evaluation's primary source failing)."""

    name: ClassVar[str] = PRIMARY
    Params: ClassVar[type[VerifierParams]] = _NoParams

    def __init__(self, params: _NoParams) -> None:
        pass

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return [
            absent_result("unparseable judge output")
            if text == "2"
            else VerifierResult(float(text == s.answer), text == s.answer, {})
            for text, s in zip(completions, samples, strict=True)
        ]


@pytest.fixture(autouse=True)
def test_sources() -> Iterator[None]:
    for name, cls in ((HALF, HalfAbsent), (PRIMARY, AbsentOnTwo)):
        VERIFIERS.register(name)(cls)  # type: ignore[arg-type]
    yield
    for name in (HALF, PRIMARY):
        VERIFIERS._items.pop(name)  # the registry is process-wide: leave it as the other tests find it


def config(
    model_dir: Path,
    out_dir: Path,
    mode: str,
    fail_above: float = 0.5,
    weights: tuple[float, float] = (1.0, 0.5),
    **more: Any,
) -> ExperimentConfig:
    return tiny_config(
        model_dir,
        out_dir,
        verifiers=[
            {"name": HALF, "label": "half"},
            {"name": "regex_format", "label": "digit", "params": {"pattern": "[0-9]", "match": "search"}},
        ],
        algorithm={"reward_weights": list(weights)},
        reward_absence={"mode": mode, "fail_above": fail_above},
        **more,
    )


def one_step(cfg: ExperimentConfig) -> StepReport:
    run = build_run(cfg, log=lambda m: None)
    try:
        return training_step(run, 1)
    finally:
        run.close()


def dropped(record: RolloutRecord) -> bool:
    return bool(record.details["allocation"].get("dropped"))


def grpo(rewards: list[float]) -> list[float]:
    """GRPO's advantage by hand: (r - mean) / (Bessel std + eps)."""
    t = torch.tensor(rewards, dtype=torch.float64)
    return ((t - t.mean()) / (t.std() + EPS)).tolist()


def check_group_advantages(records: list[RolloutRecord], members: Any) -> None:
    """Each group's advantages are GRPO's over ``members(records of the group)`` only."""
    for g in {r.group for r in records}:
        group = [r for r in records if r.group == g]
        kept = members(group)
        expected = grpo([r.reward for r in kept])
        assert [r.advantage for r in kept] == pytest.approx(expected, abs=1e-4)


def test_drop_leaves_absent_samples_out_of_their_groups_and_the_loss(
    random_model_dir: Path, tmp_path: Path
) -> None:
    report = one_step(config(random_model_dir, tmp_path, "drop"))
    m, records = report.metrics, report.rollouts
    assert m["reward/half_absent_frac"] == 0.5 and m["reward/digit_absent_frac"] == 0.0
    assert m["reward/dropped_frac"] == 0.5
    assert m["reward/half_latency_s"] >= 0.0 and m["reward/digit_latency_s"] >= 0.0
    scored = [r.rewards["half"] for r in records if r.rewards["half"] is not None]
    assert m["reward/half_mean"] == pytest.approx(sum(scored) / len(scored))  # over the present scores
    for r in records:
        absent = r.details["half"].get("absent") is not None
        assert dropped(r) == absent
        if absent:
            assert r.rewards["half"] is None and r.details["half"]["absent"] == "timeout after 30 s (3 tries)"
            assert r.advantage == 0.0
            assert set(r.token_values["loss_mask"]) <= {0.0} and set(r.token_values["advantage"]) <= {0.0}
        else:
            assert any(r.token_values["loss_mask"])
        json.dumps({"rewards": r.rewards, "details": r.details, "reward": r.reward}, allow_nan=False)
    check_group_advantages(records, lambda group: [r for r in group if not dropped(r)])
    assert any(r.advantage != 0 for r in records)


def test_zero_counts_an_absent_score_as_0(random_model_dir: Path, tmp_path: Path) -> None:
    report = one_step(config(random_model_dir, tmp_path, "zero"))
    m, records = report.metrics, report.rollouts
    assert m["reward/half_absent_frac"] == 0.5 and m["reward/dropped_frac"] == 0.0
    for r in records:
        assert not dropped(r) and any(r.token_values["loss_mask"])
        if r.rewards["half"] is None:  # the total is the digit term alone: the absent score counted 0
            assert r.reward == pytest.approx(0.5 * r.rewards["digit"])
    check_group_advantages(records, lambda group: group)  # every member in the statistics


def test_fail_stops_the_run_naming_the_source_step_fraction_limit_and_reason(
    random_model_dir: Path, tmp_path: Path
) -> None:
    errors: list[str] = []

    class Errors(NullSink):
        def on_error(self, message: str, traceback_text: str) -> None:
            errors.append(message)

    with pytest.raises(RewardSourceError) as raised:
        train(config(random_model_dir, tmp_path, "fail", fail_above=0.4), Errors(), log=lambda m: None)
    message = str(raised.value)
    for part in (
        "'half'",
        "50%",
        "step 1",
        "reward_absence.fail_above (0.4)",
        "timeout after 30 s (3 tries)",
    ):
        assert part in message, (part, message)
    assert errors == [message]  # the run's sink is told the same words


def test_fail_below_its_limit_trains_as_drop(random_model_dir: Path, tmp_path: Path) -> None:
    report = one_step(config(random_model_dir, tmp_path, "fail", fail_above=0.5))  # 0.5 is not above 0.5
    assert report.metrics["reward/dropped_frac"] == 0.5
    assert all(r.advantage == 0.0 for r in report.rollouts if dropped(r))


def test_a_weight_0_monitor_that_is_absent_drops_nothing(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = config(random_model_dir, tmp_path, "fail", fail_above=0.0, weights=(0.0, 1.0))
    report = one_step(cfg)
    assert report.metrics["reward/half_absent_frac"] == 0.5 and report.metrics["reward/dropped_frac"] == 0.0


@pytest.mark.slow
def test_the_asynchronous_generator_follows_the_rule_too(random_model_dir: Path, tmp_path: Path) -> None:
    steps = Steps()
    train(
        config(random_model_dir, tmp_path, "drop", training={"max_off_policy_steps": 1, "max_steps": 2}),
        steps,
        log=lambda m: None,
    )
    assert [r.step for r in steps.reports] == [1, 2]
    for report in steps.reports:
        assert report.metrics["reward/dropped_frac"] == 0.5
        assert all(
            r.advantage == 0.0 and not any(r.token_values["loss_mask"]) for r in report.rollouts if dropped(r)
        )


def test_the_section_is_validated() -> None:
    from trainer.config import config_from_dict

    assert config_from_dict({}).reward_absence.mode == "drop"
    with pytest.raises(ConfigError, match=r"reward_absence\.mode"):
        config_from_dict({"reward_absence": {"mode": "ignore"}})
    with pytest.raises(ConfigError, match=r"reward_absence\.fail_above"):
        config_from_dict({"reward_absence": {"fail_above": 1.5}})


def test_an_absent_primary_verdict_is_not_correct_in_evaluation_and_is_counted() -> None:
    bench = BenchmarkConfig.model_validate(
        {"name": "absent", "n_samples": 4, "pass_k": [1], "maj_k": [], "verifiers": [{"name": PRIMARY}]}
    )
    result = evaluate(bench, ScriptedEngine(SCRIPT), samples=PROBLEMS)
    assert result.metrics["absent"] == 3.0  # the three '2's of 1+1=
    assert result.metrics["pass@1 (n=4)"] == pytest.approx((0 + 2 / 4 + 0) / 3)  # absent is not correct
    first = result.problems[0].samples[0]
    assert first.absent and not first.correct and first.rewards == {PRIMARY: None} and first.reward == 0.0
    json.dumps(result.to_dict(), allow_nan=False)
    assert not math.isnan(result.metrics["avg@4"])

"""The reward evaluation's process part, run by the task in-process on a tiny budget: the chain-arithmetic verifier
(a scalar source), the chain oracle and a tiny PRM version (trained in the fixture) on 6 problems x 4 samples of
tiny:chain. The oracle agrees with itself (first-error F1 1, ECE 0, its PRM Best-of-N at most pass@N); the PRM's
figures are in range with their intervals; the scalar source's curve is recomputed on the same samples; the CSV carries the
process columns; a cancel during the process part keeps the parts finished before it; and with an uploaded
Math-Shepherd file the PRM is measured on the file's own steps against its labels."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import make_project, make_user
from tests.workers.prm_helpers import train_tiny_prm
from webapp.datafiles.models import Dataset
from webapp.rewards import evaluation_services
from webapp.rewards.evaluation_exports import to_csv
from webapp.rewards.evaluation_services import reward_evaluation_start
from webapp.rewards.models import JobStatus, RewardJob
from webapp.rewards.services import reward_model_create, version_create_prm
from workers.tasks_reward_eval import run_reward_evaluation

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def prm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Under pytest's base temporary folder, which tests/workers/conftest.py makes a model root."""
    return train_tiny_prm(tmp_path_factory.getbasetemp() / "eval-chain-prm")


def _job(settings: Any, tmp_path: Path, prm_folder: Path) -> RewardJob:
    settings.RLVR_ENQUEUE, settings.DATA_DIR = False, tmp_path / "data"
    owner = make_user("alice")
    project = make_project(owner)
    prm = reward_model_create(project=project, actor=owner, name="chain PRM")
    version = version_create_prm(reward_model=prm, actor=owner, model=str(prm_folder))
    body = {
        "sources": [{"name": "chain_arithmetic"}, {"process_scorer": {"name": "oracle_chain"}},
                    {"reward_model_version": version.pk}],
        "best_of_n": {"benchmark": "builtin:chain_arithmetic", "policy": "tiny:chain", "n": 4, "problems": 6},
        "process": {}, "seed": 2, "bootstrap_resamples": 200,
    }  # fmt: skip
    return reward_evaluation_start(project=project, actor=owner, data=body, name="process")


def test_the_worker_evaluates_the_oracle_and_a_tiny_prm_step_by_step(
    db: None, settings: Any, tmp_path: Path, prm_folder: Path
) -> None:
    job = _job(settings, tmp_path, prm_folder)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "succeeded"
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    result = job.result
    verifier, oracle, prm = result["sources"]
    assert (verifier.get("kind"), oracle["kind"], prm["kind"]) == (None, "process", "process")
    assert "process" not in verifier and "best_of_n" not in oracle  # each part scores its own kind of source
    shared = result["process"]["best_of_n"]
    assert shared["same_samples"] and (shared["problems"], shared["samples_per_problem"]) == (6, 4)
    assert shared["ns"] == [1, 2, 4]
    # The scalar source's curve on the process samples is its Best-of-N part's curve (the same samples).
    assert shared["orm"][0]["label"] == "chain_arithmetic"
    assert shared["orm"][0]["best_of_n"] == pytest.approx(verifier["best_of_n"]["best_of_n"])

    first = oracle["process"]["first_error"]
    assert first["f1"] == 1.0 and first["f1_ci"] == [1.0, 1.0]  # the oracle names its own first wrong step
    assert first["erroneous"] + first["correct"] == 24
    assert oracle["process"]["calibration"]["ece"] == 0.0  # its 0/1 step scores are its own labels
    oracle_curve = oracle["process"]["best_of_n"]["best_of_n"]
    assert oracle_curve[0] == pytest.approx(
        shared["baselines"]["random"][0]
    )  # at N = 1 every source is random
    # The oracle's steps never rank a wrong solution above a right one whose scratchpad it accepts; it may still
    # blame a right final answer written without working, so pass@N is its ceiling, not always its value.
    assert all(v <= o + 1e-9 for v, o in zip(oracle_curve, shared["baselines"]["oracle"], strict=True))
    assert oracle["process"]["samples"] == 24 and oracle["process"]["steps_mean"] >= 1

    got = prm["process"]
    assert got["scorer"] == "prm" and got["reference"] == "chain_oracle" and got["absent_steps"] == 0
    f1, (low, high) = got["first_error"]["f1"], got["first_error"]["f1_ci"]
    assert 0.0 <= low <= f1 <= high <= 1.0
    calibration = got["calibration"]
    assert len(calibration["bins"]) == 10 and 0.0 <= calibration["ece"] <= 1.0
    assert calibration["steps"] == sum(b["steps"] for b in calibration["bins"])
    curve = got["best_of_n"]
    assert curve["ns"] == [1, 2, 4] and curve["extra"]["aggregate"] == "min"
    assert all(0.0 <= v <= o + 1e-9 for v, o in zip(curve["best_of_n"], curve["oracle"], strict=True))
    assert prm["scored"] == 24 and prm["scoring_s"] > 0

    rows = list(csv.DictReader(io.StringIO(to_csv(job))))
    assert [r["source"] for r in rows] == ["chain_arithmetic", "oracle_chain", "chain_prm_v1"]
    assert rows[0]["first_error_f1"] == "" and rows[1]["first_error_f1"] == "1.0"
    assert float(rows[2]["step_ece"]) == pytest.approx(calibration["ece"])


def test_a_cancel_during_the_process_part_keeps_the_parts_before_it(
    db: None, settings: Any, tmp_path: Path, prm_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(settings, tmp_path, prm_folder)
    original = evaluation_services.evaluation_progress

    def cancel_at_the_process_part(*, job_id: int, progress: dict[str, Any]) -> bool:
        if str(progress.get("phase", "")).startswith("process"):  # a person presses Cancel now
            RewardJob.objects.filter(pk=job_id).update(cancel_requested=True)
        return original(job_id=job_id, progress=progress)

    monkeypatch.setattr(evaluation_services, "evaluation_progress", cancel_at_the_process_part)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "cancelled"
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.result["cancelled"]
    verifier, _oracle, prm = job.result["sources"]
    assert verifier["best_of_n"]["ns"] == [1, 2, 4]  # the Best-of-N part had finished
    assert "process" not in prm


def test_a_prm_is_measured_against_an_uploaded_step_labelled_file(
    db: None, settings: Any, tmp_path: Path, prm_folder: Path
) -> None:
    settings.RLVR_ENQUEUE, settings.DATA_DIR = False, tmp_path / "data"
    owner = make_user("alice")
    project = make_project(owner)
    rows = [  # Math-Shepherd rows: each step ends with the tag in "input" and carries +/- in "label"
        ("3+4*2=", ["3+8=", "11"], ["+", "+"]),
        ("9-2-3=", ["7-3=", "5"], ["+", "-"]),
        ("5*2+1=", ["10+1=", "12"], ["+", "-"]),
        ("8-1*3=", ["21=", "21"], ["-", "-"]),
    ]
    lines = [
        json.dumps({"input": p + " " + " ки ".join(s) + " ки", "label": p + " " + " ".join(
            f"{step} {mark}" for step, mark in zip(s, marks, strict=True))}, ensure_ascii=False)
        for p, s, marks in rows
    ]  # fmt: skip
    path = tmp_path / "steps.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dataset = Dataset.objects.create(
        project=project, name="steps.jsonl", path=str(path), format="jsonl", rows=4, prompt_field="input"
    )
    body = {
        "sources": [{"process_scorer": {"name": "prm", "params": {"model": str(prm_folder)}}, "label": "prm"}],
        "process": {"labels": {"dataset": dataset.pk}}, "bootstrap_resamples": 100,
    }  # fmt: skip
    job = reward_evaluation_start(project=project, actor=owner, data=body, name="labels")
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "succeeded"
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["process"]["reference"] == "labels" and "best_of_n" not in job.result["process"]
    got = job.result["sources"][0]["process"]
    assert got["reference"] == "labels" and got["labels"]["examples"] == 4 and got["labels"]["skipped"] == 0
    first = got["first_error"]
    assert (first["erroneous"], first["correct"]) == (
        3,
        1,
    )  # one right solution, three with a first wrong step
    assert got["calibration"]["steps"] == 8 and "best_of_n" not in got

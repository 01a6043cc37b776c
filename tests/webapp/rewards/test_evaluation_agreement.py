"""The evaluation task run in this process (Celery's ``apply``) with real verifiers scoring: pairs and agreement from
a pairwise annotation task judged by two annotators, pairs from an uploaded file (a bad line named), and cancels
(while queued: skipped; while running: stopped at the next batch, keeping what was done)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.annotation.pairwise_helpers import judge, write_pairs
from webapp.annotation.models import AnnotationTask
from webapp.annotation.services_pairwise import pairwise_task_create_from_file
from webapp.rewards.evaluation_services import reward_evaluation_start
from webapp.rewards.models import RewardJob
from webapp.teams.models import Project
from workers.tasks_reward_eval import _pairwise_agreement, _unit_scale, run_reward_evaluation

Join = Callable[[User, str | None], User]


@pytest.fixture(autouse=True)
def _no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False


@pytest.fixture
def judged_task(
    tmp_path: Path, project: Project, alice: User, bob: User, charlie: User, join: Join
) -> AnnotationTask:
    """Five pairs (a right and a wrong final answer); bob and charlie pick the right one except on the last pair."""
    join(bob, "annotator")
    join(charlie, "annotator")
    rows = [{"prompt": f"{i}+{i}=", "chosen": f"#### {2 * i}", "rejected": f"#### {2 * i + 1}", "answer": str(2 * i)}
            for i in range(5)]  # fmt: skip
    path = write_pairs(tmp_path / "pairs.jsonl", rows)
    task = pairwise_task_create_from_file(
        project=project, actor=alice, path=path, fmt="jsonl", filename="pairs.jsonl", seed=1,
        annotators=["bob", "charlie"], annotators_per_item=2,
    )  # fmt: skip
    choices = {}
    for item in task.items.order_by("position"):
        right = item.truth if item.position < 4 else ("left" if item.truth == "right" else "right")
        choices[item.position] = {"bob": right, "charlie": right}
    judge(task, {"bob": bob, "charlie": charlie}, choices)
    return task


def test_pairwise_accuracy_and_agreement_come_from_the_peoples_final_choices(
    project: Project, alice: User, judged_task: AnnotationTask
) -> None:
    data = {
        "sources": [
            {"name": "chain_arithmetic"},
            {"name": "regex_format", "params": {"pattern": "", "match": "search"}},
        ],
        "pairwise": {"annotation_task": judged_task.pk},
        "agreement": {"annotation_task": judged_task.pk},
    }
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "succeeded"
    job = RewardJob.objects.get(pk=job.pk)
    verifier, constant = job.result["sources"]
    # The people chose the wrong answer once in five: the verifier disagrees with them there.
    assert verifier["pairwise"]["accuracy"] == pytest.approx(0.8) and verifier["pairwise"]["scored"] == 5
    assert verifier["agreement"] == {"share": pytest.approx(0.8), "items": 5, "absent": 0}
    # A source that accepts everything ties every pair: half.
    assert constant["pairwise"]["accuracy"] == 0.5 and constant["pairwise"]["ties"] == 5
    assert constant["agreement"]["share"] == 0.5
    assert job.result["agreement"] == {
        "task": judged_task.pk,
        "name": judged_task.name,
        "kind": "pairwise",
        "items": 5,
    }
    assert job.progress["phase"] == "succeeded"


def test_a_cancel_before_the_worker_starts_skips_the_job(
    project: Project, alice: User, judged_task: AnnotationTask
) -> None:
    from webapp.rewards.evaluation_services import reward_evaluation_cancel

    data = {"sources": [{"name": "chain_arithmetic"}], "agreement": {"annotation_task": judged_task.pk}}
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    reward_evaluation_cancel(job=job, actor=alice)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "skipped"
    assert RewardJob.objects.get(pk=job.pk).status == "cancelled"


def test_pairwise_agreement_counts_ties_half_and_leaves_out_absent_scores() -> None:
    nan = float("nan")
    result = _pairwise_agreement(
        [1.0, 0.0, 0.5, nan], [0.0, 1.0, 0.5, 1.0], ["left", "left", "right", "left"]
    )
    assert result == {"share": pytest.approx((1 + 0 + 0.5) / 3), "items": 3, "absent": 1}


def test_machine_scores_are_put_on_the_peoples_zero_to_one_scale() -> None:
    assert _unit_scale({1: -2.0, 2: 0.0, 3: 2.0}) == {1: 0.0, 2: 0.5, 3: 1.0}
    assert _unit_scale({1: 3.0, 2: 3.0}) == {1: 0.5, 2: 0.5}


def test_a_cancel_seen_while_running_stops_at_the_next_batch_and_keeps_what_was_done(
    project: Project, alice: User, judged_task: AnnotationTask
) -> None:
    data = {
        "sources": [{"name": "chain_arithmetic"}],
        "pairwise": {"annotation_task": judged_task.pk},
        "agreement": {"annotation_task": judged_task.pk},
    }
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    # A worker died mid-job and the cancel arrived meanwhile: the re-delivered task starts, then sees the request.
    RewardJob.objects.filter(pk=job.pk).update(status="running", cancel_requested=True)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "cancelled"
    job = RewardJob.objects.get(pk=job.pk)
    assert job.status == "cancelled" and job.result["cancelled"] is True
    assert [s["label"] for s in job.result["sources"]] == ["chain_arithmetic"]
    assert "agreement" not in job.result["sources"][0]  # stopped before the agreement part


def _pairs_dataset(project: Project, tmp_path: Path, lines: list[str]) -> int:
    from webapp.datafiles.models import Dataset

    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dataset = Dataset.objects.create(project=project, name="pairs", path=str(path), format="jsonl", rows=len(lines),
                                     fields=["prompt", "chosen", "rejected", "answer"], prompt_field="prompt")  # fmt: skip
    return dataset.pk


def test_pairs_from_an_uploaded_file_carry_their_reference_answers(
    project: Project, alice: User, tmp_path: Path
) -> None:
    import json

    rows = [json.dumps({"prompt": f"{i}*2=", "chosen": f"#### {2 * i}", "rejected": f"#### {i}", "answer": str(2 * i)})
            for i in range(1, 5)]  # fmt: skip
    data = {
        "sources": [{"name": "chain_arithmetic"}],
        "pairwise": {"dataset": _pairs_dataset(project, tmp_path, rows)},
    }
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "succeeded"
    pairwise = RewardJob.objects.get(pk=job.pk).result["sources"][0]["pairwise"]
    assert (pairwise["accuracy"], pairwise["scored"], pairwise["ties"]) == (1.0, 4, 0)


def test_a_bad_line_in_a_pairs_file_fails_the_job_naming_it(
    project: Project, alice: User, tmp_path: Path
) -> None:
    lines = [
        '{"prompt": "q", "chosen": "a", "rejected": "b"}',
        '{"prompt": "q", "chosen": 5, "rejected": "b"}',
    ]
    data = {
        "sources": [{"name": "chain_arithmetic"}],
        "pairwise": {"dataset": _pairs_dataset(project, tmp_path, lines)},
    }
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "failed"
    assert "Line 2 of pairs" in RewardJob.objects.get(pk=job.pk).error


def test_best_of_n_on_an_uploaded_benchmark_is_judged_by_its_oracle(
    project: Project, alice: User, tmp_path: Path
) -> None:
    import json

    from webapp.datafiles.models import Dataset

    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(json.dumps({"q": f"{i}+{i}=", "a": str(2 * i)}) + "\n" for i in range(1, 4)), encoding="utf-8"
    )
    dataset = Dataset.objects.create(project=project, name="sums", path=str(path), format="jsonl", rows=3,
                                     fields=["q", "a"], prompt_field="q", answer_field="a")  # fmt: skip
    data = {
        "sources": [{"name": "chain_arithmetic"}, {"name": "regex_format", "params": {"pattern": "", "match": "search"}}],
        "best_of_n": {"benchmark": f"dataset:{dataset.pk}", "oracle": {"name": "chain_arithmetic"}, "policy": "tiny:chain",
                      "n": 4, "problems": 3, "max_tokens": 24},
        "audit": True, "audit_problems": 2,
    }  # fmt: skip
    job = reward_evaluation_start(project=project, actor=alice, data=data)
    assert job.config["best_of_n"]["oracle"]["name"] == "chain_arithmetic"
    assert run_reward_evaluation.apply(args=(job.pk,)).get() == "succeeded", RewardJob.objects.get(
        pk=job.pk
    ).error
    result = RewardJob.objects.get(pk=job.pk).result
    oracle_curve, flat_curve = (s["best_of_n"] for s in result["sources"])
    assert result["best_of_n"]["ns"] == [1, 2, 4] and oracle_curve["problems"] == 3
    assert oracle_curve["best_of_n"] == pytest.approx(
        oracle_curve["oracle"]
    )  # the oracle choosing is the oracle
    assert flat_curve["best_of_n"] == pytest.approx(
        flat_curve["random"]
    )  # a constant score chooses at random
    assert result["audit"]["problems"] == 2 and result["sources"][0]["audit"]["fpr"] == 0.0
    assert str(path) not in json.dumps(result)


def test_an_uploaded_benchmark_needs_an_answer_column(project: Project, alice: User, tmp_path: Path) -> None:
    from webapp.core.errors import InvalidInput
    from webapp.datafiles.models import Dataset

    dataset = Dataset.objects.create(project=project, name="open", path=str(tmp_path / "x.jsonl"), format="jsonl",
                                     rows=1, fields=["q"], prompt_field="q", answer_field="")  # fmt: skip
    data = {"sources": [{"name": "exact"}], "best_of_n": {"benchmark": f"dataset:{dataset.pk}"}}
    with pytest.raises(InvalidInput) as err:
        reward_evaluation_start(project=project, actor=alice, data=data)
    assert "best_of_n.benchmark" in err.value.fields

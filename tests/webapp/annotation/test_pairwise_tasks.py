"""Pairwise tasks from each source (a run's rollouts, an evaluation's samples, a pairs file), judgements,
adjudication, final decisions and ``preference_pairs``, through the services."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from tests.webapp.annotation.pairwise_helpers import judge, write_pairs
from tests.webapp.annotation.test_task_from_benchmark import eval_run  # noqa: F401 -- fixture
from webapp.annotation.models import AnnotationTask, Assignment, AssignmentStatus, SourceKind, TaskKind
from webapp.annotation.selectors_pairwise import final_decisions, preference_pairs, preference_summary
from webapp.annotation.services_pairwise import (
    judgement_save_draft,
    judgement_submit,
    pairwise_adjudication_set,
    pairwise_task_create_from_eval,
    pairwise_task_create_from_file,
    pairwise_task_create_from_run,
)
from webapp.benchmarks.models import EvalRun
from webapp.core.errors import ApplicationError, Conflict, InvalidInput
from webapp.experiments.models import Rollout, Run


def test_run_pairs_are_two_completions_of_one_prompt_at_one_step(
    run_with_rollouts: Run, alice: User, annotators: list[User]
) -> None:
    task = pairwise_task_create_from_run(run=run_with_rollouts, actor=alice, pairing={"n": 6, "seed": 4})
    assert task.kind == TaskKind.PAIRWISE and task.rubric is None and task.sampling["resolved_step"] == 3
    items = list(task.items.order_by("position"))
    assert len(items) == 6
    for item in items:
        left = Rollout.objects.get(pk=item.pair["left"]["rollout"])
        right = Rollout.objects.get(pk=item.pair["right"]["rollout"])
        assert left.step == right.step == 3 and left.group == right.group and left.pk != right.pk
        assert (item.prompt, item.completion, item.completion_right) == (
            left.prompt,
            left.completion,
            right.completion,
        )
        assert item.truth == ""  # rollouts carry no file label
    # every item to 2 of the 3 eligible people (alice, dana, erin), loads within one of each other
    loads = sorted(Assignment.objects.filter(item__task=task).values_list("annotator", flat=True))
    assert len(loads) == 12 and sorted(loads.count(p) for p in set(loads)) == [4, 4, 4]


def test_the_stored_order_comes_from_the_seed(run_with_rollouts: Run, alice: User) -> None:
    def sides(seed: int) -> list[tuple[str, str]]:
        task = pairwise_task_create_from_run(run=run_with_rollouts, actor=alice, pairing={"n": 8, "seed": seed},
                                             annotators_per_item=1)  # fmt: skip
        return list(task.items.order_by("position").values_list("completion", "completion_right"))

    assert sides(11) == sides(11)
    task = AnnotationTask.objects.filter(kind="pairwise").first()
    assert task is not None and {i.pair["swapped"] for i in task.items.all()} == {True, False}


def test_a_step_and_only_differing_verdicts(run_with_rollouts: Run, alice: User) -> None:
    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, annotators_per_item=1,
        pairing={"n": 50, "step": 1, "only_differing_outcome": True},
    )  # fmt: skip
    items = list(task.items.all())
    assert len(items) == 8  # 2 groups x (2 correct x 2 incorrect)
    assert all(i.source_step == 1 and i.pair["left"]["correct"] != i.pair["right"]["correct"] for i in items)
    with pytest.raises(InvalidInput) as err:
        pairwise_task_create_from_run(run=run_with_rollouts, actor=alice, pairing={"step": 99})
    assert "pairing.step" in err.value.fields


def test_eval_pairs_are_samples_of_one_problem(
    eval_run: EvalRun,  # noqa: F811 -- the fixture imported above
    alice: User,
    annotators: list[User],
) -> None:
    task = pairwise_task_create_from_eval(eval_run=eval_run, actor=alice, pairing={"n": 5})
    assert task.source_kind == SourceKind.BENCHMARK and task.sampling["eval_run"] == eval_run.pk
    for item in task.items.all():
        assert item.source["eval_run"] == eval_run.pk and item.prompt == f"{item.source['problem_id']}: 2+2="
        assert item.pair["left"]["sample"] != item.pair["right"]["sample"]
    with pytest.raises(InvalidInput):
        pairwise_task_create_from_eval(eval_run=eval_run, actor=alice, pairing={"step": 1})


def test_a_chosen_rejected_file_keeps_its_label_hidden_on_the_item(
    tmp_path: Path, project: object, alice: User, annotators: list[User]
) -> None:
    rows = [
        {"prompt": f"q{i}", "chosen": f"good {i}", "rejected": f"bad {i}", "answer": "4"} for i in range(10)
    ]
    path = write_pairs(tmp_path / "p.jsonl", rows)
    task = pairwise_task_create_from_file(
        project=project, actor=alice, path=path, fmt="jsonl", filename="p.jsonl", seed=2
    )  # type: ignore[arg-type]
    items = list(task.items.order_by("position"))
    assert [i.prompt for i in items] == [f"q{i}" for i in range(10)] and task.source_kind == SourceKind.UPLOAD
    for item in items:
        chosen_text = item.completion if item.truth == "left" else item.completion_right
        assert chosen_text.startswith("good") and item.reference_answer == "4"
    assert {i.truth for i in items} == {"left", "right"}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['{"prompt": "q", "completion_a": "a"}'], "line 1: 'completion_b' is missing or empty"),
        (['{"prompt": "q", "completion_a": "a", "completion_b": "b"}', "not json"], "line 2"),
        (['{"prompt": "q", "chosen": "a", "rejected": 5}'], "line 1: 'rejected' must be text, not int"),
        (['{"prompt": "q", "chosen": "a", "rejected": "b", "completion_a": "c"}'], "not both"),
        ([], "has no pairs"),
    ],
)
def test_a_bad_pairs_file_names_the_line(
    lines: list[str], expected: str, tmp_path: Path, project: object, alice: User
) -> None:
    path = write_pairs(tmp_path / "bad.jsonl", lines)
    with pytest.raises(InvalidInput) as err:
        pairwise_task_create_from_file(
            project=project, actor=alice, path=path, fmt="jsonl", filename="bad.jsonl"
        )  # type: ignore[arg-type]
    assert expected in err.value.message and "file" in err.value.fields
    assert str(tmp_path) not in err.value.message  # never the staging path


def test_a_pairs_file_over_the_row_limit_is_refused(tmp_path: Path, project: object, alice: User) -> None:
    row = '{"prompt": "q", "completion_a": "a", "completion_b": "b"}'
    path = write_pairs(tmp_path / "big.jsonl", [row] * 5001)
    with pytest.raises(InvalidInput) as err:
        pairwise_task_create_from_file(
            project=project, actor=alice, path=path, fmt="jsonl", filename="big.jsonl"
        )  # type: ignore[arg-type]
    assert "5,000" in err.value.message or "5000" in err.value.message


def test_judgements_move_through_draft_and_submitted(
    run_with_rollouts: Run, alice: User, annotators: list[User]
) -> None:
    dana = annotators[0]
    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, pairing={"n": 2}, annotators=["dana"], annotators_per_item=1
    )
    work = Assignment.objects.filter(item__task=task, annotator=dana).first()
    assert work is not None
    draft = judgement_save_draft(assignment=work, actor=dana, choice=None, reason="thinking")
    assert (draft.status, draft.choice, draft.comment) == (AssignmentStatus.DRAFT, "", "thinking")
    with pytest.raises(InvalidInput):
        judgement_submit(assignment=work, actor=dana, choice=None)
    with pytest.raises(InvalidInput):
        judgement_submit(assignment=work, actor=dana, choice="middle")
    done = judgement_submit(assignment=work, actor=dana, choice="tie", reason="same answer")
    assert (done.status, done.choice, done.comment) == (AssignmentStatus.SUBMITTED, "tie", "same answer")
    with pytest.raises(Conflict):
        judgement_save_draft(assignment=work, actor=dana, choice="left")
    assert judgement_submit(assignment=work, actor=dana, choice="left").choice == "left"  # resubmitted
    with pytest.raises(Http404):  # someone else's work
        judgement_submit(assignment=work, actor=annotators[1], choice="right")


def test_final_decisions_and_the_pairs_a_reward_model_trains_on(
    run_with_rollouts: Run, alice: User, annotators: list[User]
) -> None:
    people = {u.username: u for u in annotators}
    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, pairing={"n": 6}, annotators=["dana", "erin"]
    )
    judge(task, people, {
        0: {"dana": "left", "erin": "left"}, 1: {"dana": "right", "erin": "right"}, 2: {"dana": "left", "erin": "right"},
        3: {"dana": "tie", "erin": "tie"}, 4: {"dana": "both_bad", "erin": "both_bad"}, 5: {"dana": "left"},
    })  # fmt: skip
    items = {i.position: i for i in task.items.all()}
    assert preference_summary(task=task) == {
        "pairs": 3,
        "left": 2,
        "right": 1,
        "tie": 1,
        "both_bad": 1,
        "unresolved": 1,
    }
    with pytest.raises(PermissionDenied):
        pairwise_adjudication_set(item=items[2], actor=annotators[0], choice="left")
    pairwise_adjudication_set(item=items[2], actor=alice, choice="right", note="right shows its work")
    assert final_decisions(task=task)[items[2].pk] == "right"
    pairs = preference_pairs(task)
    assert pairs == [
        {"prompt": items[0].prompt, "chosen": items[0].completion, "rejected": items[0].completion_right},
        {"prompt": items[1].prompt, "chosen": items[1].completion_right, "rejected": items[1].completion},
        {"prompt": items[2].prompt, "chosen": items[2].completion_right, "rejected": items[2].completion},
        {"prompt": items[5].prompt, "chosen": items[5].completion, "rejected": items[5].completion_right},
    ]
    assert (
        pairwise_adjudication_set(item=items[2], actor=alice, choice=None) is None
    )  # removed: unresolved again
    assert preference_summary(task=task)["unresolved"] == 1 and len(preference_pairs(task)) == 3


def test_rubric_only_writes_refuse_pairwise_items_and_back(
    run_with_rollouts: Run, alice: User, annotators: list[User], scored_task: AnnotationTask
) -> None:
    from webapp.annotation.scoring_jobs import scoring_job_start

    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, pairing={"n": 1}, annotators_per_item=1
    )
    with pytest.raises(ApplicationError):
        scoring_job_start(task=task, actor=alice, rubric=scored_task.rubric)
    with pytest.raises(ApplicationError):
        pairwise_adjudication_set(item=scored_task.items.first(), actor=alice, choice="left")  # type: ignore[arg-type]

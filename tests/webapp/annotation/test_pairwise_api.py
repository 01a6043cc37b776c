"""The pairwise half of the annotation API, for every role: create (a run, an evaluation, a pairs file),
judge, adjudicate, agreement, disagreements, the full exports and the TRL preference export."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.annotation.pairwise_helpers import judge
from webapp.annotation.models import AnnotationTask, Assignment
from webapp.annotation.services_pairwise import pairwise_task_create_from_run
from webapp.experiments.models import Run
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
RANK = {"outsider": -1, "viewer": 0, "annotator": 1, "admin": 2, "owner": 3}


def expected(role: str, minimum: str, ok: int) -> int:
    return 404 if role == "outsider" else ok if RANK[role] >= RANK[minimum] else 403


@pytest.fixture
def client_as(
    alice: User, charlie: User, join: Callable[[User, str | None], User], api: Api
) -> Callable[[str], APIClient]:
    def make(role: str) -> APIClient:
        if role == "owner":
            return api(alice)
        join(charlie, None if role == "outsider" else role)
        return api(charlie)

    return make


@pytest.fixture
def judged(run_with_rollouts: Run, alice: User, annotators: list[User]) -> AnnotationTask:
    """Six pairs judged by dana and erin: agree on 0, 1, 3 (tie) and 4 (both bad); split on 2; only dana on 5."""
    task = pairwise_task_create_from_run(
        run=run_with_rollouts, actor=alice, pairing={"n": 6}, annotators=["dana", "erin"]
    )
    AnnotationTask.objects.filter(pk=task.pk).update(name="pairs")
    item = task.items.get(position=0)
    item.completion = '=HYPERLINK("http://x")'  # a formula-looking completion must stay text in the CSV
    item.save(update_fields=["completion"])
    judge(task, {u.username: u for u in annotators}, {
        0: {"dana": "left", "erin": "left"}, 1: {"dana": "right", "erin": "right"}, 2: {"dana": "left", "erin": "right"},
        3: {"dana": "tie", "erin": "tie"}, 4: {"dana": "both_bad", "erin": "both_bad"}, 5: {"dana": "left"},
    })  # fmt: skip
    return task


@pytest.mark.parametrize("role", ["owner", "admin", "annotator", "viewer", "outsider"])
def test_owners_and_admins_create_a_pairwise_task_from_a_run(
    role: str,
    run_with_rollouts: Run,
    project: Project,
    annotators: list[User],
    client_as: Callable[[str], APIClient],
) -> None:
    body = {
        "kind": "pairwise",
        "run": run_with_rollouts.pk,
        "pairing": {"n": 3, "seed": 1},
        "annotators": ["dana", "erin"],
    }
    response = client_as(role).post(f"/api/projects/{project.pk}/annotation-tasks/", body, format="json")
    assert response.status_code == expected(role, "admin", 201), response.content
    if response.status_code == 201:
        data = response.json()
        assert data["kind"] == "pairwise" and data["items_count"] == 3 and data["rubric"] is None
        assert data["sampling_text"].startswith("Up to 3 pairs of completions of one prompt at step 3")
    else:
        assert set(response.json()) == {"message", "extra"} and not AnnotationTask.objects.exists()


def test_a_pairs_file_upload_creates_a_task_and_a_bad_one_names_the_line(
    project: Project, alice: User, annotators: list[User], api: Api
) -> None:
    url = f"/api/projects/{project.pk}/annotation-tasks/"
    good = b'{"prompt": "2+2=", "chosen": "4", "rejected": "5"}\n{"prompt": "3+3=", "completion_a": "6", "completion_b": "7"}\n'
    response = api(alice).post(
        url,
        {"kind": "pairwise", "file": SimpleUploadedFile("p.jsonl", good), "seed": "3"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert response.json()["source_kind"] == "upload" and response.json()["items_count"] == 2
    bad = b'{"prompt": "2+2=", "chosen": "4", "rejected": "5"}\n{"prompt": "3+3="}\n'
    response = api(alice).post(
        url, {"kind": "pairwise", "file": SimpleUploadedFile("b.jsonl", bad)}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["message"] == "b.jsonl, line 2: 'completion_a' is missing or empty"
    assert response.json()["extra"]["fields"]["file"][0].startswith("b.jsonl, line 2")
    response = api(alice).post(
        url, {"kind": "pairwise", "file": SimpleUploadedFile("b.txt", good)}, format="multipart"
    )
    assert response.status_code == 400 and "file" in response.json()["extra"]["fields"]


def test_one_source_exactly(run_with_rollouts: Run, project: Project, alice: User, api: Api) -> None:
    url = f"/api/projects/{project.pk}/annotation-tasks/"
    for body in ({"kind": "pairwise"}, {"kind": "pairwise", "run": run_with_rollouts.pk, "eval_run": 1}):
        response = api(alice).post(url, body, format="json")
        assert response.status_code == 400 and "run" in response.json()["extra"]["fields"]


def test_an_annotator_judges_only_their_own_pairs_and_never_sees_the_hidden_label(
    judged: AnnotationTask, annotators: list[User], api: Api
) -> None:
    dana, erin = annotators
    queue = api(dana).get(f"/api/annotation-tasks/{judged.pk}/queue/").json()
    assert len(queue) == 6 and {"completion", "completion_right"} <= set(queue[0]["item"])
    assert "truth" not in queue[0]["item"] and "pair" not in queue[0]["item"]
    mine = Assignment.objects.filter(item__task=judged, annotator=dana, item__position=2).get()
    ok = api(dana).post(
        f"/api/annotation-assignments/{mine.pk}/submit/",
        {"choice": "right", "reason": "shorter"},
        format="json",
    )
    assert ok.status_code == 200 and (ok.json()["choice"], ok.json()["comment"]) == ("right", "shorter")
    draft = api(dana).patch(f"/api/annotation-assignments/{mine.pk}/", {"choice": "tie"}, format="json")
    assert draft.status_code == 409  # submitted: change it by submitting again
    bad = api(dana).post(f"/api/annotation-assignments/{mine.pk}/submit/", {"choice": "up"}, format="json")
    assert bad.status_code == 400 and "choice" in bad.json()["extra"]["fields"]
    assert (
        api(erin)
        .post(f"/api/annotation-assignments/{mine.pk}/submit/", {"choice": "left"}, format="json")
        .status_code
        == 404
    )


@pytest.mark.parametrize("role", ["owner", "admin", "annotator", "viewer", "outsider"])
def test_only_owners_and_admins_adjudicate_a_pair(
    role: str, judged: AnnotationTask, client_as: Callable[[str], APIClient]
) -> None:
    item = judged.items.get(position=2)
    response = client_as(role).post(
        f"/api/annotation-items/{item.pk}/adjudication/", {"choice": "right", "note": "n"}, format="json"
    )
    assert response.status_code == expected(role, "admin", 200), response.content
    if response.status_code == 200:
        assert (response.json()["choice"], response.json()["note"]) == ("right", "n")
        removed = client_as(role).post(
            f"/api/annotation-items/{item.pk}/adjudication/", {"choice": None}, format="json"
        )
        assert removed.status_code == 204


@pytest.mark.parametrize("role", ["owner", "admin", "annotator", "viewer", "outsider"])
def test_agreement_disagreements_and_exports_are_for_owners_and_admins(
    role: str, judged: AnnotationTask, client_as: Callable[[str], APIClient]
) -> None:
    client = client_as(role)
    for path in ("agreement/", "disagreements/", "export.jsonl", "export.csv", "preferences.jsonl"):
        response = client.get(f"/api/annotation-tasks/{judged.pk}/{path}")
        assert response.status_code == expected(role, "admin", 200), (path, response.status_code)


def test_agreement_figures(judged: AnnotationTask, alice: User, api: Api) -> None:
    data = api(alice).get(f"/api/annotation-tasks/{judged.pk}/agreement/").json()
    # left/right/tie items judged by both: 0, 1, 2, 3 -> 3 of 4 annotator pairs agree
    assert data["items"] == 4 and data["agreeing_share"] == pytest.approx(0.75) and data["both_bad"] == 2
    assert data["kappa"] is None and data["kappa_note"].startswith("Not enough shared items")
    assert data["kappa_pairs"] == [{"first": "dana", "second": "erin", "shared": 4, "kappa": None}]
    assert data["alpha"] is not None and data["alpha_four_items"] == 5
    assert data["file_label"] == {"labelled_items": 0, "agreement": None, "items": 0}


def test_the_disagreement_ranking(judged: AnnotationTask, alice: User, api: Api) -> None:
    data = api(alice).get(f"/api/annotation-tasks/{judged.pk}/disagreements/").json()
    assert data["total"] == 1 and data["items"][0]["position"] == 2 and data["items"][0]["final"] is None
    assert data["items"][0]["judgements"] == [["dana", "left"], ["erin", "right"]]


def test_the_trl_export_is_prompt_chosen_rejected_from_final_left_or_right(
    judged: AnnotationTask, alice: User, api: Api
) -> None:
    response = api(alice).get(f"/api/annotation-tasks/{judged.pk}/preferences.jsonl")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]  # type: ignore[attr-defined]
    items = {i.position: i for i in judged.items.all()}
    assert lines == [
        {"prompt": items[0].prompt, "chosen": items[0].completion, "rejected": items[0].completion_right},
        {"prompt": items[1].prompt, "chosen": items[1].completion_right, "rejected": items[1].completion},
        {"prompt": items[5].prompt, "chosen": items[5].completion, "rejected": items[5].completion_right},
    ]
    assert (response["X-Pairs"], response["X-Excluded-Ties"], response["X-Excluded-Both-Bad"],
            response["X-Excluded-Unresolved"]) == ("3", "1", "1", "1")  # fmt: skip


def test_the_full_exports_carry_every_judgement_and_the_csv_is_injection_safe(
    judged: AnnotationTask, alice: User, api: Api
) -> None:
    jsonl = b"".join(
        api(alice).get(f"/api/annotation-tasks/{judged.pk}/export.jsonl").streaming_content
    ).decode()  # type: ignore[attr-defined]
    records = [json.loads(line) for line in jsonl.splitlines()]
    assert len(records) == 12  # 6 pairs x 2 annotators, every status
    split = [r for r in records if r["position"] == 2]
    assert {(r["annotator"], r["choice"], r["final"]) for r in split} == {
        ("dana", "left", None),
        ("erin", "right", None),
    }
    assert [r["status"] for r in records if r["position"] == 5] == ["submitted", "pending"]
    text = b"".join(
        api(alice).get(f"/api/annotation-tasks/{judged.pk}/export.csv").streaming_content
    ).decode()  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 12 and rows[0]["left"] == '\'=HYPERLINK("http://x")' and rows[0]["choice"] == "left"


def test_a_rubric_task_has_no_preference_export(scored_task: AnnotationTask, alice: User, api: Api) -> None:
    response = api(alice).get(f"/api/annotation-tasks/{scored_task.pk}/preferences.jsonl")
    assert response.status_code == 400 and set(response.json()) == {"message", "extra"}


def test_rubric_only_endpoints_answer_a_pairwise_task_without_failing(
    judged: AnnotationTask, alice: User, api: Api
) -> None:
    client = api(alice)
    item = judged.items.get(position=2)
    for url in (f"/api/annotation-tasks/{judged.pk}/machine-scorers/", f"/api/annotation-items/{item.pk}/review/",
                f"/api/annotation-tasks/{judged.pk}/progress/", f"/api/annotation-tasks/{judged.pk}/"):  # fmt: skip
        assert client.get(url).status_code == 200, url
    review = client.get(f"/api/annotation-items/{item.pk}/review/").json()
    assert (review["left"], review["right"], review["final"]) == (
        item.completion,
        item.completion_right,
        None,
    )
    assert [(j["annotator"], j["choice"]) for j in review["judgements"]] == [
        ("dana", "left"),
        ("erin", "right"),
    ]
    response = client.post(f"/api/annotation-tasks/{judged.pk}/scoring-jobs/", {"rubric": 1}, format="json")
    assert response.status_code == 400 and set(response.json()) == {"message", "extra"}


def test_moving_unfinished_pairs_clears_the_draft_choice(
    judged: AnnotationTask, alice: User, api: Api
) -> None:
    from webapp.annotation.services_pairwise import judgement_save_draft

    pending = Assignment.objects.get(item__task=judged, item__position=5, annotator__username="erin")
    judgement_save_draft(assignment=pending, actor=pending.annotator, choice="left", reason="half way")
    response = api(alice).post(
        f"/api/annotation-tasks/{judged.pk}/reassign/",
        {"from_annotator": "erin", "to_annotator": "alice"},
        format="json",
    )
    assert response.status_code == 200 and response.json() == {"moved": 1, "kept": 0}
    pending.refresh_from_db()
    assert (pending.annotator.username, pending.choice, pending.comment, pending.status) == (
        "alice",
        "",
        "",
        "pending",
    )


def test_a_dataset_of_pairs_becomes_a_task(
    project: Project, alice: User, annotators: list[User], api: Api
) -> None:
    from webapp.datafiles.services import dataset_upload

    rows = b'{"prompt": "2+2=", "chosen": "4", "rejected": "5"}\n{"prompt": "1+1=", "chosen": "2", "rejected": "3"}\n'
    dataset = dataset_upload(
        project=project, actor=alice, file=io.BytesIO(rows), filename="prefs.jsonl", size=len(rows),
        name="prefs", prompt_field="prompt", answer_field=None,
    )  # fmt: skip
    url = f"/api/projects/{project.pk}/annotation-tasks/"
    response = api(alice).post(url, {"kind": "pairwise", "dataset": dataset.pk, "seed": 1}, format="json")
    assert response.status_code == 201, response.content
    task = AnnotationTask.objects.get(pk=response.json()["id"])
    assert task.items.count() == 2 and set(task.items.values_list("truth", flat=True)) <= {"left", "right"}
    missing = api(alice).post(url, {"kind": "pairwise", "dataset": dataset.pk + 99}, format="json")
    assert missing.status_code == 400 and "dataset" in missing.json()["extra"]["fields"]

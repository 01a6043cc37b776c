"""The preview guesses the answer column from the usual names (``final_answer``, ``Ground Truth``...), says it
guessed (the page asks the user to confirm), flags rows whose guessed answer is empty, and reads a file as
label-free only when asked to or when no column looks like an answer, saying which."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from webapp.datafiles.preview import answer_candidates, guess_mapping
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def preview(client: APIClient, project: Project, rows: list[dict[str, Any]], **fields: str) -> Any:
    content = "".join(json.dumps(row) + "\n" for row in rows).encode()
    file = SimpleUploadedFile("data.jsonl", content)
    response = client.post(
        f"/api/projects/{project.pk}/datasets/preview/", {"file": file, **fields}, format="multipart"
    )
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.parametrize(("columns", "expected"), [
    (["question", "final_answer"], "final_answer"),
    (["question", "Ground Truth"], "Ground Truth"),
    (["problem", "GOLD"], "GOLD"),
    (["prompt", "expected_output"], "expected_output"),
    (["prompt", "goldLabel"], "goldLabel"),
    (["prompt", "answer_text", "solution"], "solution"),  # a usual name before a column that only has the word
])  # fmt: skip
def test_common_answer_names_are_guessed_whatever_their_case(columns: list[str], expected: str) -> None:
    mapping = guess_mapping(columns, None, None, answer_given=False)
    assert (mapping.answer_field, mapping.answer_guess) == (expected, "guessed")


def test_every_candidate_is_offered_the_likeliest_first_and_never_the_prompt() -> None:
    assert answer_candidates(["id", "answer_text", "question", "target", "answer"], "answer") == (
        "target",
        "answer_text",
    )


def test_a_guessed_answer_column_is_marked_guessed_and_its_empty_rows_are_flagged(
    api: Api, project: Project, alice: User
) -> None:
    body = preview(
        api(alice),
        project,
        [{"question": "1+1=", "final_answer": "2"}, {"question": "2+2=", "final_answer": ""}],
    )
    assert (body["answer_field"], body["answer_guess"], body["answer_candidates"]) == (
        "final_answer",
        "guessed",
        ["final_answer"],
    )
    assert body["problem_count"] == 1
    assert (body["problems"][0]["row"], body["problems"][0]["column"]) == (2, "final_answer")


def test_a_file_with_no_answer_like_column_is_label_free_and_says_none_was_found(
    api: Api, project: Project, alice: User
) -> None:
    body = preview(api(alice), project, [{"question": "1+1=", "result": "2"}])
    assert (body["answer_field"], body["answer_guess"], body["answer_candidates"]) == (None, "none_found", [])


def test_label_free_chosen_by_the_user_is_kept_even_with_a_candidate(
    api: Api, project: Project, alice: User
) -> None:
    body = preview(api(alice), project, [{"question": "1+1=", "final_answer": ""}], answer_field="")
    assert (body["answer_field"], body["answer_guess"], body["answer_candidates"]) == (
        None,
        "chosen",
        ["final_answer"],
    )
    assert body["problem_count"] == 0

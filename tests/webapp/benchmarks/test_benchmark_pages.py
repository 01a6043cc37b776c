"""Benchmark pages: who sees them, the create form, and that model text is never markup."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.benchmarks.helpers import problem_result
from webapp.benchmarks.models import Benchmark
from webapp.benchmarks.results import eval_record_problems
from webapp.experiments.models import Experiment
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def client_for(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_a_viewer_sees_the_list_without_the_form_and_an_outsider_gets_404(
    project: Project, benchmark: Benchmark, bob: User, charlie: User, join: Join
) -> None:
    join(bob, "viewer")
    page = client_for(bob).get(f"/projects/{project.pk}/benchmarks/")
    assert page.status_code == 200 and b"addition" in page.content and b"New benchmark" not in page.content
    assert client_for(charlie).get(f"/projects/{project.pk}/benchmarks/").status_code == 404
    assert client_for(charlie).get(f"/benchmarks/{benchmark.pk}/").status_code == 404


def test_the_form_creates_a_builtin_benchmark(project: Project, alice: User) -> None:
    response = client_for(alice).post(
        f"/projects/{project.pk}/benchmarks/",
        {
            "name": "add8",
            "source": "builtin",
            "builtin": "builtin:addition",
            "n_samples": "8",
            "pass_k": "1,2,8",
            "max_problems": "5",
        },
    )
    benchmark = Benchmark.objects.get(name="add8")
    assert response.status_code == 302 and response["Location"] == f"/benchmarks/{benchmark.pk}/"
    assert benchmark.config["pass_k"] == [1, 2, 8] and benchmark.config["max_problems"] == 5


def test_the_form_shows_the_bad_rows_of_an_upload(project: Project, alice: User) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = SimpleUploadedFile("b.csv", b"problem,answer\n1+1=,2\n2+2=,\n,4\n")
    page = client_for(alice).post(
        f"/projects/{project.pk}/benchmarks/",
        {
            "name": "csv",
            "source": "file",
            "file": bad,
            "problem_field": "problem",
            "answer_field": "answer",
        },
    )
    assert page.status_code == 200 and not Benchmark.objects.filter(name="csv").exists()
    text = page.content.decode()
    assert "row 2 (line 3)" in text and "row 3 (line 4)" in text


def test_the_evaluation_page_embeds_model_text_as_escaped_json(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    from webapp.benchmarks.services import eval_launch

    row = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]
    evil = problem_result("row-1")
    evil.prompt = "</script><script>alert(1)</script>"
    eval_record_problems(eval_run_id=row.pk, problems=[evil])
    page = client_for(alice).get(f"/evals/{row.pk}/")
    assert page.status_code == 200
    assert b"<script>alert(1)" not in page.content and b"\\u003C/script\\u003E" in page.content


def test_project_and_benchmark_pages_link_to_each_other(
    project: Project, benchmark: Benchmark, alice: User
) -> None:
    c = client_for(alice)
    assert f'href="/projects/{project.pk}/benchmarks/"'.encode() in c.get(f"/projects/{project.pk}/").content
    detail = c.get(f"/benchmarks/{benchmark.pk}/")
    assert (
        detail.status_code == 200
        and b"evaluate-form" in detail.content
        and b"plotly.min.js" in detail.content
    )

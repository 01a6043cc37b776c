"""Creating benchmarks: configs validated by the trainer's BenchmarkConfig, three sources, role checks."""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK
from webapp.benchmarks.models import Benchmark
from webapp.benchmarks.services import benchmark_create, benchmark_delete, benchmark_file_upload
from webapp.core.errors import InvalidInput
from webapp.teams.models import Project

DATA = Path(__file__).resolve().parents[2] / "data"
Join = Callable[[User, str | None], User]


def test_a_builtin_benchmark_stores_the_suite_config_with_the_overrides(benchmark: Benchmark) -> None:
    config = benchmark.config
    assert (config["name"], config["n_samples"], config["max_problems"], config["max_tokens"]) == (
        "addition",
        4,
        3,
        8,
    )
    assert config["data"]["source"] == "demo" and config["verifiers"][0]["name"] == "exact"
    assert config["pass_k"] == [1, 4] and config["maj_k"] == [4]  # the trainer's defaults: [1, n] and [n]


def test_a_reasoning_gym_benchmark_keeps_task_size_seed_and_difficulty(project: Project, alice: User) -> None:
    b = benchmark_create(
        project=project,
        actor=alice,
        name="chain",
        source="reasoning_gym",
        config={
            "data": {
                "task": "chain_sum",
                "size": 20,
                "data_seed": 3,
                "task_config": {"min_terms": 2, "max_terms": 3},
            },
            "verifiers": [{"name": "reasoning_gym"}],
            "n_samples": 2,
        },
    )
    data = b.config["data"]
    assert (data["source"], data["task"], data["size"], data["data_seed"]) == (
        "reasoning_gym",
        "chain_sum",
        20,
        3,
    )
    assert data["task_config"] == {"min_terms": 2, "max_terms": 3}


def test_a_pass_k_above_n_is_refused_with_the_trainers_message(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        benchmark_create(
            project=project,
            actor=alice,
            name="x",
            source="builtin",
            builtin="builtin:addition",
            config={"n_samples": 4, "pass_k": [1, 8]},
        )
    assert "n_samples=4" in err.value.message and "config" in next(iter(err.value.fields))


def test_an_unknown_builtin_lists_the_valid_names(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        benchmark_create(
            project=project, actor=alice, name="x", source="builtin", builtin="builtin:nope", config={}
        )
    assert "builtin:addition" in err.value.message


def test_names_are_unique_per_project_and_may_not_contain_a_slash(benchmark: Benchmark, alice: User) -> None:
    for name in ("addition", "a/b", "  "):
        with pytest.raises(InvalidInput):
            benchmark_create(
                project=benchmark.project,
                actor=alice,
                name=name,
                source="builtin",
                builtin="builtin:addition",
                config={},
            )


def test_a_file_benchmark_reads_the_uploaded_file_with_the_mapped_fields(
    project: Project, alice: User
) -> None:
    path = DATA / "gsm8k_sample.jsonl"
    dataset = benchmark_file_upload(
        project=project,
        actor=alice,
        file=BytesIO(path.read_bytes()),
        filename=path.name,
        size=path.stat().st_size,
        problem_field="question",
        answer_field="answer",
    )
    b = benchmark_create(
        project=project,
        actor=alice,
        name="gsm8k",
        source="file",
        dataset=dataset,
        config={"data": {"prompt_template": "Q: {prompt}\nA:"}, "verifiers": [{"name": "math"}]},
    )
    data = b.config["data"]
    assert (data["source"], data["path"], data["prompt_field"], data["answer_field"]) == (
        "file",
        f"dataset:{dataset.pk}",
        "question",
        "answer",
    )
    assert data["prompt_template"] == "Q: {prompt}\nA:" and b.dataset == dataset


def test_every_bad_row_of_a_file_is_reported_by_number(project: Project, alice: User) -> None:
    text = "\n".join(
        [
            '{"problem": "1+1=", "answer": "2"}',
            '{"problem": "2+2="}',
            "not json",
            '{"problem": "", "answer": "1"}',
            '{"problem": "3+3=", "answer": "6"}',
        ]
    ).encode()
    with pytest.raises(InvalidInput) as err:
        benchmark_file_upload(
            project=project, actor=alice, file=BytesIO(text), filename="bad.jsonl", size=len(text)
        )
    bad = err.value.fields["bad_rows"]
    assert [line.split(" ")[1] for line in bad] == ["2", "3", "4"]
    assert "3 of 5 rows" in err.value.message and "/tmp" not in err.value.message
    assert "line 3" in bad[1] and "'answer'" in bad[0]


def test_a_file_benchmark_needs_both_fields_mapped(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        benchmark_file_upload(
            project=project, actor=alice, file=BytesIO(b"{}"), filename="a.jsonl", size=2, answer_field=" "
        )
    assert "answer_field" in err.value.fields


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_members_below_admin_cannot_create_benchmarks(
    project: Project, bob: User, join: Join, role: str
) -> None:
    join(bob, role)
    with pytest.raises(PermissionDenied):
        benchmark_create(
            project=project,
            actor=bob,
            name="x",
            source="builtin",
            builtin="builtin:addition",
            config=dict(SMALL_BENCHMARK),
        )


def test_an_admin_can_create_and_an_outsider_gets_404(
    project: Project, bob: User, charlie: User, join: Join
) -> None:
    join(bob, "admin")
    assert benchmark_create(
        project=project, actor=bob, name="x", source="builtin", builtin="builtin:addition", config={}
    )
    with pytest.raises(Http404):
        benchmark_create(
            project=project, actor=charlie, name="y", source="builtin", builtin="builtin:addition", config={}
        )


def test_a_benchmark_can_be_deleted_by_an_admin(benchmark: Benchmark, alice: User) -> None:
    benchmark_delete(benchmark=benchmark, actor=alice)
    assert not Benchmark.objects.exists()


def test_a_saved_verifier_version_sets_the_verifier_and_its_params(project: Project, alice: User) -> None:
    from webapp.verification.services import verifier_definition_create

    definition = verifier_definition_create(
        project=project, actor=alice, name="first line", verifier="exact", params={"extract": "first_line"}
    )
    version = definition.versions.get()
    b = benchmark_create(
        project=project,
        actor=alice,
        name="v",
        source="builtin",
        builtin="builtin:addition",
        config={"verifiers": [{"name": "regex_format", "params": {"pattern": "x"}}]},
        verifier_version_id=version.pk,
    )
    (spec,) = b.config["verifiers"]
    assert spec["name"] == "exact" and spec["params"]["extract"] == "first_line"


def test_a_verifier_version_of_another_project_is_refused(project: Project, alice: User) -> None:
    from webapp.teams.services import project_create
    from webapp.verification.services import verifier_definition_create

    other = project_create(name="Other", owner=alice)
    version = verifier_definition_create(
        project=other, actor=alice, name="d", verifier="exact"
    ).versions.get()
    with pytest.raises(InvalidInput) as err:
        benchmark_create(
            project=project,
            actor=alice,
            name="v",
            source="builtin",
            builtin="builtin:addition",
            config={},
            verifier_version_id=version.pk,
        )
    assert "verifier_version" in err.value.fields

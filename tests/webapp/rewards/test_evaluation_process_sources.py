"""Step scorers as reward-evaluation sources over HTTP: a PRM version, the chain oracle, Monte Carlo or a PRM folder
become ``kind: process`` entries of the process part; every refusal names its field and the fix (a step scorer
without the part, the part without a step scorer, an unbounded Monte-Carlo k, a scalar version or a folder outside
the model roots as a PRM, whole-response parts with only step scorers, a labels file of another project); the
worker's copy resolves ``rm:<id>`` to the PRM's folder; the page's form sends them, and a PRM version's "Evaluate"
link arrives with the process part ticked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.pages.conftest import browser_as  # noqa: F401 -- fixture
from tests.webapp.rewards.helpers import write_checkpoint
from webapp.datafiles.models import Dataset
from webapp.rewards.evaluation_services import evaluation_inputs_for_worker
from webapp.rewards.models import RewardJob, RewardModel
from webapp.rewards.services import reward_model_create, version_create_prm, version_create_scalar
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
BrowserAs = Callable[[str | None], Client]
BON = {"benchmark": "builtin:chain_arithmetic", "policy": "tiny:chain", "n": 4, "problems": 4}
ORACLE = {"process_scorer": {"name": "oracle_chain"}}


@pytest.fixture(autouse=True)
def _no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False


@pytest.fixture
def prm_folder(model_root: Path) -> Path:
    return write_checkpoint(model_root / "chain-prm", architecture="Qwen2ForTokenClassification", labels=2)


@pytest.fixture
def prm_model(project: Project, alice: User) -> RewardModel:
    return reward_model_create(project=project, actor=alice, name="chain PRM")


def _post(api: Api, user: User, project: Project, body: dict[str, Any]) -> Any:
    return api(user).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")


def _refused(resp: Any, field: str) -> str:
    assert resp.status_code == 400, resp.json()
    fields = resp.json()["extra"]["fields"]
    assert field in fields, fields
    return str(fields[field][0])


def test_a_prm_version_the_oracle_and_monte_carlo_become_process_sources(
    api: Api, alice: User, project: Project, prm_model: RewardModel, prm_folder: Path
) -> None:
    version = version_create_prm(reward_model=prm_model, actor=alice, model=str(prm_folder))
    body = {
        "sources": [{"name": "chain_arithmetic"}, {"reward_model_version": version.pk}, ORACLE,
                    {"process_scorer": {"name": "monte_carlo", "params": {"k": 2}}}],
        "best_of_n": BON, "process": {"problems": 2},
    }  # fmt: skip
    resp = _post(api, alice, project, body)
    assert resp.status_code == 202, resp.json()
    sources = resp.json()["config"]["sources"]
    assert [s.get("kind") for s in sources] == [None, "process", "process", "process"]
    prm = sources[1]
    assert (prm["name"], prm["params"]["model"], prm["label"]) == ("prm", f"rm:{version.pk}", "chain_prm_v1")
    assert prm["origin"] == {"reward_model_version": version.pk, "name": str(version)}
    mc = sources[3]["params"]
    assert mc["k"] == 2 and mc["max_prefixes"] == 8192  # every step valued unless told otherwise
    assert resp.json()["config"]["process"]["aggregate"] == "min"

    job = RewardJob.objects.get(pk=resp.json()["id"])
    inputs = evaluation_inputs_for_worker(job=job)
    assert inputs["sources"][1]["params"]["model"] == str(
        prm_folder.resolve()
    )  # the server path, for the worker
    assert (
        job.config["sources"][1]["params"]["model"] == f"rm:{version.pk}"
    )  # the stored job keeps the reference


def test_a_step_scorer_needs_the_process_part_and_the_part_needs_a_step_scorer(
    api: Api, alice: User, project: Project, prm_model: RewardModel, prm_folder: Path
) -> None:
    message = _refused(_post(api, alice, project, {"sources": [ORACLE], "best_of_n": BON}), "process")
    assert "oracle_chain is a step scorer: tick the process part" in message
    version = version_create_prm(reward_model=prm_model, actor=alice, model=str(prm_folder))
    body = {"sources": [{"reward_model_version": version.pk}], "best_of_n": BON}
    assert "tick the process part" in _refused(_post(api, alice, project, body), "process")
    body = {"sources": [{"name": "chain_arithmetic"}], "best_of_n": BON, "process": {}}
    assert "add a PRM version, the chain oracle or Monte Carlo" in _refused(
        _post(api, alice, project, body), "process"
    )


def test_monte_carlo_k_is_bounded_tighter_than_in_training(api: Api, alice: User, project: Project) -> None:
    body = {"sources": [{"process_scorer": {"name": "monte_carlo", "params": {"k": 17}}}], "best_of_n": BON,
            "process": {}}  # fmt: skip
    assert "k may be at most 16" in _refused(_post(api, alice, project, body), "sources")


def test_a_scalar_version_or_an_outside_folder_is_refused_as_a_prm(
    api: Api, alice: User, project: Project, rm_folder: Path, tmp_path: Path
) -> None:
    scalar_rm = reward_model_create(project=project, actor=alice, name="scalar")
    scalar = version_create_scalar(reward_model=scalar_rm, actor=alice, model=str(rm_folder))
    prm = {"process_scorer": {"name": "prm", "params": {"model": f"rm:{scalar.pk}"}}}
    body = {"sources": [prm], "best_of_n": BON, "process": {}}
    message = _refused(_post(api, alice, project, body), "sources.0.params.model")
    assert "not a process reward model version" in message
    outside = write_checkpoint(tmp_path / "elsewhere", architecture="Qwen2ForTokenClassification", labels=2)
    body["sources"] = [{"process_scorer": {"name": "prm", "params": {"model": str(outside)}}}]
    assert _refused(_post(api, alice, project, body), "sources.0.params.model")


def test_whole_response_parts_with_only_step_scorers_are_refused(
    api: Api, alice: User, project: Project
) -> None:
    body = {"sources": [ORACLE], "best_of_n": BON, "process": {}, "audit": True}
    assert "every source is a step scorer" in _refused(_post(api, alice, project, body), "audit")


def test_the_oracle_needs_best_of_n_and_a_labels_file_must_be_the_projects(
    api: Api, alice: User, project: Project, tmp_path: Path
) -> None:
    other = project_create(name="other", owner=alice)
    path = tmp_path / "labels.jsonl"
    path.write_text('{"input": "1+1= 2 \\u043a\\u0438", "label": "1+1= 2 +"}\n', encoding="utf-8")
    theirs = Dataset.objects.create(
        project=other, name="labels.jsonl", path=str(path), format="jsonl", rows=1, prompt_field="input"
    )
    body = {"sources": [ORACLE], "process": {"labels": {"dataset": theirs.pk}}}
    assert "scores the Best-of-N samples" in _refused(_post(api, alice, project, body), "best_of_n")
    body = {"sources": [ORACLE], "best_of_n": BON, "process": {"labels": {"dataset": theirs.pk}}}
    assert "not an uploaded data file of this project" in _refused(
        _post(api, alice, project, body), "process.labels.dataset"
    )


def test_the_process_part_asks_for_no_more_samples_than_best_of_n_draws(
    api: Api, alice: User, project: Project
) -> None:
    body = {"sources": [ORACLE], "best_of_n": BON, "process": {"samples_per_problem": 8}}
    assert "more than the 4 samples" in _refused(_post(api, alice, project, body), "non_field_errors")


def test_a_prm_versions_evaluate_link_ticks_the_process_part_and_the_form_sends_monte_carlo(
    browser_as: BrowserAs,  # noqa: F811
    project: Project,
    alice: User,
    prm_model: RewardModel,
    prm_folder: Path,
) -> None:
    version = version_create_prm(reward_model=prm_model, actor=alice, model=str(prm_folder))
    client = browser_as("owner")
    page = client.get(f"/projects/{project.pk}/reward-evaluations/?source_rm={version.pk}").content.decode()
    assert 'name="process" checked' in page and f'name="source_rm" value="{version.pk}" checked' in page
    assert (
        'name="process" checked'
        not in client.get(f"/projects/{project.pk}/reward-evaluations/").content.decode()
    )
    form = {"sources_json": '[{"name": "chain_arithmetic"}]', "bon": "on", "bon_benchmark": "builtin:chain_arithmetic",
            "bon_policy": "tiny:chain", "bon_n": "4", "bon_problems": "4", "source_rm": str(version.pk),
            "process": "on", "process_mc": "on", "process_mc_k": "3", "process_problems": "2",
            "process_aggregate": "last"}  # fmt: skip
    resp = client.post(f"/projects/{project.pk}/reward-evaluations/", form)
    assert resp.status_code == 302, resp.content.decode()[-2000:]
    config = RewardJob.objects.get().config
    assert [(s["name"], s.get("kind")) for s in config["sources"]] == [
        ("prm", "process"), ("monte_carlo", "process"), ("chain_arithmetic", None)
    ]  # fmt: skip
    assert config["sources"][1]["params"]["k"] == 3
    assert (config["process"]["problems"], config["process"]["aggregate"]) == (2, "last")

"""The worker reads the secrets a run's judges name right before training, decrypts them and provides them to the
scoring process only for the run (to child ranks through their environment); a missing or unreadable one fails the
run with a message naming it, and no failure message holds a value."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.helpers import SMALL_CONFIG
from tests.webapp.rewards.helpers import SECRET_VALUE, judge_params
from trainer.verifiers import secrets as trainer_secrets
from webapp.experiments.config_paths import run_config_for_worker
from webapp.experiments.models import Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.rewards.models import ProjectSecret
from webapp.rewards.selectors import judge_secrets_for_config
from webapp.teams.models import Project
from workers import tasks


@pytest.fixture(autouse=True)
def _empty_registry() -> Iterator[None]:
    trainer_secrets.forget_secrets()
    yield
    trainer_secrets.forget_secrets()


@pytest.fixture
def judged_run(project: Project, alice: User, judges_allowed: str, secret: ProjectSecret) -> Run:
    config: dict[str, Any] = {
        **SMALL_CONFIG,
        "verifiers": [{"name": "exact"}, {"name": "judge", "params": judge_params()}],
    }
    experiment = experiment_create(project=project, actor=alice, name="judged", config=config)
    return run_launch(experiment=experiment, actor=alice)


def test_the_worker_decrypts_the_secrets_its_judges_name(judged_run: Run, project: Project) -> None:
    config = run_config_for_worker(run=judged_run)
    assert judge_secrets_for_config(project=project, config=config) == {"OPENAI_KEY": SECRET_VALUE}
    assert SECRET_VALUE not in str(judged_run.config) and SECRET_VALUE not in str(config)


def test_a_run_without_judges_reads_no_secret(run: Run, project: Project, secret: ProjectSecret) -> None:
    assert judge_secrets_for_config(project=project, config=run_config_for_worker(run=run)) == {}


def test_a_secret_deleted_after_launch_fails_the_run_naming_it(
    judged_run: Run, secret: ProjectSecret
) -> None:
    secret.delete()
    assert tasks._start_and_train(judged_run.pk, "worker-test") == "failed"
    judged_run.refresh_from_db()
    assert judged_run.status == "failed"
    assert "OPENAI_KEY" in judged_run.error_message and "Secrets page" in judged_run.error_message


def test_an_unreadable_secret_fails_the_run_asking_to_set_it_again(
    judged_run: Run, settings: SettingsWrapper
) -> None:
    settings.SECRET_KEY = "a-rotated-secret-key-" + "y" * 40
    assert tasks._start_and_train(judged_run.pk, "worker-test") == "failed"
    judged_run.refresh_from_db()
    assert "'OPENAI_KEY' was stored under another key" in judged_run.error_message
    assert SECRET_VALUE not in judged_run.error_message + judged_run.traceback


def test_a_failure_message_never_holds_a_provided_value(judged_run: Run) -> None:
    trainer_secrets.provide_secrets({"OPENAI_KEY": SECRET_VALUE})
    try:
        raise RuntimeError(f"the endpoint refused the key {SECRET_VALUE}")
    except RuntimeError as err:  # as the worker calls it: inside the except block
        tasks._fail(judged_run.pk, err)
    judged_run.refresh_from_db()
    assert SECRET_VALUE not in judged_run.error_message + judged_run.traceback
    assert "refused the key [secret]" in judged_run.traceback


def test_the_secrets_are_forgotten_when_the_run_ends(judged_run: Run) -> None:
    config = run_config_for_worker(run=judged_run)
    config["training"]["max_steps"] = "many"  # the run fails at once, after the secrets were provided
    assert tasks._train(judged_run.pk, config, None, None, {"OPENAI_KEY": SECRET_VALUE}) == "failed"
    judged_run.refresh_from_db()
    assert judged_run.status == "failed" and "training.max_steps" in judged_run.error_message
    with pytest.raises(trainer_secrets.VerifierError, match="is not set"):
        trainer_secrets.secret("OPENAI_KEY")


def test_child_ranks_get_secrets_through_the_environment_only_while_the_run_lasts() -> None:
    trainer_secrets.provide_secrets({"OPENAI_KEY": SECRET_VALUE})
    values = trainer_secrets.secret_env(["OPENAI_KEY"])
    assert values == {"RLVR_SECRET_OPENAI_KEY": SECRET_VALUE}
    with tasks._environment(values):
        assert os.environ["RLVR_SECRET_OPENAI_KEY"] == SECRET_VALUE
    assert "RLVR_SECRET_OPENAI_KEY" not in os.environ


def test_an_evaluation_whose_judge_secret_is_gone_fails_naming_it(
    project: Project, alice: User, judges_allowed: str, secret: ProjectSecret
) -> None:
    from webapp.benchmarks.models import EvalRun
    from webapp.benchmarks.services import benchmark_create, eval_launch, eval_mark_started
    from workers import tasks_eval

    verifiers = [{"name": "exact"}, {"name": "judge", "params": judge_params()}]
    benchmark = benchmark_create(
        project=project, actor=alice, name="judged", source="builtin", builtin="addition",
        config={"verifiers": verifiers},
    )  # fmt: skip
    experiment = experiment_create(project=project, actor=alice, name="base", config=SMALL_CONFIG)
    (row,) = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])
    assert judge_secrets_for_config(project=project, config=row.config) == {"OPENAI_KEY": SECRET_VALUE}
    secret.delete()
    row = eval_mark_started(eval_run_id=row.pk, worker="worker-test")
    assert tasks_eval._evaluate(row.pk, row) == "failed"
    failed = EvalRun.objects.get(pk=row.pk)
    assert failed.status == "failed" and "'OPENAI_KEY'" in failed.error_message

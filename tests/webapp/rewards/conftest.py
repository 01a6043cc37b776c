"""Reward model fixtures: a model root holding a one-label sequence-classification checkpoint folder (only its
config.json: the web process never loads weights), a judge endpoint on the allow-list, a project secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

import trainer.verifiers.judge_endpoint  # noqa: F401 -- registers 'judge' (the package may not import it yet)
from tests.webapp.rewards.helpers import JUDGE_URL, SECRET_VALUE, write_checkpoint
from webapp.rewards.models import ProjectSecret, RewardModel
from webapp.rewards.services import project_secret_set, reward_model_create
from webapp.teams.models import Project


@pytest.fixture
def model_root(settings: SettingsWrapper, tmp_path: Path) -> Path:
    root = tmp_path / "models"
    root.mkdir()
    settings.RLVR_MODEL_ROOTS = [root]
    return root


@pytest.fixture
def rm_folder(model_root: Path) -> Path:
    return write_checkpoint(model_root / "chain-rm")


@pytest.fixture
def judges_allowed(settings: SettingsWrapper) -> str:
    settings.RLVR_JUDGE_ENDPOINTS = [JUDGE_URL]
    return JUDGE_URL


@pytest.fixture
def reward_model(project: Project, alice: User) -> RewardModel:
    return reward_model_create(project=project, actor=alice, name="chain RM")


@pytest.fixture
def secret(project: Project, alice: User) -> ProjectSecret:
    return project_secret_set(project=project, actor=alice, name="OPENAI_KEY", value=SECRET_VALUE)

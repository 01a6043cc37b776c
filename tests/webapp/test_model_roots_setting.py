"""RLVR_MODEL_ROOTS: colon-separated absolute folders; a malformed value stops the server at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import env_paths

REPO = Path(__file__).resolve().parents[2]


def test_model_roots_are_colon_separated_absolute_folders() -> None:
    assert env_paths("R", [Path("/d")], environ={"R": "/srv/models:/data/models"}) == [
        Path("/srv/models"),
        Path("/data/models"),
    ]
    assert env_paths("R", [Path("/d")], environ={}) == [Path("/d")]


@pytest.mark.parametrize("raw", ["models", "/srv/models::/data", "/srv/models:relative"])
def test_a_relative_or_empty_model_root_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"RLVR_MODEL_ROOTS=.* has an empty or relative item"):
        env_paths("RLVR_MODEL_ROOTS", [], environ={"RLVR_MODEL_ROOTS": raw})


def test_the_default_roots_are_the_tiny_model_cache_and_the_data_dirs_models_folder(tmp_path: Path) -> None:
    code = "import django; django.setup(); from django.conf import settings; print(settings.RLVR_MODEL_ROOTS)"
    env = {k: v for k, v in os.environ.items() if k != "RLVR_MODEL_ROOTS"}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "RLVR_DATA_DIR": str(tmp_path),
            "RLVR_DEBUG": "1",
            "RLVR_HOME": str(tmp_path / "home"),
        }
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr
    assert str(tmp_path / "home" / "models") in result.stdout and str(tmp_path / "models") in result.stdout

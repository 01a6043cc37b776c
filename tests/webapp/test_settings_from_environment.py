"""Settings load in a fresh interpreter, as a server would: outside pytest, without RLVR_DEBUG."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "RLVR_DEBUG", "RLVR_SECRET_KEY")
    }
    code = "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "webapp.settings", "RLVR_DATA_DIR": str(tmp_path), **env},
    )


def test_a_placeholder_secret_key_is_refused_outside_debug(tmp_path: Path) -> None:
    result = load_settings(tmp_path, RLVR_SECRET_KEY="change-me")
    assert result.returncode != 0
    assert "RLVR_SECRET_KEY is the placeholder 'change-me'" in result.stderr


def test_debug_generates_a_secret_key_once_and_keeps_it_in_the_data_dir(tmp_path: Path) -> None:
    assert load_settings(tmp_path, RLVR_DEBUG="1").returncode == 0
    key = (tmp_path / "dev-secret-key").read_text()
    assert len(key) > 40
    assert load_settings(tmp_path, RLVR_DEBUG="1").returncode == 0
    assert (tmp_path / "dev-secret-key").read_text() == key
    assert (tmp_path / "dev-secret-key").stat().st_mode & 0o077 == 0


def test_a_missing_secret_key_outside_debug_fails_the_system_check(tmp_path: Path) -> None:
    base = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "RLVR_DEBUG", "RLVR_SECRET_KEY")
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**base, "RLVR_DATA_DIR": str(tmp_path)},
    )
    assert result.returncode != 0
    assert "rlvr.E001" in result.stderr and "RLVR_SECRET_KEY is not set" in result.stderr


def test_a_malformed_variable_stops_the_settings_from_loading(tmp_path: Path) -> None:
    result = load_settings(tmp_path, RLVR_DEBUG="1", RLVR_ENQUEUE="sometimes")
    assert result.returncode != 0
    assert "RLVR_ENQUEUE='sometimes' is not a boolean" in result.stderr


def test_sqlite_is_the_default_database(tmp_path: Path) -> None:
    result = load_settings(tmp_path, RLVR_DEBUG="1", DATABASE_URL="")
    assert result.stdout.strip() == "django.db.backends.sqlite3"

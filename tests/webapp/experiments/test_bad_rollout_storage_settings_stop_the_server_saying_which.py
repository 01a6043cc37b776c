"""RLVR_TOKEN_STORE and RLVR_ROLLOUT_RETENTION are checked when the server starts (settings, then the
system check), in a fresh interpreter as a server would load them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def manage_check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION",)}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], capture_output=True, text=True, cwd=REPO,
        env={**base, "RLVR_DEBUG": "1", "RLVR_DATA_DIR": str(tmp_path), **env},
    )  # fmt: skip


def test_a_relative_or_unknown_token_store_is_refused(tmp_path: Path) -> None:
    for value in ("rollout-tokens", "gs://bucket/x", "s3://"):
        result = manage_check(tmp_path, RLVR_TOKEN_STORE=value)
        assert (
            result.returncode != 0
            and "RLVR_TOKEN_STORE" in result.stderr
            and "s3://bucket/prefix" in result.stderr
        )


def test_a_retention_setting_that_is_not_json_is_refused(tmp_path: Path) -> None:
    result = manage_check(tmp_path, RLVR_ROLLOUT_RETENTION="keep everything")
    assert result.returncode != 0 and "RLVR_ROLLOUT_RETENTION='keep everything' is not JSON" in result.stderr


def test_a_wrong_default_policy_fails_the_system_check_naming_the_field(tmp_path: Path) -> None:
    result = manage_check(tmp_path, RLVR_ROLLOUT_RETENTION='{"keep": "every_n_steps"}')
    assert result.returncode != 0
    assert "rlvr.E010" in result.stderr and "RLVR_ROLLOUT_RETENTION.every_n_steps" in result.stderr


def test_good_settings_pass(tmp_path: Path) -> None:
    result = manage_check(
        tmp_path, RLVR_TOKEN_STORE="s3://rollouts/tokens",
        RLVR_ROLLOUT_RETENTION='{"keep": "sample_per_step", "sample_per_step": 4}',
    )  # fmt: skip
    assert result.returncode == 0, result.stderr

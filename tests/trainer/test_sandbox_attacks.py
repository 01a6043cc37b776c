"""Every escape attempt of tests/trainer/sandbox_attacks.py is contained, as the caller and as uid 65534.

The attacks run in one batch per identity (four sandboxes at a time, beside a sibling sandbox):
``as_caller`` in this process (root in CI: the sandbox then runs as nobody outside), ``as_nobody`` in a
separate interpreter started with ``setpriv --reuid=65534`` from a world-readable copy of
trainer/sandbox, as the Docker image's unprivileged worker would (its interpreter other users can run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.trainer.sandbox_attacks import ATTACKS, SECRET, prepare, run_all
from trainer.sandbox import SANDBOX_GID, SANDBOX_UID, sandbox_python

REPO = Path(__file__).resolve().parents[2]
NAMES = [a.name for a in ATTACKS] + ["sibling_sandbox_survives", "host_can_still_fork"]
SECRETS = {"RLVR_SECRET_KEY": SECRET, "DATABASE_URL": f"postgres://app:{SECRET}@127.0.0.1:5432/prod"}
Outcomes = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def as_caller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcomes]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SECRETS.items():
            patch.setenv(name, value)
        root = Path(tempfile.mkdtemp(prefix="rlvr-attacks-"))  # not under pytest's 0700 base directory
        ctx = prepare(root / "targets", str(REPO))
        try:
            yield run_all(ctx)
        finally:
            ctx.victim.kill()
            ctx.victim.wait()
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def as_nobody() -> Iterator[Outcomes]:
    if os.geteuid() != 0:
        pytest.skip(
            f"this run is already unprivileged (uid {os.geteuid()}): as_caller is the unprivileged run"
        )
    setpriv = shutil.which("setpriv")
    assert setpriv, (
        "setpriv (util-linux) is needed to rerun the attacks as uid 65534: apt-get install util-linux"
    )
    copy = Path(tempfile.mkdtemp(prefix="rlvr-nobody-"))
    try:
        (copy / "trainer").mkdir()
        shutil.copy(REPO / "trainer" / "__init__.py", copy / "trainer")
        shutil.copytree(
            REPO / "trainer" / "sandbox",
            copy / "trainer" / "sandbox",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        shutil.copy(REPO / "tests" / "trainer" / "sandbox_attacks.py", copy)
        subprocess.run(["chmod", "-R", "a+rX", str(copy)], check=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "RLVR_ATTACK_REPO": str(REPO), **SECRETS}
        command = [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
                   sandbox_python(), "-S", str(copy / "sandbox_attacks.py")]  # fmt: skip
        done = subprocess.run(command, env=env, cwd="/", capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"the unprivileged attack run failed: {done.stderr[-2000:]}"
        report = json.loads(done.stdout)
        assert report["uid"] == SANDBOX_UID
        yield report["outcomes"]
    finally:
        shutil.rmtree(copy, ignore_errors=True)


@pytest.mark.parametrize("identity", ["as_caller", "as_nobody"])
@pytest.mark.parametrize("attack", NAMES)
def test_the_escape_attempt_is_contained(attack: str, identity: str, request: pytest.FixtureRequest) -> None:
    outcome = request.getfixturevalue(identity)[attack]
    if outcome.get("missing"):
        message = (
            f"{outcome['missing']} is not reachable from the host, so {attack} would prove nothing: start it"
        )
        if os.environ.get("RLVR_REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    assert outcome["breach"] is None, outcome


def test_the_suite_tries_at_least_thirty_distinct_attacks() -> None:
    assert len(set(NAMES)) == len(NAMES) >= 30

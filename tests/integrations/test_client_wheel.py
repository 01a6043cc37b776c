"""The rlvr-studio-client wheel (clients/): built from this repository, installed into a fresh venv that has
neither torch nor Django, it sends a run to a live server."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integrations.live_studio import Studio

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import os, sys
from rlvr_client import start_run
run = start_run(project=os.environ["RLVR_PROJECT"], name="from the client wheel", max_steps=2)
for step in (1, 2):
    run.log_metrics(step, {"reward/mean": 0.25 * step})
assert run.finish(timeout_s=60)
print(sys.modules.keys() & {"torch", "django", "transformers"} or "no server packages")
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "clients/build_wheel.py", str(out)], cwd=REPO, check=True, timeout=300)
    return next(out.glob("rlvr_studio_client-*.whl"))


def test_the_wheel_holds_the_client_package_only_and_needs_only_httpx(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names if not n.startswith("rlvr_studio_client-")} == {"rlvr_client"}
    required = [
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")
    ]
    assert [r for r in required if "extra ==" not in r] == ["httpx>=0.27"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_installs_into_a_clean_venv_and_sends_a_run(
    studio: Studio, wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=400)
    installed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    assert "rlvr-studio-client==0.1.0" in installed and "httpx==" in installed
    assert not {"torch", "django", "transformers"} & {line.split("==")[0] for line in installed.splitlines()}
    # Run from an empty folder: only the installed wheel can be imported, never this checkout.
    done = subprocess.run(
        [str(python), "-c", SCRIPT],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no server packages"
    run = studio.only_run()
    assert (run.source, run.status, run.max_steps) == ("script", "succeeded", 2)
    assert studio.metric_steps(run.pk, "reward/mean") == [1, 2]

"""Importing the browser test modules (what collection does) changes no environment variable: what the live server
needs (the judge endpoint allow-list) is set in its own environment by conftest.py's ``live_server_url``, so it
never leaks into this process, nor into the workers and servers other tests start from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.workers.helpers import REPO

PROBE = """
import importlib, os, sys, django
from pathlib import Path
django.setup()
before = dict(os.environ)
for path in sorted(Path("tests/browser").glob("*.py")):
    if path.stem != "__init__":
        importlib.import_module(f"tests.browser.{path.stem}")
after = dict(os.environ)
changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
print("changed:", ",".join(changed))
"""


def test_importing_the_browser_test_modules_sets_no_environment_variable() -> None:
    assert (Path(__file__).parent / "conftest.py").exists()
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "changed:", done.stdout

"""DESIGN.md: the web process never imports torch or transformers, even after loading every URL and the
worker tasks module it enqueues through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib.util, sys
import django
django.setup()
import webapp.urls, webapp.asgi
from django.urls import get_resolver
get_resolver().url_patterns  # every view module imported
import webapp.experiments.services, webapp.experiments.selectors, webapp.datafiles.services
if importlib.util.find_spec("workers.tasks") is not None:
    import workers.tasks
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
"""


def test_the_web_process_never_imports_torch_or_transformers() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "RLVR_DEBUG": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr
    assert "HEAVY:\n" in result.stdout, f"the web process imported {result.stdout.strip()}"

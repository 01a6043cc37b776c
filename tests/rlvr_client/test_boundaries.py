"""rlvr_client/ is the client that runs where training runs: it never imports the server's packages, and
importing it (or any of its commands) loads neither Django nor torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rlvr_client"
NEVER = ("django", "rest_framework", "drf_spectacular", "celery", "channels", "webapp", "workers", "trainer")
# The integrations load their training library (TRL brings torch and transformers); nothing else may.
HEAVY = ("torch", "transformers", "trl", "accelerate", "verl")
INTEGRATIONS = frozenset({"trl.py", "verl.py"})


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def test_importing_the_client_and_its_commands_loads_neither_django_nor_torch() -> None:
    code = (
        "import sys, rlvr_client, rlvr_client.client, rlvr_client.cli, rlvr_client.sync_cli, rlvr_client.import_cli\n"
        "heavy = sorted(m for m in ('django', 'torch', 'transformers', 'celery', 'webapp', 'trainer', 'workers')"
        " if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_client_module_imports_a_server_package() -> None:
    found = {
        f"{path.name}: {root}"
        for path in PACKAGE.rglob("*.py")
        for root in _imported_roots(path)
        if root in NEVER
    }
    assert found == set()


def test_only_the_integrations_import_a_training_library() -> None:
    found = {
        f"{path.name}: {root}"
        for path in PACKAGE.rglob("*.py")
        if path.name not in INTEGRATIONS
        for root in _imported_roots(path)
        if root in HEAVY
    }
    assert found == set()


def test_the_scan_sees_the_integrations_imports() -> None:
    assert "transformers" in _imported_roots(PACKAGE / "trl.py")

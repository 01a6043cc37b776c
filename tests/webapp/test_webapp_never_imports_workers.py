"""The web side sends worker tasks by name (webapp/core/tasks_by_name.py) and never imports ``workers``:
the worker package imports webapp services, so an import the other way would close an import circle.
Every module under webapp/ is parsed, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def _names_workers(module: str) -> bool:
    return module == "workers" or module.startswith("workers.")


def _imported_modules(node: ast.AST) -> list[str]:
    """The modules ``node`` imports: ``import a, b``, ``from a import x`` (absolute only) and a call
    ``importlib.import_module("a")`` / ``__import__("a")`` with a literal name; [] for any other node."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if node.level == 0 else []
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = node.args[0]
        if name in DYNAMIC_IMPORTS and isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [first.value]
    return []


def worker_imports(source: str) -> list[int]:
    """Line numbers of every import of ``workers`` (or a submodule) in ``source``, at any depth."""
    return sorted(
        node.lineno  # type: ignore[attr-defined]  # every node _imported_modules names is a statement or call
        for node in ast.walk(ast.parse(source))
        if any(_names_workers(module) for module in _imported_modules(node))
    )


def test_the_scan_finds_an_import_of_workers_inside_a_function() -> None:
    source = (
        "import workersx\n"
        "from webapp.workers import x\n"
        "def enqueue(run_id):\n"
        "    from workers.tasks import run_training\n"
        "    import workers\n"
        "    importlib.import_module('workers.tasks_eval')\n"
        "    return run_training.delay(run_id)\n"
    )
    assert worker_imports(source) == [4, 5, 6]


def test_no_module_under_webapp_imports_workers() -> None:
    offenders = {
        str(path.relative_to(WEBAPP.parent)): lines
        for path in sorted(WEBAPP.rglob("*.py"))
        if (lines := worker_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, (
        f"these webapp modules import workers (file: lines): {offenders}. Send the task by name with "
        "webapp.core.tasks_by_name.send instead."
    )

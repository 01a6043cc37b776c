"""trainer/ is a library: it must never import the web or worker layers (DESIGN.md, "Three layers")."""

import ast
from pathlib import Path

FORBIDDEN = {"django", "celery", "channels", "rest_framework", "webapp", "workers", "daphne", "kombu"}
TRAINER = Path(__file__).resolve().parents[2] / "trainer"


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_trainer_never_imports_the_web_or_worker_layers() -> None:
    offenders = {
        str(path.relative_to(TRAINER.parent)): sorted(imported_roots(path) & FORBIDDEN)
        for path in TRAINER.rglob("*.py")
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}, f"trainer/ imports forbidden layers: {offenders}"


def test_the_scan_finds_trainer_modules() -> None:
    assert len(list(TRAINER.rglob("*.py"))) > 10


def test_validating_a_config_does_not_load_torch() -> None:
    """The web process validates configs with trainer.config and must never import torch."""
    import subprocess
    import sys

    code = (
        "import sys; from trainer.config import config_from_dict, config_schema; "
        "config_from_dict({'verifiers': [{'name': 'math'}], 'algorithm': {'advantage_estimator': 'rloo'}}); "
        "config_schema(); "
        "bad = [m for m in ('torch', 'transformers', 'datasets') if m in sys.modules]; "
        "assert not bad, bad"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=TRAINER.parent)
    assert result.returncode == 0, result.stderr

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

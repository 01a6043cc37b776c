"""No import cycle anywhere in the repository: the modules of every package (trainer, webapp, workers,
rlvr_client, benchmarks; tests are left out) import each other as a directed acyclic graph.

Every import counts, at module level and inside functions alike (a function-local import that closes a loop
is still a loop, only a deferred one); imports under ``if TYPE_CHECKING:`` do not run and are left out. An
import of ``trainer.a.b`` is an edge to that module (to ``trainer/a/b.py``, or ``trainer/a/b/__init__.py``
for a package); ``from trainer.a import name`` is an edge to the package ``trainer.a`` (its ``__init__`` runs)
and, when ``trainer.a.name`` is a module, to that module too. Edges cross packages (webapp -> trainer) as
they do at run time, so a loop through two packages is found as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("trainer", "webapp", "workers", "rlvr_client", "benchmarks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(package: str) -> list[Path]:
    return sorted(p for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts)


MODULES = {_module_name(p): p for package in PACKAGES for p in _sources(package)}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, package: str) -> set[str]:
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return {name for name in found if name in MODULES}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = _imports(ast.parse(path.read_text(encoding="utf-8")), package) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_real_imports() -> None:
    graph = import_graph()
    assert "trainer.methods.axes" in graph["trainer.methods.advantages"]
    assert "trainer.config.choice" in graph["trainer.config.method_sections"]
    assert "trainer.sinks" in graph["webapp.ingest.services"]  # across packages
    assert "rlvr_client.run" in graph["rlvr_client.import_cli"]
    assert "benchmarks.reproduce.stats" in graph["benchmarks.reproduce.verdict"]


def test_the_graph_covers_every_package() -> None:
    assert {name.split(".")[0] for name in import_graph()} == set(PACKAGES)


def test_a_function_local_import_counts_and_a_type_checking_one_does_not() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import trainer.config\n"
        "def f():\n    import trainer.sinks\n"
    )
    assert _imports(tree, "webapp") == {"trainer.sinks"}


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_repository_has_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)

"""The package's module graph: no import cycles, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "speccascade"


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Sibling modules `path` imports anywhere (module level, functions, methods)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            absolute = node.level == 0 and (node.module or "").split(".")[0] == "speccascade"
            if node.level == 1 or absolute:
                parts = (node.module or "").split(".")[absolute:]  # drop "speccascade."
                if parts and parts[0]:
                    found.add(parts[0])
                else:  # from . import viz / from speccascade import viz
                    found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "speccascade" and len(parts) > 1:
                    found.add(parts[1])
    return {m for m in found if m in modules and m != path.stem}


def import_graph() -> dict[str, set[str]]:
    files = {p.stem: p for p in PACKAGE.glob("*.py")}
    return {name: imported_modules(path, set(files)) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_checker_sees_every_kind_of_import():
    graph = import_graph()
    assert "engine" in graph["__init__"]  # from .engine import ... (module level)
    assert "viz" in graph["ui"]  # from . import viz
    assert "ui" in graph["cli"]  # from .ui import launch, inside a function
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_subpackage_ships_in_the_wheel():
    """pyproject lists packages by hand: a new subpackage missing there imports from a checkout
    but not from the installed wheel (speccascade.i18n once did)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    line = re.search(r"^packages = \[(.*)\]$", (root / "pyproject.toml").read_text(), re.M)
    listed = set(re.findall(r'"([^"]+)"', line.group(1)))
    found = {
        ".".join(p.parent.relative_to(root).parts)
        for p in (root / "speccascade").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found == listed, found ^ listed

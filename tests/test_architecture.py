"""The package's shape: its layers (subpackages) import only downwards, no module imports in a
cycle (imports inside functions count too), the app stays in small pieces, and every
subpackage ships in the wheel. docs/architecture.md draws the same graph."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "speccascade"
# The layers, bottom up: a module may import its own layer and the ones below, never above.
LAYERS = ("core", "models", "analysis", "i18n", "views", "app", "cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def imported(path: Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports anywhere (module level, functions, methods):
    `from a.b import c` counts a.b.c where that is a module, else a.b."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                found.add(full if full in known else source)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in known and m != me}


def import_graph() -> dict[str, set[str]]:
    files = modules()
    return {name: imported(path, set(files)) for name, path in files.items()}


def layer(module: str) -> int | None:
    """A module's layer (None for the package's own __init__, which re-exports)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    return LAYERS.index(parts[1])


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
    assert "speccascade.core.engine" in graph["speccascade"]  # module level
    assert "speccascade.app.tabs.run" in graph["speccascade.app.page"]  # from x import module
    assert "speccascade.app" in graph["speccascade.cli"]  # inside a function
    assert "speccascade.core.rules" in graph["speccascade.core.engine"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_layer_imports_only_downwards():
    """core < models < analysis < i18n < views < app < cli (docs/architecture.md)."""
    wrong = [
        f"{a} -> {b}"
        for a, targets in import_graph().items()
        for b in targets
        if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)
    ]
    assert not wrong, wrong
    assert {m.split(".")[1] for m in modules() if "." in m} == set(LAYERS)


def test_the_app_is_in_small_pieces():
    """No app module over 600 lines, no function in it over 80."""
    for path in (PACKAGE / "app").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 600, (path.name, text.count("\n"))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                assert size <= 80, (path.name, node.name, size)


def test_every_subpackage_ships_in_the_wheel():
    """pyproject lists packages by hand: a new subpackage missing there imports from a checkout
    but not from the installed wheel (speccascade.i18n once did). The top-level assets/
    folder ships as speccascade.assets, and each of its folders as a listed package (setuptools
    warns "Package would be ignored" for an importable folder it is not told about)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^packages = \[(.*?)\]$", pyproject, re.M | re.S).group(1)
    listed = set(re.findall(r'"([^"]+)"', block))
    found = {module_name(p) for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts}
    folders = {p.name for p in (ROOT / "assets").iterdir() if p.is_dir() and p.name.isidentifier()}
    assets = {"speccascade.assets"} | {f"speccascade.assets.{f}" for f in folders}
    assert found | assets == listed, (found | assets) ^ listed
    assert '"speccascade.assets" = "assets"' in pyproject
    for folder in ("models", "data", "static"):
        assert folder in folders, folder
        assert f'"speccascade.assets.{folder}" = [' in pyproject, folder  # its files ship

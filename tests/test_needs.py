"""Every skip of the suite goes through tests/needs.py and has a flag that makes it a failure,
and CI sets every flag but those it cannot meet (needs.NOT_IN_CI, each with its reason)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import needs
import pytest

TESTS = Path(__file__).resolve().parent
CI = TESTS.parent / ".ci" / "run"
# what skips a test, or hides a failure, other than tests/needs.py
SKIPPING = {"skip", "skipif", "importorskip", "xfail", "skipIf", "skipUnless", "expectedFailure"}


def _sources() -> dict[str, ast.Module]:
    return {
        p.name: ast.parse(p.read_text(), p.name)
        for p in sorted(TESTS.glob("*.py"))
        if p.name != "needs.py"
    }


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def test_no_test_skips_but_through_needs():
    """pytest.skip / skipif / importorskip / xfail (as a call, a mark or a decorator) appear
    nowhere in tests/ but needs.py; neither do the paths of what a test needs (a test that
    checks `Path(...).exists()` itself skips part of its checks in silence)."""
    found = []
    for name, tree in _sources().items():
        # pytest.skip.Exception (what test_needs expects needs.py to raise) skips nothing
        caught = {
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr == "Exception"
        }
        for node in ast.walk(tree):
            if id(node) in caught:
                continue
            dotted = _dotted(node) if isinstance(node, ast.Attribute) else ""
            if dotted.split(".")[0] in ("pytest", "unittest") and node.attr in SKIPPING:
                found.append(f"{name}:{node.lineno} {dotted}")
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] in ("pytest", "unittest", "_pytest")
                and any(a.name in SKIPPING for a in node.names)
            ):
                found.append(f"{name}:{node.lineno} from {node.module} import ...")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for path in (needs.CHROMIUM, str(needs.WORDNET.parent)):
                    if path in node.value:
                        found.append(f"{name}:{node.lineno} names {path}")
    assert not found, found


def _asked() -> dict[str, list[str]]:
    """Every thing a test asks for: needs marks, needs.require and needs.missing calls."""
    asked: dict[str, list[str]] = {}
    for name, tree in _sources().items():
        if name == Path(__file__).name:  # its own are made-up things, to see them refused
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            call = _dotted(node.func)
            if call in ("pytest.mark.needs", "needs.require", "needs.missing"):
                assert node.args and isinstance(node.args[0], ast.Constant), (name, node.lineno)
                things = [a.value for a in node.args if isinstance(a, ast.Constant)]
                things = things if call == "pytest.mark.needs" else things[:1]
                for thing in things:
                    asked.setdefault(thing, []).append(f"{name}:{node.lineno}")
    return asked


def _ci_flags() -> set[str]:
    return set(re.findall(r"^export SPECCASCADE_REQUIRE_(\w+)=1$", CI.read_text(), re.M))


def test_every_need_is_known_used_and_required_by_ci():
    asked = _asked()
    assert set(asked) <= set(needs.NEEDS), {k: v for k, v in asked.items() if k not in needs.NEEDS}
    assert set(needs.NEEDS) <= set(asked), f"needs nobody asks for: {set(needs.NEEDS) - set(asked)}"
    # CI requires every thing it can provide; what it cannot is listed, with a reason
    assert set(needs.NOT_IN_CI) <= set(needs.NEEDS) and all(needs.NOT_IN_CI.values())
    assert _ci_flags() == set(needs.NEEDS) - set(needs.NOT_IN_CI), _ci_flags()
    # these tests asked for what they need (a mark lost in an edit would make them skip-free
    # only where everything is installed)
    for thing, where in {
        "WORDNET": ["test_gguf_cache.py", "test_demo_pair.py"],
        "BROWSER": ["test_app.py"],
        "SMOLLM2": ["test_gguf_cache.py"],
    }.items():
        assert set(where) <= {w.split(":")[0] for w in asked[thing]}, (thing, asked[thing])


def test_a_missing_thing_skips_and_fails_under_its_flag(monkeypatch):
    gone = needs.Need("a thing this machine lacks", lambda: (False, "not found"))
    monkeypatch.setitem(needs.NEEDS, "ABSENT", gone)
    monkeypatch.delenv("SPECCASCADE_REQUIRE_ABSENT", raising=False)
    with pytest.raises(pytest.skip.Exception, match="a thing this machine lacks: not found"):
        needs.require("ABSENT")
    monkeypatch.setenv("SPECCASCADE_REQUIRE_ABSENT", "0")  # 0 is not a requirement
    with pytest.raises(pytest.skip.Exception, match="SPECCASCADE_REQUIRE_ABSENT=1 makes"):
        needs.require("ABSENT")
    monkeypatch.setenv("SPECCASCADE_REQUIRE_ABSENT", "1")
    with pytest.raises(pytest.fail.Exception, match="SPECCASCADE_REQUIRE_ABSENT=1 and this is"):
        needs.require("ABSENT")
    monkeypatch.setitem(needs.NEEDS, "ABSENT", needs.Need("here after all", lambda: True))
    needs.require("ABSENT")  # here: nothing happens, flag or not
    with pytest.raises(KeyError, match="unknown need"):
        needs.missing("NOPE")

"""A published number is its file's: every generated part of BENCHMARKS.md and the README,
re-rendered from the committed raw files under docs/bench/, is what the document says."""

from __future__ import annotations

from pathlib import Path

import pytest

from speccascade.views.benchdoc import RENDERERS, current, parts_in, render, splice

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "docs" / "bench"


@pytest.mark.parametrize("name", ["BENCHMARKS.md", "README.md", "docs/guide.md"])
def test_every_generated_part_equals_its_files(name):
    doc = (ROOT / name).read_text(encoding="utf-8")
    parts = parts_in(doc)
    if name == "BENCHMARKS.md":
        assert {"character", "doubts"} <= set(parts), parts
    for part in parts:
        assert part in RENDERERS, f"{name}: no renderer for part {part!r}"
        assert current(doc, part) == RENDERERS[part](BENCH).strip("\n"), (name, part)


def test_splice_replaces_only_its_part():
    doc = "a\n<!-- x:start -->\nold\n<!-- x:end -->\nb <!-- y:start -->keep<!-- y:end -->"
    out = splice(doc, "x", "new\n")
    assert current(out, "x") == "new" and current(out, "y") == "keep"
    assert out.startswith("a\n") and out.endswith("<!-- y:end -->")
    with pytest.raises(KeyError):
        current(doc, "z")


def test_a_changed_file_changes_the_document(tmp_path):
    """The check can fail: a document whose number differs from its file's is re-rendered."""
    doc = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    tampered = splice(doc, "doubts", current(doc, "doubts").replace("|", "| 9", 1))
    assert render(tampered, BENCH) == doc

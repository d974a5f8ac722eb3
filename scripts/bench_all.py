"""Regenerate every published number: one run per machine.

    python scripts/bench_all.py                 # every study below, then render (1-2 hours)
    python scripts/bench_all.py --only doubts   # one study, then render
    python scripts/bench_all.py --render        # only re-render from the committed files

Each study writes its raw rows (token ids, every timed run, the machine's CPU and thread
count) under docs/bench/; BENCHMARKS.md and the README are then rendered from those files
(speccascade.views.benchdoc: the parts between `<!-- NAME:start -->` and `<!-- NAME:end -->`),
and tests/test_benchdoc.py checks that what they say is what the files say. Studies that are
not regenerated here stay in BENCHMARKS.md only as dated history, marked so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speccascade.views import benchdoc  # noqa: E402

# (name, command): each measures one study on the shipped pairs and writes its files.
STUDIES = {
    "character": [sys.executable, "scripts/bench_character.py"],
    "doubts": [sys.executable, "scripts/bench_doubts.py"],
    "engine": [sys.executable, "scripts/bench_engine.py"],
    "engine-smollm2": [sys.executable, "scripts/bench_engine.py", "--pair", "smollm2"],
    "general": [sys.executable, "scripts/bench_general.py"],
    "hub_pairs": [sys.executable, "scripts/bench_hub_pairs.py"],
}
DOCS = ("BENCHMARKS.md", "README.md", "docs/guide.md")


def render_docs() -> list[str]:
    """Re-render every generated part of the documents; returns those that changed."""
    changed = []
    for name in DOCS:
        path = ROOT / name
        before = path.read_text(encoding="utf-8")
        after = benchdoc.render(before, ROOT / "docs" / "bench")
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(name)
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", action="store_true", help="only re-render the documents")
    ap.add_argument("--only", choices=list(STUDIES), action="append", default=None)
    args = ap.parse_args()
    if not args.render:
        for name in args.only or list(STUDIES):
            script = ROOT / STUDIES[name][1]
            if not script.exists():
                raise SystemExit(f"{name}: {script.relative_to(ROOT)} is missing")
            start = time.time()
            print(f"== {name}: {' '.join(STUDIES[name][1:])}", flush=True)
            subprocess.run(STUDIES[name], cwd=ROOT, check=True)
            print(f"== {name}: {time.time() - start:.0f} s", flush=True)
    changed = render_docs()
    print("rendered:", ", ".join(changed) or "nothing changed")


if __name__ == "__main__":
    main()

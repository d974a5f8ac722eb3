"""Each approach's character on the embedded pair: the lesson's table (issue 39), measured.

    python scripts/bench_character.py            # measure (about 20 min on 2 cores), then render
    python scripts/bench_character.py --render   # re-render BENCHMARKS.md from the raw rows

Runs the verifier alone, the drafter alone, the sequence cascade, lossless SD and the
speculative cascade at the app's defaults (greedy), and transformers' own `generate()` with the
verifier beside them, on every eval question in 3 interleaved
rounds and on the story's question (in English and in Chinese with both question marks) in 7,
writes the raw rows to docs/bench/character/ and the table between the markers in
BENCHMARKS.md. scripts/train_demo_pair.py writes the same rows and TRAINING.md from its own
evaluation run; this script re-measures the shipped pair alone.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speccascade.analysis import character  # noqa: E402
from speccascade.analysis.evalsets import find_item, load_evalset  # noqa: E402
from speccascade.models.presets import load_preset  # noqa: E402
from speccascade.views import benchdoc  # noqa: E402

FOLDER = ROOT / "docs" / "bench" / "character"
BENCHMARKS = ROOT / "BENCHMARKS.md"
STORY = ("Who is Buzz Aldrin?", "布兹·奥尔德林是谁？", "布兹·奥尔德林是谁?")


def render() -> str:
    """BENCHMARKS.md and the README with their generated parts rendered from docs/bench/."""
    for path in (BENCHMARKS, ROOT / "README.md"):
        path.write_text(benchdoc.render(path.read_text(encoding="utf-8"), ROOT / "docs" / "bench"),
                        encoding="utf-8")  # fmt: skip
    return benchdoc.RENDERERS["character"](ROOT / "docs" / "bench")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", action="store_true", help="only re-render from the raw rows")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if not args.render:
        torch.set_num_threads(args.threads)
        pair = load_preset("demo")
        items = load_evalset()

        def progress(done: int, total: int) -> None:
            if done % 100 == 0 or done == total:
                print(f"{done}/{total} runs", flush=True)

        raw = character.measure(
            pair, items, repeats=args.repeats, methods=character.TABLE_METHODS, progress=progress
        )
        story = [replace(find_item(q), question=q) for q in STORY]
        story_raw = character.measure(pair, story, repeats=7, methods=character.TABLE_METHODS)
        character.save(raw, story_raw, FOLDER)
    print(render())


if __name__ == "__main__":
    main()

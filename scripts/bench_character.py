"""Each approach's character on the embedded pair: the lesson's table (issue 39), measured.

    python scripts/bench_character.py            # measure (about 20 min on 2 cores), then render
    python scripts/bench_character.py --render   # re-render BENCHMARKS.md from the raw rows

Runs the verifier alone, the drafter alone, the sequence cascade, lossless SD and the
speculative cascade at the app's defaults (greedy) on every eval question in 3 interleaved
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
from speccascade.views.report import character_markdown  # noqa: E402

FOLDER = ROOT / "docs" / "bench" / "character"
BENCHMARKS = ROOT / "BENCHMARKS.md"
STORY = ("Who is Buzz Aldrin?", "布兹·奥尔德林是谁？", "布兹·奥尔德林是谁?")
START, END = "<!-- character:start -->", "<!-- character:end -->"


def render(folder: Path = FOLDER, path: Path = BENCHMARKS) -> str:
    """BENCHMARKS.md's section, rendered from the raw rows in `folder`."""
    raw, story, machine = character.load(folder)
    text = character_markdown(character.summary(raw, story), machine, str(folder.relative_to(ROOT)))
    doc = path.read_text(encoding="utf-8")
    if START not in doc:
        raise SystemExit(f"{path} has no {START} ... {END} section")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{text}{END}{tail}", encoding="utf-8")
    return text


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

        raw = character.measure(pair, items, repeats=args.repeats, progress=progress)
        story = [replace(find_item(q), question=q) for q in STORY]
        story_raw = character.measure(pair, story, repeats=7)
        character.save(raw, story_raw, FOLDER)
    print(render())


if __name__ == "__main__":
    main()

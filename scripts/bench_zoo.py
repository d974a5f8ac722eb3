"""The rule zoo at matched deferral rates, on the embedded pair and on the offline real pair.

    python scripts/bench_zoo.py                       # both pairs, about 30 minutes on 2 cores
    python scripts/bench_zoo.py --pairs demo          # the embedded pair only (a few minutes)

For each pair, every acceptance rule with a parameter is calibrated (speccascade.zoo) to the
same deferral rates on a fixed question set (the embedded pair: the eval set's first 4 easy
and 4 hard English questions; SmolLM2: the first questions of general_qa.jsonl), greedy, and
measured there beside lossless SD, block verification and the verifier alone. Writes
docs/bench/zoo.json and prints the BENCHMARKS.md section.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speccascade.analysis.bench import machine_info  # noqa: E402
from speccascade.analysis.evalsets import GENERAL_QA, load_evalset  # noqa: E402
from speccascade.analysis.zoo import DEFAULT_RATES, zoo  # noqa: E402
from speccascade.core.engine import Settings  # noqa: E402
from speccascade.models.presets import load_preset  # noqa: E402
from speccascade.views.zoo import zoo_markdown  # noqa: E402

OUT = ROOT / "docs" / "bench" / "zoo.json"
PAIRS = {
    # preset: (question set, questions, bisection steps, new tokens)
    "demo": ("eval", 8, 4, 48),
    "smollm2-135m-offline": ("general", 6, 3, 32),
}


def questions(kind: str, n: int) -> list:
    if kind == "general":
        return load_evalset(GENERAL_QA)[:n]
    items = [x for x in load_evalset() if x.lang == "en"]
    easy = [x for x in items if x.level == "easy"][: n // 2]
    return easy + [x for x in items if x.level == "hard"][: n - n // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", default=",".join(PAIRS))
    args = ap.parse_args()
    out: dict = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name in args.pairs.split(","):
        kind, n, steps, new = PAIRS[name]
        pair = load_preset(name, dtype="float32")
        items = questions(kind, n)
        settings = Settings(gamma=4, temperature=0.0, max_new_tokens=new, seed=0)
        t0 = time.perf_counter()
        result = zoo(pair, items, settings, rates=DEFAULT_RATES, steps=steps)
        out[name] = {
            "machine": machine_info(pair),
            "questions": [x.question for x in items],
            "settings": {"gamma": 4, "temperature": 0.0, "max_new_tokens": new, "steps": steps},
            "minutes": round((time.perf_counter() - t0) / 60, 1),
            "zoo": asdict(result),
            "table": zoo_markdown(result),
        }
        print(f"\n## {name} ({out[name]['minutes']} min)\n\n{out[name]['table']}", flush=True)
        OUT.write_text(json.dumps(out, indent=1, default=str))
        del pair


if __name__ == "__main__":
    main()

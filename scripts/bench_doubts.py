"""How well the page's doubts on the embedded pair's answers (analysis.verdict.doubt: its
decline, "Probably made up", "Probably wrong") separate right answers from wrong ones.

    python scripts/bench_doubts.py            # about 6 minutes on 2 cores

Writes every answer and its doubt to docs/bench/doubts/doubts.json (BENCHMARKS.md's table is
rendered from it: scripts/bench_all.py --render).

Runs the app's defaults (APP_DEFAULTS: TokenV3, alpha 0.5, gamma 5, greedy, 64 new tokens)
on the eval set, its typed variants, the out-of-domain set and (where WordNet is installed)
100 WordNet words the pair saw only for fluency, and prints the BENCHMARKS.md table: per set,
right answers left alone and flagged, wrong answers flagged (by kind) and missed. "Right" is
key-fact accuracy (an eval item's facts); out-of-domain and WordNet questions have no right
answer here, so any answer that is not flagged is counted missed.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from speccascade.analysis.evalsets import DATA, find_item, load_evalset  # noqa: E402
from speccascade.analysis.verdict import doubt  # noqa: E402
from speccascade.core.engine import APP_DEFAULTS, generate  # noqa: E402
from speccascade.models.presets import PRESETS, load_preset  # noqa: E402


def question_sets() -> dict[str, list[tuple[str, object]]]:
    """name -> [(question, eval item or None)]."""
    rows = lambda name: [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]  # noqa: E731
    sets = {
        "eval set": [(x.question, x) for x in load_evalset()],
        "typed variants": [
            (r["question"], find_item(r["question"])) for r in rows("variants.jsonl")
        ],
        "out of domain": [(r["question"], None) for r in rows("out_of_domain.jsonl")],
    }
    if Path("/usr/share/wordnet/data.noun").exists():
        from demo_corpus import build_corpus

        broad = random.Random(0).sample(build_corpus(seed=0).broad, 100)
        sets["WordNet words seen for fluency"] = [(x.question, None) for x in broad]
    return sets


OUT = ROOT / "docs" / "bench" / "doubts" / "doubts.json"


def measure() -> dict:
    """Each question's answer, its doubt and whether it is right, per set; and the counts."""
    from speccascade.analysis.character import machine

    pair, preset = load_preset("demo"), PRESETS["demo"]
    out: dict = {"machine": machine(), "sets": {}, "rows": []}
    for name, items in question_sets().items():
        counts: Counter = Counter()
        for question, item in items:
            trace = generate(pair, question, APP_DEFAULTS)
            d = doubt(preset, question, trace.text, trace.summary.stop_reason)
            right = item is not None and item.correct(trace.text)
            kind = d.kind if d else "none"
            counts[("right" if right else "wrong", kind)] += 1
            out["rows"].append({"set": name, "question": question, "text": trace.text,
                                "token_ids": trace.new_token_ids, "right": right,
                                "doubt": kind})  # fmt: skip
        right = sum(v for (r, _), v in counts.items() if r == "right")
        out["sets"][name] = {
            "n": len(items),
            "right_none": counts["right", "none"],
            "right_flagged": right - counts["right", "none"],
            "wrong_declined": counts["wrong", "declined"],
            "wrong_unknown": counts["wrong", "unknown"],
            "wrong_wrong": counts["wrong", "wrong"],
            "wrong_none": counts["wrong", "none"],
        }
        print(name, out["sets"][name], flush=True)
    return out


def main() -> None:
    from speccascade.views.benchdoc import RENDERERS

    data = measure()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(RENDERERS["doubts"](OUT.parent.parent))


if __name__ == "__main__":
    main()

"""Draft-length policies side by side (issue: adaptive drafting): SD and the app's default
cascade under each policy and gamma, with HF assisted generation on its constant and heuristic
schedules (pinned explicitly), on the embedded pair. Writes docs/bench/policies.json and prints
the markdown tables BENCHMARKS.md quotes.

    python scripts/bench_policies.py [--items 6] [--repeats 3] [--gammas 3,5,8]

One run on this machine; keep other work off the CPU while it runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from speccascade.analysis.bench import (
    HF_ASSISTED,
    Config,
    aggregate,
    library_versions,
    machine_info,
    run_bench,
)
from speccascade.analysis.evalsets import load_evalset
from speccascade.core.drafting import DRAFT_POLICIES
from speccascade.core.engine import APP_DEFAULTS, CASCADE
from speccascade.models.presets import load_preset

OUT = Path("docs/bench/policies.json")


def configs(gammas: list[int]) -> list[Config]:
    out = []
    a = APP_DEFAULTS
    for t in (0.0, 1.0):
        out.append(Config("verifier", temperature=t))
        for g in gammas:
            for policy in DRAFT_POLICIES:
                out.append(Config("speculative", gamma=g, temperature=t, policy=policy))
                out.append(Config(CASCADE, a.rule, a.alpha, g, t, policy))
            if t == 0:
                out += [Config(HF_ASSISTED, gamma=g, policy=p) for p in ("fixed", "heuristic")]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=6, help="per level (easy, hard)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gammas", default="3,5,8")
    args = ap.parse_args()
    torch.set_num_threads(2)
    pair = load_preset(None)
    items = [x for x in load_evalset() if x.lang == "en"]
    items = [
        x for lv in ("easy", "hard") for x in [y for y in items if y.level == lv][: args.items]
    ]
    gammas = [int(g) for g in args.gammas.split(",")]
    raw = run_bench(
        pair, items, configs(gammas), repeats=args.repeats, samples=args.repeats, max_new_tokens=48
    )
    agg = aggregate(raw)
    cols = ["method", "rule", "alpha", "gamma", "temperature", "policy", "wall_s",
            "relative_latency", "wasted_drafts", "drafter_calls", "verifier_calls", "accuracy",
            "same_tokens_as_verifier", "acceptance_rate"]  # fmt: skip
    table = agg[cols].sort_values(["temperature", "method", "gamma", "policy"])
    # HF's heuristic against ours: same tokens (greedy SD is the verifier's output) and time
    t0 = raw[raw.temperature == 0]
    pairs = []
    for g in gammas:
        ours = t0[(t0.method == "speculative") & (t0.gamma == g) & (t0.policy == "heuristic")]
        hf = t0[(t0.method == HF_ASSISTED) & (t0.gamma == g) & (t0.policy == "heuristic")]
        same = all(
            a == b
            for a, b in zip(
                ours.groupby("item").token_ids.first(), hf.groupby("item").token_ids.first()
            )
        )
        ours_s = ours.groupby("item").wall_s.median().sum()
        hf_s = hf.groupby("item").wall_s.median().sum()
        pairs.append({"gamma": g, "same_tokens": same, "ours_s": ours_s, "hf_s": hf_s})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "machine": machine_info(pair),
                "versions": library_versions(),
                "items": len(items),
                "repeats": args.repeats,
                "hf_schedules": {"fixed": "constant", "heuristic": "heuristic"},
                "table": json.loads(table.to_json(orient="records")),
                "heuristic_vs_hf": pairs,
            },
            indent=1,
        )
    )
    fmt = {"wall_s": "{:.2f}", "relative_latency": "{:.2f}", "accuracy": "{:.2f}",
           "same_tokens_as_verifier": "{:.2f}", "acceptance_rate": "{:.2f}"}  # fmt: skip
    shown = table.copy()
    for c, f in fmt.items():
        shown[c] = shown[c].map(lambda x, f=f: "" if x != x else f.format(x))
    rows = [list(shown.columns)] + shown.values.tolist()
    for i, row in enumerate(rows):
        print("| " + " | ".join("" if x is None or x != x else str(x) for x in row) + " |")
        if i == 0:
            print("|" + "---|" * len(row))
    print()
    for p in pairs:
        print(
            f"gamma {p['gamma']}: same tokens as HF heuristic: {p['same_tokens']}; "
            f"ours {p['ours_s']:.2f} s vs HF {p['hf_s']:.2f} s ({p['ours_s'] / p['hf_s']:.2f}x)"
        )


if __name__ == "__main__":
    main()

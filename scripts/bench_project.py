"""The cost projector's honesty on this machine: re-price this machine's runs with this
machine's measured profile and compare with their wall time.

    python scripts/bench_project.py               # about a minute on 2 CPU cores
    python scripts/bench_project.py --threads 2   # torch's default thread count here

Demo pair, the story question, the app's defaults (token_v3, alpha 0.5, gamma 5, T = 0, 64 new
tokens). Each method warms up, then runs in interleaved rounds; the profile is measured before
the first round and after every round, and each round's runs are priced under the two profiles
around it. Writes docs/bench/project.json and prints the markdown table for BENCHMARKS.md.
Then the same runs re-simulated at every gamma (exact or estimate, against real runs), as a
check of the gamma re-simulation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from speccascade.analysis.bench import machine_info  # noqa: E402
from speccascade.analysis.project import (  # noqa: E402
    CALIBRATION_PROMPT,
    HONESTY_METHODS,
    best_gammas,
    cost_model_dict,
    honesty_check,
    resimulate,
    workload_of_rounds,
)
from speccascade.core.engine import APP_DEFAULTS, METHOD_REGISTRY, generate  # noqa: E402
from speccascade.models.presets import load_preset  # noqa: E402

OUT = ROOT / "docs" / "bench" / "project.json"
# The four the brief asks for, then every other method the engine has.
METHODS = HONESTY_METHODS + tuple(
    (m, None) for m in METHOD_REGISTRY if m not in {x for x, _ in HONESTY_METHODS}
)


def gamma_check(pair, prompt: str, max_gamma: int = 8) -> list[dict]:
    """Re-simulate a gamma = 2 greedy run of SD and the default cascade at every gamma and
    compare the calls with real runs at that gamma."""
    rows = []
    for method, rule in (("speculative", None), (APP_DEFAULTS.method, APP_DEFAULTS.rule)):
        base = replace(APP_DEFAULTS, method=method, rule=rule)
        recorded = generate(pair, prompt, replace(base, gamma=2))
        for g in range(1, max_gamma + 1):
            real = generate(pair, prompt, replace(base, gamma=g))
            r = resimulate(recorded, g, max_new_tokens=base.max_new_tokens)
            work = workload_of_rounds(real.rounds, real.summary.prompt_tokens)
            rows.append(
                {
                    "method": f"{method}/{rule}" if rule else method,
                    "gamma": g,
                    "basis": r.basis,
                    "reason": r.reason,
                    "verifier_calls": [r.work.verifier_calls, real.summary.verifier_calls],
                    "verifier_tokens": [r.work.verifier_tokens, work.verifier_tokens],
                    "drafter_calls": [round(r.work.drafter_calls, 3), real.summary.drafter_calls],
                    "drafter_range": list(r.drafter_calls_range or ()),
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds of runs")
    ap.add_argument("--min-seconds", type=float, default=0.5, help="runs per method per round")
    ap.add_argument("--prompt", default=CALIBRATION_PROMPT)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    pair = load_preset(None)
    report = honesty_check(
        pair,
        prompt=args.prompt,
        settings=APP_DEFAULTS,
        methods=METHODS,
        repeats=args.repeats,
        min_seconds=args.min_seconds,
        profile_repeats=5,
    )
    traces = {
        r.label: generate(pair, args.prompt, replace(APP_DEFAULTS, method=r.method, rule=r.rule))
        for r in report.rows
        if METHOD_REGISTRY[r.method].drafts
    }
    best = best_gammas(traces, report.cost, max_gamma=8, max_new_tokens=APP_DEFAULTS.max_new_tokens)
    out = {
        "what": "measured wall time vs the projection of the same runs under this machine's "
        "measured profile (median over runs)",
        "machine": {**machine_info(pair), "threads": torch.get_num_threads()},
        "prompt": args.prompt,
        "settings": {
            "rule": APP_DEFAULTS.rule,
            "alpha": APP_DEFAULTS.alpha,
            "gamma": APP_DEFAULTS.gamma,
            "temperature": APP_DEFAULTS.temperature,
            "max_new_tokens": APP_DEFAULTS.max_new_tokens,
        },
        "repeats": args.repeats,
        "min_seconds_per_round": args.min_seconds,
        "profile_drift": round(report.drift, 3),
        "cost_model_first_round": cost_model_dict(report.cost),
        "rows": [
            {
                "method": r.label,
                "tokens": r.new_tokens,
                "runs": len(r.runs),
                "measured_s": round(r.measured_s, 5),
                "projected_s": round(r.projected_s, 5),
                "error": round(r.error, 4),
            }
            for r in report.rows
        ],
        "best_gamma": [
            {k: v for k, v in row.items() if k not in ("profile_values",)} for row in best
        ],
        "gamma_resimulation": gamma_check(pair, args.prompt),
        "wall_minutes": round((time.perf_counter() - start) / 60, 2),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"threads {torch.get_num_threads()}, profile drift {report.drift:.1%}, ")
    print("| method | tokens | runs | measured s | projected s | error % |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in report.rows:
        print(
            f"| {r.label} | {r.new_tokens} | {len(r.runs)} | {r.measured_s:.4f} | "
            f"{r.projected_s:.4f} | {100 * r.error:+.1f} |"
        )
    exact = [g for g in out["gamma_resimulation"] if g["basis"] == "exact"]
    agree = sum(g["verifier_calls"][0] == g["verifier_calls"][1] for g in exact)
    agree_d = sum(g["drafter_calls"][0] == g["drafter_calls"][1] for g in exact)
    print(
        f"\ngamma re-simulation from gamma = 2: {len(exact)} of "
        f"{len(out['gamma_resimulation'])} exact; verifier calls equal a real run in "
        f"{agree}/{len(exact)}, drafter calls in {agree_d}/{len(exact)}"
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""The offline real pair, measured: SmolLM2-135M-Instruct (verifier) with the distilled drafter.

    python scripts/bench_smollm2.py            # about 10 minutes on 2 CPU cores

Writes docs/bench/smollm2.json and prints the BENCHMARKS.md section. Questions are the eval
questions the drafter's distillation held out (never seen in training).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from distill_smollm2_drafter import prompts  # noqa: E402

from speccascade.bench import hf_generate, machine_info  # noqa: E402
from speccascade.engine import Settings, generate  # noqa: E402
from speccascade.evalsets import find_item  # noqa: E402
from speccascade.presets import load_preset  # noqa: E402

PRESET = "smollm2-135m-offline"
OUT = ROOT / "docs" / "bench" / "smollm2.json"
GREEDY = Settings(method="speculative", rule=None, temperature=0.0, max_new_tokens=32)


def main() -> None:
    t0 = time.perf_counter()
    pair = load_preset(PRESET)
    load_s = time.perf_counter() - t0
    held = [q for q in prompts(0)[1] if q.isascii()]
    equal_qs, timed_qs = held[:16], held[:6]
    out: dict = {"preset": PRESET, "load_s": round(load_s, 2), "machine": machine_info(pair)}

    # 1. greedy SD gives exactly generate()'s tokens
    same = 0
    for q in equal_qs:
        ours = generate(pair, q, replace(GREEDY, gamma=4))
        hf, _ = hf_generate(pair, pair.encode(q), GREEDY.max_new_tokens)
        eos = pair.eos_ids
        hf = hf[: next((i + 1 for i, t in enumerate(hf) if t in eos), len(hf))]
        same += ours.new_token_ids == hf
    out["greedy_sd_equals_generate"] = f"{same}/{len(equal_qs)}"
    print(f"greedy SD == generate(): {same}/{len(equal_qs)}", flush=True)

    # 2. acceptance and mean accepted length per gamma
    out["acceptance"] = {}
    for gamma in range(1, 7):
        runs = [generate(pair, q, replace(GREEDY, gamma=gamma)) for q in timed_qs]
        out["acceptance"][gamma] = {
            "acceptance_rate": round(
                statistics.fmean(r.summary.acceptance_rate or 0 for r in runs), 3
            ),
            "mean_accepted_length": round(
                statistics.fmean(r.summary.mean_accepted_length or 0 for r in runs), 2
            ),
        }
        print(f"gamma {gamma}: {out['acceptance'][gamma]}", flush=True)
    best_gamma = max(
        out["acceptance"],
        key=lambda g: (out["acceptance"][g]["mean_accepted_length"] + 1) / (1 + g * 0.15),
    )

    # 3. wall time, interleaved over the questions; medians per method
    configs = {
        "verifier": Settings(method="verifier", rule=None, temperature=0.0, max_new_tokens=48),
        "speculative": replace(GREEDY, gamma=best_gamma, max_new_tokens=48),
    }
    for temperature in (0.0, 1.0):
        for alpha in (0.3, 0.5, 0.7):
            configs[f"spec_cascade/token_v3 a={alpha} T={temperature:g}"] = Settings(
                method="spec_cascade",
                rule="token_v3",
                alpha=alpha,
                gamma=best_gamma,
                temperature=temperature,
                max_new_tokens=48,
                seed=0,
            )
    walls: dict[str, list[float]] = {k: [] for k in [*configs, "hf_generate", "hf_assisted"]}
    correct: dict[str, list[bool]] = {k: [] for k in walls}
    calls: dict[str, list[float]] = {k: [] for k in configs}
    for q in timed_qs:
        item = find_item(q)
        ids = pair.encode(q)
        for name, s in configs.items():
            tr = generate(pair, q, s)
            walls[name].append(tr.summary.wall_s)
            calls[name].append(tr.summary.verifier_calls_per_token)
            correct[name].append(bool(item and item.correct(tr.text)))
        for name, gamma in (("hf_generate", None), ("hf_assisted", best_gamma)):
            toks, wall = hf_generate(pair, ids, 48, gamma)
            walls[name].append(wall)
            correct[name].append(bool(item and item.correct(pair.tokenizer.decode(toks))))
        print(f"timed: {q}", flush=True)
    base = statistics.median(walls["verifier"])
    out["gamma"] = best_gamma
    out["questions_timed"] = len(timed_qs)
    out["methods"] = {
        name: {
            "median_wall_s": round(statistics.median(w), 3),
            "speedup_vs_verifier": round(base / statistics.median(w), 2),
            "key_fact_accuracy": round(statistics.fmean(correct[name]), 2),
            "verifier_calls_per_token": round(statistics.fmean(calls[name]), 3)
            if name in calls
            else None,
        }
        for name, w in walls.items()
    }
    sd = generate(pair, timed_qs[0], replace(GREEDY, gamma=best_gamma)).summary
    out["forward_ms"] = {
        "drafter": round(1000 * sd.drafter_s / max(1, sd.drafter_calls), 2),
        "verifier": round(1000 * sd.verifier_s / max(1, sd.verifier_calls), 2),
    }
    OUT.write_text(json.dumps(out, indent=1))
    print(markdown(out))


def markdown(out: dict) -> str:
    rows = "\n".join(
        f"| {name} | {m['median_wall_s']:.2f} | {m['speedup_vs_verifier']:.2f}x | "
        f"{'' if m['verifier_calls_per_token'] is None else m['verifier_calls_per_token']} | "
        f"{m['key_fact_accuracy']:.2f} |"
        for name, m in out["methods"].items()
    )
    acc = "\n".join(
        f"| {g} | {a['acceptance_rate']:.3f} | {a['mean_accepted_length']:.2f} |"
        for g, a in out["acceptance"].items()
    )
    f = out["forward_ms"]
    return f"""## The offline real pair: SmolLM2-135M-Instruct and its distilled drafter

One run of `python scripts/bench_smollm2.py` on this CPU ({out["machine"].get("cpu", "")}),
on eval questions the drafter never saw. Pair load (cached conversion): {out["load_s"]} s.
Forward cost per call: drafter {f["drafter"]} ms, verifier {f["verifier"]} ms
({f["drafter"] / f["verifier"]:.2f}x).

* Greedy SD gives exactly `generate()`'s tokens on {out["greedy_sd_equals_generate"]} prompts.

| gamma | acceptance rate | mean accepted length |
|---|---|---|
{acc}

Wall time (median over {out["questions_timed"]} questions, up to 48 tokens each, gamma
{out["gamma"]}; one interleaved pass, so single-run noise is in these numbers):

| method | median s | speed-up | verifier calls/token | key-fact accuracy |
|---|---|---|---|---|
{rows}
"""


if __name__ == "__main__":
    main()

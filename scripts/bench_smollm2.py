"""The offline real pair, measured: SmolLM2-135M-Instruct (verifier) with the distilled drafter.

    python scripts/bench_smollm2.py            # about 20 minutes on 2 quiet CPU cores

Writes docs/bench/smollm2.json and prints the BENCHMARKS.md section. Questions are the eval
questions the drafter's distillation held out (never seen in training). Every method runs
each question once, interleaved (so drift hits all alike); times are summed over questions.
"""

from __future__ import annotations

import argparse
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
from speccascade.evalsets import GENERAL_QA, find_item, load_evalset  # noqa: E402
from speccascade.presets import load_preset  # noqa: E402
from speccascade.project import measure_profile  # noqa: E402

PRESET = "smollm2-135m-offline"
OUT = ROOT / "docs" / "bench" / "smollm2.json"
NEW = 48  # tokens per answer
GREEDY = Settings(method="speculative", rule=None, temperature=0.0, max_new_tokens=NEW)
ALPHAS = (0.3, 0.5, 0.7)
MAX_ACCURACY_LOSS = 0.02  # the bound for "the best cascade"


def configs(gamma: int, conf_gamma: int) -> dict[str, Settings]:
    """Verifier, SD (fixed and confidence-ended windows) and TokenV3 cascades at T = 0 and 1."""
    conf = {"draft_policy": "confidence"}
    out = {
        "verifier": Settings(method="verifier", rule=None, temperature=0.0, max_new_tokens=NEW),
        f"SD fixed g={gamma}": replace(GREEDY, gamma=gamma),
        f"SD confidence g={conf_gamma}": replace(GREEDY, gamma=conf_gamma, **conf),
    }
    for temperature in (0.0, 1.0):
        if temperature:
            out[f"SD confidence g={conf_gamma} T=1"] = replace(
                GREEDY, gamma=conf_gamma, temperature=1.0, seed=0, **conf
            )
        for alpha in ALPHAS:
            out[f"cascade TokenV3 a={alpha} T={temperature:g}"] = Settings(
                method="spec_cascade",
                rule="token_v3",
                alpha=alpha,
                gamma=conf_gamma,
                temperature=temperature,
                max_new_tokens=NEW,
                seed=0,
                **conf,
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=12, help="held-out questions timed")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="verifier and drafter dtypes")
    ap.add_argument("--qa-only", action="store_true", help="only the general-knowledge pass")
    args = ap.parse_args()
    if args.qa_only:
        out = json.loads(OUT.read_text())
        out["general_qa"] = general_qa(load_preset(PRESET, dtype="float32"), gamma=4)
        OUT.write_text(json.dumps(out, indent=1))
        print(markdown(out))
        return
    held = [q for q in prompts(0)[1] if q.isascii()]
    out: dict = {"preset": PRESET, "runs": {}}
    gamma = None
    for dtype in args.dtypes.split(","):
        t0 = time.perf_counter()
        pair = load_preset(PRESET, dtype=dtype)
        run: dict = {"load_s": round(time.perf_counter() - t0, 2)}
        out["machine"] = machine_info(pair)
        run |= measure(pair, held, args.questions, gamma)
        gamma = run["gamma"]
        out["runs"][dtype] = run
        del pair
    OUT.write_text(json.dumps(out, indent=1))
    print(markdown(out))


def measure(pair, held: list[str], n_questions: int, gamma: int | None) -> dict:
    """One dtype: forward costs, exactness, acceptance per gamma (when gamma is not given
    yet), then every method on every question, interleaved."""
    run: dict = {}
    # one KV-cached forward over n new tokens, timed as the engine times it (the projector's
    # measured profile, without the host overhead of whole runs)
    cost = measure_profile(pair, prompt=held[0], gamma=5, repeats=15, measure_overhead=False)
    run["forward_ms"] = {
        "drafter_1": round(cost.drafter.ms(1), 2),
        **{f"verifier_{n}": round(cost.verifier.ms(n), 1) for n in (1, 2, 4, 6)},
    }
    print(run["forward_ms"], flush=True)

    # greedy SD gives exactly generate()'s tokens
    same = 0
    for q in held[:16]:
        ours = generate(pair, q, replace(GREEDY, gamma=4))
        hf, _ = hf_generate(pair, pair.encode(q), NEW)
        hf = hf[: next((i + 1 for i, t in enumerate(hf) if t in pair.eos_ids), len(hf))]
        same += ours.new_token_ids == hf
    run["greedy_sd_equals_generate"] = f"{same}/{len(held[:16])}"
    print(f"greedy SD == generate(): {run['greedy_sd_equals_generate']}", flush=True)

    if gamma is None:  # acceptance per gamma (fixed windows), and its measured time
        run["acceptance"] = {}
        for g in range(1, 7):
            runs = [generate(pair, q, replace(GREEDY, gamma=g)) for q in held[:8]]
            drafted = sum(r.summary.drafted for r in runs)
            run["acceptance"][g] = {
                "acceptance_rate": round(sum(r.summary.accepted for r in runs) / drafted, 3),
                "mean_accepted_length": round(
                    statistics.fmean(r.summary.mean_accepted_length or 0 for r in runs), 2
                ),
                "wall_s": round(sum(r.summary.wall_s for r in runs), 2),
            }
            print(f"gamma {g}: {run['acceptance'][g]}", flush=True)
        gamma = min(run["acceptance"], key=lambda g: run["acceptance"][g]["wall_s"])
    run["gamma"] = gamma

    cfgs = configs(gamma, conf_gamma=max(gamma, 5))
    names = [*cfgs, "hf_generate", f"hf_assisted g={gamma}"]
    walls = {k: [] for k in names}
    correct = {k: [] for k in names}
    calls = {k: [] for k in cfgs}
    kept = {k: [] for k in cfgs}
    questions = held[:n_questions]
    for q in questions:
        item = find_item(q)
        for name, s in cfgs.items():
            tr = generate(pair, q, s)
            walls[name].append(tr.summary.wall_s)
            calls[name].append(tr.summary.verifier_calls_per_token)
            kept[name].append(tr.summary.acceptance_rate)
            correct[name].append(bool(item and item.correct(tr.text)))
        for name, g in (("hf_generate", None), (f"hf_assisted g={gamma}", gamma)):
            toks, wall = hf_generate(pair, pair.encode(q), NEW, g)
            walls[name].append(wall)
            correct[name].append(bool(item and item.correct(pair.tokenizer.decode(toks))))
        print(f"timed: {q}", flush=True)
    base = sum(walls["verifier"])
    run["questions_timed"] = len(questions)
    run["methods"] = {
        name: {
            "total_wall_s": round(sum(w), 2),
            "speedup_vs_verifier": round(base / sum(w), 2),
            "key_fact_accuracy": round(statistics.fmean(correct[name]), 3),
            "verifier_calls_per_token": round(statistics.fmean(calls[name]), 3)
            if name in calls
            else None,
            "drafts_kept": round(statistics.fmean(k or 0 for k in kept[name]), 3)
            if name in kept
            else None,
        }
        for name, w in walls.items()
    }
    run["best"] = best(run["methods"])
    return run


def general_qa(pair, gamma: int, new_tokens: int = 32) -> dict:
    """Key-fact accuracy where the verifier mostly knows the answer (the project's eval
    questions are obscure people SmolLM2-135M rarely knows, so one answer moves its accuracy
    by 8%): 50 general-knowledge questions none of the distillation prompts asked, greedy.
    Each method once per question, interleaved; times summed."""
    items = load_evalset(GENERAL_QA)
    cfgs = {
        "verifier": Settings(
            method="verifier", rule=None, temperature=0.0, max_new_tokens=new_tokens
        ),
        f"SD fixed g={gamma}": replace(GREEDY, gamma=gamma, max_new_tokens=new_tokens),
        **{
            f"cascade TokenV3 a={a} T=0 g={gamma}": Settings(
                method="spec_cascade",
                rule="token_v3",
                alpha=a,
                gamma=gamma,
                temperature=0.0,
                max_new_tokens=new_tokens,
            )
            for a in ALPHAS
        },
    }
    walls = {k: 0.0 for k in cfgs}
    right = {k: 0 for k in cfgs}
    calls = {k: [] for k in cfgs}
    for item in items:
        for name, s in cfgs.items():
            tr = generate(pair, item.question, s)
            walls[name] += tr.summary.wall_s
            right[name] += item.correct(tr.text)
            calls[name].append(tr.summary.verifier_calls_per_token)
        print(f"qa: {item.question} {right}", flush=True)
    return {
        "questions": len(items),
        "new_tokens": new_tokens,
        "methods": {
            k: {
                "total_wall_s": round(walls[k], 2),
                "speedup_vs_verifier": round(walls["verifier"] / walls[k], 2),
                "key_fact_accuracy": round(right[k] / len(items), 3),
                "verifier_calls_per_token": round(statistics.fmean(calls[k]), 3),
            }
            for k in cfgs
        },
    }


def best(methods: dict) -> dict:
    """The fastest SD, and the fastest cascade at each temperature whose accuracy is within
    MAX_ACCURACY_LOSS of the verifier's (T = 0) or of SD's at T = 1 (the same law)."""
    sd = min(
        (n for n in methods if n.startswith("SD") and "T=1" not in n),
        key=lambda n: methods[n]["total_wall_s"],
    )
    picks = {"sd": sd}
    refs = {"0": "verifier", "1": next(n for n in methods if n.startswith("SD") and "T=1" in n)}
    for t, ref in refs.items():
        ok = [
            n
            for n in methods
            if n.startswith("cascade")
            and n.endswith(f"T={t}")
            and methods[n]["key_fact_accuracy"]
            >= methods[ref]["key_fact_accuracy"] - MAX_ACCURACY_LOSS
        ]
        picks[f"cascade_T{t}"] = min(ok, key=lambda n: methods[n]["total_wall_s"]) if ok else None
    return picks


def markdown(out: dict) -> str:
    runs = out["runs"]
    first = next(iter(runs.values()))
    acc = "\n".join(
        f"| {g} | {a['acceptance_rate']:.3f} | {a['mean_accepted_length']:.2f} | {a['wall_s']:.2f} |"
        for g, a in first["acceptance"].items()
    )
    text = f"""## The offline real pair: SmolLM2-135M-Instruct and its distilled drafter

One run of `python scripts/bench_smollm2.py` on this CPU ({out["machine"].get("cpu", "")},
{out["machine"]["threads"]} torch threads), on eval questions the drafter never saw, up to
{NEW} new tokens each.

Greedy SD with fixed windows ({next(iter(runs))}, 8 questions):

| gamma | acceptance rate | mean accepted length | wall s (8 questions) |
|---|---|---|---|
{acc}
"""
    for dtype, run in runs.items():
        f = run["forward_ms"]
        rows = "\n".join(
            f"| {name} | {m['total_wall_s']:.2f} | {m['speedup_vs_verifier']:.2f}x | "
            f"{'' if m['verifier_calls_per_token'] is None else m['verifier_calls_per_token']} | "
            f"{'' if m['drafts_kept'] is None else m['drafts_kept']} | "
            f"{m['key_fact_accuracy']:.2f} |"
            for name, m in run["methods"].items()
        )
        text += f"""
### Both models in {dtype}

Pair load (cached conversion): {run["load_s"]} s. One KV-cached forward (median): drafter
{f["drafter_1"]} ms; verifier {f["verifier_1"]} ms for 1 token, {f["verifier_2"]} ms for 2,
{f["verifier_4"]} ms for 4, {f["verifier_6"]} ms for 6. Greedy SD gives exactly
`generate()`'s tokens on {run["greedy_sd_equals_generate"]} prompts.

Every method on each of {run["questions_timed"]} questions, interleaved (gamma {run["gamma"]}
for fixed windows and HF assisted generation; the confidence policy ends a window after a draft
the drafter is less than 40% sure of). Best: {run["best"]}.

| method | total s | speed-up | verifier calls/token | drafts kept | key-fact accuracy |
|---|---|---|---|---|---|
{rows}
"""
    if "general_qa" in out:
        g = out["general_qa"]
        rows = "\n".join(
            f"| {name} | {m['total_wall_s']:.2f} | {m['speedup_vs_verifier']:.2f}x | "
            f"{m['verifier_calls_per_token']} | {m['key_fact_accuracy']:.2f} |"
            for name, m in g["methods"].items()
        )
        text += f"""
### General knowledge (float32, greedy)

{g["questions"]} general-knowledge questions (`speccascade/data/general_qa.jsonl`, none asked
in distillation), up to {g["new_tokens"]} new tokens, each method once per question:

| method | total s | speed-up | verifier calls/token | key-fact accuracy |
|---|---|---|---|---|
{rows}
"""
    return text


if __name__ == "__main__":
    main()

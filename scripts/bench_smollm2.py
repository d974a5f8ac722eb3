"""The offline real pair, measured: SmolLM2-135M-Instruct (verifier) with the distilled drafter.

    python scripts/bench_smollm2.py            # about 40 minutes on 2 quiet CPU cores

Writes docs/bench/smollm2.json and prints the BENCHMARKS.md section: the verification cost
with PyTorch's default CPU kernels, oneDNN-packed weights (models.PackedLinear) and blocked
weights (models.BlockedLinear, what `auto` runs for this pair), the
general-knowledge set (`general_qa.jsonl`, held out of distillation) and the eval questions
the distillation held out. Every method runs each question once, interleaved (so drift hits
all alike); times are summed over questions.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from distill_smollm2_drafter import prompts  # noqa: E402

from speccascade.analysis.bench import hf_generate, machine_info  # noqa: E402
from speccascade.analysis.evalsets import GENERAL_QA, find_item, load_evalset  # noqa: E402
from speccascade.analysis.project import measure_profile  # noqa: E402
from speccascade.core.engine import Settings, generate  # noqa: E402
from speccascade.models.loading import load_pair  # noqa: E402
from speccascade.models.presets import get_preset, load_preset  # noqa: E402

DISTILL = ROOT / "assets" / "models" / "smollm2-drafter" / "DISTILL.json"

PRESET = "smollm2-135m-offline"
OUT = ROOT / "docs" / "bench" / "smollm2.json"
NEW = 48  # tokens per answer
GREEDY = Settings(method="speculative", rule=None, temperature=0.0, max_new_tokens=NEW)
ALPHAS = (0.3, 0.5, 0.7)
MAX_ACCURACY_LOSS = 0.02  # the bound for "the best cascade"
VERIFY_KERNELS = ("default", "packed", "blocked")  # models.kernels.KERNELS compared


def verifier_alone(new_tokens: int) -> Settings:
    """The baseline every speed-up is measured against: the verifier alone, greedy."""
    return Settings(method="verifier", rule=None, temperature=0.0, max_new_tokens=new_tokens)


def configs(gamma: int, conf_gamma: int) -> dict[str, Settings]:
    """Verifier, SD (fixed and confidence-ended windows) and TokenV3 cascades at T = 0 and 1."""
    conf = {"draft_policy": "confidence"}
    out = {
        "verifier": verifier_alone(NEW),
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
    ap.add_argument("--dtypes", default="float32", help="verifier and drafter dtypes")
    ap.add_argument("--qa-only", action="store_true", help="only the general-knowledge pass")
    ap.add_argument(
        "--sweep", action="store_true", help="only the cascade rules and alphas on general_qa"
    )
    ap.add_argument(
        "--transformers-drafter",
        action="store_true",
        help="SD and a cascade with the drafter on transformers' own forward (no decode_step) "
        "side by side on general_qa",
    )
    ap.add_argument(
        "--drafter-before",
        type=Path,
        help="an earlier drafter folder: SD and a cascade with it run side by side on general_qa",
    )
    args = ap.parse_args()
    if args.sweep:
        out = json.loads(OUT.read_text()) if OUT.exists() else {"preset": PRESET}
        pair = load_preset(PRESET, dtype="float32")
        out["rule_sweep"] = general_qa(pair, gamma=5, cfgs=sweep_configs(32))
        OUT.write_text(json.dumps(out, indent=1))
        print(markdown({"rule_sweep": out["rule_sweep"]}))
        return
    held = [q for q in prompts(0)[1] if q.isascii()]
    out: dict = json.loads(OUT.read_text()) if args.qa_only and OUT.exists() else {}
    out |= {"preset": PRESET}
    out["verify_cost"] = verify_cost(held[0])
    print(out["verify_cost"], flush=True)
    pair = load_preset(PRESET, dtype="float32")
    out["machine"] = machine_info(pair)
    plain = load_preset(PRESET, dtype="float32", kernels="default")
    compare = {}
    if args.drafter_before:
        verifier = get_preset(PRESET).model_ids()[1]
        compare[BEFORE] = load_pair(str(args.drafter_before), verifier, dtype="float32")
    if args.transformers_drafter:
        drafter = copy.deepcopy(pair.drafter)
        drafter.lean_decode = False
        compare[HF_DRAFTER] = replace(pair, drafter=drafter)
    out["general_qa"] = general_qa(pair, gamma=4, plain=plain, compare=compare)
    del plain, compare
    if DISTILL.exists():
        out["distill"] = json.loads(DISTILL.read_text())["held_out_top1_agreement"]
    del pair
    if args.qa_only:
        OUT.write_text(json.dumps(out, indent=1))
        print(markdown(out))
        return
    out["runs"] = {}
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


def verify_cost(prompt: str, repeats: int = 3) -> dict:
    """The verifier's KV-cached forward over n = 1..8 new tokens (the projector's measured
    profile, float32), with PyTorch's default CPU kernels, oneDNN-packed weights and blocked
    weights: the pairs alternate `repeats` times and each n keeps its median."""
    drafter, verifier = get_preset(PRESET).model_ids()
    from speccascade.models.loading import load_pair

    pairs = {k: load_pair(drafter, verifier, dtype="float32", kernels=k) for k in VERIFY_KERNELS}
    ms: dict[str, dict[int, list[float]]] = {k: {n: [] for n in range(1, 9)} for k in pairs}
    draft: dict[str, list[float]] = {k: [] for k in pairs}
    for _ in range(repeats):
        for k, pair in pairs.items():
            cost = measure_profile(pair, prompt=prompt, gamma=7, repeats=7, measure_overhead=False)
            for n in range(1, 9):
                ms[k][n].append(cost.verifier.ms(n))
            draft[k].append(cost.drafter.ms(1))
    out = {}
    for k in pairs:
        med = {n: statistics.median(v) for n, v in ms[k].items()}
        out[k] = {
            "verifier_ms": {n: round(m, 1) for n, m in med.items()},
            "ratio_to_one": {n: round(m / med[1], 2) for n, m in med.items()},
            "drafter_ms": round(statistics.median(draft[k]), 2),
        }
    return out


def general_configs(gamma: int, new_tokens: int) -> dict[str, Settings]:
    """The verifier, SD (fixed and confidence-ended windows) and cascades (TokenV3 at three
    alphas, and two rules of the zoo), greedy."""
    greedy = replace(GREEDY, gamma=gamma, max_new_tokens=new_tokens)
    conf = replace(greedy, gamma=5, draft_policy="confidence")
    out = {
        "verifier": verifier_alone(new_tokens),
        f"SD fixed g={gamma}": greedy,
        "SD confidence g=5": conf,
    }
    for a in ALPHAS:
        out[f"cascade TokenV3 a={a} g={gamma}"] = replace(
            greedy, method="spec_cascade", rule="token_v3", alpha=a
        )
        out[f"cascade TokenV3 a={a} confidence g=5"] = replace(
            conf, method="spec_cascade", rule="token_v3", alpha=a
        )
    return out


SWEEP = {"token_v3": (0.7, 0.8, 0.9), "token_v1": (0.2, 0.4, 0.6), "opt": (0.2, 0.4),
         "chow": (0.5, 0.7)}  # fmt: skip


def sweep_configs(new_tokens: int) -> dict[str, Settings]:
    """The verifier, SD and the cascade rules at more lenient alphas (confidence windows of up
    to 5): is there a setting 1.5x faster than the verifier within 2 points of its accuracy?"""
    conf = replace(GREEDY, gamma=5, draft_policy="confidence", max_new_tokens=new_tokens)
    out = {
        "verifier": verifier_alone(new_tokens),
        "SD confidence g=5": conf,
    }
    for rule, alphas in SWEEP.items():
        for a in alphas:
            out[f"cascade {rule} a={a}"] = replace(conf, method="spec_cascade", rule=rule, alpha=a)
    return out


def paired_interval(a: list[bool], b: list[bool], draws: int = 4000) -> tuple[float, float]:
    """95% bootstrap interval of mean(a) - mean(b) over the same questions (paired)."""
    rng = random.Random(0)
    n = len(a)
    diffs = sorted(
        sum(a[i] - b[i] for i in (rng.randrange(n) for _ in range(n))) / n for _ in range(draws)
    )
    return round(diffs[int(0.025 * draws)], 3), round(diffs[int(0.975 * draws) - 1], 3)


PLAIN = ", PyTorch's kernels"  # the suffix of the runs on PyTorch's own CPU kernels
BEFORE = ", drafter before"  # the suffix of the runs with `--drafter-before`'s drafter
HF_DRAFTER = ", transformers' drafter forward"  # `--transformers-drafter`: no decode_step


def compared(name: str) -> bool:
    """A side-by-side comparison run (PLAIN, BEFORE, HF_DRAFTER), not one of the pair's own
    methods."""
    return name.endswith((PLAIN, BEFORE, HF_DRAFTER))


def general_qa(pair, gamma: int, new_tokens: int = 32, plain=None, cfgs=None, compare=None) -> dict:
    """Key-fact accuracy where the verifier mostly knows the answer (the project's eval
    questions are obscure people SmolLM2-135M rarely knows, so one answer moves its accuracy
    by 8%): 50 general-knowledge questions none of the distillation prompts asked, greedy.
    Each method once per question, interleaved; times summed; each method's accuracy against
    the verifier's with a paired bootstrap interval. `pair` runs on `auto` kernels (blocked
    weights for the verifier); `plain` (the pair on PyTorch's own kernels, the runs before
    blocked weights) runs the verifier alone and SD with confidence windows too, side by side;
    every speed-up is also given against the faster verifier alone. `compare` (suffix ->
    the pair with another drafter: an earlier one, BEFORE; the same one on transformers'
    forward, HF_DRAFTER) runs SD and the TokenV3 a=0.7 cascade with confidence windows too.
    The fastest SD and cascade are picked among `pair`'s own runs."""
    items = load_evalset(GENERAL_QA)
    cfgs = cfgs or general_configs(gamma, new_tokens)
    runs = {name: (pair, s) for name, s in cfgs.items()}
    if plain is not None:
        for name in ("verifier", "SD confidence g=5"):
            runs[name + PLAIN] = (plain, cfgs[name])
        generate(plain, items[0].question, cfgs["verifier"])
    for suffix, other in (compare or {}).items():
        for name in ("SD confidence g=5", "cascade TokenV3 a=0.7 confidence g=5"):
            if name in cfgs:
                runs[name + suffix] = (other, cfgs[name])
        generate(other, items[0].question, cfgs["SD confidence g=5"])
    generate(pair, items[0].question, cfgs["verifier"])  # warm-up
    walls = {k: 0.0 for k in runs}
    right = {k: [] for k in runs}
    calls = {k: [] for k in runs}
    kept = {k: [] for k in runs}
    same = {k: 0 for k in runs}  # greedy answers token-identical to the verifier's own
    for item in items:
        tokens = {}
        for name, (p, s) in runs.items():
            tr = generate(p, item.question, s)
            tokens[name] = tr.new_token_ids
            same[name] += tr.new_token_ids == tokens["verifier"]
            walls[name] += tr.summary.wall_s
            right[name].append(item.correct(tr.text))
            calls[name].append(tr.summary.verifier_calls_per_token)
            kept[name].append(tr.summary.acceptance_rate or 0.0)
        print(f"qa: {item.question} {[sum(v) for v in right.values()]}", flush=True)
    fastest = min(walls[k] for k in ("verifier", "verifier" + PLAIN) if k in walls)
    methods = {
        k: {
            "total_wall_s": round(walls[k], 2),
            "speedup_vs_verifier": round(walls["verifier"] / walls[k], 2),
            "speedup_vs_fastest_verifier": round(fastest / walls[k], 2),
            "key_fact_accuracy": round(statistics.fmean(right[k]), 3),
            "accuracy_minus_verifier": round(
                statistics.fmean(right[k]) - statistics.fmean(right["verifier"]), 3
            ),
            "interval_vs_verifier": paired_interval(right[k], right["verifier"]),
            "verifier_calls_per_token": round(statistics.fmean(calls[k]), 3),
            "drafts_kept": round(statistics.fmean(kept[k]), 3),
            "same_tokens_as_verifier": f"{same[k]}/{len(items)}",
        }
        for k in runs
    }
    ok = [
        k
        for k in methods
        if k.startswith("cascade")
        and not compared(k)
        and methods[k]["accuracy_minus_verifier"] >= -MAX_ACCURACY_LOSS
    ]
    return {
        "questions": len(items),
        "new_tokens": new_tokens,
        "methods": methods,
        "fastest_sd": max(
            (k for k in methods if k.startswith("SD")),
            key=lambda k: methods[k]["speedup_vs_verifier"] if not compared(k) else 0,
        ),
        "fastest_cascade_within_2_points": max(ok, key=lambda k: methods[k]["speedup_vs_verifier"])
        if ok
        else None,
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


def _qa_table(g: dict) -> str:
    """A general-knowledge run's methods as a markdown table (general_qa's result)."""
    rows = "\n".join(
        f"| {name} | {m['total_wall_s']:.2f} | {m['speedup_vs_verifier']:.2f}x | "
        f"{m.get('speedup_vs_fastest_verifier', m['speedup_vs_verifier']):.2f}x | "
        f"{m['verifier_calls_per_token']} | {m['drafts_kept']} | {m['key_fact_accuracy']:.2f} | "
        f"{m['accuracy_minus_verifier']:+.2f} [{m['interval_vs_verifier'][0]:+.2f}, "
        f"{m['interval_vs_verifier'][1]:+.2f}] | {m.get('same_tokens_as_verifier', '')} |"
        for name, m in g["methods"].items()
    )
    return (
        "| method | total s | speed-up | vs fastest verifier | verifier calls/token | drafts kept "
        "| key-fact accuracy | vs verifier [95%] | same tokens |\n"
        "|---|---|---|---|---|---|---|---|---|\n" + rows
    )


def markdown(out: dict) -> str:
    text = ""
    if "verify_cost" in out:
        v = out["verify_cost"]
        names = {"default": "PyTorch's", "packed": "oneDNN packed", "blocked": "blocked"}
        kinds = [k for k in names if k in v]
        head = " | ".join(f"{names[k]}, ms | vs 1 token" for k in kinds)
        rows = "\n".join(
            f"| {n} | "
            + " | ".join(
                f"{v[k]['verifier_ms'][n]} | {v[k]['ratio_to_one'][n]:.2f}x" for k in kinds
            )
            + " |"
            for n in v["default"]["verifier_ms"]
        )
        drafter = ", ".join(f"{names[k]} {v[k]['drafter_ms']} ms" for k in kinds)
        text += f"""### The verification step on this CPU (float32)

SmolLM2-135M-Instruct, one KV-cached forward over n new tokens (`project.measure_profile`, the
engine's own forward and bookkeeping; median of 3 alternating measurements), with PyTorch's
kernels (`SPECCASCADE_KERNELS=default`), oneDNN-packed weights (`packed`; one row through a
small layer on PyTorch's kernel) and blocked weights with grouped-query attention left to SDPA
(`blocked`, what `auto` runs for this verifier):

| n tokens | {head} |
|---|{"---|---|" * len(kinds)}
{rows}

The drafter's one-token step with each choice (under `auto` it stays on PyTorch's kernels):
{drafter}.
"""
    if "rule_sweep" in out:
        g = out["rule_sweep"]
        text += f"""
### Cascade rules at more lenient alphas (general knowledge, float32, greedy)

`python scripts/bench_smollm2.py --sweep`: the same {g["questions"]} questions, up to
{g["new_tokens"]} new tokens, each setting once per question, interleaved, confidence windows
of up to 5. Fastest cascade within 2 points of the verifier's accuracy:
{g["fastest_cascade_within_2_points"]} (picked on these very questions).

{_qa_table(g)}
"""
    if "general_qa" in out:
        g = out["general_qa"]
        agree = ", ".join(f"{k} {v:.1%}" for k, v in out.get("distill", {}).items())
        text += f"""
### General knowledge (float32, greedy)

{g["questions"]} general-knowledge questions (`assets/data/general_qa.jsonl`, none asked
in distillation), up to {g["new_tokens"]} new tokens, each method once per question,
interleaved. The accuracy column's interval is a paired bootstrap over the questions (95%).
Fastest SD: {g["fastest_sd"]}; fastest cascade within 2 points of the verifier's accuracy:
{g["fastest_cascade_within_2_points"]}. The drafter's held-out top-1 agreement with the
teacher: {agree}.

{_qa_table(g)}
"""
    runs = out.get("runs") or {}
    if not runs:
        return text
    first = next(iter(runs.values()))
    acc = "\n".join(
        f"| {g} | {a['acceptance_rate']:.3f} | {a['mean_accepted_length']:.2f} | {a['wall_s']:.2f} |"
        for g, a in first["acceptance"].items()
    )
    text += f"""
### Held-out eval questions

The same run of `python scripts/bench_smollm2.py` on this CPU ({out["machine"].get("cpu", "")},
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
    return text


if __name__ == "__main__":
    main()

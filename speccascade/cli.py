"""`speccascade` command line: generate (and the commands later issues add)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from speccascade.core.drafting import DRAFT_POLICIES
from speccascade.core.engine import METHODS, Settings
from speccascade.core.errors import ModelRuntimeError, SpecCascadeError
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES

APP_URL = "http://127.0.0.1:7860/"  # where `speccascade app` listens by default


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("models")
    g.add_argument("--preset", default=None, help="named pair (default: the embedded demo pair)")
    g.add_argument("--drafter", help="drafter folder or hub id")
    g.add_argument("--verifier", help="verifier folder or hub id")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ...")
    g.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    g.add_argument(
        "--kernels",
        default="auto",
        choices=["auto", "blocked", "packed", "default"],  # models.kernels.KERNELS (light import)
        help="CPU linear layers: auto (blocked weights for float32 models larger than the "
        "caches, PyTorch's elsewhere), blocked, packed (oneDNN), default (PyTorch's)",
    )


def _add_decoding_args(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("decoding")
    g.add_argument("--method", default=d.method, choices=METHODS)
    g.add_argument("--rule", default=d.rule, help=f"deferral rule: {', '.join(RULES)}")
    g.add_argument("--alpha", type=float, default=None, help="rule threshold (default: rule's)")
    g.add_argument("--gamma", type=int, default=d.gamma, help="draft window")
    g.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    g.add_argument("--top-p", type=float, default=d.top_p)
    g.add_argument("--top-k", type=int, default=d.top_k)
    g.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    g.add_argument("--seed", type=int, default=d.seed)
    g.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    g.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    g.add_argument(
        "--draft-policy",
        default=d.draft_policy,
        choices=list(DRAFT_POLICIES),
        help="how far the drafter runs ahead: fixed gamma, HF's heuristic, or stop when unsure",
    )
    g.add_argument(
        "--draft-threshold",
        type=float,
        default=d.draft_threshold,
        help="confidence policy: stop a draft after a token with drafter max q below this",
    )


def preset_of(args: argparse.Namespace):
    """The preset the arguments name (--preset, or the demo pair), or None where
    --drafter/--verifier give the pair by folders instead."""
    from speccascade.models.presets import get_preset

    return None if args.drafter or args.verifier else get_preset(args.preset)


def load_from_args(args: argparse.Namespace):
    """The pair named by --preset or --drafter/--verifier (neither: the demo pair)."""
    from speccascade.models.loading import load_pair
    from speccascade.models.presets import load_preset

    options = {"device": args.device, "dtype": args.dtype, "kernels": args.kernels}
    if preset_of(args) is None:
        return load_pair(args.drafter, args.verifier, **options)
    return load_preset(args.preset, **options)


def decoding_settings(args: argparse.Namespace) -> Settings:
    return Settings(
        method=args.method,
        rule=args.rule,
        alpha=args.alpha,
        gamma=args.gamma,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        stop=tuple(args.stop or ()),
        chat=False if args.no_chat else None,
        draft_policy=args.draft_policy,
        draft_threshold=args.draft_threshold,
    )


def _format_summary(s) -> str:
    rows = [
        ("method", s.method + (f" / {s.rule} (alpha={s.alpha:g})" if s.alpha is not None else "")),
        ("tokens", f"{s.new_tokens} new after {s.prompt_tokens} prompt tokens ({s.stop_reason})"),
        ("wall time", f"{s.wall_s:.3f} s ({s.tokens_per_s:.1f} tokens/s)"),
        ("forward calls", f"drafter {s.drafter_calls}, verifier {s.verifier_calls}"),
        ("verifier calls/token", f"{s.verifier_calls_per_token:.3f}"),
    ]
    if s.acceptance_rate is not None:
        rows.append(("acceptance rate", f"{s.acceptance_rate:.3f} of {s.drafted} drafts"))
        rows.append(("mean accepted/round", f"{s.mean_accepted_length:.2f}"))
    if s.mean_window is not None:
        rows.append(
            ("draft windows", f"{s.draft_policy}: mean {s.mean_window:.2f}, "
             f"{s.wasted_drafts} drafter forwards on drafts not in the answer")
        )  # fmt: skip
    if s.ideal_speedup is not None:
        rows.append(("ideal speed-up", f"{s.ideal_speedup:.2f}x (cost ratio {s.cost_ratio:.3f})"))
    rows += [("note", n) for n in s.notes]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def cmd_generate(args: argparse.Namespace) -> int:
    from speccascade.core.engine import RoundEvent, stream

    prompt = args.prompt_opt or args.prompt
    if prompt is None:
        raise SpecCascadeError('give a prompt: speccascade generate "Who is Buzz Aldrin?"')
    link = None
    if args.link:  # before the run: a link that cannot be made fails fast
        from speccascade.app.share import permalink

        link = permalink(
            args.base_url, prompt, decoding_settings(args), args.preset, args.drafter, args.verifier
        )
    pair = load_from_args(args)
    trace = None
    for event in stream(pair, prompt, decoding_settings(args)):
        if isinstance(event, RoundEvent):
            if not args.json:
                print("".join(t.text for t in event.tokens), end="", flush=True)
        else:
            trace = event
    if args.json:
        print(trace.to_json(indent=2))
    else:
        print("\n")
        print(_format_summary(trace.summary))
        doubt_line = _doubt_line(args, prompt, trace)
        if doubt_line:
            print(doubt_line)
    if link:
        print(link, file=sys.stderr if args.json else sys.stdout)  # --json: stdout is the trace
    return 0


def _doubt_line(args: argparse.Namespace, prompt: str, trace) -> str:
    """What the page would say under this answer (analysis.verdict.doubt), for a preset that
    knows what its pair was taught; "" otherwise."""
    from speccascade.analysis.verdict import doubt

    preset = preset_of(args)
    if preset is None:
        return ""
    d = doubt(preset, prompt, trace.text, trace.summary.stop_reason)
    if d is None:
        return ""
    other = _other_pair(preset)
    if d.kind == "declined":
        return f"note: the pair declined: the question is outside what it knows{other}"
    if d.kind == "unknown":
        return f"note: probably made up: the pair was never taught what this asks about{other}"
    taught = "; ".join(f"{x.question!r} -> {(x.short or x.answer)!r}" for x in d.taught)
    return f"note: probably wrong: the pair was taught {taught}{other}"


def _other_pair(preset) -> str:
    """Where a doubt line points: the pair the page would offer here (a hub pair where the
    hub answers or its models are cached, else the offline pair where installed), or what
    is missing for any (this is the operator's side: the commands are shown)."""
    from speccascade.models import hub
    from speccascade.models.presets import switch_target, why_no_target

    if not preset.switch_to:
        return ""
    hub_up = hub.PROBE.wait(timeout=5.0)
    target = switch_target(preset, hub_up)
    if target is not None:
        return f" (try --preset {target.preset.name})"
    return f" (no general pair is set up here: {why_no_target(preset, hub_up)})"


def cmd_show(args: argparse.Namespace) -> int:
    """A downloaded trace file, checked, as `generate` prints a run: text, then summary."""
    from speccascade.core.trace_file import load_trace

    trace = load_trace(args.trace)
    print(trace.text)
    print()
    print(_format_summary(trace.summary))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """A trace file's speculative rounds, each draft's arithmetic spelled out (no model)."""
    from speccascade.analysis.replay import replay_round, require_rounds
    from speccascade.core.trace_file import load_trace
    from speccascade.views.replay import replay_text

    trace = load_trace(args.trace)
    indices = [args.round] if args.round is not None else range(require_rounds(trace))
    texts = [replay_text(replay_round(trace, i), args.lang) for i in indices]
    print("\n\n".join(texts))
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    for r in RULES.values():
        print(
            f"{r.name:<9} {r.label:<22} alpha in [{r.alpha_min:g}, {r.alpha_max:g}]  "
            f"SD at {r.alpha_sd:g}, drafter at {r.alpha_drafter:g}  defer: {r.formula}"
        )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from speccascade.analysis.compare import compare, compare_variants
    from speccascade.analysis.evalsets import find_item

    pair = load_from_args(args)
    settings = decoding_settings(args)  # each variant sets its method and rule
    variants = compare_variants(settings.rule)
    preset = preset_of(args)
    item = find_item(args.prompt, taught_by=preset.taught if preset else None)  # by its facts
    facts = item.facts if item else ()
    runs = compare(pair, args.prompt, variants, settings=settings, facts=facts, rounds=args.rounds)
    *_, (_, _, table) = runs
    if not facts:
        table = table.drop(columns=["key_facts"])
    with pd.option_context("display.max_colwidth", 60, "display.width", 200):
        print(table.drop(columns=["quality_vs_reference"]).round(3).to_string(index=False))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from speccascade.analysis.compare import Variant, sweep

    pair = load_from_args(args)
    settings = decoding_settings(args)  # each job sets its method, rule and alpha
    variants = [Variant.cascade(r) for r in args.rules.split(",")]
    table = sweep(pair, [(args.prompt, None)], variants, n_alpha=args.alphas, settings=settings)
    print(table.round(3).to_string(index=False))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from speccascade.analysis.calibrate import Target, calibrate, evaluations_needed

    target = Target(args.max_calls, args.min_accuracy)
    items = _question_slice(None, args.lang, args.limit)
    rules = args.rules.split(",")
    settings = replace(decoding_settings(args), method="spec_cascade")
    runs = evaluations_needed(len(rules), args.steps) * len(items)
    print(f"calibrating {len(rules)} rules on {len(items)} questions (at most {runs} runs)")
    pair = load_from_args(args)
    verifier, results = calibrate(pair, items, target, settings, rules, steps=args.steps)
    rows = [("verifier alone", "", verifier, True, 1)] + [
        (rule, f"{c.point.alpha:g}", c.point, c.met, c.evaluations) for rule, c in results.items()
    ]
    print(f"{'rule':<16}{'alpha':>8}{'calls/token':>13}{'accuracy':>10}{'time s':>9}  met  runs")
    for name, alpha, p, met, n in rows:
        print(
            f"{name:<16}{alpha:>8}{p.calls_per_token:>13.3f}{p.accuracy:>10.2f}{p.wall_s:>9.2f}"
            f"  {'yes' if met else 'no ':<4} {n}"
        )
    return 0


def _question_slice(path: str | None, lang: str, limit: int):
    """Questions for a calibration or the zoo: a file's first `limit`, or the eval set's
    first half easy, half hard in one language."""
    from pathlib import Path

    from speccascade.analysis.evalsets import load_evalset

    if path:
        return load_evalset(Path(path), limit)
    items = [x for x in load_evalset() if x.lang == lang]
    half = max(1, limit // 2)
    easy = [x for x in items if x.level == "easy"][:half]
    return easy + [x for x in items if x.level == "hard"][: limit - half]


def cmd_zoo(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from speccascade.analysis.calibrate import CALIBRATABLE
    from speccascade.analysis.zoo import evaluations_needed, zoo
    from speccascade.views.zoo import zoo_figure, zoo_markdown

    rules = CALIBRATABLE if args.rules == "all" else tuple(args.rules.split(","))
    rates = tuple(float(x) for x in args.rates.split(","))
    items = _question_slice(args.evalset, args.lang, args.limit)
    runs = evaluations_needed(len(rules), len(rates), args.steps) * len(items)
    print(f"the rule zoo: {len(rules)} rules x {len(rates)} deferral rates on {len(items)} "
          f"questions (at most {runs} runs)", flush=True)  # fmt: skip
    pair = load_from_args(args)
    result = zoo(pair, items, decoding_settings(args), rules, rates, steps=args.steps)
    print(zoo_markdown(result, args.lang))
    print(f"\n{result.evaluations} runs of the {result.questions} questions")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(asdict(result), f, indent=1, default=str)
    if args.figure:
        zoo_figure(result, args.lang).write_html(args.figure)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from speccascade.analysis.audit import audit
    from speccascade.views.zoo import audit_frame, audit_verdict

    pair = load_from_args(args)
    result = audit(
        pair,
        args.prompt,
        decoding_settings(args),
        positions=args.positions,
        samples=args.samples,
        seconds=args.seconds,
        level=args.level,
    )
    print(audit_verdict(result, args.lang))
    print(audit_frame(result, args.lang).to_string(index=False))
    print(f"{result.samples} runs in {result.seconds:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(asdict(result), f, indent=1)
    return 0 if result.consistent else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tqdm import tqdm

    from speccascade.analysis.bench import (
        aggregate,
        bench_configs,
        engine_targets,
        eval_targets,
        machine_info,
        run_bench,
        story_targets,
        tradeoff_table,
    )
    from speccascade.analysis.evalsets import EVALSET, find_item, load_evalset, story_question
    from speccascade.views.report import write_report

    pair = load_from_args(args)
    path = Path(args.evalset) if args.evalset else EVALSET
    items = load_evalset(path, limit=args.limit)
    gammas = [int(g) for g in args.gammas.split(",")]
    temps = [float(t) for t in args.temperatures.split(",")]
    rules = args.rules.split(",")
    policies = args.policies.split(",")
    configs = bench_configs(rules, args.alphas, gammas, temps, hf=not args.no_hf, policies=policies)
    bar = tqdm(unit="run", desc="bench")

    def progress(done: int, total: int, label: str) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.set_postfix_str(label[:40])

    start = time.time()
    raw = run_bench(
        pair,
        items,
        configs,
        repeats=args.repeats,
        samples=args.samples,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        progress=progress,
    )
    bar.close()
    agg = aggregate(raw)
    table = tradeoff_table(agg, tolerance=args.tolerance)
    targets: dict = {"eval": eval_targets(agg, raw, gamma=gammas[0])}
    if not args.no_hf and 0.0 in temps:
        targets["engine"] = engine_targets(agg, gamma=gammas[0])
    easy, hard = find_item(story_question("easy"), path), find_item(story_question("hard"), path)
    if easy and hard and not args.no_story:
        targets["story"] = story_targets(pair, easy, hard, repeats=args.repeats + 2)
    meta = {
        **machine_info(pair),
        "questions": len(items),
        "levels": {k: int(v) for k, v in raw.drop_duplicates("item").level.value_counts().items()},
        "repeats_greedy": args.repeats,
        "samples_per_question_T>0": max(args.repeats, args.samples),
        "configs": len(configs),
        "max_new_tokens": args.max_new_tokens,
        "hf_assisted": "num_assistant_tokens = gamma, schedule constant, "
        "assistant_confidence_threshold 0 (off), greedy; 1 warm-up run",
        "warmup_runs": 2,
        "wall_minutes": round((time.time() - start) / 60, 1),
        "command": "speccascade " + " ".join(sys.argv[1:]),
    }
    out = Path(args.out)
    write_report(out, raw, agg, table, targets, meta)
    print(table.round(3).to_string(index=False))
    print(json.dumps(targets, indent=1, default=str))
    print(f"wrote {out}/report.html, report.md, summary.csv, table.csv, raw.csv, targets.json")
    return 0


def cmd_project(args: argparse.Namespace) -> int:
    """Re-price traces (files, or live runs of a prompt) under a cost model and print the
    projection, the best gamma per rule and the break-even acceptance."""
    from dataclasses import replace

    import pandas as pd

    from speccascade.analysis.project import (
        best_gammas,
        breakeven_acceptance,
        cost_model_dict,
        project_methods,
    )
    from speccascade.core.engine import APP_DEFAULTS, METHOD_REGISTRY, generate
    from speccascade.core.trace import Trace
    from speccascade.i18n import variant_label
    from speccascade.views.project import assumption_lines, best_gamma_table, projection_table

    if not args.trace and not args.prompt:
        raise SpecCascadeError(
            "give --trace FILE.json (from generate --json or the app) or a prompt to run live: "
            'speccascade project "Who is Buzz Aldrin?"'
        )
    pair = None
    traces: dict[str, Trace] = {}
    if args.trace:
        for path in args.trace:
            try:
                with open(path, encoding="utf-8") as f:
                    tr = Trace.from_json(f.read())
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise SpecCascadeError(f"cannot read the trace {path}: {e}") from None
            traces[_unique(traces, _trace_label(tr), path)] = tr
    else:
        pair = _load_for_project(args)
        base = replace(
            APP_DEFAULTS,
            rule=args.rule,
            alpha=args.alpha,
            gamma=args.gamma,
            temperature=args.temperature,
            max_new_tokens=args.max_new_tokens or APP_DEFAULTS.max_new_tokens,
            seed=args.seed,
        )
        for method in args.methods.split(","):
            if method not in METHOD_REGISTRY:
                raise SpecCascadeError(
                    f"unknown method {method!r}; choose from {', '.join(METHODS)}"
                )
            rule = args.rule if METHOD_REGISTRY[method].rules else None
            settings = replace(base, method=method, rule=rule)
            generate(pair, args.prompt, settings)  # warm-up: the timed run is the second
            tr = generate(pair, args.prompt, settings)
            traces[_trace_label(tr)] = tr
    cost = _cost_model(args, pair)
    budget = args.max_new_tokens or (None if args.trace else APP_DEFAULTS.max_new_tokens)
    records = project_methods(traces, cost)
    best = best_gammas(traces, cost, max_gamma=args.max_gamma, max_new_tokens=budget)
    if args.json:
        out = {"cost_model": cost_model_dict(cost), "projections": records, "best_gamma": best}
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(f"PROJECTION under {cost.name!r} (from recorded model calls; not a measurement)")
    for line in assumption_lines(cost):
        print(f"  - {line}")
    print()
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(projection_table(records).to_string(index=False))
        if best:
            print(f"\nbest draft window per rule (gamma 1..{args.max_gamma}):")
            print(best_gamma_table(best).to_string(index=False))
    if best:
        print("\nbreak-even acceptance per tested draft (projected speed-up = 1):")
        for row in best:
            g = row["recorded_gamma"]
            be = breakeven_acceptance(cost, g, row["rule"])
            shown = "never pays" if be is None else f"{be:.3f}"
            got = row["acceptance"]
            have = "" if got is None else f" (this run: {got:.3f})"
            print(f"  {variant_label(row['label'])} at gamma={g}: {shown}{have}")
    return 0


def _trace_label(tr) -> str:
    from speccascade.core.engine import METHOD_REGISTRY

    s = tr.summary
    row = METHOD_REGISTRY.get(s.method)
    return f"{s.method}/{s.rule}" if row is not None and row.rules and s.rule else s.method


def _unique(taken, label: str, path: str) -> str:
    """`label`, or `label (file name)` when another trace has it already."""
    from pathlib import Path

    return label if label not in taken else f"{label} ({Path(path).name})"


# Weight formats the roofline prices but this machine does not load models in.
_ROOFLINE_ONLY_DTYPES = ("fp8", "int8", "int4")


def _load_for_project(args: argparse.Namespace):
    if args.dtype in _ROOFLINE_ONLY_DTYPES:
        args = argparse.Namespace(**{**vars(args), "dtype": "auto"})
    return load_from_args(args)


def _cost_model(args: argparse.Namespace, pair):
    """The cost model --profile names, built from its options (loading the pair where the
    profile needs it: measured, or a roofline without parameter counts)."""
    from speccascade.analysis.project import build_profile, count_params

    if args.profile == "measured":
        pair = pair or _load_for_project(args)
        return build_profile("measured", pair, repeats=args.repeats, gamma=args.gamma)
    if args.profile == "roofline":
        d, v = args.drafter_params, args.verifier_params
        if d is None or v is None:
            counted = count_params(pair or _load_for_project(args))
            d, v = d or counted[0], v or counted[1]
        return build_profile(
            "roofline",
            d,
            v,
            gpu=args.gpu,
            dtype="bfloat16" if args.dtype == "auto" else args.dtype,
            bandwidth_tbs=args.bandwidth_tbs,
            tflops=args.tflops,
            launch_ms=args.launch_ms,
            round_overhead_ms=args.round_overhead_ms or 0.0,
            draft_overhead_ms=args.draft_overhead_ms or 0.0,
        )
    if args.drafter_ms is None or args.verifier_fixed_ms is None:
        raise SpecCascadeError("--profile custom needs --drafter-ms and --verifier-fixed-ms")
    return build_profile(
        "custom",
        args.drafter_ms,
        args.verifier_fixed_ms,
        args.verifier_per_token_ms or 0.0,
        round_overhead_ms=args.round_overhead_ms or 0.0,
        draft_overhead_ms=args.draft_overhead_ms or 0.0,
    )


def _add_project_args(p: argparse.ArgumentParser) -> None:
    from speccascade.analysis.project import GPUS, PROFILES
    from speccascade.core.engine import APP_DEFAULTS

    p.add_argument("prompt", nargs="?", help="run this prompt live under --methods (no --trace)")
    p.add_argument(
        "--trace",
        action="append",
        default=None,
        metavar="FILE.json",
        help="a trace from `generate --json` or the app's download (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.add_argument("--max-gamma", type=int, default=8, help="largest gamma to re-price")
    live = p.add_argument_group("live runs (without --trace)")
    live.add_argument("--methods", default="verifier,drafter,speculative,spec_cascade")
    live.add_argument("--rule", default=APP_DEFAULTS.rule, help="the cascade's rule")
    live.add_argument("--alpha", type=float, default=APP_DEFAULTS.alpha)
    live.add_argument("--gamma", type=int, default=APP_DEFAULTS.gamma)
    live.add_argument("--temperature", type=float, default=APP_DEFAULTS.temperature)
    live.add_argument("--seed", type=int, default=0)
    live.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help=f"token budget of live runs (default {APP_DEFAULTS.max_new_tokens}); with --trace, "
        "the budget the traces ran with, for exact gamma re-simulation (default: inferred)",
    )
    prof = p.add_argument_group("cost model")
    prof.add_argument("--profile", default="measured", choices=list(PROFILES))
    prof.add_argument("--repeats", type=int, default=5, help="measured: timings per point")
    prof.add_argument("--gpu", default="h100-sxm", choices=list(GPUS), help="roofline: GPU")
    prof.add_argument("--bandwidth-tbs", type=float, default=None, help="roofline: TB/s")
    prof.add_argument("--tflops", type=float, default=None, help="roofline: peak TFLOP/s")
    prof.add_argument(
        "--drafter-params", type=float, default=None, help="roofline (default: the pair's)"
    )
    prof.add_argument("--verifier-params", type=float, default=None)
    prof.add_argument("--launch-ms", type=float, default=1.0, help="roofline: ms per forward")
    prof.add_argument("--drafter-ms", type=float, default=None, help="custom: ms per forward")
    prof.add_argument("--verifier-fixed-ms", type=float, default=None, help="custom")
    prof.add_argument("--verifier-per-token-ms", type=float, default=None, help="custom")
    prof.add_argument("--round-overhead-ms", type=float, default=None, help="custom, roofline")
    prof.add_argument("--draft-overhead-ms", type=float, default=None, help="custom, roofline")


def cmd_app(args: argparse.Namespace) -> int:
    from speccascade.app import launch

    launch(server_name=args.host, server_port=args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="speccascade", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="run one decoding method and print text and summary")
    gen.add_argument("prompt", nargs="?", help="the prompt (or use --prompt)")
    gen.add_argument("--prompt", dest="prompt_opt", help="the prompt")
    gen.add_argument("--json", action="store_true", help="print the whole trace as JSON")
    gen.add_argument("--link", action="store_true", help="also print the app's link to this run")
    gen.add_argument("--base-url", default=APP_URL, help=f"the app's address (default {APP_URL})")
    _add_model_args(gen)
    _add_decoding_args(gen)
    gen.set_defaults(func=cmd_generate)
    cmp = sub.add_parser("compare", help="every baseline and one spec_cascade rule, one prompt")
    cmp.add_argument("prompt")
    cmp.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="time every method this many times, interleaved, and report the median (default 3)",
    )
    _add_model_args(cmp)
    _add_decoding_args(cmp)
    cmp.set_defaults(func=cmd_compare)
    swp = sub.add_parser("sweep", help="quality and cost over alpha, one prompt")
    swp.add_argument("prompt")
    swp.add_argument("--rules", default=",".join(SPEC_CASCADE_RULES))
    swp.add_argument("--alphas", type=int, default=5, help="alphas per rule")
    _add_model_args(swp)
    _add_decoding_args(swp)
    swp.set_defaults(func=cmd_sweep)
    cal = sub.add_parser(
        "calibrate", help="per rule, the alpha that meets a calls or accuracy target"
    )
    cal.add_argument("--max-calls", type=float, default=None, help="verifier calls per token")
    cal.add_argument(
        "--min-accuracy", type=float, default=None, help="share of the verifier's accuracy"
    )
    cal.add_argument("--limit", type=int, default=8, help="eval questions (half easy, half hard)")
    cal.add_argument("--lang", default="en", choices=["en", "zh"])
    cal.add_argument("--rules", default=",".join(SPEC_CASCADE_RULES))
    cal.add_argument("--steps", type=int, default=6, help="bisection steps per rule")
    _add_model_args(cal)
    _add_decoding_args(cal)
    cal.set_defaults(func=cmd_calibrate)
    zoo = sub.add_parser(
        "zoo", help="every acceptance rule calibrated to the same deferral rates, side by side"
    )
    zoo.add_argument("--rules", default="all", help="comma-separated, or all")
    zoo.add_argument("--rates", default="0.1,0.25,0.5", help="target deferral rates")
    zoo.add_argument("--limit", type=int, default=8, help="questions (half easy, half hard)")
    zoo.add_argument("--evalset", default=None, help="a JSONL question set instead of the eval set")
    zoo.add_argument("--lang", default="en", choices=["en", "zh"])
    zoo.add_argument("--steps", type=int, default=4, help="bisection steps per rate")
    zoo.add_argument("--json", default=None, help="write the results here")
    zoo.add_argument("--figure", default=None, help="write the figure here (.html)")
    _add_model_args(zoo)
    _add_decoding_args(zoo)
    zoo.set_defaults(func=cmd_zoo)
    aud = sub.add_parser(
        "audit", help="does the output follow the law the method promises? (exit 1 if not)"
    )
    aud.add_argument("prompt")
    aud.add_argument("--positions", type=int, default=2, help="first k emitted tokens")
    aud.add_argument("--samples", type=int, default=None, help="runs (default: fit --seconds)")
    aud.add_argument("--seconds", type=float, default=60.0, help="time budget when sizing")
    aud.add_argument("--level", type=float, default=0.01, help="family-wise significance")
    aud.add_argument("--lang", default="en", choices=["en", "zh"])
    aud.add_argument("--json", default=None, help="write the results here")
    _add_model_args(aud)
    _add_decoding_args(aud)
    aud.set_defaults(func=cmd_audit)
    bench = sub.add_parser("bench", help="quality-latency benchmark over the eval set")
    bench.add_argument("--limit", type=int, default=20, help="questions from the eval set")
    bench.add_argument("--evalset", default=None, help="a JSONL of question/answer/kind rows")
    bench.add_argument("--repeats", type=int, default=3, help="timed runs per greedy config")
    bench.add_argument(
        "--samples", type=int, default=5, help="seeds per question at T > 0 (also timed)"
    )
    bench.add_argument("--no-story", action="store_true", help="skip the story targets")
    bench.add_argument("--alphas", type=int, default=5, help="alphas per swept method")
    bench.add_argument("--gammas", default="4", help="comma-separated draft windows")
    bench.add_argument(
        "--policies",
        default="fixed",
        help="comma-separated draft policies (SD and the default cascade get each)",
    )
    bench.add_argument("--temperatures", default="0,1", help="comma-separated")
    bench.add_argument("--rules", default=",".join(SPEC_CASCADE_RULES))
    bench.add_argument("--max-new-tokens", type=int, default=48)
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="relative quality slack for 'at the verifier's quality'",
    )
    bench.add_argument("--no-hf", action="store_true", help="skip the transformers baselines")
    bench.add_argument("--out", default="bench-results")
    _add_model_args(bench)
    bench.set_defaults(func=cmd_bench)
    prj = sub.add_parser(
        "project",
        help="re-price runs under a cost model (this machine, a GPU roofline, custom numbers)",
    )
    _add_project_args(prj)
    _add_model_args(prj)
    prj.set_defaults(func=cmd_project)
    app = sub.add_parser("app", help="start the Gradio analyzer")
    app.add_argument("--host", default=None, help="e.g. 0.0.0.0 to listen on all interfaces")
    app.add_argument("--port", type=int, default=None)
    app.set_defaults(func=cmd_app)
    show = sub.add_parser("show", help="check a trace file (the app's download) and summarise it")
    show.add_argument("trace", help="a trace .json file")
    show.set_defaults(func=cmd_show)
    rep = sub.add_parser("replay", help="a trace file's rounds: each draft's rule and accept test")
    rep.add_argument("trace", help="a trace .json file")
    rep.add_argument("--round", type=int, default=None, help="only this round (from 0)")
    rep.add_argument("--lang", default="en", choices=["en", "zh"])
    rep.set_defaults(func=cmd_replay)
    rules = sub.add_parser("rules", help="list the deferral rules and their alpha ranges")
    rules.set_defaults(func=cmd_rules)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecCascadeError as e:
        print(f"speccascade: error: {e}", file=sys.stderr)
        return 2
    except ModelRuntimeError as e:
        print(f"speccascade: error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())

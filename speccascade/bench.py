"""Side-by-side runs: compare every method on one prompt, sweep alpha for each rule, and the
quality-latency benchmark (`speccascade bench`) with Hugging Face baselines."""

from __future__ import annotations

import copy
import json
import os
import platform
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from .engine import METHODS, generate
from .models import ModelPair
from .quality import rouge_l
from .rules import RULES
from .trace import Trace, ideal_speedup

BASELINES = tuple(m for m in METHODS if m != "spec_cascade")


@dataclass(frozen=True)
class Variant:
    """One method (and rule) to run; `label` names it in tables and plots."""

    method: str
    rule: str | None = None

    @property
    def label(self) -> str:
        return f"{self.method}/{self.rule}" if self.method == "spec_cascade" else self.method

    @property
    def rule_name(self) -> str | None:
        from .viz import rule_for

        r = rule_for(self.method, self.rule)
        return r.name if r else None


def compare_variants(rule: str) -> list[Variant]:
    return [Variant(m) for m in BASELINES] + [Variant("spec_cascade", rule)]


def compare(
    pair: ModelPair,
    prompt: str | list[int],
    variants: Sequence[Variant],
    reference: str | None = None,
    **settings,
) -> Iterator[tuple[Variant, Trace, pd.DataFrame]]:
    """Run each variant on the same prompt and settings (verifier first: it is the yardstick
    for speed-up and, without a reference, for quality). Yields after each run with the table
    so far."""
    order = sorted(variants, key=lambda v: v.method != "verifier")
    if order[0].method != "verifier":
        order.insert(0, Variant("verifier"))
    rows, base = [], None
    for v in order:
        tr = generate(pair, prompt, method=v.method, rule=v.rule, **settings)
        base = base or tr
        s = tr.summary
        rows.append(
            {
                "method": v.label,
                "text": tr.text,
                "tokens": s.new_tokens,
                "wall_s": s.wall_s,
                "speedup": base.summary.wall_s / s.wall_s if s.wall_s > 0 else float("nan"),
                "verifier_calls_per_token": s.verifier_calls_per_token,
                "acceptance_rate": s.acceptance_rate,
                "quality_vs_verifier": rouge_l(tr.text, base.text),
                "quality_vs_reference": rouge_l(tr.text, reference) if reference else None,
            }
        )
        yield v, tr, pd.DataFrame(rows)


def alpha_grid(rule: str, n: int = 6) -> list[float]:
    """n alphas spanning the rule's slider, SD end to drafter-only end."""
    lo, hi = RULES[rule].slider
    return [round(float(a), 4) for a in np.linspace(lo, hi, n)]


def sweep(
    pair: ModelPair,
    prompts: Sequence[tuple[str, str | None]],
    variants: Sequence[Variant],
    n_alpha: int = 6,
    progress: Callable[[float, str], None] | None = None,
    extra: Sequence[tuple[Variant, float]] = (),
    **settings,
) -> pd.DataFrame:
    """Quality and cost over an alpha grid for each variant, on (prompt, reference) pairs,
    plus any `extra` (variant, alpha) points (e.g. the setting a user is looking at).

    Quality is ROUGE-L against the reference, or against the verifier's own answer to the same
    prompt where there is none. Latency is relative to the verifier alone on the same prompts."""
    settings = {k: v for k, v in settings.items() if k not in ("method", "rule", "alpha")}
    verifier = [generate(pair, p, method="verifier", **settings) for p, _ in prompts]
    refs = [ref if ref is not None else tr.text for (_, ref), tr in zip(prompts, verifier)]
    v_wall = sum(t.summary.wall_s for t in verifier)
    jobs = [(v, a) for v in variants for a in alpha_grid(v.rule_name, n_alpha)]
    jobs += [job for job in extra if job not in jobs]
    rows = [
        {
            "method": "verifier",
            "alpha": None,
            "quality": _mean_quality(verifier, refs),
            "wall_s": v_wall,
            "relative_latency": 1.0,
            "verifier_calls_per_token": _calls_per_token(verifier),
            "acceptance_rate": None,
        }
    ]
    for k, (v, alpha) in enumerate(jobs):
        if progress:
            progress(k / len(jobs), f"{v.label} alpha={alpha:g}")
        traces = [
            generate(pair, p, method=v.method, rule=v.rule, alpha=alpha, **settings)
            for p, _ in prompts
        ]
        drafted = sum(t.summary.drafted for t in traces)
        rows.append(
            {
                "method": v.label,
                "alpha": alpha,
                "quality": _mean_quality(traces, refs),
                "wall_s": sum(t.summary.wall_s for t in traces),
                "relative_latency": sum(t.summary.wall_s for t in traces) / v_wall,
                "verifier_calls_per_token": _calls_per_token(traces),
                "acceptance_rate": sum(t.summary.accepted for t in traces) / drafted
                if drafted
                else None,
            }
        )
    if progress:
        progress(1.0, "done")
    return pd.DataFrame(rows)


def _mean_quality(traces: Sequence[Trace], refs: Sequence[str]) -> float:
    return float(np.mean([rouge_l(t.text, r) for t, r in zip(traces, refs)]))


def _calls_per_token(traces: Sequence[Trace]) -> float:
    tokens = sum(t.summary.new_tokens for t in traces)
    return sum(t.summary.verifier_calls for t in traces) / tokens if tokens else 0.0


# -- the benchmark harness ----------------------------------------------------------------------

HF_VERIFIER, HF_ASSISTED = "hf_generate", "hf_assisted"
SWEPT = ("lossy_speculative", "bild", "token_cascade", "seq_cascade")


@dataclass(frozen=True)
class Config:
    """One benchmarked configuration. `method` is an engine method or an HF baseline."""

    method: str
    rule: str | None = None
    alpha: float | None = None
    gamma: int = 4
    temperature: float = 0.0

    @property
    def family(self) -> str:
        return Variant(self.method, self.rule).label

    @property
    def label(self) -> str:
        a = "" if self.alpha is None else f" a={self.alpha:g}"
        return f"{self.family}{a} g={self.gamma} T={self.temperature:g}"


def bench_configs(
    rules: Sequence[str],
    n_alpha: int,
    gammas: Sequence[int],
    temperatures: Sequence[float],
    hf: bool = True,
) -> list[Config]:
    """The grid: single models, SD per gamma, every swept method and rule per alpha, and the
    Hugging Face baselines (greedy only: that is where their output is comparable token for
    token)."""
    out: list[Config] = []
    for t in temperatures:
        out += [Config("verifier", temperature=t), Config("drafter", temperature=t)]
        for g in gammas:
            out.append(Config("speculative", gamma=g, temperature=t))
            if hf and t == 0:
                out.append(Config(HF_ASSISTED, gamma=g, temperature=t))
            for method in SWEPT:
                rule = Variant(method).rule_name
                out += [Config(method, None, a, g, t) for a in alpha_grid(rule, n_alpha)]
            for rule in rules:
                out += [Config("spec_cascade", rule, a, g, t) for a in alpha_grid(rule, n_alpha)]
        if hf and t == 0:
            out.append(Config(HF_VERIFIER, temperature=t))
    # cascades do not draft: one gamma is enough for them
    seen, unique = set(), []
    for c in out:
        key = (
            c.method,
            c.rule,
            c.alpha,
            c.temperature,
            c.gamma
            if c.method not in ("verifier", "drafter", "token_cascade", "seq_cascade", HF_VERIFIER)
            else 0,
        )
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


class PeakMemory:
    """Peak memory of one run: CUDA allocator peak, or on Linux the process's peak RSS after
    resetting it (/proc/self/clear_refs), else the lifetime peak (ru_maxrss)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __enter__(self) -> PeakMemory:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        else:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        return self

    def __exit__(self, *exc) -> None:
        if self.cuda:
            self.mb = torch.cuda.max_memory_allocated() / 2**20
            return
        try:
            with open("/proc/self/status") as f:
                hwm = next(line for line in f if line.startswith("VmHWM"))
            self.mb = int(hwm.split()[1]) / 1024
        except (OSError, StopIteration):
            self.mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hf_generate(
    pair: ModelPair, prompt_ids: list[int], max_new_tokens: int, gamma: int | None = None
) -> tuple[list[int], float]:
    """`verifier.generate()` greedy, or with `assistant_model=drafter` and a constant draft of
    gamma tokens (no confidence-based early stop), on the same prompt ids and budget."""
    ids = torch.tensor([prompt_ids], device=pair.device)
    kwargs = dict(
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=max_new_tokens,
        pad_token_id=pair.tokenizer.pad_token_id,
    )
    saved = None
    if gamma is not None:
        saved = pair.drafter.generation_config
        cfg = copy.deepcopy(saved)
        cfg.num_assistant_tokens = gamma
        cfg.num_assistant_tokens_schedule = "constant"
        cfg.assistant_confidence_threshold = 0.0
        pair.drafter.generation_config = cfg
        kwargs["assistant_model"] = pair.drafter
    try:
        with torch.inference_mode():
            start = time.perf_counter()
            out = pair.verifier.generate(ids, **kwargs)
            if pair.device.type == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - start
    finally:
        if saved is not None:
            pair.drafter.generation_config = saved
    return out[0, len(prompt_ids) :].tolist(), wall


def run_config(pair: ModelPair, cfg: Config, prompt: str, max_new_tokens: int, seed: int) -> dict:
    """One timed run -> a raw result row."""
    prompt_ids = pair.encode(prompt)
    with PeakMemory(pair.device) as mem:
        if cfg.method in (HF_VERIFIER, HF_ASSISTED):
            ids, wall = hf_generate(
                pair, prompt_ids, max_new_tokens, cfg.gamma if cfg.method == HF_ASSISTED else None
            )
            row = dict(
                wall_s=wall,
                new_tokens=len(ids),
                token_ids=ids,
                text=pair.decode(ids),
                verifier_calls=None,
                drafter_calls=None,
                drafted=0,
                accepted=0,
                rounds=None,
                drafter_s=None,
                verifier_s=None,
            )
        else:
            tr = generate(
                pair,
                prompt_ids,
                method=cfg.method,
                rule=cfg.rule,
                alpha=cfg.alpha,
                gamma=cfg.gamma,
                temperature=cfg.temperature,
                max_new_tokens=max_new_tokens,
                seed=seed,
            )
            s = tr.summary
            row = dict(
                wall_s=s.wall_s,
                new_tokens=s.new_tokens,
                token_ids=tr.new_token_ids,
                text=tr.text,
                verifier_calls=s.verifier_calls,
                drafter_calls=s.drafter_calls,
                drafted=s.drafted,
                accepted=s.accepted,
                rounds=len(tr.rounds),
                drafter_s=s.drafter_s,
                verifier_s=s.verifier_s,
            )
    return {**row, "peak_mb": mem.mb}


def run_bench(
    pair: ModelPair,
    items: Sequence[tuple[str, str]],
    configs: Sequence[Config],
    repeats: int = 3,
    max_new_tokens: int = 48,
    seed: int = 0,
    warmup: int = 2,
    progress: Callable[[int, int, str], None] | None = None,
) -> pd.DataFrame:
    """Every config on every (question, reference), `repeats` times, interleaved
    (A B C A B C ...) so drift in machine speed hits all configs alike. Returns raw rows."""
    for cfg in configs[: max(0, warmup)] + [c for c in configs if c.method == HF_ASSISTED][:1]:
        run_config(pair, cfg, items[0][0], max_new_tokens, seed)  # warm caches, allocator
    rows, total, done = [], len(items) * repeats * len(configs), 0
    for i, (question, reference) in enumerate(items):
        for rep in range(repeats):
            for cfg in configs:
                row = run_config(pair, cfg, question, max_new_tokens, seed + i)
                rows.append(
                    {
                        **asdict(cfg),
                        "family": cfg.family,
                        "label": cfg.label,
                        "item": i,
                        "repeat": rep,
                        "reference": reference,
                        **row,
                    }
                )
                done += 1
                if progress:
                    progress(done, total, cfg.label)
    return pd.DataFrame(rows)


def aggregate(raw: pd.DataFrame) -> pd.DataFrame:
    """Per config: medians over repeats, then sums (time, calls) or means (quality) over items.

    quality = ROUGE-L against the reference; agreement = ROUGE-L against the verifier's own
    output at the same temperature and seed; relative latency = wall / verifier wall."""
    keys = ["method", "rule", "alpha", "gamma", "temperature", "family", "label"]
    first = raw[raw.repeat == 0].copy()
    verifier = first[first.method == "verifier"].set_index(["temperature", "item"])["text"]
    first["quality"] = [rouge_l(t, r) for t, r in zip(first.text, first.reference)]
    first["agreement"] = [
        rouge_l(t, verifier.get((temp, i), ""))
        for t, temp, i in zip(first.text, first.temperature, first.item)
    ]
    verifier_ids = first[first.method == "verifier"].set_index(["temperature", "item"])
    first["same_tokens_as_verifier"] = [
        ids == verifier_ids["token_ids"].get((temp, i))
        for ids, temp, i in zip(first.token_ids, first.temperature, first.item)
    ]
    per_item = (
        raw.groupby(keys + ["item"], dropna=False)
        .agg(
            wall_s=("wall_s", "median"),
            peak_mb=("peak_mb", "max"),
            drafter_s=("drafter_s", "median"),
            verifier_s=("verifier_s", "median"),
        )
        .reset_index()
    )
    per_item = per_item.merge(
        first[
            keys
            + [
                "item",
                "quality",
                "agreement",
                "same_tokens_as_verifier",
                "new_tokens",
                "verifier_calls",
                "drafter_calls",
                "drafted",
                "accepted",
                "rounds",
            ]
        ],
        on=keys + ["item"],
    )
    agg = (
        per_item.groupby(keys, dropna=False, sort=False)
        .agg(
            quality=("quality", "mean"),
            agreement=("agreement", "mean"),
            same_tokens_as_verifier=("same_tokens_as_verifier", "mean"),
            wall_s=("wall_s", "sum"),
            new_tokens=("new_tokens", "sum"),
            verifier_calls=("verifier_calls", "sum"),
            drafter_calls=("drafter_calls", "sum"),
            drafted=("drafted", "sum"),
            accepted=("accepted", "sum"),
            rounds=("rounds", "sum"),
            drafter_s=("drafter_s", "sum"),
            verifier_s=("verifier_s", "sum"),
            peak_mb=("peak_mb", "max"),
        )
        .reset_index()
    )
    base = agg[agg.method == "verifier"].set_index("temperature")
    agg["relative_latency"] = agg.wall_s / agg.temperature.map(base.wall_s)
    agg["tokens_per_s"] = agg.new_tokens / agg.wall_s
    agg["verifier_calls_per_token"] = agg.verifier_calls / agg.new_tokens
    agg["acceptance_rate"] = np.where(
        agg.drafted > 0, agg.accepted / agg.drafted.where(agg.drafted > 0, 1), np.nan
    )
    agg["mean_accepted_length"] = np.where(
        agg.rounds > 0, agg.accepted / agg.rounds.where(agg.rounds > 0, 1), np.nan
    )
    return agg


def tradeoff_table(agg: pd.DataFrame, tolerance: float = 0.0) -> pd.DataFrame:
    """The paper's Table 2 shape, per method family and temperature:
    (a) latency reduction vs the verifier alone at the verifier's quality (within `tolerance`,
        relative), and (b) the best quality reachable without exceeding the verifier's latency.
    """
    rows = []
    for temp, group in agg.groupby("temperature"):
        base = group[group.method == "verifier"].iloc[0]
        for family, g in group.groupby("family", sort=False):
            if family == "verifier":
                continue
            ok = g[g.quality >= base.quality * (1 - tolerance)]
            fast = g[g.relative_latency <= 1.0]
            best_a = ok.loc[ok.relative_latency.idxmin()] if len(ok) else None
            best_b = fast.loc[fast.quality.idxmax()] if len(fast) else None
            rows.append(
                {
                    "temperature": temp,
                    "method": family,
                    "latency_reduction_at_verifier_quality": (
                        1 - best_a.relative_latency if best_a is not None else None
                    ),
                    "alpha_a": best_a.alpha if best_a is not None else None,
                    "best_quality_within_verifier_latency": (
                        best_b.quality if best_b is not None else None
                    ),
                    "alpha_b": best_b.alpha if best_b is not None else None,
                    "verifier_quality": base.quality,
                }
            )
    return pd.DataFrame(rows)


def engine_targets(agg: pd.DataFrame, raw: pd.DataFrame, gamma: int = 4) -> dict:
    """The four targets of the benchmark issue, each as measured numbers and a verdict."""
    g0 = agg[agg.temperature == 0]

    def one(method: str, **kw) -> pd.Series:
        sel = g0[g0.method == method]
        for k, v in kw.items():
            sel = sel[sel[k] == v]
        return sel.iloc[0]

    verifier, hf = one("verifier"), one(HF_VERIFIER)
    sd, hf_sd = one("speculative", gamma=gamma), one(HF_ASSISTED, gamma=gamma)
    out: dict = {}
    out["1_engine_overhead"] = {
        "ours_s": verifier.wall_s,
        "hf_generate_s": hf.wall_s,
        "ratio": verifier.wall_s / hf.wall_s,
        "target": "<= 1.05",
    }
    out["1_engine_overhead"]["met"] = bool(out["1_engine_overhead"]["ratio"] <= 1.05)
    out["2_greedy_sd"] = {
        "same_tokens_as_hf_generate": float(one(HF_VERIFIER).same_tokens_as_verifier),
        "sd_same_tokens_as_verifier": float(sd.same_tokens_as_verifier),
        "ours_s": sd.wall_s,
        "hf_assisted_s": hf_sd.wall_s,
        "ratio": sd.wall_s / hf_sd.wall_s,
        "target": "<= 1.0 and identical tokens",
    }
    out["2_greedy_sd"]["met"] = (
        out["2_greedy_sd"]["ratio"] <= 1.0
        and out["2_greedy_sd"]["sd_same_tokens_as_verifier"] == 1.0
        and out["2_greedy_sd"]["same_tokens_as_hf_generate"] == 1.0
    )
    # Fact 5: c = drafter seconds per call in the SD run / verifier seconds per call alone
    c = (sd.drafter_s / sd.drafter_calls) / (verifier.verifier_s / verifier.verifier_calls)
    b = sd.acceptance_rate
    ideal = ideal_speedup(b, gamma, c)
    measured = verifier.wall_s / sd.wall_s
    verify_premium = (sd.verifier_s / sd.verifier_calls) / (
        verifier.verifier_s / verifier.verifier_calls
    )
    out["3_efficiency"] = {
        "acceptance_rate": b,
        "cost_ratio_c": c,
        "ideal_speedup": ideal,
        "measured_speedup": measured,
        "efficiency": measured / ideal,
        "verify_forward_vs_one_token": verify_premium,
        "target": ">= 0.85",
    }
    out["3_efficiency"]["met"] = bool(measured / ideal >= 0.85)
    rows = []
    for temp in sorted(agg.temperature.unique()):
        g = agg[agg.temperature == temp]
        v = g[g.method == "verifier"].iloc[0]
        sd_t = g[(g.method == "speculative") & (g.gamma == gamma)].iloc[0]
        sc = g[
            (g.method == "spec_cascade")
            & (g.gamma == gamma)
            & (g.quality >= 0.98 * v.quality)
            & (g.wall_s < sd_t.wall_s)
        ]
        for _, r in sc.iterrows():
            rows.append(
                {
                    "temperature": temp,
                    "rule": r.rule,
                    "alpha": r.alpha,
                    "quality_vs_verifier": r.quality / v.quality if v.quality else None,
                    "wall_vs_speculative": r.wall_s / sd_t.wall_s,
                }
            )
    out["4_tradeoff"] = {
        "rules_meeting_it": rows,
        "target": ">= 98% of verifier ROUGE-L, faster than lossless SD",
        "met": bool(rows),
    }
    return out


def machine_info(pair: ModelPair) -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "device": str(pair.device),
        "dtype": str(pair.dtype),
        "pair": pair.name,
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    if pair.device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(pair.device)
    return info


def report_html(agg: pd.DataFrame, table: pd.DataFrame, targets: dict, meta: dict) -> str:
    """A self-contained HTML report (plotly.js inlined once)."""
    from .viz import quality_latency

    parts, first = [], True
    for temp in sorted(agg.temperature.unique()):
        pts = agg[(agg.temperature == temp) & ~agg.method.isin(["verifier"])].copy()
        pts["method"] = pts.family + " g=" + pts.gamma.astype(str)
        v = agg[(agg.temperature == temp) & (agg.method == "verifier")].iloc[0]
        for x in ("relative_latency", "verifier_calls_per_token"):
            shown = pts.copy()
            if x != "relative_latency":  # transformers' generate does not report its calls
                shown.loc[shown.method.str.startswith("hf_"), x] = float("nan")
            fig = quality_latency(
                shown, current={x: v[x], "quality": v.quality}, x=x, current_label="verifier alone"
            )
            fig.update_layout(
                title=f"T = {temp:g}: quality vs {x.replace('_', ' ')} (x marks the verifier alone)"
            )
            parts.append(
                fig.to_html(full_html=False, include_plotlyjs="inline" if first else False)
            )
            first = False
    import html as _html

    return f"""<!doctype html><html><head><meta charset="utf-8"><title>speccascade bench</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 6px;font-size:13px}}</style></head><body>
<h1>speccascade quality-latency benchmark</h1>
<pre>{_html.escape(json.dumps(meta, indent=1, default=str))}</pre>
<h2>Targets</h2><pre>{_html.escape(json.dumps(targets, indent=1, default=str))}</pre>
<h2>Trade-off table (paper's Table 2 shape)</h2>{table.round(3).to_html(index=False)}
<h2>Curves</h2>{"".join(parts)}
<h2>All configurations</h2>{agg.drop(columns=[]).round(4).to_html(index=False)}
</body></html>"""


def report_markdown(agg: pd.DataFrame, table: pd.DataFrame, targets: dict, meta: dict) -> str:
    """The tables of BENCHMARKS.md, straight from a run."""

    def cell(x) -> str:
        if isinstance(x, float):
            return "" if x != x else f"{x:.3f}"
        return "" if x is None else str(x).replace("|", "\\|")

    def fmt(df: pd.DataFrame) -> str:  # pandas' to_markdown needs tabulate; this is enough
        if not len(df):
            return "(none)"
        rows = [list(map(str, df.columns)), ["---"] * len(df.columns)]
        rows += [[cell(x) for x in r] for r in df.itertuples(index=False)]
        return "\n".join("| " + " | ".join(r) + " |" for r in rows)

    lines = ["## Machine and run", "", fmt(pd.DataFrame(list(meta.items()), columns=["setting", "value"])),
             "", "## Trade-off table (paper's Table 2 shape)", "",
             "(a) latency reduction relative to the verifier alone at the verifier's quality; "
             "(b) the best quality reachable without exceeding the verifier's latency.", "",
             fmt(table), ""]  # fmt: skip
    cols = ["family", "alpha", "gamma", "quality", "agreement", "relative_latency",
            "verifier_calls_per_token", "acceptance_rate", "mean_accepted_length", "wall_s",
            "peak_mb"]  # fmt: skip
    for temp in sorted(agg.temperature.unique()):
        lines += [f"## All configurations, T = {temp:g}", "",
                  fmt(agg[agg.temperature == temp][cols]), ""]  # fmt: skip
    lines += ["## Targets", "", "```json", json.dumps(targets, indent=1, default=str), "```", ""]
    return "\n".join(lines)

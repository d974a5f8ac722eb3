"""Side-by-side runs: compare every method on one prompt, sweep alpha for each rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .engine import generate
from .models import ModelPair
from .quality import rouge_l
from .rules import RULES
from .trace import Trace

BASELINES = (
    "verifier",
    "drafter",
    "seq_cascade",
    "token_cascade",
    "speculative",
    "lossy_speculative",
    "bild",
)


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
    **settings,
) -> pd.DataFrame:
    """Quality and cost over an alpha grid for each variant, on (prompt, reference) pairs.

    Quality is ROUGE-L against the reference, or against the verifier's own answer to the same
    prompt where there is none. Latency is relative to the verifier alone on the same prompts."""
    settings = {k: v for k, v in settings.items() if k not in ("method", "rule", "alpha")}
    verifier = [generate(pair, p, method="verifier", **settings) for p, _ in prompts]
    refs = [ref if ref is not None else tr.text for (_, ref), tr in zip(prompts, verifier)]
    v_wall = sum(t.summary.wall_s for t in verifier)
    jobs = [(v, a) for v in variants for a in alpha_grid(v.rule_name, n_alpha)]
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

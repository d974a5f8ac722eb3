"""Side-by-side runs for the app and the CLI: every method on one prompt (`compare`), and
quality and cost over an alpha grid for each rule (`sweep`). The timed benchmark harness is
bench.py; its report is report.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from speccascade.analysis import speed
from speccascade.analysis.quality import fact_hits, rouge_l, states_facts
from speccascade.core.engine import CASCADE, METHOD_REGISTRY, Settings, generate
from speccascade.core.pair import ModelPair
from speccascade.core.rules import RULES
from speccascade.core.trace import Trace

# The paper's baselines (the rule zoo's later rules are compared at matched rates in zoo.py).
BASELINES = tuple(m.name for m in METHOD_REGISTRY.values() if not m.rules and not m.zoo)
# Methods whose fixed rule has an alpha to sweep (the cascade is swept per rule instead).
SWEPT = tuple(
    m.name for m in METHOD_REGISTRY.values() if m.rule and RULES[m.rule].has_alpha and not m.zoo
)


@dataclass(frozen=True)
class Variant:
    """One method (and rule) to run; `label` names it in tables and plots."""

    method: str
    rule: str | None = None

    @classmethod
    def cascade(cls, rule: str) -> Variant:
        """The speculative cascade with `rule`."""
        return cls(CASCADE, rule)

    @property
    def label(self) -> str:
        m = METHOD_REGISTRY.get(self.method)  # bench also labels its HF baselines
        return f"{self.method}/{self.rule}" if m and m.rules else self.method

    @property
    def rule_name(self) -> str | None:
        r = METHOD_REGISTRY[self.method].target_rule(self.rule)
        return r.name if r else None

    def settings(self, base: Settings, **changes) -> Settings:
        """`base` running this variant's method and rule."""
        return replace(base, method=self.method, rule=self.rule, **changes)


def compare_variants(rule: str) -> list[Variant]:
    return [Variant(m) for m in BASELINES] + [Variant.cascade(rule)]


def compare(
    pair: ModelPair,
    prompt: str | list[int],
    variants: Sequence[Variant],
    reference: str | None = None,
    settings: Settings | None = None,
    facts: Sequence[str] = (),
    rounds: int = 1,
    budget_s: float = float("inf"),
    **changes,
) -> Iterator[tuple[Variant, Trace, pd.DataFrame]]:
    """Run each variant on the same prompt and settings (`settings` with `changes`; each
    variant sets the method and rule, and keeps the settings' alpha only where it runs the
    same rule: the others use their own rule's default alpha). The verifier runs first: it
    is the yardstick for speed-up and, without a reference, for quality. With `facts` (the
    question's key facts, see quality.py) each row also gets the share of them its answer
    states: a fast answer that misses them is wrong.

    One run on a busy machine is a noisy clock: with `rounds` > 1 every variant runs again
    in further interleaved rounds, each started only while the rounds so far say it ends
    within `budget_s`, and a row's time is the median of its runs (`runs`: how many; a run
    is seeded: its tokens are the first run's). Yields each run and the table so far."""
    common = replace(settings or Settings(), **changes)
    order = sorted(variants, key=lambda v: v.method != "verifier")
    if order[0].method != "verifier":
        order.insert(0, Variant("verifier"))
    own = replace(common, alpha=None)  # a variant with another rule runs at that rule's default
    target = common.target_rule
    jobs = [(v, common if target and v.rule_name == target.name else own) for v in order]
    traces: dict[Variant, Trace] = {}
    walls: dict[Variant, list[float]] = {}
    start = time.perf_counter()
    for r in range(max(1, rounds)):
        if r and (time.perf_counter() - start) * (r + 1) / r > budget_s:
            break
        for v, s in jobs:
            tr = generate(pair, prompt, v.settings(s))
            traces.setdefault(v, tr)
            walls.setdefault(v, []).append(tr.summary.wall_s)
            yield v, tr, _table(traces, walls, reference, facts)


def _table(
    traces: dict[Variant, Trace],
    walls: dict[Variant, list[float]],
    reference: str | None,
    facts: Sequence[str],
) -> pd.DataFrame:
    """One row per variant run so far (the verifier's first), timed by its median run."""
    first = next(iter(traces))
    base = traces[first]
    rows = []
    for v, tr in traces.items():
        s, wall = tr.summary, speed.median_wall(walls[v])
        rows.append(
            {
                "method": v.label,
                "text": tr.text,
                "tokens": s.new_tokens,
                "wall_s": wall,
                "runs": len(walls[v]),
                "speedup": speed.speedup(walls[first], walls[v]),
                "verifier_calls_per_token": s.verifier_calls_per_token,
                "acceptance_rate": s.acceptance_rate,
                "quality_vs_verifier": rouge_l(tr.text, base.text),
                "quality_vs_reference": rouge_l(tr.text, reference) if reference else None,
                "key_facts": float(np.mean(fact_hits(tr.text, facts))) if facts else None,
            }
        )
    return pd.DataFrame(rows)


def alpha_grid(rule: str, n: int = 6) -> list[float]:
    """n alphas spanning the rule's slider, SD end to drafter-only end."""
    lo, hi = RULES[rule].slider
    return [round(float(a), 4) for a in np.linspace(lo, hi, n)]


def sweep(
    pair: ModelPair,
    prompts: Sequence[tuple[str, str | None]],
    variants: Sequence[Variant],
    n_alpha: int = 6,
    progress: Callable[[float, str | None, float | None], None] | None = None,
    extra: Sequence[tuple[Variant, float]] = (),
    settings: Settings | None = None,
    facts: Sequence[Sequence[str]] | None = None,
    **changes,
) -> pd.DataFrame:
    """Quality and cost over an alpha grid for each variant, on (prompt, reference) pairs,
    plus any `extra` (variant, alpha) points (e.g. the setting a user is looking at).

    Quality is ROUGE-L against the reference, or against the verifier's own answer to the same
    prompt where there is none. Latency is relative to the verifier alone on the same prompts.
    With `facts` (one tuple of key facts per prompt) quality is key-fact accuracy instead: the
    share of answers that state all their facts, whatever the wording.
    Runs use `settings` with `changes`; each job sets the method, rule and alpha.
    `progress(fraction done, variant label, alpha)` is called before each job, and with
    (1.0, None, None) at the end: data, which the caller words for its readers."""
    common = replace(settings or Settings(), **changes)
    verifier = [
        generate(pair, p, Variant("verifier").settings(common, alpha=None)) for p, _ in prompts
    ]
    refs = [ref if ref is not None else tr.text for (_, ref), tr in zip(prompts, verifier)]

    def quality(traces: Sequence[Trace]) -> float:
        if facts is not None:
            return float(np.mean([states_facts(t.text, f) for t, f in zip(traces, facts)]))
        return _mean_quality(traces, refs)

    v_wall = sum(t.summary.wall_s for t in verifier)
    jobs = [(v, a) for v in variants for a in alpha_grid(v.rule_name, n_alpha)]
    jobs += [job for job in extra if job not in jobs]
    rows = [
        {
            "method": "verifier",
            "alpha": None,
            "quality": quality(verifier),
            "wall_s": v_wall,
            "relative_latency": 1.0,
            "verifier_calls_per_token": _calls_per_token(verifier),
            "acceptance_rate": None,
        }
    ]
    for k, (v, alpha) in enumerate(jobs):
        if progress:
            progress(k / len(jobs), v.label, alpha)
        traces = [generate(pair, p, v.settings(common, alpha=alpha)) for p, _ in prompts]
        drafted = sum(t.summary.drafted for t in traces)
        rows.append(
            {
                "method": v.label,
                "alpha": alpha,
                "quality": quality(traces),
                "wall_s": sum(t.summary.wall_s for t in traces),
                "relative_latency": sum(t.summary.wall_s for t in traces) / v_wall,
                "verifier_calls_per_token": _calls_per_token(traces),
                "acceptance_rate": sum(t.summary.accepted for t in traces) / drafted
                if drafted
                else None,
            }
        )
    if progress:
        progress(1.0, None, None)
    return pd.DataFrame(rows)


def _mean_quality(traces: Sequence[Trace], refs: Sequence[str]) -> float:
    return float(np.mean([rouge_l(t.text, r) for t, r in zip(traces, refs)]))


def _calls_per_token(traces: Sequence[Trace]) -> float:
    tokens = sum(t.summary.new_tokens for t in traces)
    return sum(t.summary.verifier_calls for t in traces) / tokens if tokens else 0.0


class SweepTooLarge(ValueError):
    """Even the smallest sweep would pass the budget; `tokens` is what it would need."""

    def __init__(self, message: str, tokens: int):
        super().__init__(message)
        self.tokens = tokens


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will run, scaled to fit a token budget (see `plan_sweep`). `scaled` lists
    what was cut, as (what, from, to), so the caller can say so."""

    prompts: tuple[tuple[str, str | None], ...]
    variants: tuple[Variant, ...]
    n_alpha: int
    max_new_tokens: int
    scaled: tuple[tuple[str, int, int], ...] = ()

    @property
    def runs(self) -> int:
        """Generations: per prompt, the verifier, every (variant, alpha) and the extra point."""
        return len(self.prompts) * (2 + self.n_alpha * len(self.variants))

    @property
    def tokens(self) -> int:
        return self.runs * self.max_new_tokens


def plan_sweep(
    prompts: Sequence[tuple[str, str | None]],
    variants: Sequence[Variant],
    n_alpha: int,
    max_new_tokens: int,
    budget: int,
    min_alpha: int = 3,
    order: Sequence[str] = ("n_alpha", "variants", "prompts"),
) -> SweepPlan:
    """The largest sweep within `budget` generated tokens: cut in `order` (by default fewer
    alphas, down to `min_alpha`, then the last variants, then the last prompts), so put the
    variants and prompts that matter most first. Raises SweepTooLarge only when one prompt,
    `min_alpha` alphas and one variant would not fit (its `tokens` says what they need)."""
    plan = SweepPlan(tuple(prompts), tuple(variants), n_alpha, max_new_tokens)
    cuts = []

    def fits(p: SweepPlan) -> bool:
        return p.tokens <= budget

    for field_name in order:
        if fits(plan):
            break
        before = _size(plan, field_name)
        floor = min(before, min_alpha) if field_name == "n_alpha" else 1
        size = before
        while size > floor and not fits(plan):
            size -= 1
            plan = _resized(plan, field_name, size)
        if size != before:
            cuts.append((field_name, before, size))
    if not fits(plan):
        raise SweepTooLarge(
            f"even one prompt, {plan.n_alpha} alphas and one method need "
            f"{plan.tokens:,} tokens; the budget is {budget:,}",
            plan.tokens,
        )
    return replace(plan, scaled=tuple(cuts))


def _size(plan: SweepPlan, field_name: str) -> int:
    value = getattr(plan, field_name)
    return value if isinstance(value, int) else len(value)


def _resized(plan: SweepPlan, field_name: str, size: int) -> SweepPlan:
    value = getattr(plan, field_name)
    return replace(plan, **{field_name: size if isinstance(value, int) else value[:size]})

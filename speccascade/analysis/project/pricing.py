"""Pricing a recorded run under a cost model: what the run did (`Workload`), its projected
latency (`Projection`), the speed-up against the verifier alone, and the acceptance at which
speculation stops paying (`breakeven_acceptance`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from speccascade.analysis.project.profiles import CostModel
from speccascade.core.rules import RULES
from speccascade.core.trace import RoundRecord, Trace, expected_tokens_per_call

Basis = Literal["recorded", "exact", "estimate"]


@dataclass(frozen=True)
class Workload:
    """The forwards a run makes, grouped by how many new tokens each one processes, plus its
    rounds and drafted tokens. Counts may be fractional when estimated."""

    drafter: Mapping[int, float]
    verifier: Mapping[int, float]
    rounds: float
    drafted: float

    @property
    def drafter_calls(self) -> float:
        return sum(self.drafter.values())

    @property
    def verifier_calls(self) -> float:
        return sum(self.verifier.values())

    @property
    def verifier_tokens(self) -> float:
        """Tokens the verifier processed in all (prompt included)."""
        return sum(n * c for n, c in self.verifier.items())


def workload_of_rounds(rounds: Sequence[RoundRecord], prompt_tokens: int) -> Workload:
    """Replay each model's KV-cache bookkeeping over recorded rounds to find how many new
    tokens each forward processed. A model's first call in a round takes every token it has
    not seen (the prompt once, then the tokens emitted since its last call), its later calls
    one token each (the previous draft); after the round its cache keeps what survived:

    * the verifier scores its pending tokens plus the round's drafts in one call, and keeps
      the accepted drafts (rejected ones are cropped; the round's last token stays pending);
    * the drafter keeps its drafts up to the accepted ones (min(calls - 1, accepted): its last
      draft is never fed back unless a bonus forward needed its q).

    This reproduces every loop in engine.py (autoregressive, speculative with or without the
    bonus forward, token cascade, sequence cascade) from the RoundRecord fields alone."""
    drafter: Counter[int] = Counter()
    verifier: Counter[int] = Counter()
    emitted = seen_d = seen_v = 0
    for r in rounds:
        before = prompt_tokens + emitted
        if r.drafter_calls:
            drafter[max(1, before - seen_d)] += 1
            drafter[1] += r.drafter_calls - 1
            seen_d = before + min(r.drafter_calls - 1, r.accepted)
        if r.verifier_calls:
            verifier[max(1, before - seen_v + r.drafted)] += 1
            verifier[1] += r.verifier_calls - 1  # never happens today: one token each
            seen_v = before + r.accepted
        emitted += r.emitted
    return Workload(
        drafter={n: c for n, c in drafter.items() if c},
        verifier={n: c for n, c in verifier.items() if c},
        rounds=len(rounds),
        drafted=sum(r.drafted for r in rounds),
    )


def verifier_alone_workload(prompt_tokens: int, new_tokens: int) -> Workload:
    """Decoding `new_tokens` with the verifier alone: a prefill, then one token per forward."""
    calls = {prompt_tokens: 1.0}
    if new_tokens > 1:
        calls[1] = calls.get(1, 0.0) + new_tokens - 1
    return Workload(drafter={}, verifier=calls, rounds=max(1, new_tokens), drafted=0)


@dataclass(frozen=True)
class Projection:
    """A run's latency under a cost model: a projection, never a measurement (`kind`)."""

    method: str
    rule: str | None
    gamma: int
    prompt_tokens: int
    new_tokens: int
    rounds: float
    drafter_calls: float
    verifier_calls: float
    verifier_tokens: float
    drafter_ms: float
    verifier_ms: float
    overhead_ms: float
    profile: str  # the cost model's name
    basis: Basis  # recorded rounds, or re-simulated exactly, or estimated
    measured_s: float | None = None  # the trace's own wall time, where there is one
    reason: str | None = None  # why an estimate is not exact (see Replay.reason)
    kind: Literal["projection"] = "projection"

    @property
    def total_ms(self) -> float:
        return self.drafter_ms + self.verifier_ms + self.overhead_ms

    @property
    def total_s(self) -> float:
        return self.total_ms / 1e3

    @property
    def error(self) -> float | None:
        """(projected - measured) / measured, where the run was timed."""
        if not self.measured_s:
            return None
        return (self.total_s - self.measured_s) / self.measured_s


def price(
    work: Workload,
    cost: CostModel,
    *,
    method: str,
    rule: str | None,
    gamma: int,
    prompt_tokens: int,
    new_tokens: int,
    basis: Basis,
    measured_s: float | None = None,
    reason: str | None = None,
) -> Projection:
    """Each forward at its model's cost for its token count, plus the overheads."""
    return Projection(
        method=method,
        rule=rule,
        gamma=gamma,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        rounds=work.rounds,
        drafter_calls=work.drafter_calls,
        verifier_calls=work.verifier_calls,
        verifier_tokens=work.verifier_tokens,
        drafter_ms=sum(cost.drafter.ms(n) * c for n, c in work.drafter.items()),
        verifier_ms=sum(cost.verifier.ms(n) * c for n, c in work.verifier.items()),
        overhead_ms=work.rounds * cost.round_overhead_ms + work.drafted * cost.draft_overhead_ms,
        profile=cost.name,
        basis=basis,
        measured_s=measured_s,
        reason=reason,
    )


def project(trace: Trace, cost: CostModel) -> Projection:
    """The trace's own rounds priced under `cost`. The verifier's first call also reads the
    prompt (prefill): it is priced as one forward over prompt + drafted tokens, from the
    model's line or table, like every other call."""
    s = trace.summary
    return price(
        workload_of_rounds(trace.rounds, s.prompt_tokens),
        cost,
        method=s.method,
        rule=s.rule,
        gamma=s.gamma,
        prompt_tokens=s.prompt_tokens,
        new_tokens=s.new_tokens,
        basis="recorded",
        measured_s=s.wall_s,
    )


def verifier_alone(prompt_tokens: int, new_tokens: int, cost: CostModel) -> Projection:
    """The yardstick: the same number of tokens decoded by the verifier alone."""
    return price(
        verifier_alone_workload(prompt_tokens, new_tokens),
        cost,
        method="verifier",
        rule=None,
        gamma=1,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        basis="exact",
    )


def speedup(proj: Projection, cost: CostModel) -> float:
    """Projected speed-up over the verifier alone writing as many tokens after the same
    prompt (> 1: faster)."""
    base = verifier_alone(proj.prompt_tokens, proj.new_tokens, cost).total_ms
    return base / proj.total_ms if proj.total_ms > 0 else math.inf


def project_methods(traces: Mapping[str, Trace], cost: CostModel) -> list[dict]:
    """One record per trace (keyed by its label): projected seconds, the verifier alone's
    projected seconds for the same tokens, the projected speed-up, the measured wall time and
    the measured speed-up where a verifier-alone trace is among them. DataFrame-able."""
    measured_base = next(
        (tr.summary.wall_s / tr.summary.new_tokens for tr in traces.values() if _is_verifier(tr)),
        None,
    )
    rows = []
    for label, tr in traces.items():
        proj = project(tr, cost)
        base = verifier_alone(proj.prompt_tokens, proj.new_tokens, cost)
        measured_speedup = None
        if measured_base and tr.summary.wall_s > 0:
            measured_speedup = measured_base * tr.summary.new_tokens / tr.summary.wall_s
        rows.append(
            {
                "label": label,
                "method": proj.method,
                "rule": proj.rule,
                "gamma": proj.gamma,
                "new_tokens": proj.new_tokens,
                "drafter_calls": proj.drafter_calls,
                "verifier_calls": proj.verifier_calls,
                "projected_s": proj.total_s,
                "verifier_alone_s": base.total_s,
                "speedup": base.total_ms / proj.total_ms if proj.total_ms else math.inf,
                "measured_s": proj.measured_s,
                "measured_speedup": measured_speedup,
                "error": proj.error,
                "basis": proj.basis,
                **profile_fields(cost),
                "kind": proj.kind,
            }
        )
    return rows


def profile_fields(cost: CostModel) -> dict:
    """What a record says about the cost model it was priced with: its name, and the i18n
    key and values a figure titles it with."""
    return {
        "profile": cost.name,
        "profile_key": cost.title.key,
        "profile_values": dict(cost.title.values),
    }


def _is_verifier(trace: Trace) -> bool:
    return trace.summary.method == "verifier" and trace.summary.new_tokens > 0


def steady_speedup(b: float, gamma: int, cost: CostModel, rule: str | None = "token_v3") -> float:
    """Projected speed-up over the verifier alone per token in steady state (prefill left
    out), with i.i.d. per-position acceptance b: fact 5's ideal with this cost model's forward
    prices and overheads."""
    bonus_q = bool(rule and RULES[rule].needs_bonus_q)
    full = b**gamma
    d1 = cost.drafter.ms(1)
    round_ms = (
        cost.verifier.ms(gamma + 1)
        + gamma * d1
        + (full * d1 if bonus_q else full * (cost.drafter.ms(2) - d1))
        + cost.round_overhead_ms
        + gamma * cost.draft_overhead_ms
    )
    per_token = round_ms / expected_tokens_per_call(b, gamma)
    return (cost.verifier.ms(1) + cost.round_overhead_ms) / per_token


def breakeven_acceptance(
    cost: CostModel, gamma: int, rule: str | None = "token_v3", tol: float = 1e-6
) -> float | None:
    """The per-position acceptance b at which the projected speed-up over the verifier alone
    is 1 (bisection; the speed-up grows with b). 0.0 when even b = 0 is faster, None when even
    b = 1 is not."""
    f = lambda b: steady_speedup(b, gamma, cost, rule) - 1.0  # noqa: E731
    if f(1.0) < 0:
        return None
    if f(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2

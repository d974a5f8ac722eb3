"""Another draft window gamma for a recorded run: an exact re-simulation at T = 0 where every
position it needs was recorded, else an estimate from the per-position acceptance, labelled
which; the best gamma under a cost model."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from speccascade.analysis.project.pricing import (
    Basis,
    Projection,
    Workload,
    breakeven_acceptance,
    price,
    profile_fields,
    project,
    speedup,
    workload_of_rounds,
)
from speccascade.analysis.project.profiles import CostModel
from speccascade.core.engine import METHOD_REGISTRY
from speccascade.core.errors import SettingsError
from speccascade.core.rules import RULES
from speccascade.core.trace import RoundRecord, Trace


def position_outcomes(trace: Trace) -> list[bool | None]:
    """Per emitted position: would a greedy draft there be kept (True) or replaced (False)?
    None where the trace does not say.

    Drafted positions say it directly (accepted / resampled). A bonus position had no draft,
    but where the bonus forward recorded the drafter's q there (every rule except SD), the
    greedy draft would have been the drafter's argmax and it is kept iff that is the token the
    run emitted, i.e. q(token) = max q. SD's bonus positions, and single-model runs, say
    nothing."""
    out: list[bool | None] = []
    for t in trace.tokens:
        if t.source == "accepted":
            out.append(True)
        elif t.source == "resampled":
            out.append(False)
        elif t.source == "bonus" and t.q is not None and t.max_q is not None:
            out.append(t.q >= t.max_q)
        else:
            out.append(None)
    return out


def outcomes_past_end(trace: Trace) -> list[bool]:
    """Outcomes of drafts beyond the end of the text, from the last round. When EOS or a stop
    string ends the text inside a window, the drafts after it were still tested (the round's
    `accepted` counts them) and only then cut: they were kept up to `accepted` and the next
    one rejected. At T = 0 they are as gamma-independent as the rest (each is a function of
    the prefix, here the text plus the kept drafts)."""
    if not trace.rounds:
        return []
    last = trace.rounds[-1]
    start = trace.summary.new_tokens - last.emitted
    kept = start + last.accepted - trace.summary.new_tokens
    if last.drafted == 0 or kept < 0:
        return []
    return [True] * kept + ([False] if last.accepted < last.drafted else [])


def acceptance_per_position(trace: Trace) -> float | None:
    """b of docs/method.md fact 5: the share of *tested* drafts that were kept. A window stops
    at its first rejection, so kept / drafted would undercount b; kept / (kept + rejected)
    is the geometric-law estimate."""
    kept = sum(t.source == "accepted" for t in trace.tokens)
    rejected = sum(t.source == "resampled" for t in trace.tokens)
    return kept / (kept + rejected) if kept + rejected else None


@dataclass(frozen=True)
class Replay:
    """The trace's run re-played at another draft window.

    `basis` is "exact" when every count follows from recorded outcomes; otherwise "estimate",
    with `reason`: `temperature` (T > 0: draws change with gamma), `unrecorded` (a new window
    drafts at a position the run never tested, e.g. SD's bonus tokens), `final_round` (only the
    last round is uncertain: whether drafts past the end of the text were kept decides one
    drafter forward, or the token budget is unknown). `drafter_calls_range` bounds the drafter
    calls where only the last round is uncertain."""

    gamma: int
    work: Workload
    basis: Basis
    reason: str | None
    rounds: tuple[RoundRecord, ...] = ()
    drafter_calls_range: tuple[float, float] | None = None


_BUDGET_STOPS = ("max_new_tokens", "context")


def resimulate(trace: Trace, gamma: int, max_new_tokens: int | None = None) -> Replay:
    """What the trace's run would have done with draft window `gamma`.

    At T = 0 the emitted text of SD and every cascade rule does not depend on gamma: whether a
    position's draft is kept is a function of the prefix. So windows of any size can be
    re-played over the recorded per-position outcomes, exactly while every position they draft
    at has one. Otherwise the run is estimated: positions without a recorded outcome (all of
    them at T > 0) keep a draft with the run's per-position acceptance rate b (i.i.d.,
    docs/method.md fact 5), the others as recorded (`expected_workload`).
    `max_new_tokens` is the run's token budget; without it, a
    run that stopped on its budget had exactly its tokens, and any other had at least as many
    as its rounds drafted up to (a larger last window may then be `final_round` uncertain)."""
    s = trace.summary
    if gamma < 1:
        raise SettingsError(f"gamma must be >= 1; got {gamma}")
    row = METHOD_REGISTRY.get(s.method)
    if row is None or not row.drafts:
        raise SettingsError(f"{s.method} does not draft: there is no window to change")
    bonus_q = bool(s.rule and RULES[s.rule].needs_bonus_q)
    if s.temperature != 0:
        return _estimate(trace, gamma, bonus_q, "temperature", max_new_tokens)
    budget = max_new_tokens
    if budget is None and s.stop_reason in _BUDGET_STOPS:
        budget = s.new_tokens
    outcomes = position_outcomes(trace) + outcomes_past_end(trace)
    played = _replay(outcomes, s.new_tokens, gamma, budget, _budget_floor(trace), bonus_q)
    if played is None:
        return _estimate(trace, gamma, bonus_q, "unrecorded", budget)
    rounds, extra, past, budget_unsure = played
    work = workload_of_rounds(rounds, s.prompt_tokens)
    lo = sum(r.drafter_calls for r in rounds)
    if not extra and not budget_unsure:
        return Replay(gamma, work, "exact", None, tuple(rounds), (lo, lo))
    # only the last round is uncertain: one more drafter forward iff its `past` drafts beyond
    # the end of the text were all kept, probability b^past under fact 5
    b = acceptance_per_position(trace) or 0.0
    drafter = dict(work.drafter)
    drafter[1] = drafter.get(1, 0.0) + extra * b**past
    work = replace(work, drafter=drafter)
    return Replay(gamma, work, "estimate", "final_round", tuple(rounds), (lo, lo + extra))


def _budget_floor(trace: Trace) -> int:
    """The least token budget the run can have had: its tokens, and every round drafted no
    more than the budget left it."""
    floor = emitted = 0
    for r in trace.rounds:
        floor = max(floor, emitted + r.drafted)
        emitted += r.emitted
    return max(floor, trace.summary.new_tokens)


def _replay(
    outcomes: list[bool | None],
    n: int,
    gamma: int,
    budget: int | None,
    floor: int,
    bonus_q: bool,
) -> tuple[list[RoundRecord], int, int, bool] | None:
    """Rounds of window `gamma` over per-position outcomes (`outcomes[t]` for the text's n
    positions, then any known beyond its end), as engine._speculative plays them:
    draft g = min(gamma, budget left), stop at the first rejection (its replacement is
    emitted), or keep them all and add a bonus token while budget remains (with a drafter
    forward for its q where the rule needs one). The text ends after n tokens (EOS or a stop
    string cut the last round short). None when a window needs an unrecorded position inside
    the text. Otherwise the rounds and what is uncertain about the last one: `extra` = 1 when
    it may have made one more drafter forward (a bonus after its `past` drafts beyond the end
    of the text, whose outcomes are unknown, were all kept), and whether an unknown budget
    (`budget` None, only `floor` known) may have shortened its window."""
    rounds: list[RoundRecord] = []
    s = extra = past = 0
    budget_unsure = False
    while s < n:
        if budget is None:  # B >= floor: the window is gamma unless B cut it
            g = gamma
            budget_unsure |= s + gamma > floor
            bonus_sure, bonus_may = s + gamma < floor, True
        else:
            g = min(gamma, budget - s)
            bonus_sure = bonus_may = g < budget - s
        k = None
        for i in range(min(g, n - s)):
            o = outcomes[s + i]
            if o is None:
                return None
            if not o:
                k = i
                break
        if k is not None:  # rejected at k: k kept, the replacement emitted
            accepted, emitted, calls = k, k + 1, g
        elif s + g <= n:  # the whole window lies in the text and is kept
            # a bonus forward at the very end of the text is uncertain under an unknown budget
            budget_unsure |= budget is None and bonus_q and not bonus_sure and s + g == n
            accepted, emitted, calls = g, g + int(bonus_may), g + int(bonus_may and bonus_q)
        else:  # kept up to the end of the text; the drafts past it decide the bonus
            tail = [outcomes[t] if t < len(outcomes) else None for t in range(n, s + g)]
            accepted, emitted, calls = n - s, n - s, g
            if False not in tail and None not in tail:  # all kept: the bonus follows
                calls += int(bonus_q and bonus_may)
                budget_unsure |= budget is None and bonus_q and not bonus_sure
            elif False not in tail:  # maybe all kept: one bonus forward more, or not
                past = tail.count(None)
                extra = int(bonus_q and bonus_may)
        emitted = min(emitted, n - s)
        rounds.append(RoundRecord(len(rounds), 0.0, 0.0, 0.0, g, accepted, emitted, calls, 1))
        s += emitted
    return rounds, extra, past, budget_unsure


def expected_workload(
    keep: Sequence[float],
    prompt_tokens: int,
    gamma: int,
    bonus_q: bool,
    past: float,
    budget: int | None = None,
    after: Sequence[float] = (),
) -> Workload:
    """The expected forwards of a speculative run that emits len(keep) tokens with window
    gamma, where a draft at position t is kept with probability keep[t] (1 or 0 where the
    trace recorded it, b where it did not) and past the end of the text with probability
    `after[t - n]` where the last round recorded it, else `past`. A round drafts g = min(gamma, budget left) tokens and ends at its first rejection
    (k kept, the replacement emitted) or keeps all and adds a bonus token (with the drafter's
    bonus forward where the rule needs one; for SD, the next round's first drafter forward
    then reads two tokens). Computed forward over where rounds start, so the last, partial
    round counts as it would (tokens / E[tokens per round] would miss it)."""
    n = len(keep)
    start = [0.0] * (n + 1)  # probability that a round starts at position s
    start[0] = 1.0
    drafter: Counter[int] = Counter()
    verifier: Counter[int] = Counter()
    rounds = drafted = 0.0
    for s in range(n):
        v = start[s]
        if v == 0:
            continue
        left = math.inf if budget is None else budget - s
        g = int(min(gamma, left))
        rounds += v
        drafted += v * g
        verifier[(prompt_tokens if s == 0 else 1) + g] += v
        drafter[prompt_tokens if s == 0 else 1] += v
        drafter[1] += v * (g - 1)
        alive = 1.0  # probability that every draft so far was kept
        for i in range(g):
            t = s + i
            if t >= n:  # drafts past the end of the text: they only decide the bonus
                alive *= math.prod(
                    after[u - n] if u - n < len(after) else past for u in range(t, s + g)
                )
                break
            if t + 1 < n:
                start[t + 1] += v * alive * (1 - keep[t])
            alive *= keep[t]
        bonus = g < left
        if alive and bonus and bonus_q:
            drafter[1] += v * alive
        nxt = s + g + int(bonus)
        if alive and nxt < n:
            start[nxt] += v * alive
            if bonus and not bonus_q:  # SD: the last draft and the bonus token, together
                drafter[1] -= v * alive
                drafter[2] += v * alive
    return Workload(
        drafter={k: c for k, c in drafter.items() if c > 1e-12},
        verifier={k: c for k, c in verifier.items() if c > 1e-12},
        rounds=rounds,
        drafted=drafted,
    )


def _estimate(
    trace: Trace, gamma: int, bonus_q: bool, reason: str, budget: int | None = None
) -> Replay:
    """Fact 5's model where the trace is silent: a draft is kept with the run's per-position
    acceptance b wherever no outcome was recorded (every position at T > 0; SD's bonus
    positions at T = 0), and as recorded elsewhere (`expected_workload`)."""
    s = trace.summary
    b = acceptance_per_position(trace)
    b = 0.0 if b is None else b
    if reason == "temperature":
        keep = [b] * s.new_tokens
    else:
        keep = [b if o is None else float(o) for o in position_outcomes(trace)]
    after = [float(o) for o in outcomes_past_end(trace)] if reason != "temperature" else []
    work = expected_workload(keep, s.prompt_tokens, gamma, bonus_q, b, budget, after)
    return Replay(gamma, work, "estimate", reason)


def project_gamma(
    trace: Trace, gamma: int, cost: CostModel, max_new_tokens: int | None = None
) -> Projection:
    """The trace's run re-played at window `gamma` and priced."""
    r = resimulate(trace, gamma, max_new_tokens)
    s = trace.summary
    return price(
        r.work,
        cost,
        method=s.method,
        rule=s.rule,
        gamma=gamma,
        prompt_tokens=s.prompt_tokens,
        new_tokens=s.new_tokens,
        basis=r.basis,
        reason=r.reason,
    )


@dataclass(frozen=True)
class GammaPoint:
    gamma: int
    projection: Projection
    speedup: float  # projected, over the verifier alone

    @property
    def basis(self) -> Basis:
        return self.projection.basis


def gamma_curve(
    trace: Trace, cost: CostModel, max_gamma: int = 8, max_new_tokens: int | None = None
) -> list[GammaPoint]:
    """Projected speed-up of the trace's run at every gamma in 1..max_gamma."""
    out = []
    for g in range(1, max_gamma + 1):
        proj = project_gamma(trace, g, cost, max_new_tokens)
        out.append(GammaPoint(g, proj, speedup(proj, cost)))
    return out


def best_gamma(
    trace: Trace, cost: CostModel, max_gamma: int = 8, max_new_tokens: int | None = None
) -> GammaPoint:
    """The gamma with the shortest projected latency (the smallest on ties)."""
    return min(
        gamma_curve(trace, cost, max_gamma, max_new_tokens),
        key=lambda p: (p.projection.total_ms, p.gamma),
    )


def best_gammas(
    traces: Mapping[str, Trace],
    cost: CostModel,
    max_gamma: int = 8,
    max_new_tokens: int | None = None,
) -> list[dict]:
    """Per drafting trace (one per rule, say): the recorded gamma, the best gamma under
    `cost`, its projected speed-up and whether it is exact. Records, DataFrame-able."""
    rows = []
    for label, tr in traces.items():
        row = METHOD_REGISTRY.get(tr.summary.method)
        if row is None or not row.drafts or not tr.summary.new_tokens:
            continue
        curve = gamma_curve(tr, cost, max_gamma, max_new_tokens)
        best = min(curve, key=lambda p: (p.projection.total_ms, p.gamma))
        recorded = speedup(project(tr, cost), cost)
        rows.append(
            {
                "label": label,
                "method": tr.summary.method,
                "rule": tr.summary.rule,
                "recorded_gamma": tr.summary.gamma,
                "recorded_speedup": recorded,
                "best_gamma": best.gamma,
                "best_speedup": best.speedup,
                "best_s": best.projection.total_s,
                "basis": best.basis,
                "reason": best.projection.reason,
                "acceptance": acceptance_per_position(tr),
                "breakeven_acceptance": breakeven_acceptance(cost, best.gamma, tr.summary.rule),
                "curve": [(p.gamma, p.speedup, p.basis) for p in curve],
                **profile_fields(cost),
                "kind": "projection",
            }
        )
    return rows

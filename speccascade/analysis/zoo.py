"""The rule zoo compared at matched deferral rates.

Each acceptance rule has its own parameter (alpha, epsilon, w, T, tau), and equal values mean
nothing across rules. So for a question set, each rule is calibrated (calibrate.py) to the
same deferral rates (10%, 25%, 50% of the drafted positions replaced by the verifier), and
the rules are compared there: key-fact accuracy, verifier calls per token and wall time. The
parameter-free rules (lossless SD, block verification) and the verifier alone are measured
once, as references: at a given deferral rate, a lossy rule is worth it only where it keeps
more of the reference's accuracy for less verifier work.

Numbers only; the table and figure for people are in viz (`zoo_frame`, `zoo_figure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from speccascade.analysis.calibrate import (
    CALIBRATABLE,
    Point,
    _edge,
    check_rules,
    measure,
    point_finder,
)
from speccascade.analysis.evalsets import Example
from speccascade.core.engine import RULE_METHODS, Settings, rule_settings
from speccascade.core.errors import SettingsError
from speccascade.core.pair import ModelPair
from speccascade.core.rules import RULES

DEFAULT_RATES = (0.1, 0.25, 0.5)
# The parameter-free rules measured once, beside the verifier alone.
REFERENCES = tuple(r for r in RULE_METHODS if not RULES[r].has_alpha)


# A rule reaches a target deferral rate when the rate its calibrated parameter gave is within
# this much of it: a third of the target, at least 5 points. Bisection stops at the largest
# rate at most the target, and a rule whose deferrals jump (from 40% straight to none on a
# few questions) lands far below it: "at most 10%" was then met at 0%, which matches
# nothing. Likewise a rule whose SD end defers 30% never reaches 50%.
RATE_TOLERANCE, RATE_TOLERANCE_SHARE = 0.05, 1 / 3


def reaches(rate: float | None, target: float) -> bool:
    """Whether a measured deferral rate (None: nothing drafted, 0) is the target's, within
    RATE_TOLERANCE or RATE_TOLERANCE_SHARE of the target, whichever is larger."""
    got = rate or 0.0
    return abs(got - target) <= max(RATE_TOLERANCE, RATE_TOLERANCE_SHARE * target) + 1e-12


@dataclass(frozen=True)
class Matched:
    """One rule calibrated to one deferral rate: the most accurate parameter whose deferral
    rate is at most the target (nearest the SD end). `met` is False when even the drafter end
    defers more than that (then `point` is the SD end); rates above what the SD end itself
    reaches are met at the SD end. `reached`: the rate measured there is the target's (see
    `reaches`), so the rule is compared at the rate the table names."""

    rule: str
    rate: float
    point: Point
    met: bool

    @property
    def reached(self) -> bool:
        return self.met and reaches(self.point.deferral_rate, self.rate)


@dataclass(frozen=True)
class Zoo:
    rates: tuple[float, ...]
    verifier: Point
    references: dict[str, Point]  # sd, block
    matched: list[Matched]
    evaluations: int  # runs of the question set made
    questions: int


def evaluations_needed(rules: int, rates: int, steps: int) -> int:
    """Runs of the question set a zoo makes at most (a budget check before starting): the
    verifier and the references, then per rule both ends and `steps` bisections per rate."""
    return 1 + len(REFERENCES) + rules * (2 + rates * steps)


def zoo(
    pair: ModelPair,
    items: Sequence[Example],
    settings: Settings,
    rules: Sequence[str] = CALIBRATABLE,
    rates: Sequence[float] = DEFAULT_RATES,
    steps: int = 4,
) -> Zoo:
    """Calibrate every rule in `rules` to each deferral rate in `rates` on `items` (bisection
    with `steps` halvings; each parameter value runs once and serves every rate), and measure
    the references. `settings` gives gamma, temperature, seed, max new tokens, draft policy."""
    if not items:
        raise SettingsError("the zoo needs at least one question")
    check_rules(rules)
    bad = [r for r in rates if not 0 <= r <= 1]
    if bad or not rates:
        raise SettingsError(f"deferral rates must be in [0, 1]; got {list(rates)}")
    base = replace(settings, rule=None, alpha=None)
    verifier = measure(pair, items, replace(base, method="verifier"))
    refs = {r: measure(pair, items, replace(base, **rule_settings(r))) for r in REFERENCES}
    matched, runs = [], 1 + len(refs)
    for rule in rules:
        at = point_finder(pair, items, base, rule)
        for rate in sorted(rates):

            def ok(t: float, rate=rate, at=at) -> bool:
                return (at(t).deferral_rate or 0.0) <= rate + 1e-12

            t = _edge(ok, steps, last_true=False)
            point = at(0.0 if t is None else t)
            matched.append(Matched(rule, rate, point, t is not None))
        runs += at.cache_info().currsize
    return Zoo(tuple(sorted(rates)), verifier, refs, matched, runs, len(items))


__all__ = [
    "DEFAULT_RATES",
    "REFERENCES",
    "Matched",
    "Zoo",
    "evaluations_needed",
    "reaches",
    "zoo",
]

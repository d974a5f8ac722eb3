"""Alpha calibration: equal alphas mean different things under different rules, so find, per
rule, the alpha that meets a target stated in what users care about: at most X verifier calls
per token, at most a share Z of deferrals (drafts the verifier replaced), or at least a share
Y of the verifier's key-fact accuracy on an eval slice. Any draft-and-verify rule calibrates:
the paper's, and the rule zoo's (typical acceptance, the ensemble weight, fuzzy SD, the KL
judge), each along its own parameter, whichever direction is SD.

Bisection on the engine along each rule's alpha axis, from its speculative-decoding end
(t = 0: most verifier calls, the verifier's quality) to its drafter-alone end (t = 1). Deferrals
fall as t grows, so calls per token fall and accuracy can only drop: the predicate "meets the
target" is monotone in t and bisection finds its edge. Deterministic for a given seed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from speccascade.analysis.evalsets import Example
from speccascade.core.engine import RULE_METHODS, Settings, generate, rule_settings
from speccascade.core.errors import SettingsError
from speccascade.core.pair import ModelPair
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES
from speccascade.core.trace import Trace

# The rules calibration can move: every draft-and-verify rule with a parameter.
CALIBRATABLE = tuple(r for r in RULE_METHODS if RULES[r].has_alpha)


@dataclass(frozen=True)
class Target:
    """At most `max_calls_per_token` verifier calls per token, at most `max_deferral_rate`
    of the drafts the verifier decided on replaced by it, and/or at least
    `min_accuracy_share` of the verifier alone's key-fact accuracy on the slice."""

    max_calls_per_token: float | None = None
    min_accuracy_share: float | None = None
    max_deferral_rate: float | None = None

    def __post_init__(self) -> None:
        if (
            self.max_calls_per_token is None
            and self.min_accuracy_share is None
            and self.max_deferral_rate is None
        ):
            raise SettingsError(
                "give a target: max calls per token, max deferral rate or min accuracy share"
            )
        if self.max_calls_per_token is not None and not 0 < self.max_calls_per_token <= 1:
            raise SettingsError(
                f"max calls per token must be in (0, 1]; got {self.max_calls_per_token}"
            )
        if self.max_deferral_rate is not None and not 0 <= self.max_deferral_rate <= 1:
            raise SettingsError(
                f"max deferral rate must be in [0, 1]; got {self.max_deferral_rate}"
            )
        if self.min_accuracy_share is not None and not 0 < self.min_accuracy_share <= 1:
            raise SettingsError(
                f"min accuracy share must be in (0, 1]; got {self.min_accuracy_share}"
            )


@dataclass(frozen=True)
class Point:
    """One rule at one alpha on the slice."""

    rule: str | None
    alpha: float | None
    calls_per_token: float
    accuracy: float
    wall_s: float
    deferral_rate: float | None = None  # replaced drafts / (kept + replaced); None: no drafts


@dataclass(frozen=True)
class Calibrated:
    """A rule's calibrated alpha and what it measured there. With an accuracy target it is the
    cheapest alpha keeping the accuracy (nearest the drafter end); with only a calls target, the
    most accurate alpha within the calls (nearest the SD end). `met` is False when no alpha on
    the bisection grid meets the target (then `point` is the SD end)."""

    point: Point
    met: bool
    evaluations: int


def deferral_counts(trace: Trace) -> tuple[int, int]:
    """(positions where the verifier replaced a draft, positions decided on a draft: kept or
    replaced). Every acceptance rule, block verification included, decides each drafted
    position it reaches one way or the other, so their ratio compares across rules."""
    replaced = sum(t.source == "resampled" for t in trace.tokens)
    kept = sum(t.source == "accepted" for t in trace.tokens)
    return replaced, replaced + kept


def measure(pair: ModelPair, items: Sequence[Example], settings: Settings) -> Point:
    """Run `settings` on every item: calls per token, deferral rate, key-fact accuracy and
    wall time."""
    traces = [generate(pair, x.question, settings) for x in items]
    tokens = sum(t.summary.new_tokens for t in traces)
    replaced, decided = map(sum, zip(*(deferral_counts(t) for t in traces)))
    rule = settings.target_rule
    return Point(
        rule=rule.name if rule is not None and settings.method in RULE_METHODS.values() else None,
        alpha=settings.alpha,
        calls_per_token=sum(t.summary.verifier_calls for t in traces) / max(1, tokens),
        accuracy=sum(x.correct(t.text) for x, t in zip(items, traces)) / len(items),
        wall_s=sum(t.summary.wall_s for t in traces),
        deferral_rate=replaced / decided if decided else None,
    )


def alpha_at(rule: str, t: float) -> float:
    """The parameter a fraction t of the way from the rule's SD end (t = 0) to its
    drafter-alone end (t = 1). Between two finite ends the axis is linear; an infinite end
    (typical acceptance's epsilon = inf, the KL judge's tau = inf, OPT's +-inf) is reached
    exactly at its t through (1 - t)/t, t/(1 - t) or tan, so both ends are exactly SD and
    exactly the drafter alone, whatever the rule."""
    r = RULES[rule]
    sd, drafter = r.alpha_sd, r.alpha_drafter
    if t <= 0:
        return sd
    if t >= 1:
        return drafter
    if math.isinf(sd) and math.isinf(drafter):
        value = math.copysign(1, drafter) * math.tan(math.pi * (t - 0.5))
    elif math.isinf(sd):
        value = drafter + math.copysign(1, sd) * (1 - t) / t
    elif math.isinf(drafter):
        value = sd + math.copysign(1, drafter) * t / (1 - t)
    else:
        value = sd + t * (drafter - sd)
    return round(value, 6)


def evaluations_needed(rules: int, steps: int) -> int:
    """Runs of the slice a calibration makes at most: the verifier, then per rule both ends
    and the bisection steps (a budget check before starting)."""
    return 1 + rules * (2 + steps)


def calibrate(
    pair: ModelPair,
    items: Sequence[Example],
    target: Target,
    settings: Settings,
    rules: Sequence[str] = SPEC_CASCADE_RULES,
    steps: int = 6,
) -> tuple[Point, dict[str, Calibrated]]:
    """For each rule, the alpha that meets `target` on `items` (see Calibrated), found by `steps`
    bisections; `settings` gives everything else (gamma, temperature, seed, max new tokens).
    Returns the verifier alone's point and one result per rule."""
    if not items:
        raise SettingsError("calibration needs at least one eval item")
    check_rules(rules)
    verifier = measure(pair, items, replace(settings, method="verifier", rule=None, alpha=None))

    def calls_ok(p: Point) -> bool:
        cap, rate = target.max_calls_per_token, target.max_deferral_rate
        return (cap is None or p.calls_per_token <= cap + 1e-12) and (
            rate is None or (p.deferral_rate or 0.0) <= rate + 1e-12
        )

    def accuracy_ok(p: Point) -> bool:
        share = target.min_accuracy_share
        return share is None or p.accuracy >= share * verifier.accuracy - 1e-12

    results = {}
    for rule in rules:
        at = point_finder(pair, items, settings, rule)
        if target.min_accuracy_share is not None:
            # accuracy holds toward the SD end: the cheapest alpha is the largest t keeping it
            t = _edge(lambda t, at=at: accuracy_ok(at(t)), steps, last_true=True)
        else:
            # calls fall toward the drafter end: the most accurate alpha is the smallest t
            t = _edge(lambda t, at=at: calls_ok(at(t)), steps, last_true=False)
        point = at(0.0 if t is None else t)
        met = t is not None and calls_ok(point) and accuracy_ok(point)
        results[rule] = Calibrated(point, met, at.cache_info().currsize)
    return verifier, results


def check_rules(rules: Sequence[str]) -> None:
    unknown = [r for r in rules if r not in CALIBRATABLE]
    if unknown:
        raise SettingsError(f"unknown rules {unknown}; choose from {', '.join(CALIBRATABLE)}")


def point_finder(pair: ModelPair, items: Sequence[Example], settings: Settings, rule: str):
    """`at(t)`: the rule measured a fraction t of the way from its SD end to its drafter end,
    each t measured once (`at.cache_info()` counts the evaluations)."""

    @functools.cache
    def at(t: float) -> Point:
        return measure(pair, items, replace(settings, **rule_settings(rule, alpha_at(rule, t))))

    return at


def _edge(ok, steps: int, last_true: bool) -> float | None:
    """Bisection on [0, 1] for a monotone predicate: the largest t with ok(t) when ok holds
    from 0 (`last_true`), else the smallest t with ok(t) when it holds up to 1; None if no t
    on the grid does."""
    good, bad = (0.0, 1.0) if last_true else (1.0, 0.0)
    if ok(bad):
        return bad
    if not ok(good):
        return None
    for _ in range(steps):
        mid = (good + bad) / 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good

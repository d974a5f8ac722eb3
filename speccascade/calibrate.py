"""Alpha calibration: equal alphas mean different things under different rules, so find, per
rule, the alpha that meets a target stated in what users care about: at most X verifier calls
per token, or at least a share Y of the verifier's key-fact accuracy on an eval slice.

Bisection on the engine along each rule's alpha axis, from its speculative-decoding end
(t = 0: most verifier calls, the verifier's quality) to its drafter-alone end (t = 1). Deferrals
fall as t grows, so calls per token fall and accuracy can only drop: the predicate "meets the
target" is monotone in t and bisection finds its edge. Deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .engine import CASCADE, Settings, generate
from .errors import SettingsError
from .evalsets import Example
from .models import ModelPair
from .rules import RULES, SPEC_CASCADE_RULES


@dataclass(frozen=True)
class Target:
    """At most `max_calls_per_token` verifier calls per token and/or at least
    `min_accuracy_share` of the verifier alone's key-fact accuracy on the slice."""

    max_calls_per_token: float | None = None
    min_accuracy_share: float | None = None

    def __post_init__(self) -> None:
        if self.max_calls_per_token is None and self.min_accuracy_share is None:
            raise SettingsError("give a target: max calls per token or min accuracy share")
        if self.max_calls_per_token is not None and not 0 < self.max_calls_per_token <= 1:
            raise SettingsError(
                f"max calls per token must be in (0, 1]; got {self.max_calls_per_token}"
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


@dataclass(frozen=True)
class Calibrated:
    """A rule's calibrated alpha and what it measured there. With an accuracy target it is the
    cheapest alpha keeping the accuracy (nearest the drafter end); with only a calls target, the
    most accurate alpha within the calls (nearest the SD end). `met` is False when no alpha on
    the bisection grid meets the target (then `point` is the SD end)."""

    point: Point
    met: bool
    evaluations: int


def measure(pair: ModelPair, items: Sequence[Example], settings: Settings) -> Point:
    """Run `settings` on every item: calls per token, key-fact accuracy, wall time."""
    traces = [generate(pair, x.question, settings) for x in items]
    tokens = sum(t.summary.new_tokens for t in traces)
    return Point(
        rule=settings.rule if settings.method == CASCADE else None,
        alpha=settings.alpha,
        calls_per_token=sum(t.summary.verifier_calls for t in traces) / max(1, tokens),
        accuracy=sum(x.correct(t.text) for x, t in zip(items, traces)) / len(items),
        wall_s=sum(t.summary.wall_s for t in traces),
    )


def alpha_at(rule: str, t: float) -> float:
    """The alpha a fraction t of the way from the rule's SD end to its drafter-alone end
    (within its slider range where an end is infinite)."""
    r = RULES[rule]
    lo, hi = r.slider
    sd = min(max(r.alpha_sd, lo), hi)
    drafter = min(max(r.alpha_drafter, lo), hi)
    return round(sd + t * (drafter - sd), 6)


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
    unknown = [r for r in rules if r not in SPEC_CASCADE_RULES]
    if unknown:
        raise SettingsError(f"unknown rules {unknown}; choose from {', '.join(SPEC_CASCADE_RULES)}")
    verifier = measure(pair, items, replace(settings, method="verifier", rule=None, alpha=None))

    def calls_ok(p: Point) -> bool:
        cap = target.max_calls_per_token
        return cap is None or p.calls_per_token <= cap + 1e-12

    def accuracy_ok(p: Point) -> bool:
        share = target.min_accuracy_share
        return share is None or p.accuracy >= share * verifier.accuracy - 1e-12

    results = {}
    for rule in rules:
        cascade = replace(settings, method=CASCADE, rule=rule)
        cache: dict[float, Point] = {}

        def at(t: float, rule=rule, cascade=cascade, cache=cache) -> Point:
            if t not in cache:
                cache[t] = measure(pair, items, replace(cascade, alpha=alpha_at(rule, t)))
            return cache[t]

        if target.min_accuracy_share is not None:
            # accuracy holds toward the SD end: the cheapest alpha is the largest t keeping it
            t = _edge(lambda t: accuracy_ok(at(t)), steps, last_true=True)
        else:
            # calls fall toward the drafter end: the most accurate alpha is the smallest t
            t = _edge(lambda t: calls_ok(at(t)), steps, last_true=False)
        point = at(0.0 if t is None else t)
        met = t is not None and calls_ok(point) and accuracy_ok(point)
        results[rule] = Calibrated(point, met, len(cache))
    return verifier, results


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

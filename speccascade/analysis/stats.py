"""Intervals a reviewer accepts: Wilson's score interval for a proportion, Newcombe's for a
paired difference of proportions, a percentile bootstrap over questions for ratios of sums,
and a target "met" only where its interval clears it.

A percentile bootstrap of a proportion collapses to [0, 0] at 0 of 6 and of a paired
difference to [0, 0] when two methods never disagree; the score intervals do not, so
proportions never use the bootstrap here."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials (n = 0: the whole of [0, 1])."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact ends, not rounding's
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def paired_difference(a: Sequence[bool], b: Sequence[bool], z: float = Z95) -> tuple:
    """(p_a - p_b, low, high): Newcombe's hybrid score interval (his method 10) for the
    difference of two proportions measured on the same questions."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n = len(a)
    if n == 0:
        return float("nan"), -1.0, 1.0
    both, only_a = int(np.sum(a & b)), int(np.sum(a & ~b))
    only_b, neither = int(np.sum(~a & b)), int(np.sum(~a & ~b))
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson(both + only_a, n, z)
    l2, u2 = wilson(both + only_b, n, z)
    # the correlation of the two estimates, with Newcombe's continuity correction
    den = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    cross = both * neither - only_a * only_b
    if den == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(den)
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return p1 - p2, p1 - p2 - delta, p1 - p2 + eps


def bootstrap(
    stat: Callable[[np.ndarray], float],
    n_items: int,
    n_boot: int = 4000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of `stat(indices)` over questions resampled with replacement."""
    if n_items <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = np.array([stat(rng.integers(0, n_items, n_items)) for _ in range(n_boot)])
    lo, hi = np.nanquantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def ratio_of_sums(num: Sequence[float], den: Sequence[float], seed: int = 0) -> tuple:
    """(sum(num) / sum(den), low, high) with a bootstrap over the paired items: e.g. the
    verifier's time to answer every question over a method's."""
    x, y = np.asarray(num, float), np.asarray(den, float)
    point = float(x.sum() / y.sum()) if y.sum() > 0 else float("nan")
    lo, hi = bootstrap(lambda i: x[i].sum() / y[i].sum(), len(x), seed=seed)
    return point, lo, hi


@dataclass(frozen=True)
class Check:
    """A target and what was measured: `met` only where the interval clears the bound;
    `missed` where even the point estimate is on the wrong side; else not shown."""

    name: str
    value: float
    low: float
    high: float
    op: str  # ">=" or "<="
    bound: float

    @property
    def met(self) -> bool:
        return self.low >= self.bound if self.op == ">=" else self.high <= self.bound

    @property
    def verdict(self) -> str:
        if self.met:
            return "met"
        ok = self.value >= self.bound if self.op == ">=" else self.value <= self.bound
        return "not shown" if ok else "missed"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "value": self.value,
            "ci95": [self.low, self.high],
            "target": f"{self.op} {self.bound:g}",
            "verdict": self.verdict,
        }

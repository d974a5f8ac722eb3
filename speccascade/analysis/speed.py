"""The speed-up, defined once.

A method's speed-up is the verifier alone's wall time to its complete answer over the
method's, on the same prompt and settings, each the median of interleaved runs. Over a set of
questions it is the verifier's time to answer all of them over the method's (a ratio of sums
of those medians), so long answers weigh as much as they cost. Every view that shows a
speed-up calls these functions, or says in words what it shows instead (priced calls per
token, a projection, an eval slice's mean)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from speccascade.analysis.stats import ratio_of_sums


def median_wall(walls: Sequence[float]) -> float:
    """The median of a method's timed runs on one question (the runs are interleaved with
    the other methods', so machine noise hits them alike)."""
    if not walls:
        raise ValueError("no timed runs")
    return float(statistics.median(walls))


def speedup(verifier_walls: Sequence[float], method_walls: Sequence[float]) -> float:
    """The verifier alone's median time to its answer over the method's (> 1: faster)."""
    method = median_wall(method_walls)
    return median_wall(verifier_walls) / method if method > 0 else float("nan")


def suite_speedup(
    verifier_walls: Sequence[Sequence[float]], method_walls: Sequence[Sequence[float]], seed=0
) -> tuple[float, float, float]:
    """(speed-up, low, high) over a set of questions: the verifier's time to answer all of
    them over the method's, with a 95% bootstrap interval over the questions."""
    v = [median_wall(w) for w in verifier_walls]
    m = [median_wall(w) for w in method_walls]
    return ratio_of_sums(v, m, seed=seed)

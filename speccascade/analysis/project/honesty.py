"""The projector's honesty check: this machine's runs re-priced with its measured profile,
against their measured wall time."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from speccascade.analysis.project.pricing import project
from speccascade.analysis.project.profiles import (
    CALIBRATION_PROMPT,
    STATISTICS,
    CostModel,
    _with_overheads,
    mean_profile,
    measure_profile,
)
from speccascade.core.engine import APP_DEFAULTS, METHOD_REGISTRY, Settings, generate
from speccascade.core.pair import ModelPair
from speccascade.core.trace import Trace

# What the check re-prices: both single models, SD and the app's default cascade.
HONESTY_METHODS: tuple[tuple[str, str | None], ...] = (
    ("verifier", None),
    ("drafter", None),
    ("speculative", None),
    (APP_DEFAULTS.method, APP_DEFAULTS.rule),
)


@dataclass(frozen=True)
class HonestyRow:
    """One method: its measured wall times and the projections of those same runs."""

    label: str
    method: str
    rule: str | None
    new_tokens: int
    measured_s: float  # median wall time of the runs
    projected_s: float  # median projection of the same runs
    runs: tuple[float, ...]
    projections: tuple[float, ...]

    @property
    def error(self) -> float:
        """(projected - measured) / measured."""
        return (self.projected_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class HonestyReport:
    """The honesty check's rows, the profile its first round was priced with, and how far
    this machine's speed drifted while it ran: the spread (max - min over the mean) of a
    one-token verifier forward across the profiles measured between rounds; 0 with a given
    cost model. A large drift says the machine's load changed under the check."""

    rows: list[HonestyRow]
    cost: CostModel
    drift: float

    @property
    def worst_error(self) -> float:
        return max(abs(r.error) for r in self.rows)


def honesty_check(
    pair: ModelPair,
    cost: CostModel | None = None,
    prompt: str | list[int] = CALIBRATION_PROMPT,
    settings: Settings = APP_DEFAULTS,
    methods: Sequence[tuple[str, str | None]] = HONESTY_METHODS,
    repeats: int = 3,
    min_seconds: float = 0.0,
    profile_repeats: int = 5,
    profile_seconds: float = 0.25,
    statistic: str = "median",
    profile_statistic: str = "median",
) -> HonestyReport:
    """Does re-pricing this machine's runs with this machine's profile predict their wall
    time? Each method runs once to warm up. Then the methods run in `repeats` interleaved
    rounds (a shared machine's drifting load touches every method alike), with this
    machine's profile measured before the first round and after every round: each round's
    runs are priced under the mean of the two profiles around it (the host overheads are
    measured once, with the first). In each round a method runs at least once and until its
    runs add up to `min_seconds` (a run of a few tens of milliseconds is at the mercy of one
    scheduling hiccup). The `statistic` (median) of the wall times and of the projections
    are compared. With `cost` given, it prices every run as it is."""
    variants = [replace(settings, method=m, rule=r) for m, r in methods]
    warm = [generate(pair, prompt, s).summary.wall_s for s in variants]
    times = [max(1, math.ceil(min_seconds / w)) if w > 0 else 1 for w in warm]
    measure = partial(
        measure_profile,
        pair,
        prompt=prompt,
        gamma=settings.gamma,
        repeats=profile_repeats,
        min_seconds=profile_seconds,
        statistic=profile_statistic,
    )
    stat = STATISTICS[statistic]
    # (the profile before each round and after the last; a round's runs are priced under the
    # mean of the two that bracket it)
    profiles = [cost or measure(overhead_tokens=settings.max_new_tokens)]
    traces: list[list[tuple[Trace, int]]] = [[] for _ in variants]
    for k in range(repeats):
        for i, s in enumerate(variants):
            traces[i] += [(generate(pair, prompt, s), k) for _ in range(times[i])]
        if cost is None:  # the host overhead is measured once, with the first profile
            later = measure(measure_overhead=False)
            profiles.append(_with_overheads(later, profiles[0]))
    if cost is None:
        v1 = [p.verifier.ms(1) for p in profiles]
        drift = (max(v1) - min(v1)) / statistics.fmean(v1)
        priced_with = [mean_profile(a, b) for a, b in zip(profiles, profiles[1:])]
    else:
        drift, priced_with = 0.0, [cost] * repeats
    rows = []
    for (m, r), runs in zip(methods, traces):
        trs = [tr for tr, _ in runs]
        walls = tuple(tr.summary.wall_s for tr in trs)
        priced = tuple(project(tr, priced_with[k]).total_s for tr, k in runs)
        rows.append(
            HonestyRow(
                label=f"{m}/{r}" if METHOD_REGISTRY[m].rules else m,
                method=m,
                rule=r,
                new_tokens=trs[-1].summary.new_tokens,
                measured_s=stat(walls),
                projected_s=stat(priced),
                runs=walls,
                projections=priced,
            )
        )
    return HonestyReport(rows, priced_with[0], drift)

"""The verdict's speed-up, timed: after a run is shown, the verifier alone and the run's
method answer the same prompt again in interleaved rounds, and the verdict quotes
speed.speedup of their medians, the number Compare, the story and the race quote too."""

from __future__ import annotations

import time
from collections.abc import Callable

from speccascade.analysis.compare import Variant, compare
from speccascade.core.engine import Settings
from speccascade.core.pair import ModelPair

ROUNDS = 3  # timed runs of each (a seeded run writes the same tokens every time)
BUDGET_S = 10.0  # rounds start only while the ones so far say they end within this


def time_against_verifier(
    pair: ModelPair,
    prompt: str,
    settings: Settings,
    should_stop: Callable[[], bool] = lambda: False,
    rounds: int = ROUNDS,
    budget_s: float = BUDGET_S,
) -> tuple[float, int] | None:
    """(speed-up, runs of each) of `settings`' method against the verifier alone on
    `prompt`; None where the method is the verifier itself or a Stop came first."""
    if settings.method == "verifier":
        return None
    variant = Variant(settings.method, settings.rule)
    table, start = None, time.perf_counter()
    for step in compare(pair, prompt, [variant], settings=settings, rounds=rounds,
                        budget_s=budget_s):  # fmt: skip
        table = step[2]
        if should_stop() or time.perf_counter() - start > 3 * budget_s:
            return None
    row = table[table.method == variant.label].iloc[0]
    return float(row["speedup"]), int(row["runs"])

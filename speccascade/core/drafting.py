"""Draft-length policies: how many tokens the drafter proposes each round.

Serving engines adapt the window: Hugging Face's `num_assistant_tokens_schedule="heuristic"`
grows it after a fully kept window and shrinks it otherwise, and `assistant_confidence_threshold`
ends a draft where the drafter is unsure. For a speculative cascade the second idea is sharper
still: an unsure drafter is the token the rule is likely to defer, so drafting past it wastes
drafter forwards. A policy only decides how far to draft, from the drafter's own numbers and past
rounds, never from the current round's verifier: so it changes cost, never the law of the output
(every position is still kept with min(1, pi/q) and replaced from the residual).

A policy is a registry row of small pure functions; the speculative loop asks it for each
round's window and whether to stop a draft early.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MAX_WINDOW = 32  # the heuristic's ceiling, as Settings' gamma


@dataclass(frozen=True)
class DraftPolicy:
    """A registry row. `first(gamma)` is the first window; `next(window, drafted, accepted,
    gamma)` the next one after a round; with `stops_early` a draft ends after a token whose
    drafter max q (T = 1) is below the threshold (that token is still verified, as in HF)."""

    name: str
    label: str
    first: Callable[[int], int]
    next: Callable[[int, int, int, int], int]
    stops_early: bool = False
    hf_equivalent: str = ""  # the Hugging Face generation_config that does the same


def _fixed(window: int, drafted: int, accepted: int, gamma: int) -> int:
    return gamma


def _heuristic(window: int, drafted: int, accepted: int, gamma: int) -> int:
    """HF's schedule: +2 after a fully kept window, -1 otherwise, within [1, MAX_WINDOW]."""
    if drafted and accepted == drafted:
        return min(window + 2, MAX_WINDOW)
    return max(1, window - 1)


def _start_at_gamma(gamma: int) -> int:
    return gamma


DRAFT_POLICIES: dict[str, DraftPolicy] = {
    p.name: p
    for p in [
        DraftPolicy(
            "fixed",
            "fixed gamma",
            _start_at_gamma,
            _fixed,
            hf_equivalent='num_assistant_tokens_schedule="constant"',
        ),
        DraftPolicy(
            "heuristic",
            "heuristic (+2 / -1)",
            _start_at_gamma,
            _heuristic,
            hf_equivalent='num_assistant_tokens_schedule="heuristic"',
        ),
        DraftPolicy(
            "confidence",
            "stop when the drafter is unsure",
            _start_at_gamma,
            _fixed,
            stops_early=True,
            hf_equivalent="assistant_confidence_threshold",
        ),
    ]
}
DEFAULT_THRESHOLD = 0.4  # HF's assistant_confidence_threshold default

"""The race: the seed's approaches on one question, replayed together on one clock.

The verifier alone, the sequence cascade, lossless speculative decoding and the speculative
cascade (the chosen rule) run on the same question in interleaved rounds (seeded, so every
repeat writes the same tokens); each lane then replays its median run from the round times
the engine recorded: a token appears when the round that wrote it completes. A lane's finish
is its median time to the answer and its speed-up comes from `speed.speedup`, so the race and
every other view quote the same number."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from speccascade.analysis import speed
from speccascade.analysis.quality import states_facts
from speccascade.core.engine import CASCADE, Settings, generate
from speccascade.core.pair import ModelPair
from speccascade.core.trace import Trace

# The lanes, in the order the lesson reads them: the yardstick, the sequential cascade, the
# exact speed-up, and the method that gets both.
LANES = ("verifier", "seq_cascade", "speculative", CASCADE)

# What happened to each token, as the lanes colour it.
KINDS = {
    "accepted": "kept",  # the drafter's token, kept
    "resampled": "taken",  # the verifier took over at a rejected draft
    "bonus": "bonus",  # the verifier's token after a fully kept window
    "verifier": "verifier",  # written by the verifier alone
    "drafter": "drafter",  # written by the drafter alone (a sequence cascade that kept it)
}


@dataclass(frozen=True)
class LaneToken:
    text: str
    kind: str  # KINDS' values, or "wasted": a draft the sequence cascade threw away
    at_s: float  # when it appears: the end of the round that wrote it (the lane's clock)


@dataclass(frozen=True)
class Lane:
    method: str
    rule: str | None
    tokens: list[LaneToken]
    calls: list[tuple[float, int]]  # (time, verifier calls so far) after each round
    finish_s: float  # the replayed run's time to its answer (the lane's median run)
    walls: list[float]  # every run's time
    speedup: float  # speed.speedup against the verifier lane
    text: str
    correct: bool | None  # states the question's key facts (None: none on record)
    wasted_until: float | None = None  # when a sequence cascade threw its draft away
    trace: Trace | None = field(default=None, repr=False, compare=False)  # the replayed run


@dataclass(frozen=True)
class Race:
    question: str
    lanes: list[Lane]
    rounds: int  # timed runs per lane
    settings: dict = field(default_factory=dict)

    @property
    def order(self) -> list[str]:
        """The lanes' methods in order of finish (fastest first)."""
        return [lane.method for lane in sorted(self.lanes, key=lambda x: x.finish_s)]


def round_ends(trace: Trace) -> list[float]:
    """When each round completed on the run's clock: the next round's start, and the run's
    time to its answer for the last one."""
    starts = [r.start_s for r in trace.rounds]
    return starts[1:] + [trace.summary.wall_s] if starts else []


def lane_tokens(trace: Trace) -> tuple[list[LaneToken], float | None]:
    """The tokens of one run as they appeared, and when a thrown-away draft went (the
    sequence cascade's, drawn first and struck when the verifier starts over)."""
    ends = round_ends(trace)
    out: list[LaneToken] = []
    wasted_until = None
    extra = trace.extra
    if extra.get("deferred"):
        pieces, times = extra.get("draft_pieces", []), extra.get("draft_times", [])
        drafted = list(zip(pieces, times))[: len(pieces) - bool(extra.get("draft_eos"))]
        out += [LaneToken(p, "wasted", t) for p, t in drafted]
        wasted_until = ends[0] if ends else None
    for tok in trace.tokens:
        out.append(LaneToken(tok.text, KINDS.get(tok.source, tok.source), ends[tok.round]))
    if out and trace.summary.stop_reason == "eos":  # the end of text is a mark, not a word
        out[-1] = replace(out[-1], text="", kind="end")
    return out, wasted_until


def lane_calls(trace: Trace) -> list[tuple[float, int]]:
    """Verifier calls so far after each round."""
    total, out = 0, []
    for end, rnd in zip(round_ends(trace), trace.rounds):
        total += rnd.verifier_calls
        out.append((end, total))
    return out


def median_run(traces: Sequence[Trace]) -> Trace:
    """The run whose time is the median (the lower middle one of an even count)."""
    ranked = sorted(traces, key=lambda tr: tr.summary.wall_s)
    return ranked[(len(ranked) - 1) // 2]


def lane(method: str, traces: Sequence[Trace], verifier_walls: Sequence[float], facts) -> Lane:
    shown = median_run(traces)
    tokens, wasted_until = lane_tokens(shown)
    walls = [tr.summary.wall_s for tr in traces]
    return Lane(
        method=method,
        rule=shown.summary.rule,
        tokens=tokens,
        calls=lane_calls(shown),
        finish_s=shown.summary.wall_s,
        walls=walls,
        speedup=speed.speedup(verifier_walls, walls),
        text=shown.text,
        correct=states_facts(shown.text, facts) if facts else None,
        wasted_until=wasted_until,
        trace=shown,
    )


def lane_settings(method: str, settings: Settings) -> Settings:
    """`settings` for one lane: the cascade keeps the chosen rule and alpha, the others run
    their own rule at its default."""
    if method == CASCADE:
        return replace(settings, method=method)
    return replace(settings, method=method, rule=None, alpha=None)


def run_race(
    pair: ModelPair,
    question: str,
    settings: Settings,
    rounds: int = 3,
    facts: Sequence[str] = (),
    lanes: Sequence[str] = LANES,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Race:
    """Every lane on `question`, `rounds` interleaved rounds (the lanes' order rotating, after
    one warm-up run), each lane replaying its median run. A seeded run writes the same tokens
    every round; a lane that did not is an error (its replay would not be its runs')."""
    if settings.seed is None and settings.temperature > 0:
        raise ValueError("a race needs a seed: every round must write the same tokens")
    generate(pair, question, lane_settings(lanes[0], settings), should_stop=should_stop)
    traces: dict[str, list[Trace]] = {m: [] for m in lanes}
    total = rounds * len(lanes)
    for r in range(rounds):
        for m in list(lanes[r % len(lanes) :]) + list(lanes[: r % len(lanes)]):
            tr = generate(pair, question, lane_settings(m, settings), should_stop=should_stop)
            if traces[m] and tr.new_token_ids != traces[m][0].new_token_ids:
                raise RuntimeError(f"{m} wrote other tokens in round {r + 1}")
            traces[m].append(tr)
            if progress:
                progress(sum(map(len, traces.values())), total)
    verifier_walls = [tr.summary.wall_s for tr in traces["verifier"]]
    return Race(
        question=question,
        lanes=[lane(m, traces[m], verifier_walls, facts) for m in lanes],
        rounds=rounds,
        settings={
            "rule": settings.rule,
            "alpha": settings.alpha,
            "gamma": settings.gamma,
            "temperature": settings.temperature,
        },  # fmt: skip
    )


def lane_of(race: Race, method: str) -> Lane:
    return next(x for x in race.lanes if x.method == method)

"""What a recorded run says: its verdict against the verifier alone, and what another alpha
would have done (the what-if). Numbers and codes only; the UI turns them into sentences in the
reader's language."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from speccascade.analysis.evalsets import Example, taught
from speccascade.analysis.project.pricing import project, speedup
from speccascade.analysis.project.profiles import CostModel
from speccascade.core.rules import Rule, decide
from speccascade.core.trace import Trace

# Below this share of kept drafts most windows end early: the drafter's calls are wasted.
LOW_ACCEPTANCE = 0.5


@dataclass(frozen=True)
class Verdict:
    """One run, judged against decoding with the verifier alone on the same machine."""

    method: str
    tokens: int
    drafted: int  # draft tokens proposed (0 for single-model methods)
    kept: int  # draft tokens the rule kept
    verifier_calls: int
    wall_s: float
    # > 1: faster than the verifier alone would have been. The run's own forwards priced at
    # this machine's measured costs, against the verifier alone writing as many tokens after
    # the same prompt (None: no cost model). Priced, not two wall clocks: one short run against
    # a yardstick timed earlier swung from 2.2x faster to 1.1x slower between identical runs
    # on a shared machine (same tokens, same calls).
    speedup: float | None
    stopped: bool

    @property
    def drafts(self) -> bool:
        return self.drafted > 0

    @property
    def kept_fraction(self) -> float | None:
        return self.kept / self.drafted if self.drafted else None

    @property
    def slower(self) -> bool:
        return self.speedup is not None and self.speedup < 1.0

    @property
    def reason(self) -> str | None:
        """Why a run was slower than the verifier alone: `low_acceptance` (most drafts were
        rejected, so each verifier call yields about one token and the drafting was wasted) or
        `drafting_cost` (drafts were kept, but drafting and verifying cost more than they
        saved: a short answer, a small gap between the models' costs)."""
        if not self.slower:
            return None
        if self.drafts and (self.kept_fraction or 0.0) < LOW_ACCEPTANCE:
            return "low_acceptance"
        if self.method == "verifier":
            return None  # timing noise around 1.0
        return "drafting_cost"


def verdict(trace: Trace, cost: CostModel | None) -> Verdict:
    """Judge `trace` against the verifier alone, both priced under `cost` (this machine's
    measured profile in the app: project.measure_profile)."""
    s = trace.summary
    return Verdict(
        method=s.method,
        tokens=s.new_tokens,
        drafted=s.drafted,
        kept=s.accepted,
        verifier_calls=s.verifier_calls,
        wall_s=s.wall_s,
        speedup=speedup(project(trace, cost), cost) if cost and s.new_tokens else None,
        stopped=s.stop_reason == "cancelled",
    )


def drafted_rows(trace: Trace, rule: Rule | None = None) -> list[int]:
    """Indices of the tokens that had a draft with every statistic a rule looks at (and, for
    `rule`, the extra ones it reads: entropy, KL, JSD): the positions a what-if (or the
    decision plane) can re-decide. A trace from before a statistic was recorded has none."""
    extra = rule.stats if rule is not None else ()
    return [
        i
        for i, t in enumerate(trace.tokens)
        if t.draft_id is not None
        and None not in (t.draft_q, t.draft_p, t.max_q, t.max_p, t.dtv)
        and all(getattr(t, name) is not None for name in extra)
    ]


def whatif_decisions(trace: Trace, rule: Rule, alpha: float) -> list[bool | None]:
    """Re-evaluate `rule` at `alpha` on the recorded draft statistics: where would it defer?
    None where a position had no draft (bonus tokens, single-model runs), and everywhere for
    rules that decide nothing per token (lossy SD, the static ensemble)."""
    rows = drafted_rows(trace, rule)
    out: list[bool | None] = [None] * len(trace.tokens)
    if not rows or rule.defer is None or rule.kind == "soft":
        return out
    ts = [trace.tokens[i] for i in rows]
    got = decide(
        rule,
        alpha,
        [t.draft_q for t in ts],
        [t.draft_p for t in ts],
        [t.max_q for t in ts],
        [t.max_p for t in ts],
        [t.dtv for t in ts],
        ent_p=[t.ent_p for t in ts],
        kl=[t.kl for t in ts],
        jsd=[t.jsd for t in ts],
    )
    for i, d in zip(rows, got):
        out[i] = d
    return out


@dataclass(frozen=True)
class WhatIf:
    """A what-if at one alpha: how many drafted tokens it would defer, against the run."""

    alpha: float
    decisions: list[bool | None]
    would_defer: int
    drafted: int
    deferred_in_run: int


def whatif(trace: Trace, rule: Rule, alpha: float) -> WhatIf:
    decisions = whatif_decisions(trace, rule, alpha)
    drafted = [d for d in decisions if d is not None]
    return WhatIf(
        alpha=alpha,
        decisions=decisions,
        would_defer=sum(drafted),
        drafted=len(drafted),
        deferred_in_run=sum(bool(t.defer) for t in trace.tokens if t.draft_id is not None),
    )


@dataclass(frozen=True)
class Doubt:
    """Why an answer of a pair with a known domain should not be trusted: `kind` is
    "declined" (its own out-of-domain line), "unknown" (about something it was never taught:
    "What is the tallest mountain?" got "the Grand Canyon") or "wrong" (a finished answer
    that misses the key facts of everything the question can mean that it was taught, in
    `taught`: "Who is Einstein?" got "a Jewish god")."""

    kind: str
    taught: tuple[Example, ...] = ()


def doubt(preset, question: str, text: str, stop_reason: str = "eos") -> Doubt | None:
    """The Doubt on `text`, `preset`'s answer to `question`, or None. An answer cut off
    (stop_reason other than eos or a stop string) is not judged wrong: its facts may still
    have been coming."""
    if preset.declined(text):
        return Doubt("declined")
    if preset.taught is None or not question:
        return None
    items = taught(question, preset.taught)
    if not items:
        return Doubt("unknown")
    finished = stop_reason in ("eos", "stop_string")
    if finished and not any(x.correct(text) for x in items):
        return Doubt("wrong", items)
    return None


# -- an answer that repeats itself ------------------------------------------------------------

# A looping answer ("A lone soul, a lone soul, a lone soul, …", SmolLM2-135M) is flagged when
# at least this share of its words lie inside a 4-word phrase said more than once; natural
# answers stay far below (a fact named twice covers a few words, not half the answer).
REPEAT_N = 4
REPEAT_SHARE = 0.5
REPEAT_MIN_UNITS = 12  # shorter answers are not judged: too few words to call a loop

# The units an answer is counted in: a word (letters and digits, any case) or one CJK
# character (Chinese has no spaces; a looping Chinese answer repeats characters).
_UNITS = re.compile(r"[\u2e80-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+")
# Where a line or a sentence ends (strong), or a clause (weak): a loop's phrase starts after one.
_BREAKS = (re.compile(r"[\n.!?。！？]"), re.compile(r"[;:,，；：、]"))
_CJK = re.compile(r"[\u2e80-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class Repetition:
    """An answer that repeats itself: `share` of its units (words, or CJK characters) lie in
    a phrase of REPEAT_N units said more than once; `phrase` is the shortest stretch the
    loop repeats, said `times` times in a row at most."""

    share: float
    phrase: str
    times: int
    units: int


def units(text: str) -> list[str]:
    """The answer's words (lowercased) and CJK characters, punctuation dropped."""
    return [u.lower() for u in _UNITS.findall(text)]


def repeated_share(items: list[str], n: int = REPEAT_N) -> float:
    """The share of `items` covered by an n-gram that occurs more than once (0 if fewer
    than n items)."""
    if len(items) < n:
        return 0.0
    grams = [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]
    counts = Counter(grams)
    covered = [False] * len(items)
    for i, gram in enumerate(grams):
        if counts[gram] > 1:
            covered[i : i + n] = [True] * n
    return sum(covered) / len(items)


def _loop(items: list[str], breaks: list[int] | None = None) -> tuple[list[str], int]:
    """The loop's phrase: the shortest period p that the answer follows at the most places
    (items[i] == items[i + p], within a tenth of the best period's count), the first run
    of it, and how many times in a row it is said there. Where `breaks` gives, per unit,
    what precedes it (2: a line or a sentence's end, 1: a clause's, 0: a space), the
    phrase starts at the loop's strongest break ("a lonely soul, lost in the night", not
    "lost in the night, a lonely soul")."""
    half = len(items) // 2
    matches = {
        p: sum(items[i] == items[i + p] for i in range(len(items) - p)) for p in range(1, half + 1)
    }
    best = max(matches.values())
    period = min(p for p, m in matches.items() if m >= 0.9 * best)
    start = next(
        (
            i
            for i in range(len(items) - 2 * period + 1)
            if items[i : i + period] == items[i + period : i + 2 * period]
        ),
        0,
    )
    if breaks is not None:  # the same loop, read from where a line or a clause begins
        looping = [
            i
            for i in range(start, start + period)
            if items[i : i + period] == items[i + period : i + 2 * period]
        ]
        start = max(looping, key=lambda i: (breaks[i], -i), default=start)
    phrase = items[start : start + period]
    times, i = 0, start
    while items[i : i + period] == phrase:
        times, i = times + 1, i + period
    return phrase, times


def repetition(text: str) -> Repetition | None:
    """A Repetition where `text` repeats itself (REPEAT_SHARE of it or more in repeated
    phrases, REPEAT_MIN_UNITS units at least), else None. Pure: the page words it."""
    items = units(text)
    if len(items) < REPEAT_MIN_UNITS:
        return None
    share = repeated_share(items)
    if share < REPEAT_SHARE:
        return None
    spans = [m.span() for m in _UNITS.finditer(text)]
    gaps = [text[a[1] : b[0]] for a, b in zip(spans, spans[1:])]  # before each unit but the first
    strength = [2] + [2 if _BREAKS[0].search(g) else 1 if _BREAKS[1].search(g) else 0 for g in gaps]
    phrase, times = _loop(items, strength)
    glue = "" if all(_CJK.fullmatch(u) for u in phrase) else " "
    return Repetition(share=share, phrase=glue.join(phrase), times=times, units=len(items))

"""Round replay: one speculative round of a recorded run, rebuilt from the trace alone.

A round drafts a window, the verifier scores it in one pass, the rule decides for each draft
(`explain.compare_draft`, the very comparison `rules.decide` makes), the accept test keeps each
draft while u < min(1, π(x)/q(x)), and the first rejected draft is replaced from the residual
(or a bonus token is drawn from π when all were kept); both KV caches then roll back the
drafts that did not survive. `replay_round` gathers all of that for one round from the
`RoundRecord` (its `drafts`, `residual_top`, rollback counts and times) and the round's
`TokenRecord`s, with no model: a downloaded trace file replays as well as a live run.

Probabilities are as recorded: q, p, max q, max p at T = 1 (what the rule reads), D_TV, the
accept probability and the residual on the temperature-scaled laws the run sampled from.
Formatting for people lives in `views.replay`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from speccascade.analysis.explain import Relation, compare_draft
from speccascade.core.errors import SettingsError
from speccascade.core.rules import RULES
from speccascade.core.trace import RoundRecord, TokenRecord, Trace

DraftStatus = Literal["kept", "rejected", "untested"]
# rejected: a draft failed the accept test and the residual gave its replacement;
# bonus: every draft was kept and π gave one more token; end: every draft was kept and the run
# ended in this round (token budget, end of text or a stop string), so no bonus was drawn.
Outcome = Literal["rejected", "bonus", "end"]
# the law a drawn token came from: the residual norm(max(0, π − q)) after a rejection, π for a
# bonus token, or p at T = 1 where π's row was not recorded (SD's bonus: there π = p)
DrawLaw = Literal["residual", "pi", "p1"]


@dataclass(frozen=True)
class Candidate:
    token_id: int
    prob: float
    token: str | None  # its text, where known


@dataclass(frozen=True)
class DraftStep:
    """One drafted token of the round: the rule's comparison and the accept draw."""

    slot: int  # place in the window, from 0
    position: int  # the output position this draft took (or would have taken)
    token_id: int
    token: str | None  # its text, where known
    q: float  # drafter's T = 1 probability of the draft
    p: float  # verifier's T = 1 probability of the draft
    max_q: float
    max_p: float
    dtv: float  # D_TV(p, q) on the scaled laws
    ent_p: float | None  # H(p), KL(p || q) and JSD(p, q) at T = 1 (None: not recorded)
    kl: float | None
    jsd: float | None
    lhs: float | None  # the two sides of the rule's test (None for SD and lossy SD)
    rhs: float | None
    relation: Relation | None  # the rule defers when lhs < rhs ("<") or lhs > rhs (">")
    defer: bool | None  # the rule's decision, recomputed from the numbers above
    recorded_defer: bool | None  # the decision the engine recorded (equal to `defer`)
    accept_prob: float  # min(1, π(x)/q(x)) on the scaled laws (lossy SD: its lenient test;
    # block verification: the block level h of this position)
    u: float  # the uniform draw; the draft is kept iff the test passes (block: see `passed`)
    status: DraftStatus  # untested: an earlier draft was rejected, so this one never was tested
    written: bool  # whether the output holds it (a kept draft after end of text is not)

    @property
    def tested(self) -> bool:
        return self.status != "untested"

    @property
    def passed(self) -> bool:
        """Whether u fell below the acceptance level. Token by token, a draft is kept iff it
        passed; under block verification a failed draft is still kept when a later one
        passed (the window keeps everything up to the last pass)."""
        return self.u < self.accept_prob

    @property
    def kept(self) -> bool:
        return self.status == "kept"


@dataclass(frozen=True)
class Draw:
    """A token drawn on the verifier's side: the replacement of the first rejected draft, or
    the bonus token after a fully kept window."""

    law: DrawLaw
    token_id: int | None  # None when the run stopped before it was emitted
    token: str | None
    prob: float | None  # its probability under `law`; None when not among the recorded top-k
    top: list[Candidate] = field(default_factory=list)  # the law's most likely tokens


@dataclass(frozen=True)
class RoundReplay:
    index: int
    rounds: int  # rounds in the run
    method: str
    rule: str
    alpha: float | None  # None for a rule without α (SD)
    temperature: float
    recorded: bool  # False: the trace predates per-draft records; re-run it to replay
    window: int  # the draft length the policy planned
    drafted: int
    accepted: int
    first_position: int  # output position of the round's first token
    steps: list[DraftStep]
    outcome: Outcome
    draw: Draw | None  # the residual or bonus token (None for "end", or when not recorded)
    drafter_rolled_back: int | None  # KV-cache entries cropped (None when not recorded)
    verifier_rolled_back: int | None
    drafter_s: float
    verifier_s: float
    drafter_calls: int
    verifier_calls: int
    emitted: list[TokenRecord]  # the tokens the round wrote, in order
    stop_reason: str | None  # on the run's last round: why the run stopped there

    @property
    def rejected_at(self) -> int | None:
        """The slot of the first rejected draft, if any."""
        return self.accepted if self.outcome == "rejected" else None


def rounds_of(trace: Trace) -> int:
    """How many rounds there are to replay: 0 for a method that drafts nothing (the verifier
    or drafter alone, the sequential cascades), so a player can hide itself."""
    return len(trace.rounds) if _speculative(trace) else 0


def _speculative(trace: Trace) -> bool:
    return any(r.drafted for r in trace.rounds)


def require_rounds(trace: Trace) -> int:
    """The number of rounds to replay; SettingsError saying why for a run that has none."""
    if not _speculative(trace):
        raise SettingsError(
            f"this trace ({trace.summary.method}) has no speculative rounds to replay: only "
            "methods that draft and verify (speculative decoding, the speculative cascades and "
            "every other acceptance rule) have them"
        )
    return len(trace.rounds)


def token_texts(trace: Trace) -> dict[int, str]:
    """Text of every token id the run emitted (its first occurrence): the text of a draft or
    candidate that was also written somewhere, for a replay without a tokenizer."""
    texts: dict[int, str] = {}
    for record in trace.tokens:
        texts.setdefault(record.token_id, record.text)
    return texts


def replay_round(
    trace: Trace, index: int, decode: Callable[[int], str] | None = None
) -> RoundReplay:
    """Round `index` (from 0) of a speculative run, from the trace alone.

    `decode(token_id)` gives token texts (e.g. `lambda i: tokenizer.decode([i])`); without it,
    texts come from the tokens the run emitted and are None for the others. Raises
    SettingsError for a run with no speculative rounds or an index out of range. A trace from
    before rounds recorded their drafts gives `recorded=False` and no steps."""
    s = trace.summary
    n = require_rounds(trace)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
        raise SettingsError(f"round must be an integer in [0, {n - 1}]; got {index!r}")
    if s.rule not in RULES:
        raise SettingsError(f"the trace's rule {s.rule!r} is unknown; cannot replay it")
    rnd = trace.rounds[index]
    known = token_texts(trace)
    text = (lambda i: decode(i)) if decode is not None else known.get
    first = sum(r.emitted for r in trace.rounds[:index])
    emitted = [t for t in trace.tokens if t.round == rnd.index]
    recorded = len(rnd.drafts) == rnd.drafted
    outcome: Outcome = (
        "rejected"
        if rnd.accepted < rnd.drafted
        else "bonus"
        if any(t.source == "bonus" for t in emitted)
        else "end"
    )
    return RoundReplay(
        index=rnd.index,
        rounds=n,
        method=s.method,
        rule=s.rule,
        alpha=s.alpha,
        temperature=s.temperature,
        recorded=recorded,
        window=rnd.window,
        drafted=rnd.drafted,
        accepted=rnd.accepted,
        first_position=first,
        steps=_steps(rnd, s.rule, s.alpha, first, len(emitted), text) if recorded else [],
        outcome=outcome,
        draw=_draw(rnd, outcome, emitted, s.rule, text) if recorded else None,
        drafter_rolled_back=rnd.drafter_rolled_back if recorded else None,
        verifier_rolled_back=rnd.verifier_rolled_back if recorded else None,
        drafter_s=rnd.drafter_s,
        verifier_s=rnd.verifier_s,
        drafter_calls=rnd.drafter_calls,
        verifier_calls=rnd.verifier_calls,
        emitted=emitted,
        stop_reason=s.stop_reason if index == n - 1 else None,
    )


def _steps(
    rnd: RoundRecord,
    rule: str,
    alpha: float | None,
    first: int,
    n_emitted: int,
    text: Callable[[int], str | None],
) -> list[DraftStep]:
    steps = []
    for j, d in enumerate(rnd.drafts):
        cmp = compare_draft(d, rule, alpha)
        status: DraftStatus = "kept" if d.kept else "rejected" if d.tested else "untested"
        steps.append(
            DraftStep(
                slot=j,
                position=first + j,
                token_id=d.token_id,
                token=text(d.token_id),
                q=d.q,
                p=d.p,
                max_q=d.max_q,
                max_p=d.max_p,
                dtv=d.dtv,
                ent_p=d.ent_p,
                kl=d.kl,
                jsd=d.jsd,
                lhs=cmp.lhs,
                rhs=cmp.rhs,
                relation=cmp.relation,
                defer=cmp.defer,
                recorded_defer=d.defer,
                accept_prob=d.accept_prob,
                u=d.u,
                status=status,
                written=d.kept and j < n_emitted,
            )
        )
    return steps


def _draw(
    rnd: RoundRecord,
    outcome: Outcome,
    emitted: list[TokenRecord],
    rule: str,
    text: Callable[[int], str | None],
) -> Draw | None:
    """The residual or bonus token with its probability under the law it came from."""
    if outcome == "end":
        return None
    source = "resampled" if outcome == "rejected" else "bonus"
    record = next((t for t in emitted if t.source == source), None)
    law: DrawLaw = "residual" if outcome == "rejected" else "pi"
    top = rnd.residual_top if outcome == "rejected" else record.top_pi if record else []
    if outcome == "bonus" and record is not None and not top and not RULES[rule].has_alpha:
        law, top = "p1", record.top_p  # SD's (and block's) bonus: π = p, recorded at T = 1
    listed = dict(top)
    token_id = record.token_id if record is not None else None
    return Draw(
        law=law,
        token_id=token_id,
        token=record.text if record is not None else None,
        prob=listed.get(token_id) if token_id is not None else None,
        top=[Candidate(i, x, text(i)) for i, x in top],
    )


__all__ = [
    "Candidate",
    "DraftStep",
    "Draw",
    "RoundReplay",
    "replay_round",
    "require_rounds",
    "rounds_of",
    "token_texts",
]

"""Worked examples: one recorded run's deferral decisions, spelled out as numbers.

For one drafted position the rule compares two quantities (docs/method.md, §4): TokenV3, for
instance, defers the draft x when p(x) < (1 − α)·max p. `TokenStep` holds both sides of that
comparison (`lhs`, `rhs`), the decision they give, the target probability π(x) and the
acceptance probability min(1, π(x)/q(x)), all read from a trace's `TokenRecord`s.
`worked_example` picks one kept and one deferred draft of a run for the Learn tab.

The two sides of each rule come from `SIDES`, a registry keyed by rule name, and are computed
with the very tensor expressions the rule's predicate in `rules.py` uses, in float32, so
`lhs < rhs` (`>` for BiLD*) is bit for bit `rules.decide`. Pure computations only: wording
and number formatting for people live in `speccascade.i18n.learn`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from speccascade.core.rules import RULES, Rule, Stats
from speccascade.core.trace import Draft, TokenRecord, Trace

Relation = Literal["<", ">", "<="]
Outcome = Literal["kept", "replaced"]


@dataclass(frozen=True)
class Sides:
    """How a rule compares: it defers when `lhs relation rhs` (strictly, ties keep, §7.5;
    typical acceptance keeps its source's convention, deferring on a tie: "<=")."""

    sides: Callable[[Stats, float], tuple[Tensor, Tensor | float]]
    relation: Relation = "<"


def _typical_rhs(s: Stats, epsilon: float) -> Tensor:
    # as rules._typical: min(eps, sqrt(eps) exp(-H(p))); eps = inf defers everything
    if epsilon == float("inf"):
        return torch.full_like(s.p1, float("inf"))
    return torch.minimum(torch.full_like(s.ent_p, epsilon), (epsilon**0.5) * torch.exp(-s.ent_p))


def _scalar(a: float) -> Tensor:
    return torch.tensor(a, dtype=torch.float32)


def _opt_rhs(s: Stats, alpha: float) -> Tensor:
    # as rules._opt: alpha may be +-inf; where D_TV = 0 the penalty is 0, not inf * 0
    return s.max_p1 - torch.where(s.dtv > 0, alpha * s.dtv, 0.0)


# The two sides of each rule's deferral test, as its predicate in rules.py writes them.
# `None`: a known rule without such a comparison (SD and block verification always defer, to
# p; lossy SD has no deferral decision, only its lenient accept test; the static ensemble only
# a weight). A rule missing here is a KeyError.
SIDES: dict[str, Sides | None] = {
    "sd": None,
    "block": None,
    "lossy": None,
    "ensemble": None,
    "chow": Sides(lambda s, a: (s.max_q1, 1 - a)),
    "diff": Sides(lambda s, a: (s.max_q1, s.max_p1 - a)),
    "opt": Sides(lambda s, a: (s.max_q1, _opt_rhs(s, a))),
    "token_v1": Sides(lambda s, a: (s.q1, s.max_p1 - a)),
    "token_v2": Sides(lambda s, a: (s.p1, s.max_p1 - a)),
    "token_v3": Sides(lambda s, a: (s.p1, (1 - a) * s.max_p1)),
    "bild": Sides(lambda s, a: (s.dtv, _scalar(a)), ">"),
    "typical": Sides(lambda s, a: (s.p1, _typical_rhs(s, a)), "<="),
    "fuzzy": Sides(lambda s, a: (s.jsd, _scalar(a)), ">"),
    "kl_judge": Sides(lambda s, a: (s.kl, _scalar(a)), ">"),
}


def sides_of(rule: Rule | str) -> Sides | None:
    """The comparison a rule makes; KeyError naming the rule if it has no entry in SIDES."""
    name = rule if isinstance(rule, str) else rule.name
    try:
        return SIDES[name]
    except KeyError:
        raise KeyError(f"no worked-example sides for rule {name!r}; add it to SIDES") from None


@dataclass(frozen=True)
class Comparison:
    lhs: float | None  # the quantity the rule looks at (e.g. p(x) for TokenV3)
    rhs: float | None  # the threshold it is compared with (e.g. (1 - alpha) max p)
    relation: Relation | None  # defer when lhs < rhs ("<"), lhs > rhs (">"), lhs <= rhs
    defer: bool | None  # the decision; None for lossy SD and the ensemble, which have none


def compare(
    rule: Rule | str,
    alpha: float,
    *,
    q: float,
    p: float,
    max_q: float,
    max_p: float,
    dtv: float,
    ent_p: float | None = None,
    kl: float | None = None,
    jsd: float | None = None,
) -> Comparison:
    """Both sides of `rule`'s test on one draft's T = 1 statistics, and the decision.

    `q`, `p` are the draft token's T = 1 probabilities, `dtv` D_TV on the scaled laws, the
    entropy and divergences on the T = 1 laws, as a TokenRecord stores them. Agrees with
    `rules.decide` on the same numbers."""
    entry = sides_of(rule)
    rule = RULES[rule] if isinstance(rule, str) else rule
    if entry is None:  # SD and block defer everywhere; lossy SD and the ensemble decide nothing
        return Comparison(None, None, None, None if rule.kind in ("lenient", "soft") else True)
    given = {"ent_p": ent_p, "kl": kl, "jsd": jsd}
    missing = [k for k in rule.stats if given[k] is None]
    if missing:  # as rules.decide: never a silent "keep" on a number that was not recorded
        raise ValueError(f"rule {rule.name!r} needs {', '.join(missing)}, which this record lacks")
    col = lambda x: torch.tensor([[float("nan") if x is None else x]], dtype=torch.float32)  # noqa: E731
    stats = Stats(col(q), col(p), col(max_q), col(max_p), col(dtv), col(ent_p), col(kl), col(jsd))
    lhs, rhs = entry.sides(stats, alpha)
    lhs = torch.as_tensor(lhs, dtype=torch.float32)
    rhs = torch.as_tensor(rhs, dtype=torch.float32)
    defer = {"<": lhs < rhs, ">": lhs > rhs, "<=": lhs <= rhs}[entry.relation]
    return Comparison(
        float(lhs.reshape(-1)[0]), float(rhs.reshape(-1)[0]), entry.relation, bool(defer.all())
    )


def compare_draft(draft: Draft, rule: Rule | str, alpha: float | None) -> Comparison:
    """`compare` on one recorded Draft of a round (the round replay): the Draft holds the same
    T = 1 statistics a TokenRecord does, for every drafted token, emitted or not."""
    return compare(
        rule,
        0.0 if alpha is None else alpha,
        q=draft.q,
        p=draft.p,
        max_q=draft.max_q,
        max_p=draft.max_p,
        dtv=draft.dtv,
        ent_p=draft.ent_p,
        kl=draft.kl,
        jsd=draft.jsd,
    )


@dataclass(frozen=True)
class TokenStep:
    """One drafted position of a recorded run, with the rule's comparison spelled out."""

    position: int
    token: str | None  # the draft's text (None when no decoder was given and it was replaced)
    token_id: int  # the draft x
    q: float  # q(x), the drafter's T = 1 probability of the draft
    p: float  # p(x), the verifier's T = 1 probability of the draft
    max_q: float
    max_p: float
    dtv: float | None  # D_TV(p, q) on the temperature-scaled laws
    lhs: float | None  # the two sides of the rule's test (None for SD and lossy SD)
    rhs: float | None
    relation: Relation | None  # the rule defers when lhs < rhs ("<") or lhs > rhs (">")
    defer: bool | None  # the rule's decision at this alpha (None: lossy SD has none)
    recorded_defer: bool | None  # what the engine recorded (equal to `defer` at the run's alpha)
    pi: float | None  # the target's probability pi(x) of the draft, if recorded or derivable
    accept_prob: float | None  # min(1, pi(x)/q(x)) on the scaled laws, as recorded
    outcome: Outcome  # kept (green) or replaced by the verifier (red)
    emitted: str  # the text written at this position (the verifier's token when replaced)
    emitted_id: int

    @property
    def is_content(self) -> bool:
        """Whether the draft is a content word: its text has a letter (not space/punctuation)."""
        text = self.token if self.token is not None else self.emitted
        return any(c.isalpha() for c in text)


@dataclass(frozen=True)
class WorkedExample:
    """A run's summary numbers and one kept and one deferred (or rejected) draft."""

    rule: str
    alpha: float | None  # None for SD (no alpha)
    gamma: int
    temperature: float
    method: str
    prompt: str | None
    kept: TokenStep | None  # a draft the rule kept and the run accepted
    deferred: TokenStep | None  # a draft the rule deferred (preferably one the verifier replaced)
    tokens: int  # tokens written
    drafted: int
    accepted: int
    kept_fraction: float | None  # accepted / drafted
    verifier_calls: int
    tokens_per_verifier_call: float | None
    cost_ratio: float | None  # drafter / verifier seconds per forward, measured in the run
    ideal_speedup: float | None  # docs/method.md, §5
    replaced: int = 0  # drafts the verifier replaced with its own token (red)
    bonus: int = 0  # tokens drawn after a fully kept window (blue)


def _target_prob(record: TokenRecord, kind: str, temperature: float) -> float | None:
    """pi(x) of the draft: from the recorded top-k of pi, or derived when that is exact."""
    if kind in ("lenient", "block") or record.draft_id is None:
        # lossy SD has no pi (its recorded law is its emission law); block verification's
        # recorded acceptance is its block level, not pi(x) = p(x)
        return None
    listed = dict(record.top_pi)
    if record.draft_id in listed:
        return listed[record.draft_id]
    if listed and min(listed.values()) <= 0:
        return 0.0  # an unlisted token has at most the smallest listed mass
    if temperature == 0 and record.accept_prob is not None:
        return record.accept_prob  # greedy: the scaled q is one-hot at the draft, q(x) = 1
    return None


def token_step(
    record: TokenRecord,
    rule: Rule | str,
    alpha: float | None,
    *,
    temperature: float = 1.0,
    decode: Callable[[int], str] | None = None,
) -> TokenStep | None:
    """The TokenStep of one record; None for a position with no draft (e.g. a bonus token)."""
    rule = RULES[rule] if isinstance(rule, str) else rule
    if record.draft_id is None or record.draft_q is None or record.draft_p is None:
        return None
    cmp = compare(
        rule,
        0.0 if alpha is None else alpha,
        q=record.draft_q,
        p=record.draft_p,
        max_q=record.max_q,
        max_p=record.max_p,
        dtv=record.dtv if record.dtv is not None else float("nan"),
        ent_p=record.ent_p,
        kl=record.kl,
        jsd=record.jsd,
    )
    replaced = record.source == "resampled"
    if decode is not None:
        token = decode(record.draft_id)
    else:
        token = None if replaced and record.token_id != record.draft_id else record.text
    return TokenStep(
        position=record.position,
        token=token,
        token_id=record.draft_id,
        q=record.draft_q,
        p=record.draft_p,
        max_q=record.max_q,
        max_p=record.max_p,
        dtv=record.dtv,
        lhs=cmp.lhs,
        rhs=cmp.rhs,
        relation=cmp.relation,
        defer=cmp.defer,
        recorded_defer=record.defer,
        pi=_target_prob(record, rule.kind, temperature),
        accept_prob=record.accept_prob,
        outcome="replaced" if replaced else "kept",
        emitted=record.text,
        emitted_id=record.token_id,
    )


def _pick(steps: list[TokenStep], tiers: list[Callable[[TokenStep], bool]]) -> TokenStep | None:
    """The first step of the best tier, content words first, then by position."""
    for tier in tiers:
        found = [s for s in steps if tier(s)]
        if found:
            return min(found, key=lambda s: (not s.is_content, s.position))
    return None


def worked_example(
    trace: Trace,
    rule: Rule | str | None = None,
    alpha: float | None = None,
    *,
    prompt: str | None = None,
    decode: Callable[[int], str] | None = None,
) -> WorkedExample | None:
    """One kept and one deferred draft of a recorded run, with the run's summary numbers.

    `rule` and `alpha` default to the run's own (`trace.summary`); pass those to explain the
    run as recorded. `prompt` is only carried along for the text; `decode(token_id)` gives the
    text of a replaced draft (e.g. `lambda i: tokenizer.decode([i])`), which the trace does
    not store. None when the run drafted nothing or has no rule (the verifier or the drafter
    alone, the sequential cascades)."""
    s = trace.summary
    rule = rule if rule is not None else s.rule
    if rule is None:
        return None
    rule = RULES[rule] if isinstance(rule, str) else rule
    sides_of(rule)  # fail loudly for a rule without an entry, even on an empty run
    alpha = alpha if alpha is not None else s.alpha
    if alpha is None and rule.has_alpha:
        raise ValueError(f"rule {rule.name!r} needs an alpha and the trace records none")
    steps = [
        step
        for record in trace.tokens
        if (step := token_step(record, rule, alpha, temperature=s.temperature, decode=decode))
    ]
    if not steps:
        return None
    kept = _pick(
        steps, [lambda x: x.outcome == "kept" and x.defer is False, lambda x: x.outcome == "kept"]
    )
    deferred = _pick(
        [x for x in steps if x is not kept],
        [
            lambda x: x.defer is True and x.outcome == "replaced",
            lambda x: x.outcome == "replaced",
            lambda x: x.defer is True,
        ],
    )
    return WorkedExample(
        rule=rule.name,
        alpha=alpha if rule.has_alpha else None,
        gamma=s.gamma,
        temperature=s.temperature,
        method=s.method,
        prompt=prompt,
        kept=kept,
        deferred=deferred,
        tokens=s.new_tokens,
        drafted=s.drafted,
        accepted=s.accepted,
        kept_fraction=s.accepted / s.drafted if s.drafted else None,
        verifier_calls=s.verifier_calls,
        tokens_per_verifier_call=s.tokens_per_verifier_call,
        cost_ratio=s.cost_ratio,
        ideal_speedup=s.ideal_speedup,
        replaced=sum(t.source == "resampled" for t in trace.tokens),
        bonus=sum(t.source == "bonus" for t in trace.tokens),
    )


__all__ = [
    "SIDES",
    "Comparison",
    "Sides",
    "TokenStep",
    "WorkedExample",
    "compare",
    "compare_draft",
    "sides_of",
    "token_step",
    "worked_example",
]

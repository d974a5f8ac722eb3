"""Deferral rules as target laws: pi = T(q, p; alpha).

A rule is one predicate `defer(stats, alpha)` plus a registry entry. The predicate sees T = 1
statistics (docs/method.md, 7.4: max q, max p and thresholds use the unscaled softmax) and
returns where to defer. `build_target` turns it into the law the speculative loop samples
against:

* ``mixture`` rules defer the whole position: pi = (1 - r) q + r p.
* ``token`` rules defer single tokens (Eq. 11): pi(v) = q(v) (1 - r(v)) + p(v) eta,
  eta = sum_v r(v) q(v).
* ``lenient`` is Tran-Thien's lossy speculative decoding: it keeps its own accept test and the
  plain SD residual, so it is not a pi-target; its emitted law is derived for the trace.
* ``soft`` mixes the two laws with a fixed weight, pi = w p + (1 - w) q (static ensemble
  verification): no token is deferred or kept outright, every draft is tested against pi.
* ``block`` is lossless (pi = p) but verifies the window jointly (sampling.block_verify)
  instead of token by token.

Beyond the paper's rules, the registry holds the acceptance rules serving engines and later
papers use (typical acceptance, static ensemble, fuzzy SD, the KL judge, block verification),
so one trace format, one what-if and one fidelity audit compare them all. Each rule's
parameter keeps its own name (`Rule.param`: alpha, epsilon, w, T, tau) and direction: for
some, a larger value is stricter (`Rule.sd_at_low` says which end is SD).

Because the predicates broadcast, the same function evaluates a whole draft window ([n, V]) or,
for the app's what-if re-colouring, just the recorded draft token ([n, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import torch
from torch import Tensor

Kind = Literal["mixture", "token", "lenient", "soft", "block"]


def tv_distance(p: Tensor, q: Tensor) -> Tensor:
    """D_TV(p, q) = sum max(0, p - q), per row."""
    return (p - q).clamp_min(0).sum(-1)


def _log(x: Tensor) -> Tensor:
    """log with 0 -> the smallest normal float's log: 0 * log 0 terms vanish, and KL stays
    finite (and large) where q underflowed to 0."""
    return x.clamp_min(torch.finfo(x.dtype).tiny).log_()


def entropy(p: Tensor) -> Tensor:
    """H(p) = -sum p log p (nats), per row."""
    return -(p * _log(p)).sum(-1)


def kl_divergence(p: Tensor, q: Tensor) -> Tensor:
    """KL(p || q) = sum p (log p - log q) (nats), per row."""
    return (p * (_log(p) - _log(q))).sum(-1).clamp_min(0)


def js_divergence(p: Tensor, q: Tensor) -> Tensor:
    """Jensen-Shannon divergence (nats, in [0, ln 2]), per row."""
    m = (p + q) / 2
    return (0.5 * kl_divergence(p, m) + 0.5 * kl_divergence(q, m)).clamp(0, math.log(2))


def divergences(p: Tensor, q: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(H(p), KL(p || q), JSD(p, q)) per row: the same numbers as entropy, kl_divergence and
    js_divergence, from three logarithms of the vocabulary instead of seven (the trace
    records all three for every drafted position, every round). The same products in the
    same order, written into one scratch row block: over a 49k vocabulary each fresh [n, V]
    temporary costs more (allocation, page faults) than its arithmetic."""
    log_p, log_q = _log(p), _log(q)
    log_m = _log(torch.add(p, q).div_(2))
    scratch = torch.sub(log_p, log_m).mul_(p)
    kl_pm = scratch.sum(-1).clamp_min(0)
    kl_qm = torch.sub(log_q, log_m, out=scratch).mul_(q).sum(-1).clamp_min(0)
    entropy_p = -torch.mul(p, log_p, out=scratch).sum(-1)
    kl_pq = torch.sub(log_p, log_q, out=scratch).mul_(p).sum(-1).clamp_min(0)
    return entropy_p, kl_pq, (0.5 * kl_pm + 0.5 * kl_qm).clamp(0, math.log(2))


def normalise(x: Tensor) -> Tensor:
    """Rows divided by their sums; an all-zero row stays zero (docs/method.md, fact 2)."""
    total = x.sum(-1, keepdim=True)
    return torch.where(total > 0, x / total.clamp_min(torch.finfo(x.dtype).tiny), 0.0)


@dataclass(frozen=True)
class Stats:
    """What a deferral predicate may look at: T = 1 probabilities and per-row summaries.

    `q1`, `p1` are [n, V] (or [n, 1] holding just the draft token); the rest are [n, 1].
    `dtv` is D_TV on the temperature-scaled laws, as the companion notebook computes it; the
    entropy of p and the KL and Jensen-Shannon divergences use the T = 1 laws (at T = 0 the
    scaled laws are one-hot and these would be 0 or infinite). The trace records all of them
    per drafted position, so the what-if of any rule needs no model.
    """

    q1: Tensor
    p1: Tensor
    max_q1: Tensor
    max_p1: Tensor
    dtv: Tensor
    ent_p: Tensor | None = None  # H(p), nats
    kl: Tensor | None = None  # KL(p || q), nats
    jsd: Tensor | None = None  # JSD(p, q), nats

    @classmethod
    def of(cls, q: Tensor, p: Tensor, q1: Tensor, p1: Tensor, need: tuple[str, ...] = ()) -> Stats:
        """The statistics of a window; the entropy and divergences only where `need` names
        them (a rule's `stats`): they cost a pass over the vocabulary each."""
        extra = {
            "ent_p": lambda: entropy(p1).unsqueeze(-1),
            "kl": lambda: kl_divergence(p1, q1).unsqueeze(-1),
            "jsd": lambda: js_divergence(p1, q1).unsqueeze(-1),
        }
        return cls(
            q1=q1,
            p1=p1,
            max_q1=q1.amax(-1, keepdim=True),
            max_p1=p1.amax(-1, keepdim=True),
            dtv=tv_distance(p, q).unsqueeze(-1),
            **{name: make() for name, make in extra.items() if name in need},
        )


Predicate = Callable[[Stats, float], Tensor]


@dataclass(frozen=True)
class Rule:
    """A registry entry: the predicate and everything a user or UI needs to know about it."""

    name: str
    label: str
    kind: Kind
    defer: Predicate | None
    formula: str  # LaTeX of the deferral condition (or accept test for `lenient`)
    alpha_min: float
    alpha_max: float
    alpha_sd: float  # alpha that makes this target exactly lossless SD
    alpha_drafter: float  # alpha that makes it exactly the drafter alone
    alpha_default: float
    slider: tuple[float, float]
    source: str  # where it comes from (paper equation)
    description: str
    param: str = "α"  # the parameter's own symbol (epsilon for typical acceptance, w, T, tau)
    stats: tuple[str, ...] = ()  # per-position statistics beyond Stats' basic ones it reads

    @property
    def has_alpha(self) -> bool:
        """Whether alpha means anything for this rule (SD's target is p whatever alpha is)."""
        return self.alpha_min < self.alpha_max

    @property
    def sd_at_low(self) -> bool:
        """Whether the SD end is the low end of the parameter (alpha, T, tau) or the high
        end (epsilon of typical acceptance, the ensemble's weight w: larger is stricter)."""
        return self.alpha_sd <= self.alpha_drafter

    @property
    def needs_bonus_q(self) -> bool:
        """Whether the token after a fully accepted window needs the drafter's q there.

        Every target draws it from its own law (docs/method.md, step 6 and 7.1); for SD (the
        one rule without an alpha) that law is p, so the drafter forward is skipped. Lossy SD
        does the same with its derived law, which is what makes alpha = 1 exactly the drafter
        (Tran-Thien's original draws it from p)."""
        return self.has_alpha


@dataclass(frozen=True)
class Target:
    """How the speculative loop treats a draft window against a rule.

    A draft v is kept with probability min(1, accept(v) / q(v)); on rejection the next token
    comes from normalise(residual). `law` is the resulting law of an emitted token.
    """

    accept: Tensor
    residual: Tensor
    law: Tensor
    defer: Tensor | None  # bool [n, V]: r(v); None where the method has no deferral rule

    def rows(self, index: slice) -> Target:
        pick = lambda t: None if t is None else t[index]  # noqa: E731
        return Target(pick(self.accept), pick(self.residual), pick(self.law), pick(self.defer))

    def then(self, other: Target) -> Target:
        """This window's rows followed by `other`'s (the bonus position)."""
        cat = lambda a, b: None if a is None else torch.cat([a, b])  # noqa: E731
        return Target(
            cat(self.accept, other.accept),
            cat(self.residual, other.residual),
            cat(self.law, other.law),
            cat(self.defer, other.defer),
        )


def _always(s: Stats, alpha: float) -> Tensor:
    return torch.ones_like(s.max_q1, dtype=torch.bool)


def _chow(s: Stats, alpha: float) -> Tensor:
    return s.max_q1 < 1 - alpha


def _diff(s: Stats, alpha: float) -> Tensor:
    return s.max_q1 < s.max_p1 - alpha


def _opt(s: Stats, alpha: float) -> Tensor:
    # alpha may be +-inf; where D_TV = 0 the two laws agree and the product is taken as 0.
    penalty = torch.where(s.dtv > 0, alpha * s.dtv, 0.0)
    return s.max_q1 < s.max_p1 - penalty


def _token_v1(s: Stats, alpha: float) -> Tensor:
    return s.q1 < s.max_p1 - alpha


def _token_v2(s: Stats, alpha: float) -> Tensor:
    return s.p1 < s.max_p1 - alpha


def _token_v3(s: Stats, alpha: float) -> Tensor:
    return s.p1 < (1 - alpha) * s.max_p1


def _bild(s: Stats, alpha: float) -> Tensor:
    return s.dtv > alpha


def _typical(s: Stats, epsilon: float) -> Tensor:
    """Typical acceptance (Cai et al. 2024, Medusa, section 3.3): keep a draft x when
    p(x) > min(eps, delta * exp(-H(p))), delta = sqrt(eps) (Medusa's defaults 0.09 and 0.3).
    As a token rule: r(v) = 1[p(v) <= min(eps, sqrt(eps) exp(-H(p)))], pi of Eq. 11, so a
    rejected position is redrawn from pi's residual and every emitted token follows pi.
    Medusa's tie convention: a tie defers. eps = inf defers everything (SD), eps = 0 nothing
    (the drafter alone). Medusa tests the temperature-scaled posterior; here, like every rule,
    the T = 1 law (docs/method.md, 7.4)."""
    if math.isinf(epsilon):
        return torch.ones_like(s.p1, dtype=torch.bool)
    if epsilon <= 0:  # exactly the drafter alone, even where p underflowed to 0
        return torch.zeros_like(s.p1, dtype=torch.bool)
    threshold = torch.minimum(
        torch.full_like(s.ent_p, epsilon), math.sqrt(epsilon) * torch.exp(-s.ent_p)
    )
    return s.p1 <= threshold


def _ensemble(s: Stats, w: float) -> Tensor:
    """Static ensemble verification (DIVERSE, arXiv 2604.07622; transformers'
    `assistant_ensemble_weight`): SD against pi = w p + (1 - w) q at every position. A weight,
    not a decision: the mixture kind "soft". transformers draws the bonus token from p; here
    it comes from pi like every target, so every emitted token follows pi."""
    return torch.full_like(s.max_q1, float(w))


def _fuzzy(s: Stats, threshold: float) -> Tensor:
    """Fuzzy speculative decoding (Holsman et al. 2025): keep the draft outright where the
    two laws diverge by at most T, r = 1[JSD(p, q) > T] (Jensen-Shannon, nats, T = 1 laws);
    elsewhere verify as SD. T = 0 is SD (JSD = 0 only where p = q), ln 2 the drafter."""
    return s.jsd > threshold


def _kl_judge(s: Stats, tau: float) -> Tensor:
    """A training-free judge (judge decoding with a KL threshold for the trained judge):
    keep the draft outright where r = 1[KL(p || q) > tau] is 0; elsewhere verify as SD.
    tau = 0 is SD, tau = inf the drafter."""
    return s.kl > tau


INF = math.inf


def _rule(name, label, kind, defer, formula, alphas, default, slider, source, description):
    """Registry row; `alphas` = (min, max, SD end, drafter-only end)."""
    lo, hi, sd, drafter = alphas
    return Rule(
        name, label, kind, defer, formula, lo, hi, sd, drafter, default, slider, source, description
    )


# fmt: off
RULES: dict[str, Rule] = {r.name: r for r in [
    _rule("sd", "Speculative decoding", "mixture", _always, r"r = 1",
          (0, 0, 0, 0), 0, (0, 0), "Leviathan et al. 2023",
          "Lossless: every position defers to the verifier, pi = p."),
    _rule("chow", "Chow", "mixture", _chow, r"\max_v q(v) < 1 - \alpha",
          (0, 1, 0, 1), 0.3, (0, 1), "Eq. 2",
          "Defer when the drafter itself is unsure."),
    _rule("diff", "Diff", "mixture", _diff, r"\max_v q(v) < \max_v p(v) - \alpha",
          (-1, 1, -1, 1), 0.1, (-1, 1), "Eq. 5",
          "Defer when the verifier is more confident than the drafter by more than alpha."),
    _rule("opt", "OPT", "mixture", _opt,
          r"\max_v q(v) < \max_v p(v) - \alpha \cdot D_{TV}(p, q)",
          (-INF, INF, -INF, INF), 0.5, (-2, 2), "Eq. 10 (plug-in of Lemma 4)",
          "Defer when the confidence gain outweighs alpha times the rejection rate it costs."),
    _rule("token_v1", "TokenV1", "token", _token_v1, r"q(v) < \max_{v'} p(v') - \alpha",
          (-1, 1, -1, 1), 0.1, (-1, 1), "Eq. 13",
          "Defer a token the drafter rates well below the verifier's favourite."),
    _rule("token_v2", "TokenV2", "token", _token_v2, r"p(v) < \max_{v'} p(v') - \alpha",
          (-1, 1, -1, 1), 0.3, (-1, 1), "Eq. 14",
          "Keep a token whose verifier probability is within alpha of the verifier's best."),
    _rule("token_v3", "TokenV3", "token", _token_v3,
          r"p(v) < (1 - \alpha) \cdot \max_{v'} p(v')",
          (-0.1, 1, -0.1, 1), 0.3, (-0.1, 1), "Eq. 15",
          "Keep a token the verifier ranks within a factor (1 - alpha) of its favourite; "
          "any alpha < 0 is exactly SD."),
    _rule("lossy", "Lossy SD", "lenient", None,
          r"\text{accept } x \text{ w.p. } \min\left(1, \frac{p(x)}{(1-\alpha)\, q(x)}\right)",
          (0, 1, 0, 1), 0.3, (0, 1), "Tran-Thien 2023",
          "Lenient acceptance; residual max(0, p - q)."),
    _rule("bild", "BiLD*", "mixture", _bild, r"D_{TV}(p, q) > \alpha",
          (0, 1, 0, 1), 0.3, (0, 1), "Kim et al. 2023, as adapted by the paper",
          "Defer when the two laws disagree by more than alpha in total variation."),
    # -- acceptance rules of serving engines and later papers --------------------------------
    replace(_rule(
        "typical", "Typical acceptance", "token", _typical,
        r"p(v) \le \min\left(\epsilon,\ \sqrt{\epsilon}\, e^{-H(p)}\right)",
        (0, INF, INF, 0), 0.09, (0, 1),
        "Cai et al. 2024 (Medusa), typical acceptance",
        "Keep a draft the verifier finds typical enough: p(x) above epsilon, or above "
        "sqrt(epsilon) times exp(-entropy) where the verifier is unsure. Lossy; "
        "larger epsilon is stricter (epsilon = inf is SD, 0 the drafter alone)."),
        param="ε", stats=("ent_p",)),
    replace(_rule(
        "ensemble", "Static ensemble", "soft", _ensemble, r"\pi = w\, p + (1 - w)\, q",
        (0, 1, 1, 0), 0.7, (0, 1),
        "DIVERSE (arXiv 2604.07622); transformers' assistant_ensemble_weight",
        "Verify as SD against a fixed mixture of the two laws: every draft is tested, "
        "none deferred outright. w = 1 is SD, w = 0 the drafter alone."),
        param="w"),
    replace(_rule(
        "fuzzy", "Fuzzy SD", "mixture", _fuzzy, r"\mathrm{JSD}(p, q) > T",
        (0, math.log(2), 0, math.log(2)), 0.1, (0, 0.69),
        "Holsman et al. 2025 (Fuzzy speculative decoding)",
        "Keep the draft outright where the two laws diverge by at most T (Jensen-Shannon, "
        "nats); elsewhere verify as SD."),
        param="T", stats=("jsd",)),
    replace(_rule(
        "kl_judge", "KL judge", "mixture", _kl_judge, r"\mathrm{KL}(p \,\Vert\, q) > \tau",
        (0, INF, 0, INF), 0.5, (0, 3),
        "training-free judge decoding (a KL threshold in place of a trained judge)",
        "Keep the draft outright where KL(p||q) is at most tau (nats); elsewhere verify "
        "as SD."),
        param="τ", stats=("kl",)),
    _rule("block", "Block verification", "block", _always, r"r = 1",
          (0, 0, 0, 0), 0, (0, 0), "Sun et al. 2024 (Block verification)",
          "Lossless like SD (pi = p), but the window is verified jointly: it keeps the "
          "longest prefix whose block test passes, so on average at least as many drafts "
          "as SD."),
]}
# fmt: on

SPEC_CASCADE_RULES = ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3")


def get_rule(name: str) -> Rule:
    try:
        return RULES[name]
    except KeyError:
        raise ValueError(f"unknown rule {name!r}; choose one of {', '.join(RULES)}") from None


def build_target(rule: Rule, alpha: float, q: Tensor, p: Tensor, q1: Tensor, p1: Tensor) -> Target:
    """The target for a window: q, p temperature-scaled and q1, p1 at T = 1, all [n, V]."""
    if rule.kind == "lenient":
        accept = p / (1 - alpha) if alpha < 1 else torch.full_like(p, INF)
        residual = (p - q).clamp_min(0)
        kept = torch.minimum(q, accept)
        rejected = (q - kept).sum(-1, keepdim=True)  # = 1 - sum(kept), exactly 0 when all kept
        law = kept + rejected * normalise(residual)
        return Target(accept, residual, law, None)
    if rule.defer is _always and rule.kind in ("mixture", "block"):
        # lossless: q (1 - 1) + p 1 is p bit for bit, so skip the statistics and products
        # this rule never reads (a full-vocabulary pass each, every round)
        always = torch.ones_like(q[:, :1], dtype=torch.bool).expand_as(q)
        return Target(p, (p - q).clamp_min(0), p, always)
    r = rule.defer(Stats.of(q, p, q1, p1, rule.stats), alpha).expand_as(q)
    rf = r.to(q.dtype)
    if rule.kind == "soft":  # a weight, not a decision: no token is deferred as such
        pi = q * (1 - rf) + p * rf
        return Target(pi, (pi - q).clamp_min(0), pi, None)
    if rule.kind in ("mixture", "block"):
        pi = q * (1 - rf) + p * rf
    else:
        # eta = deferred drafter mass; dividing by q's own total (1 up to rounding) makes
        # "all deferred" give pi = p and "none deferred" pi = q exactly.
        eta = (rf * q).sum(-1, keepdim=True) / q.sum(-1, keepdim=True)
        pi = q * (1 - rf) + p * eta
    return Target(pi, (pi - q).clamp_min(0), pi, r)


def acceptance_probability(q: Tensor, target: Target) -> Tensor:
    """Chance a fresh draft from q is kept: sum_v min(q(v), accept(v)) = 1 - D_TV(q, pi)."""
    return torch.minimum(q, target.accept).sum(-1)


def decide(
    rule: Rule,
    alpha: float,
    q1: list[float],
    p1: list[float],
    max_q1: list[float],
    max_p1: list[float],
    dtv: list[float],
    ent_p: list[float] | None = None,
    kl: list[float] | None = None,
    jsd: list[float] | None = None,
) -> list[bool]:
    """Re-evaluate a rule on recorded per-token statistics (the app's what-if re-colouring).

    Uses the very predicate the engine ran, on [n, 1] columns holding the draft token. A
    rule reading a statistic the record lacks (a trace from before it was recorded) is a
    ValueError naming it."""
    if rule.defer is None or rule.kind == "soft":
        raise ValueError(f"rule {rule.name!r} has no deferral decision to re-evaluate")
    extra = {"ent_p": ent_p, "kl": kl, "jsd": jsd}
    missing = [k for k in rule.stats if extra[k] is None or any(x is None for x in extra[k])]
    if missing:
        raise ValueError(f"rule {rule.name!r} needs {', '.join(missing)}, which this trace lacks")

    def col(xs: list[float | None] | None) -> Tensor | None:
        if xs is None:
            return None
        values = [math.nan if x is None else x for x in xs]  # unread columns may be unknown
        return torch.tensor(values, dtype=torch.float32).unsqueeze(-1)

    stats = Stats(
        col(q1), col(p1), col(max_q1), col(max_p1), col(dtv), col(ent_p), col(kl), col(jsd)
    )
    return rule.defer(stats, alpha).expand(len(q1), 1).squeeze(-1).tolist()

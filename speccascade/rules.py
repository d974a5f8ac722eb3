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

Because the predicates broadcast, the same function evaluates a whole draft window ([n, V]) or,
for the app's what-if re-colouring, just the recorded draft token ([n, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Kind = Literal["mixture", "token", "lenient"]


def tv_distance(p: Tensor, q: Tensor) -> Tensor:
    """D_TV(p, q) = sum max(0, p - q), per row."""
    return (p - q).clamp_min(0).sum(-1)


def normalise(x: Tensor) -> Tensor:
    """Rows divided by their sums; an all-zero row stays zero (docs/method.md, fact 2)."""
    total = x.sum(-1, keepdim=True)
    return torch.where(total > 0, x / total.clamp_min(torch.finfo(x.dtype).tiny), 0.0)


@dataclass(frozen=True)
class Stats:
    """What a deferral predicate may look at: T = 1 probabilities and per-row summaries.

    `q1`, `p1` are [n, V] (or [n, 1] holding just the draft token); the rest are [n, 1].
    `dtv` is D_TV on the temperature-scaled laws, as the companion notebook computes it.
    """

    q1: Tensor
    p1: Tensor
    max_q1: Tensor
    max_p1: Tensor
    dtv: Tensor

    @classmethod
    def of(cls, q: Tensor, p: Tensor, q1: Tensor, p1: Tensor) -> Stats:
        return cls(
            q1=q1,
            p1=p1,
            max_q1=q1.amax(-1, keepdim=True),
            max_p1=p1.amax(-1, keepdim=True),
            dtv=tv_distance(p, q).unsqueeze(-1),
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

    @property
    def has_alpha(self) -> bool:
        """Whether alpha means anything for this rule (SD's target is p whatever alpha is)."""
        return self.alpha_min < self.alpha_max

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
    r = rule.defer(Stats.of(q, p, q1, p1), alpha).expand_as(q)
    rf = r.to(q.dtype)
    if rule.kind == "mixture":
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
) -> list[bool]:
    """Re-evaluate a rule on recorded per-token statistics (the app's what-if re-colouring).

    Uses the very predicate the engine ran, on [n, 1] columns holding the draft token."""
    if rule.defer is None:
        raise ValueError(f"rule {rule.name!r} has no deferral decision to re-evaluate")

    def col(xs: list[float]) -> Tensor:
        return torch.tensor(xs, dtype=torch.float32).unsqueeze(-1)

    stats = Stats(col(q1), col(p1), col(max_q1), col(max_p1), col(dtv))
    return rule.defer(stats, alpha).expand(len(q1), 1).squeeze(-1).tolist()

"""The decision plane: every drafted position of a run placed on a deferral rule's own axes,
where the rule at one alpha is a straight boundary.

Every rule is a half-plane ``a*x + b*y > c`` (defer) in well-chosen coordinates, so a slider
only moves one line while the points stay where they are:

* Chow: x = max q, boundary x = 1 - alpha. The rule looks at nothing else, so y = max p is
  context (is the verifier sure where the drafter is not?) and the boundary is vertical:
  a real number beats an artificial jitter.
* Diff: x = max q, y = max p, boundary y = x + alpha.
* OPT: x = D_TV(p, q), y = max p - max q (the confidence gain deferring would buy); defer when
  the gain exceeds alpha times D_TV, a line through the origin with slope alpha. Plotting max q
  against max p - alpha * D_TV would move every point with alpha; here only the line turns.
* TokenV1: x = q(draft), y = max p; TokenV2: x = p(draft), y = max p (boundary y = x + alpha).
  TokenV3: x = p(draft), y = max p, boundary x = (1 - alpha) * y.
* BiLD*: x = D_TV, boundary x = alpha; y = max p as context (as for Chow).
* Lossy SD: x = q(draft), y = p(draft): below y = (1 - alpha) x the draft may be rejected
  (its acceptance probability is under 1). Like the rules, this uses the recorded T = 1
  probabilities; the engine's accept test uses the temperature-scaled laws, so at T != 1 the
  lossy picture is an approximation (the figure says so).
* SD: the same axes as lossy; every draft defers to the verifier whatever alpha is. Block
  verification (lossless, pi = p) likewise.
* Typical acceptance: x = p(draft), y = exp(-H(p)) (how sure the verifier is: 1 when it is
  certain); it defers below min(epsilon, sqrt(epsilon) * y), the intersection of two
  half-planes (a corner, not one line).
* Static ensemble: the lossy axes; below y = x (p(x) < q(x)) the draft may be rejected, for
  any w > 0; nothing is deferred outright.
* Fuzzy SD: x = JSD(p, q), boundary x = T; KL judge: x = KL(p || q) (drawn up to 3 nats,
  larger values at the edge), boundary x = tau; y = max p as context for both.

Decisions come from the rules' own predicates (analysis.whatif_decisions); the boundary is
only for drawing, and a test checks the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from speccascade.analysis.verdict import drafted_rows, whatif_decisions
from speccascade.core.rules import RULES, Rule
from speccascade.core.trace import TokenRecord, Trace

# The coordinates a plane can use: what each is, read off a TokenRecord, and its range.
AXIS_VALUE: dict[str, Callable[[TokenRecord], float]] = {
    "max_q": lambda t: t.max_q,
    "max_p": lambda t: t.max_p,
    "draft_q": lambda t: t.draft_q,
    "draft_p": lambda t: t.draft_p,
    "dtv": lambda t: t.dtv,
    "gain": lambda t: t.max_p - t.max_q,
    "sure_p": lambda t: math.exp(-t.ent_p),
    "jsd": lambda t: t.jsd,
    "kl": lambda t: min(t.kl, KL_AXIS_MAX),
}
KL_AXIS_MAX = 3.0  # KL is unbounded; larger values are drawn at the plane's edge
AXIS_RANGE: dict[str, tuple[float, float]] = {
    "max_q": (0.0, 1.0),
    "max_p": (0.0, 1.0),
    "draft_q": (0.0, 1.0),
    "draft_p": (0.0, 1.0),
    "dtv": (0.0, 1.0),
    "gain": (-1.0, 1.0),
    "sure_p": (0.0, 1.0),
    "jsd": (0.0, math.log(2)),
    "kl": (0.0, KL_AXIS_MAX),
}


@dataclass(frozen=True)
class Boundary:
    """Where a rule defers, in plane coordinates: a*x + b*y > c (strict, like every rule),
    and every half-plane of `more` too (typical acceptance's corner).

    a = b = 0 is a rule that always (c < 0) or never defers."""

    a: float
    b: float
    c: float
    more: tuple[tuple[float, float, float], ...] = ()

    @property
    def halves(self) -> list[tuple[float, float, float]]:
        return [(self.a, self.b, self.c), *self.more]

    def defers(self, x: float, y: float) -> bool:
        return all(a * x + b * y > c for a, b, c in self.halves)

    def _f(self, pt: tuple[float, float]) -> float:
        return self.a * pt[0] + self.b * pt[1] - self.c

    def region(self, box: tuple[float, float, float, float]) -> list[tuple[float, float]]:
        """The part of the box (x0, x1, y0, y1) where the rule defers, as a polygon (its
        corners in order; [] when that part has no area)."""
        x0, x1, y0, y1 = box
        out: list[tuple[float, float]] = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        for half in self.halves:
            out = _clip(out, half)
        return out if len(out) >= 3 and _area(out) > 1e-12 else []

    def line(self, box: tuple[float, float, float, float]) -> list[tuple[float, float]]:
        """The boundary inside the box: a segment's two ends ([] when it misses the box), or
        for several half-planes the region's edges off the box's border, in order."""
        if self.more:
            return _inner_edges(self.region(box), box)
        if self.a == 0 and self.b == 0:
            return []
        x0, x1, y0, y1 = box
        corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        ends: list[tuple[float, float]] = []
        for i, p in enumerate(corners):
            q = corners[(i + 1) % 4]
            fp, fq = self._f(p), self._f(q)
            if fp == 0:
                ends.append(p)
            elif fq != 0 and (fp > 0) != (fq > 0):
                ends.append(_cross(p, q, fp, fq))
        unique = list(dict.fromkeys(ends))
        return [unique[0], unique[-1]] if len(unique) >= 2 else []


def _clip(poly: list[tuple[float, float]], half) -> list[tuple[float, float]]:
    """The part of a convex polygon where a*x + b*y >= c (Sutherland-Hodgman, one edge)."""
    a, b, c = half
    f = lambda pt: a * pt[0] + b * pt[1] - c  # noqa: E731
    out: list[tuple[float, float]] = []
    for i, p in enumerate(poly):
        q = poly[(i + 1) % len(poly)]
        fp, fq = f(p), f(q)
        if fp >= 0:
            out.append(p)
        if (fp >= 0) != (fq >= 0):
            out.append(_cross(p, q, fp, fq))
    return out


def _inner_edges(poly, box) -> list[tuple[float, float]]:
    """The chain of a region polygon's vertices whose edges do not lie on the box border."""
    if not poly:
        return []
    x0, x1, y0, y1 = box
    on = lambda p, q: any(  # noqa: E731
        abs(p[k] - v) < 1e-12 and abs(q[k] - v) < 1e-12
        for k, v in ((0, x0), (0, x1), (1, y0), (1, y1))
    )
    n = len(poly)
    inner = [not on(poly[i], poly[(i + 1) % n]) for i in range(n)]
    if not any(inner):
        return []
    start = next(i for i in range(n) if inner[i] and not inner[i - 1]) if not all(inner) else 0
    chain = [poly[start]]
    i = start
    while inner[i % n] and len(chain) <= n:
        chain.append(poly[(i + 1) % n])
        i += 1
    return chain


def _area(poly: list[tuple[float, float]]) -> float:
    """Shoelace area: a region that is only an edge or a corner is no region."""
    n = len(poly)
    return (
        abs(
            sum(
                poly[i][0] * poly[(i + 1) % n][1] - poly[(i + 1) % n][0] * poly[i][1]
                for i in range(n)
            )
        )
        / 2
    )


def _cross(p, q, fp: float, fq: float) -> tuple[float, float]:
    s = fp / (fp - fq)
    return (p[0] + s * (q[0] - p[0]), p[1] + s * (q[1] - p[1]))


@dataclass(frozen=True)
class PlaneSpec:
    """One rule's plane: its axes and its half-plane at a given alpha."""

    x: str
    y: str
    half_plane: Callable[[float], tuple[float, float, float]]
    # whether the y axis is context only (the rule ignores it)
    y_is_context: bool = False


def _opt_half_plane(alpha: float) -> tuple[float, float, float]:
    # gain > alpha * D_TV; at alpha = +-inf only the sign of D_TV is left (the rule then
    # also defers D_TV = 0 points with a positive gain, where q = p and it changes nothing).
    if math.isinf(alpha):
        return (-math.copysign(1.0, alpha), 0.0, 0.0)
    return (-alpha, 1.0, 0.0)


# fmt: off
PLANES: dict[str, PlaneSpec] = {
    "sd": PlaneSpec("draft_q", "draft_p", lambda a: (0.0, 0.0, -1.0)),
    "chow": PlaneSpec("max_q", "max_p", lambda a: (-1.0, 0.0, a - 1.0), y_is_context=True),
    "diff": PlaneSpec("max_q", "max_p", lambda a: (-1.0, 1.0, a)),
    "opt": PlaneSpec("dtv", "gain", _opt_half_plane),
    "token_v1": PlaneSpec("draft_q", "max_p", lambda a: (-1.0, 1.0, a)),
    "token_v2": PlaneSpec("draft_p", "max_p", lambda a: (-1.0, 1.0, a)),
    "token_v3": PlaneSpec("draft_p", "max_p", lambda a: (-1.0, 1.0 - a, 0.0)),
    "bild": PlaneSpec("dtv", "max_p", lambda a: (1.0, 0.0, a), y_is_context=True),
    "lossy": PlaneSpec("draft_q", "draft_p", lambda a: (1.0 - a, -1.0, 0.0)),
    "block": PlaneSpec("draft_q", "draft_p", lambda a: (0.0, 0.0, -1.0)),
    "ensemble": PlaneSpec("draft_q", "draft_p", lambda a: (a, -a, 0.0)),
    "typical": PlaneSpec("draft_p", "sure_p", lambda e: _typical_halves(e)),
    "fuzzy": PlaneSpec("jsd", "max_p", lambda a: (1.0, 0.0, a), y_is_context=True),
    "kl_judge": PlaneSpec("kl", "max_p", lambda a: (1.0, 0.0, a), y_is_context=True),
}
# fmt: on


def _typical_halves(epsilon: float) -> tuple:
    """p(x) <= eps and p(x) <= sqrt(eps) * y, as -x > -eps and -x + sqrt(eps) y > 0."""
    if math.isinf(epsilon):
        return (0.0, 0.0, -1.0)
    return (-1.0, 0.0, -epsilon, ((-1.0, math.sqrt(epsilon), 0.0),))


def boundary(rule: str | Rule, alpha: float) -> Boundary:
    """The rule's deferral region at `alpha` in its plane's coordinates (for drawing)."""
    name = rule if isinstance(rule, str) else rule.name
    return Boundary(*PLANES[name].half_plane(alpha))


def box(plane: Plane) -> tuple[float, float, float, float]:
    """The plane's axis ranges (x0, x1, y0, y1): fixed per axis, so a slider never rescales."""
    return (*AXIS_RANGE[plane.x], *AXIS_RANGE[plane.y])


@dataclass(frozen=True)
class PlanePoint:
    """One drafted position of the run."""

    index: int  # into trace.tokens
    position: int
    x: float
    y: float
    source: str  # accepted or resampled
    draft_id: int
    draft_text: str | None  # None: a rejected draft and no decoder to name it
    emitted_id: int
    emitted_text: str
    context: str  # the few emitted tokens before it
    verifier_top: int | None  # the verifier's argmax here (None: top-p not recorded)
    verifier_top_text: str | None  # None: unknown, or not nameable without a decoder
    recorded_defer: bool | None  # the run's own decision (None: another rule, or lossy SD)
    deferred: bool  # the decision at the plane's alpha

    @property
    def differs_from_verifier(self) -> bool | None:
        """Whether the drafter proposed something other than the verifier's favourite."""
        return None if self.verifier_top is None else self.draft_id != self.verifier_top


@dataclass(frozen=True)
class Plane:
    """A run's drafted positions on one rule's axes. Keeps the trace: re-deciding at another
    alpha reads the recorded statistics again (analysis.whatif_decisions)."""

    rule: str
    alpha: float  # the alpha `deferred` was decided at
    x: str
    y: str
    points: tuple[PlanePoint, ...]
    run_rule: str | None
    run_alpha: float | None
    temperature: float
    trace: Trace = field(repr=False, compare=False)


def plane_points(
    trace: Trace,
    rule_name: str | None = None,
    alpha: float | None = None,
    decode: Callable[[list[int]], str] | None = None,
    context_tokens: int = 4,
) -> Plane:
    """The run's drafted positions on `rule_name`'s axes (default: the run's own rule),
    decided at `alpha` (default: the run's alpha for its own rule, else the rule's default).

    `decode` names drafts the verifier replaced (the trace stores emitted text only)."""
    s = trace.summary
    name = rule_name or s.rule
    if name not in PLANES:
        raise ValueError(f"no decision plane for rule {name!r}; choose one of {', '.join(PLANES)}")
    rule = RULES[name]
    if alpha is None:
        alpha = s.alpha if name == s.rule and s.alpha is not None else rule.alpha_default
    spec = PLANES[name]
    points = []
    for i in drafted_rows(trace, rule):
        tok = trace.tokens[i]
        top = tok.top_p[0][0] if tok.top_p else None
        points.append(
            PlanePoint(
                index=i,
                position=tok.position,
                x=AXIS_VALUE[spec.x](tok),
                y=AXIS_VALUE[spec.y](tok),
                source=tok.source,
                draft_id=tok.draft_id,
                draft_text=_name(tok.draft_id, tok, decode),
                emitted_id=tok.token_id,
                emitted_text=tok.text,
                context="".join(t.text for t in trace.tokens[max(0, i - context_tokens) : i]),
                verifier_top=top,
                verifier_top_text=None if top is None else _name(top, tok, decode),
                recorded_defer=tok.defer if name == s.rule else None,
                deferred=False,
            )
        )
    plane = Plane(name, alpha, spec.x, spec.y, tuple(points), s.rule, s.alpha, s.temperature, trace)
    decided = decisions_at(plane, alpha)
    return replace(plane, points=tuple(replace(p, deferred=d) for p, d in zip(points, decided)))


def _name(token_id: int, tok: TokenRecord, decode: Callable[[list[int]], str] | None) -> str | None:
    """Text of a token id at `tok`'s position: the emitted text where it is the emitted token,
    else the decoder's (None without one)."""
    if token_id == tok.token_id:
        return tok.text
    return decode([token_id]) if decode is not None else None


def decisions_at(plane: Plane, alpha: float) -> list[bool]:
    """Whether the rule defers each point at `alpha`: the rule's own predicate on the recorded
    statistics (no model call, cheap enough for a slider). For lossy SD and the static
    ensemble, which defer nothing outright: whether the draft may be rejected, p(x) <
    (1 - alpha) q(x), and w > 0 with p(x) < q(x)."""
    rule = RULES[plane.rule]
    toks = [plane.trace.tokens[p.index] for p in plane.points]
    if rule.defer is None:
        return [t.draft_p < (1 - alpha) * t.draft_q for t in toks]
    if rule.kind == "soft":
        return [alpha > 0 and t.draft_p < t.draft_q for t in toks]
    decided = whatif_decisions(plane.trace, rule, alpha)
    return [bool(decided[p.index]) for p in plane.points]

"""The rule zoo and the fidelity audit for people: tables, figures and verdict sentences, pure
functions of a `zoo.Zoo` and an `audit.Audit` (no model runs here)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from speccascade.analysis.audit import Audit
from speccascade.analysis.zoo import Zoo
from speccascade.core.rules import RULES
from speccascade.i18n import t
from speccascade.views.style import _legend_below, _pl

REFERENCE_MARKERS = {"verifier": "star", "sd": "diamond", "block": "square"}
# Each rule its own symbol; filled where it reached a target rate, open where it did not.
RULE_SYMBOLS = (
    "circle", "square", "diamond", "triangle-up", "pentagon", "hexagon", "triangle-down",
    "star-triangle-up", "hourglass", "cross", "x", "bowtie",
)  # fmt: skip
# Points at one place, or near enough for their markers to touch (two rules at the same rate
# and accuracy; SD and block verification often defer the same drafts), are spread sideways
# `DODGE` of the x axis apart, so none hides another; their hover gives the rate measured.
DODGE, NEAR_Y = 0.013, 0.03


def dodge(places: list[tuple[float, float]], step: float = DODGE) -> list[float]:
    """A sideways offset for each (x, y) place: places whose markers would touch (closer
    than `step` in x and NEAR_Y in y, directly or through a chain of such neighbours) are
    one cluster, spread `step` apart around the cluster's middle, in the order given; a
    place alone stays where it is."""
    cluster = list(range(len(places)))

    def root(i: int) -> int:
        while cluster[i] != i:
            i = cluster[i]
        return i

    for i, (x1, y1) in enumerate(places):
        for j in range(i):
            x2, y2 = places[j]
            if abs(x1 - x2) < step and abs(y1 - y2) < NEAR_Y:
                cluster[root(i)] = root(j)
    members: dict[int, list[int]] = {}
    for i in range(len(places)):
        members.setdefault(root(i), []).append(i)
    out = [0.0] * len(places)
    for group in members.values():
        middle = sum(places[i][0] for i in group) / len(group)
        for k, i in enumerate(group):
            out[i] = middle + (k - (len(group) - 1) / 2) * step - places[i][0]
    return out


def _value(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.{digits}g}"


def _rule_label(rule: str, lang: str) -> str:
    return t(f"rule.{rule}", lang)


# -- the zoo ---------------------------------------------------------------------------------


def zoo_frame(z: Zoo, lang: str = "en") -> pd.DataFrame:
    """One row per rule and target deferral rate (the parameter that meets it and what it
    measured there), after the references measured once: the verifier, SD, block verification."""
    col = {k: t(f"fig.zoo.col.{k}", lang) for k in ZOO_COLUMNS}
    rows = []
    refs = [("verifier", z.verifier), *z.references.items()]
    for name, p in refs:
        label = t("method.verifier", lang) if name == "verifier" else _rule_label(name, lang)
        rows.append(_zoo_row(col, label, "—", "—", p, "—", lang))
    for m in z.matched:
        param = f"{RULES[m.rule].param} = {_value(m.point.alpha)}"
        met = t("views.cal.yes" if m.reached else "views.cal.no", lang)
        rows.append(
            _zoo_row(col, _rule_label(m.rule, lang), f"{m.rate:.0%}", param, m.point, met, lang)
        )
    return pd.DataFrame(rows, columns=list(col.values()))


ZOO_COLUMNS = ("rule", "target", "param", "rate", "accuracy", "calls", "time", "met")


def _zoo_row(col: dict, label: str, target: str, param: str, p, met: str, lang: str) -> dict:
    rate = "—" if p.deferral_rate is None else f"{p.deferral_rate:.0%}"
    return {
        col["rule"]: label,
        col["target"]: target,
        col["param"]: param,
        col["rate"]: rate,
        col["accuracy"]: round(p.accuracy, 2),
        col["calls"]: round(p.calls_per_token, 3),
        col["time"]: round(p.wall_s, 2),
        col["met"]: met,
    }


def zoo_figure(z: Zoo, lang: str = "en") -> go.Figure:
    """Key-fact accuracy against the deferral rate each rule reached, one line per rule
    through its calibrated points, the target rates as dotted lines, and the references as
    single markers (the verifier alone at the 100% end: it decides every token)."""
    fig = go.Figure()
    palette = qualitative.D3 + qualitative.Set2
    for x in z.rates:
        fig.add_vline(x=x, line={"dash": "dot", "color": "#adb5bd", "width": 1})
    rules = list(dict.fromkeys(m.rule for m in z.matched))
    points = {rule: _rule_points(z, rule) for rule in rules}
    refs = [("verifier", z.verifier), *z.references.items()]
    ref_at = [(1.0 if p.deferral_rate is None else p.deferral_rate, p.accuracy) for _, p in refs]
    places = [(p[0], p[1]) for rule in rules for p, _ in points[rule]] + ref_at
    shifts = iter(dodge(places))
    for i, rule in enumerate(rules):
        shift = [next(shifts) for _ in points[rule]]
        style = (palette[i % len(palette)], RULE_SYMBOLS[i % len(RULE_SYMBOLS)])
        _rule_trace(fig, rule, points[rule], shift, style, lang)
    if any(not m.reached for m in z.matched):  # what an open marker means
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=_pl(t("fig.zoo.open", lang)),
            marker={"symbol": "circle-open", "size": 11, "color": "#495057", "line": {"width": 2}},
            hoverinfo="skip",
        )
    for (name, _), (x, y) in zip(refs, ref_at):
        label = t("method.verifier", lang) if name == "verifier" else _rule_label(name, lang)
        fig.add_scatter(
            x=[x + next(shifts)],
            y=[y],
            mode="markers",
            name=_pl(label),
            marker={"size": 13, "symbol": REFERENCE_MARKERS[name], "color": "#343a40"},
            customdata=[f"{x:.0%} · {y:.2f}"],
            hovertemplate=f"{_pl(label)}<br>%{{customdata}}<extra></extra>",
        )
    fig.update_layout(
        title={
            "text": t("fig.zoo.title", lang, n=z.questions),
            "x": 0.01,
            "xanchor": "left",
            "font": {"size": 15},
        },
        height=480,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(
        title={"text": t("fig.zoo.x", lang)},
        range=[-0.03, 1.05],
        tickformat=".0%",
        showgrid=True,
        gridcolor="#e9ecef",
    )
    fig.update_yaxes(
        title={"text": t("fig.zoo.y", lang)},
        range=[-0.05, 1.08],
        showgrid=True,
        gridcolor="#e9ecef",
    )
    _legend_below(fig)
    return fig


def _rule_points(z: Zoo, rule: str) -> list[tuple[tuple, list]]:
    """A rule's calibrated points, by deferral rate: ((rate, accuracy, parameter, calls),
    the targets that landed there)."""
    at: dict[tuple, list] = {}
    for m in z.matched:
        if m.rule == rule:
            p = m.point
            key = (p.deferral_rate or 0.0, p.accuracy, p.alpha, p.calls_per_token)
            at.setdefault(key, []).append(m)
    return sorted(at.items())


def _rule_trace(fig: go.Figure, rule: str, points, shift, style, lang: str) -> None:
    """One rule's points, a line through them, each moved sideways by its `shift` (dodge):
    filled where it reached a target rate, open where it reached none of the targets it was
    calibrated for; the hover says which target, and the rate measured."""
    colour, symbol = style
    reached = [any(m.reached for m in ms) for _, ms in points]
    hover = []
    for (rate, accuracy, value, calls), ms in points:
        head = t("fig.zoo.hover", lang, param=RULES[rule].param, value=_value(value),
                 calls=f"{calls:.3f}")  # fmt: skip
        targets = [
            t("fig.zoo.target" if m.reached else "fig.zoo.target_missed", lang,
              rate=f"{m.rate:.0%}")
            for m in ms
        ]  # fmt: skip
        hover.append("<br>".join([head, *targets, f"{rate:.0%} · {accuracy:.2f}"]))
    fig.add_scatter(
        x=[p[0] + dx for (p, _), dx in zip(points, shift)],
        y=[p[1] for p, _ in points],
        mode="lines+markers",
        name=_pl(_rule_label(rule, lang)),
        marker={
            "size": 11,
            "color": colour,
            "symbol": [symbol if ok else f"{symbol}-open" for ok in reached],
            "line": {
                "width": [1 if ok else 2.5 for ok in reached],
                "color": ["#ffffff" if ok else colour for ok in reached],
            },
        },  # fmt: skip
        line={"width": 1.5, "color": colour},
        customdata=hover,
        hovertemplate="%{customdata}<extra>%{fullData.name}</extra>",
    )


def zoo_markdown(z: Zoo, lang: str = "en") -> str:
    """The zoo as a Markdown table (the CLI and BENCHMARKS.md)."""
    frame = zoo_frame(z, lang)
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


# -- the audit -------------------------------------------------------------------------------


def audit_verdict(a: Audit, lang: str = "en") -> str:
    """One sentence: consistent with the promised law, or where and how strongly it differs."""
    law = t(f"fig.audit.law.{a.law}", lang)
    worst = a.worst
    if worst is None:
        # one outcome at every position (greedy, or a model all but certain): nothing to test
        one = all(c.dof == 0 for c in a.positions)
        return t(
            "fig.audit.one_outcome" if one else "fig.audit.consistent",
            lang, law=law, n=a.samples, k=len(a.positions), level=a.level,
        )  # fmt: skip
    if worst.impossible:
        return t(
            "fig.audit.impossible", lang, law=law, position=worst.position, count=worst.impossible
        )
    return t(
        "fig.audit.differs",
        lang,
        law=law,
        position=worst.position,
        p=f"{worst.p_value:.2g}",
        tv=f"{worst.tv:.3f}",
        null=f"{worst.tv_null:.3f}",
    )


AUDIT_COLUMNS = ("position", "n", "tv", "band", "null", "chi2", "p", "flag")


def audit_frame(a: Audit, lang: str = "en") -> pd.DataFrame:
    col = {k: t(f"fig.audit.col.{k}", lang) for k in AUDIT_COLUMNS}
    rows = []
    for c in a.positions:
        flagged = c.flagged(a.threshold)
        rows.append(
            {
                col["position"]: c.position,
                col["n"]: c.n,
                col["tv"]: round(c.tv, 4),
                col["band"]: f"[{c.tv_low:.3f}, {c.tv_high:.3f}]",
                col["null"]: round(c.tv_null, 4),
                col["chi2"]: f"{c.chi2:.1f} ({c.dof})",
                col["p"]: f"{c.p_value:.3g}",
                col["flag"]: t("fig.audit.flag" if flagged else "fig.audit.ok", lang),
            }
        )
    return pd.DataFrame(rows, columns=list(col.values()))


def audit_figure(a: Audit, lang: str = "en") -> go.Figure:
    """Per position: the total-variation gap between what came out and what was promised,
    with its bootstrap band, beside the gap sampling noise alone gives (95%); a flagged
    position is red."""
    fig = go.Figure()
    xs = [str(c.position) for c in a.positions]
    colours = ["#d62728" if c.flagged(a.threshold) else "#2ca02c" for c in a.positions]
    fig.add_bar(
        x=xs,
        y=[c.tv for c in a.positions],
        marker={"color": colours},
        name=_pl(t("fig.audit.tv", lang)),
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [max(0.0, c.tv_high - c.tv) for c in a.positions],
            "arrayminus": [max(0.0, c.tv - c.tv_low) for c in a.positions],
            "color": "#343a40",
        },
        customdata=[f"p = {c.p_value:.3g}, n = {c.n}" for c in a.positions],
        hovertemplate="%{customdata}<br>TV %{y:.4f}<extra></extra>",
    )
    fig.add_scatter(
        x=xs,
        y=[c.tv_null for c in a.positions],
        mode="markers+lines",
        name=_pl(t("fig.audit.null", lang)),
        marker={"symbol": "line-ew", "size": 26, "line": {"width": 3, "color": "#495057"}},
        line={"dash": "dot", "color": "#495057"},
    )
    fig.update_layout(
        title={
            "text": _pl(t("fig.audit.title", lang, n=a.samples)),
            "x": 0.01,
            "xanchor": "left",
            "font": {"size": 15},
        },
        height=380,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(title={"text": t("fig.audit.x", lang)})
    fig.update_yaxes(
        title={"text": t("fig.audit.y", lang)}, rangemode="tozero", gridcolor="#e9ecef"
    )
    _legend_below(fig)
    return fig


__all__ = [
    "audit_figure",
    "audit_frame",
    "audit_verdict",
    "zoo_figure",
    "zoo_frame",
    "zoo_markdown",
]

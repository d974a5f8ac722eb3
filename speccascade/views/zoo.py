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
        met = t("views.cal.yes" if m.met else "views.cal.no", lang)
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
    for i, rule in enumerate(rules):
        pts = sorted(
            {
                (
                    m.point.deferral_rate or 0.0,
                    m.point.accuracy,
                    m.point.alpha,
                    m.point.calls_per_token,
                )
                for m in z.matched
                if m.rule == rule
            }  # fmt: skip
        )
        param = RULES[rule].param
        fig.add_scatter(
            x=[p[0] for p in pts],
            y=[p[1] for p in pts],
            mode="lines+markers",
            name=_pl(_rule_label(rule, lang)),
            marker={"size": 9, "color": palette[i % len(palette)]},
            line={"width": 1.5, "color": palette[i % len(palette)]},
            customdata=[
                t("fig.zoo.hover", lang, param=param, value=_value(p[2]), calls=f"{p[3]:.3f}")
                for p in pts
            ],
            hovertemplate="%{customdata}<br>%{x:.0%} · %{y:.2f}<extra>%{fullData.name}</extra>",
        )
    refs = [("verifier", z.verifier), *z.references.items()]
    for name, p in refs:
        label = t("method.verifier", lang) if name == "verifier" else _rule_label(name, lang)
        fig.add_scatter(
            x=[1.0 if p.deferral_rate is None else p.deferral_rate],
            y=[p.accuracy],
            mode="markers",
            name=_pl(label),
            marker={"size": 13, "symbol": REFERENCE_MARKERS[name], "color": "#343a40"},
            hovertemplate=f"{_pl(label)}<br>%{{x:.0%}} · %{{y:.2f}}<extra></extra>",
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

"""Figures and tables of cost projections (analysis.project): pure functions of its records.

Every view says that its numbers are projections, not measurements, and which cost model made
them; every word comes from the i18n tables (i18n/figures.py, `fig.proj.*`)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from speccascade.analysis.project import Assumption, CostModel
from speccascade.i18n import has, lang_of, t, variant_label

PROJECTED_COLOUR = "#5c7fa3"
MEASURED_COLOUR = "#d00000"
BASELINE_COLOUR = "#7b2cbf"
GAMMA_COLOURS = ["#2E91E5", "#1CA71C", "#DA16FF", "#B68100", "#750D86", "#00A08B", "#EB663B"]

Records = Sequence[Mapping] | pd.DataFrame


def _rows(records: Records) -> list[Mapping]:
    if isinstance(records, pd.DataFrame):
        return records.to_dict("records")
    return list(records)


def _num(x: float | None, digits: int = 3) -> str:
    """A number for a reader: 3 significant digits, no exponent for everyday sizes."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits + 3) or abs(x) < 1e-4:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def _count(x: float, lang: str) -> str:
    """A parameter count: 135M / 1.7B in English, 1.35亿 / 17亿 in Chinese."""
    if lang_of(lang) == "zh":
        return f"{x / 1e8:.3g}亿" if x >= 1e8 else f"{x / 1e4:.3g}万"
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def _fill(a: Assumption | tuple[str, Mapping], lang: str) -> str:
    """An assumption (or title) in `lang`, its numbers formatted for a reader."""
    key, values = (a.key, a.values) if isinstance(a, Assumption) else a
    shown = {}
    for name, v in dict(values).items():
        if name in ("d", "v") and isinstance(v, (int, float)):
            shown[name] = _count(v, lang)
        elif isinstance(v, float):
            shown[name] = _num(v)
        else:
            shown[name] = v
    return t(key, lang, **shown) if has(key) else key


def profile_title(record: Mapping | CostModel, lang: str = "en") -> str:
    """The cost model's name in `lang`, from a record (project_methods) or the model."""
    if isinstance(record, CostModel):
        return _fill(record.title, lang)
    if record.get("profile_key"):
        return _fill((record["profile_key"], record.get("profile_values") or {}), lang)
    return str(record.get("profile", ""))


def basis_label(basis: str, lang: str = "en") -> str:
    key = f"fig.proj.basis.{basis}"
    return t(key, lang) if has(key) else basis


def _basis_with_reason(r: Mapping, lang: str) -> str:
    key = f"fig.proj.reason.{r.get('reason')}"
    label = basis_label(r["basis"], lang)
    return f"{label}: {t(key, lang)}" if r.get("reason") and has(key) else label


def assumption_lines(cost: CostModel, lang: str = "en") -> list[str]:
    """The cost model's assumptions, one sentence each, then how the prefill is priced."""
    return [_fill(a, lang) for a in cost.assumptions] + [t("fig.proj.prefill", lang)]


def assumptions_html(cost: CostModel, lang: str = "en") -> str:
    """The assumptions as a list under a heading that names the cost model."""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in assumption_lines(cost, lang))
    head = html.escape(t("fig.proj.title", lang, profile=profile_title(cost, lang)))
    note = html.escape(t("fig.proj.note", lang))
    return f'<div class="sc-proj"><b>{head}</b><br><i>{note}</i><ul>{items}</ul></div>'


def projection_table(records: Records, lang: str = "en") -> pd.DataFrame:
    """project.project_methods records as a table for readers: one row per method."""
    cols = [
        "fig.proj.method",
        "fig.proj.tokens",
        "fig.proj.calls",
        "fig.proj.measured",
        "fig.proj.projected",
        "fig.proj.verifier_alone",
        "fig.proj.speedup",
        "fig.proj.basis",
    ]
    rows = [
        (
            variant_label(r["label"], lang),
            str(r["new_tokens"]),
            f"{_num(r['drafter_calls'])} / {_num(r['verifier_calls'])}",
            _num(r.get("measured_s")),
            _num(r["projected_s"]),
            _num(r["verifier_alone_s"]),
            f"{_num(r['speedup'])}×",
            basis_label(r["basis"], lang),
        )
        for r in _rows(records)
    ]
    return pd.DataFrame(rows, columns=[t(c, lang) for c in cols])


def projection_figure(records: Records, lang: str = "en") -> go.Figure:
    """Projected seconds per method (bars), the verifier alone's projection for the same
    tokens (a tick on each bar) and, where the run was timed here, its measured seconds (a
    red diamond). The title names the cost model and says it is a projection."""
    rows = _rows(records)
    fig = go.Figure()
    if not rows:
        fig.update_layout(title=t("fig.proj.empty", lang), height=240)
        return fig
    names = [variant_label(r["label"], lang) for r in rows]
    fig.add_bar(
        y=names,
        x=[r["projected_s"] for r in rows],
        orientation="h",
        marker_color=PROJECTED_COLOUR,
        name=t("fig.proj.projected", lang),
        text=[f"{_num(r['speedup'])}×" for r in rows],
        textposition="outside",
        customdata=[basis_label(r["basis"], lang) for r in rows],
        hovertemplate="%{y}: %{x:.3g} s<br>%{customdata}<extra></extra>",
    )
    fig.add_scatter(
        y=names,
        x=[r["verifier_alone_s"] for r in rows],
        mode="markers",
        marker=dict(symbol="line-ns-open", size=22, color=BASELINE_COLOUR, line_width=3),
        name=t("fig.proj.baseline", lang),
        hovertemplate="%{x:.3g} s<extra></extra>",
    )
    timed = [(n, r["measured_s"]) for n, r in zip(names, rows) if r.get("measured_s")]
    if timed:
        fig.add_scatter(
            y=[n for n, _ in timed],
            x=[m for _, m in timed],
            mode="markers",
            marker=dict(symbol="diamond", size=11, color=MEASURED_COLOUR),
            name=t("fig.proj.measured_mark", lang),
            hovertemplate="%{x:.3g} s<extra></extra>",
        )
    title = t("fig.proj.title", lang, profile=profile_title(rows[0], lang))
    fig.update_layout(
        title=dict(text=f"{title}<br><sup>{t('fig.proj.note', lang)}</sup>"),
        xaxis_title=t("fig.proj.x", lang),
        yaxis=dict(autorange="reversed"),
        height=160 + 40 * len(rows),
        margin=dict(l=10, r=30, t=80, b=40),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def best_gamma_table(rows: Records, lang: str = "en") -> pd.DataFrame:
    """project.best_gammas records as a table: per rule, its run's gamma, the best gamma and
    their projected speed-ups, the acceptance per tested draft and the break-even one."""
    cols = [
        "fig.proj.method",
        "fig.proj.best.recorded_gamma",
        "fig.proj.best.recorded_speedup",
        "fig.proj.best.best_gamma",
        "fig.proj.best.speedup",
        "fig.proj.best.acceptance",
        "fig.proj.best.breakeven",
        "fig.proj.basis",
    ]
    out = []
    for r in _rows(rows):
        be = r.get("breakeven_acceptance")
        out.append(
            (
                variant_label(r["label"], lang),
                str(r["recorded_gamma"]),
                f"{_num(r['recorded_speedup'])}×",
                str(r["best_gamma"]),
                f"{_num(r['best_speedup'])}×",
                _num(r.get("acceptance")),
                t("fig.proj.never", lang) if be is None else _num(be),
                _basis_with_reason(r, lang),
            )
        )
    return pd.DataFrame(out, columns=[t(c, lang) for c in cols])


def gamma_figure(rows: Records, lang: str = "en") -> go.Figure:
    """Projected speed-up over the verifier alone against gamma, one line per run (rule);
    exact re-simulations are filled dots, estimates hollow; the best gamma is starred."""
    rows = _rows(rows)
    fig = go.Figure()
    if not rows:
        fig.update_layout(title=t("fig.proj.empty", lang), height=240)
        return fig
    for i, r in enumerate(rows):
        colour = GAMMA_COLOURS[i % len(GAMMA_COLOURS)]
        name = variant_label(r["label"], lang)
        gammas = [g for g, _, _ in r["curve"]]
        fig.add_scatter(
            x=gammas,
            y=[s for _, s, _ in r["curve"]],
            mode="lines+markers",
            name=name,
            line=dict(color=colour),
            marker=dict(
                size=9,
                color=[colour if b == "exact" else "white" for _, _, b in r["curve"]],
                line=dict(color=colour, width=2),
            ),
            customdata=[basis_label(b, lang) for _, _, b in r["curve"]],
            hovertemplate=f"{name}<br>γ = %{{x}}: %{{y:.3g}}×<br>%{{customdata}}<extra></extra>",
        )
        fig.add_scatter(
            x=[r["best_gamma"]],
            y=[r["best_speedup"]],
            mode="markers",
            marker=dict(symbol="star", size=16, color=colour),
            name=t("fig.proj.gamma.best", lang, g=r["best_gamma"]),
            showlegend=False,
            hovertemplate=t("fig.proj.gamma.best", lang, g=r["best_gamma"]) + "<extra></extra>",
        )
    fig.add_hline(y=1.0, line_dash="dot", line_color=BASELINE_COLOUR)
    title = t("fig.proj.gamma.title", lang, profile=profile_title(rows[0], lang))
    fig.update_layout(
        title=dict(text=f"{title}<br><sup>{t('fig.proj.note', lang)}</sup>"),
        xaxis=dict(title=t("fig.proj.gamma.x", lang), dtick=1),
        yaxis_title=t("fig.proj.gamma.y", lang),
        height=420,
        margin=dict(l=10, r=10, t=80, b=40),
    )
    return fig

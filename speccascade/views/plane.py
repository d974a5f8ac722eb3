"""The decision-plane figure: a pure function of a `plane.Plane` and an alpha. It runs no
model, so an alpha slider can redraw it on every move (the points stay, the boundary moves)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from speccascade.analysis.plane import PLANES, Plane, boundary, box, decisions_at
from speccascade.core.rules import RULES
from speccascade.i18n import t
from speccascade.views.style import (
    DEFERRED_COLOUR,
    KEPT_COLOUR,
    _legend_below,
    _pl,
    _rule_name,
    _short,
    _visible,
)

REGION_COLOUR = "rgba(232, 93, 4, 0.12)"  # DEFERRED_COLOUR, faint
PAD = 0.03  # of an axis range, so points on the edges stay visible


def _alpha_text(alpha: float) -> str:
    if math.isinf(alpha):
        return "∞" if alpha > 0 else "−∞"
    return f"{alpha:g}"


def _token(text: str | None, token_id: int) -> str:
    return f"[{token_id}]" if text is None else repr(_short(text, 24))


def _hover(plane: Plane, i: int, lang: str) -> str:
    p = plane.points[i]
    lines = [
        t(
            "fig.plane.hover",
            lang,
            pos=p.position,
            draft=_token(p.draft_text, p.draft_id),
            emitted=_token(p.emitted_text, p.emitted_id),
        ),
        t("fig.plane.hover_context", lang, text=_short(_visible(p.context), 40)),
        f"{plane.x} = {p.x:.3f}   {plane.y} = {p.y:.3f}",
    ]
    if p.verifier_top is not None:
        lines.append(
            t("fig.plane.hover_top", lang, top=_token(p.verifier_top_text, p.verifier_top))
        )
    if p.recorded_defer is not None:
        key = "fig.plane.hover_run_deferred" if p.recorded_defer else "fig.plane.hover_run_kept"
        lines.append(t(key, lang))
    return "<br>".join(_pl(line) for line in lines)


def _axis_title(plane: Plane, axis: str, lang: str) -> str:
    title = t(f"fig.plane.axis.{getattr(plane, axis)}", lang)
    context_only = axis == "y" and PLANES[plane.rule].y_is_context
    return t("fig.plane.context_axis", lang, axis=title) if context_only else title


def _empty(fig: go.Figure, lang: str) -> go.Figure:
    fig.add_annotation(
        text=t("fig.plane.empty", lang), showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5
    )
    return fig


def decision_plane_figure(plane: Plane, alpha: float | None = None, lang: str = "en") -> go.Figure:
    """Every drafted position on the rule's own axes, coloured kept / deferred at `alpha`
    (default: the plane's), a diamond where the draft is not the verifier's top token, the
    defer region shaded and its boundary drawn; the run's own boundary stays dotted when the
    slider has moved away from it."""
    alpha = plane.alpha if alpha is None else alpha
    rule = RULES[plane.rule]
    lossy = rule.defer is None or rule.kind == "soft"  # no decisions: "may be rejected"
    x0, x1, y0, y1 = box(plane)
    fig = go.Figure()
    decided = decisions_at(plane, alpha)
    differ = [p.differs_from_verifier for p in plane.points]

    region = boundary(rule, alpha).region((x0, x1, y0, y1))
    if region:
        fig.add_scatter(
            x=[x for x, _ in region] + [region[0][0]],
            y=[y for _, y in region] + [region[0][1]],
            fill="toself",
            fillcolor=REGION_COLOUR,
            line={"width": 0},
            mode="lines",
            hoverinfo="skip",
            name=t("fig.plane.region_lossy" if lossy else "fig.plane.region", lang),
        )
    lines = [(alpha, "solid", "fig.plane.boundary")]
    if plane.run_rule == plane.rule and plane.run_alpha is not None and plane.run_alpha != alpha:
        lines.append((plane.run_alpha, "dot", "fig.plane.run_boundary"))
    if rule.has_alpha:
        for a, dash, key in lines:
            seg = boundary(rule, a).line((x0, x1, y0, y1))
            if seg:
                fig.add_scatter(
                    x=[x for x, _ in seg],
                    y=[y for _, y in seg],
                    mode="lines",
                    line={"color": "#111", "width": 2, "dash": dash},
                    hoverinfo="skip",
                    name=t(key, lang, param=rule.param, alpha=_alpha_text(a)),
                )

    keys = ("fig.plane.lossy_kept", "fig.plane.lossy_deferred") if lossy else None
    keys = keys or ("fig.plane.kept", "fig.plane.deferred")
    for deferred, colour, key in ((False, KEPT_COLOUR, keys[0]), (True, DEFERRED_COLOUR, keys[1])):
        # circles first: the legend shows the first marker, and diamonds are drawn on top
        rows = sorted(
            (i for i, d in enumerate(decided) if d == deferred), key=lambda i: bool(differ[i])
        )
        fig.add_scatter(
            x=[plane.points[i].x for i in rows],
            y=[plane.points[i].y for i in rows],
            mode="markers",
            name=t(key, lang),
            marker={
                "color": colour,
                "size": 10,
                "symbol": ["diamond" if differ[i] else "circle" for i in rows],
                "line": {"color": "#111", "width": 1},
            },
            customdata=[_hover(plane, i, lang) for i in rows],
            hovertemplate="%{customdata}<extra></extra>",
        )
    if any(differ):
        fig.add_scatter(  # legend entry for the marker shape only
            x=[None],
            y=[None],
            mode="markers",
            name=t("fig.plane.differs", lang),
            marker={"color": "#adb5bd", "size": 10, "symbol": "diamond", "line": {"width": 1}},
            hoverinfo="skip",
        )

    n, k = len(decided), sum(decided)
    title = t(
        "fig.plane.title",
        lang,
        rule=_pl(_rule_name(rule, lang)),
        param=rule.param,
        alpha=_alpha_text(alpha),
    )
    if n:
        counts = t("fig.plane.counts_lossy" if lossy else "fig.plane.counts", lang, deferred=k, n=n)
        if any(differ):
            counts += " · " + t("fig.plane.counts_differ", lang, k=sum(bool(d) for d in differ))
        title += f"<br><sup>{_pl(counts)}</sup>"
    fig.update_layout(title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}})
    notes = [
        t(
            "fig.plane.ends",
            lang,
            param=rule.param,
            sd=_alpha_text(rule.alpha_sd),
            drafter=_alpha_text(rule.alpha_drafter),
        )
        if rule.has_alpha
        else t("fig.plane.no_alpha", lang)
    ]
    if lossy and plane.temperature != 1:
        notes.append(t("fig.plane.t1_note", lang, t=f"{plane.temperature:g}"))
    fig.add_annotation(
        text="<br>".join(_pl(note) for note in notes),
        showarrow=False,
        xref="paper",
        yref="paper",
        x=0,
        y=1.0,
        xanchor="left",
        yanchor="bottom",
        align="left",
        font={"size": 11, "color": "#495057"},
    )
    dx, dy = PAD * (x1 - x0), PAD * (y1 - y0)
    fig.update_xaxes(
        title={"text": _axis_title(plane, "x", lang)}, range=[x0 - dx, x1 + dx], zeroline=False
    )
    fig.update_yaxes(
        title={"text": _axis_title(plane, "y", lang)}, range=[y0 - dy, y1 + dy], zeroline=False
    )
    fig.update_layout(height=500, margin={"l": 10, "r": 10, "t": 90, "b": 10})
    _legend_below(fig)
    if not n:
        _empty(fig, lang)
    return fig

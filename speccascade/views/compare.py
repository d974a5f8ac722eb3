"""Many runs side by side: speed against quality for the Compare tab (labelled points, a wrong
answer marked), and quality against cost over alpha for the sweep (Pareto frontiers)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from speccascade.i18n import has, t, variant_label
from speccascade.views.style import (
    DISTINCT_COLOURS,
    POINT_COLOURS,
    WRONG_COLOUR,
    _fmt,
    _legend_below,
    _num,
    _pl,
)


def speed_quality(table: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Compare tab: one labelled point per method, speed-up over the verifier (x, log) against
    quality (y): the share of the question's key facts the answer states where the question has
    them, else agreement with the verifier's answer. A method that misses a key fact is a
    hollow red X labelled wrong, however fast; the shaded corner is faster and right."""
    fig = go.Figure()
    facts = (
        "key_facts" in table
        and len(table) > 0
        and bool(pd.to_numeric(table["key_facts"], errors="coerce").notna().all())
    )
    ycol = "key_facts" if facts else "quality_vs_verifier"
    ylabel = t("fig.sq.y_facts" if facts else "fig.sq.y_agree", lang)
    fig.update_layout(
        title={"text": t("fig.sq.title", lang), "x": 0.01, "xanchor": "left"},
        height=460,
        margin={"l": 10, "r": 20, "t": 50, "b": 50},
        xaxis={"title": {"text": t("fig.sq.x", lang)}, "type": "log", "automargin": True},
        yaxis={"title": {"text": ylabel}, "range": [-0.1, 1.14], "automargin": True},
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(showgrid=True, gridcolor="#e9ecef", zeroline=False)
    fig.update_yaxes(showgrid=True, gridcolor="#e9ecef", zeroline=False)
    pts = []
    for _, row in table.iterrows():
        sx, qy = _num(row.get("speedup")), _num(row.get(ycol))
        if sx is None or sx <= 0 or qy is None:
            continue
        pts.append(
            (
                str(row["method"]),
                sx,
                qy,
                _num(row.get("wall_s")),
                _num(row.get("verifier_calls_per_token")),
            )
        )
    if not pts:
        fig.add_annotation(
            text=t("fig.sq.empty", lang), showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5
        )
        return fig
    xs = [p[1] for p in pts] + [1.0]
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    span = max(hi - lo, 0.3)
    x0, x1 = lo - 0.12 * span - 0.05, hi + 0.12 * span + 0.05
    ticks = [v for v in (0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32) if x0 <= math.log10(v) <= x1]
    fig.update_xaxes(range=[x0, x1], tickvals=ticks, ticktext=[f"{v:g}×" for v in ticks])
    # the good corner: right of the verifier, high quality
    good = 0.995 if facts else 0.9
    fig.add_shape(
        type="rect",
        x0=1,
        x1=10**x1,
        y0=good - 0.03,
        y1=1.14,
        fillcolor="rgba(43,147,72,0.12)",
        line_width=0,
        layer="below",
    )
    band = t("fig.sq.good_facts" if facts else "fig.sq.good_agree", lang)
    fig.add_annotation(
        x=x1,
        y=1.12,
        xanchor="right",
        yanchor="top",
        text=band,
        showarrow=False,
        font={"size": 11, "color": "#2b9348"},
    )
    fig.add_shape(
        type="line", x0=1, x1=1, y0=0, y1=1, yref="paper", line={"dash": "dash", "color": "#495057"}
    )
    fig.add_annotation(
        x=0,
        y=0,
        yref="paper",
        yanchor="bottom",
        xanchor="left",
        xshift=3,
        text=t("fig.sq.baseline", lang),
        showarrow=False,
        font={"size": 10, "color": "#495057"},
    )
    order = sorted(range(len(pts)), key=lambda i: (pts[i][1], -pts[i][2]))
    colours = iter(POINT_COLOURS * 3)
    placer = _LabelPlacer(x0, x1, -0.1, 1.14, [(math.log10(p[1]), p[2]) for p in pts])
    placer.block(x1, 1.12, band)  # the band's own label, top right: no point label over it
    any_wrong = False
    for i in order:
        label, sx, qy, wall, calls = pts[i]
        name = variant_label(label, lang)
        wrong = bool(facts and qy < 1 - 1e-9)
        any_wrong |= wrong
        if wrong:
            colour = WRONG_COLOUR
            marker = {"symbol": "x-open", "size": 16, "line": {"width": 2.5, "color": colour}}
            text = t("fig.sq.wrong", lang, name=name)
        elif label == "verifier":
            colour = "#111111"
            marker = {"symbol": "diamond", "size": 14, "line": {"width": 1, "color": "#fff"}}
            text = name
        else:
            colour = next(colours)
            marker = {"symbol": "circle", "size": 13, "line": {"width": 1.5, "color": "#222"}}
            text = name
        marker["color"] = colour
        hover = "<br>".join(
            [
                f"<b>{_pl(text)}</b>",
                t("fig.sq.speedup", lang, v=f"{sx:.2f}"),
                f"{_pl(ylabel)}: {qy:.2f}",
                t("fig.sq.wall", lang, v=_fmt(wall, 2)),
                t("fig.sq.vcalls", lang, v=_fmt(calls, 2)),
            ]
        )
        fig.add_scatter(
            x=[sx],
            y=[qy],
            mode="markers",
            name=_pl(text),
            showlegend=False,
            marker=marker,
            cliponaxis=False,
            hovertext=[hover],
            hoverinfo="text",
            meta={"method": label, "wrong": wrong},
        )
        dy, xanchor = placer.place(math.log10(sx), qy, text)
        fig.add_annotation(
            x=math.log10(sx),  # annotations on a log axis take log10 coordinates
            y=qy,
            ax=0,
            ay=-dy,
            xanchor=xanchor,
            text=_pl(text),
            showarrow=True,  # places the text at (ax, ay); hidden when the label is close
            arrowhead=0,
            arrowwidth=1,
            arrowcolor=colour if abs(dy) > _LabelPlacer.NEAR else "rgba(0,0,0,0)",
            standoff=8,
            font={"size": 11, "color": colour},
            bgcolor="rgba(255,255,255,0.7)",
            borderpad=1,
        )
    if facts:  # what the two marker kinds mean
        for key, marker in (
            ("fig.sq.ok", {"symbol": "circle", "size": 11, "color": "#6c757d"}),
            (
                "fig.sq.bad",
                {"symbol": "x-open", "size": 13, "color": WRONG_COLOUR, "line": {"width": 2.5}},
            ),
        ):
            if key == "fig.sq.bad" and not any_wrong:
                continue
            fig.add_scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=t(key, lang),
                marker=marker,
                hoverinfo="skip",
            )
    _legend_below(fig)
    return fig


class _LabelPlacer:
    """Greedy label placement for a scatter of a few points: each label goes straight above or
    below its point, at the nearest offset where its (estimated) box overlaps no other label or
    marker. Estimates assume a plot area of about W x H pixels; the figure is responsive, so
    this only needs to be roughly right."""

    W, H, NEAR = 480.0, 300.0, 20.0
    OFFSETS = (20.0, -20.0, 38.0, -38.0, 56.0, -56.0, 74.0, -74.0, 92.0, -92.0)

    def __init__(
        self,
        x0: float,
        x1: float,
        y0: float,
        y1: float,
        points: list[tuple],
        size: tuple[float, float] | None = None,
        offsets: tuple[float, ...] | None = None,
    ):
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        if size is not None:
            self.W, self.H = size
        if offsets is not None:
            self.OFFSETS = offsets
        self.boxes = [self._box(*self._px(x, y), 16, 16, "center") for x, y in points]

    def _px(self, x: float, y: float) -> tuple[float, float]:
        return (
            (x - self.x0) / (self.x1 - self.x0) * self.W,
            (y - self.y0) / (self.y1 - self.y0) * self.H,
        )

    @staticmethod
    def _box(cx: float, cy: float, w: float, h: float, anchor: str) -> tuple:
        left = cx - w / 2 if anchor == "center" else cx if anchor == "left" else cx - w
        return (left, cy - h / 2, left + w, cy + h / 2)

    @staticmethod
    def _overlap(a: tuple, b: tuple) -> bool:
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    @staticmethod
    def _width(text: str) -> float:
        """A label's estimated width in pixels (CJK characters count double)."""
        return 6.3 * sum(2 if ord(c) > 0x2E80 else 1 for c in text) + 6

    def block(self, x: float, y: float, text: str) -> None:
        """Keep labels off a text anchored by its top right corner at (x, y)."""
        px, py = self._px(x, y)
        self.boxes.append((px - self._width(text), py - 15, px, py))

    def place(self, x: float, y: float, text: str, strict: bool = False):
        """(pixels up from the point, xanchor) for this label; remembers its box. With
        `strict`, None where no offset is free of every other label and marker (the label is
        left out) rather than the first offset inside the plot."""
        px, py = self._px(x, y)
        w = self._width(text)
        anchor = "center"
        if px - w / 2 < -10:
            anchor = "left"
        elif px + w / 2 > self.W + 10:
            anchor = "right"
        fallback = None
        for dy in self.OFFSETS:
            box = self._box(px, py + dy, w, 15, anchor)
            inside = box[1] >= -30 and box[3] <= self.H + 30
            free = not any(self._overlap(box, b) for b in self.boxes)
            if free and inside:
                self.boxes.append(box)
                return dy, anchor
            if fallback is None and inside:
                fallback = (dy, box)
        if strict:
            return None
        dy, box = fallback or (self.OFFSETS[0], self._box(px, py + 20, w, 15, anchor))
        self.boxes.append(box)
        return dy, anchor


def pareto_frontier(xs: Sequence[float], ys: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats (lower x and higher y), in increasing x."""
    pts = sorted(
        (i for i in range(len(xs)) if _num(xs[i]) is not None and _num(ys[i]) is not None),
        key=lambda i: (xs[i], -ys[i]),
    )
    out, best = [], -math.inf
    for i in pts:
        if ys[i] > best:
            out.append(i)
            best = ys[i]
    return out


def alpha_labels(
    xs: list[float], ys: list[float], alphas: list[float | None], x_span: float
) -> list[str | None]:
    """One α label per run of points closer than a label's width (a tenth of the x range,
    at the same quality): "α=0.34…1" at the run's middle point. Why: six α on one question
    often cost the same, and their labels printed over each other."""
    labels: list[str | None] = [None] * len(xs)
    group: list[int] = []

    def close() -> None:
        values = sorted(a for a in (alphas[i] for i in group) if a is not None)
        if values:
            text = f"α={values[0]:g}" + (f"…{values[-1]:g}" if len(values) > 1 else "")
            labels[group[len(group) // 2]] = text

    for i in sorted(range(len(xs)), key=lambda i: xs[i]):
        last = group[-1] if group else None
        if last is not None and (
            abs(xs[i] - xs[last]) >= 0.1 * x_span or abs(ys[i] - ys[last]) >= 0.05
        ):
            close()
            group = []
        group.append(i)
    close()
    return labels


# The sweep's y range, and the plot area its labels are placed for: a phone's (its x axis is
# about 280 px wide): wider screens only spread the labels further apart.
QL_Y = (-0.05, 1.12)
QL_HEIGHT = 440
QL_PLOT = (260.0, 240.0)
# Below the plot, a phone's legend takes a row per entry (about 20 px) out of the figure's
# height, besides the title and the axis title (about 90 px): the labels are placed for the
# plot height left.
LEGEND_ROW, QL_CHROME = 20.0, 90.0
# Labels sit just above or below their point (a long leader line across other methods'
# points read as a forest); one that fits nowhere near is left out.
QL_OFFSETS = (18.0, -18.0, 32.0, -32.0)


def _alpha_annotations(fig: go.Figure, labels: list, points: pd.DataFrame, x: str, current):
    """Every method's α labels as annotations, placed together (views the label placer):
    each beside its point where it overlaps no other label and no marker, else left out
    (the point's hover still names its α). Returns the x range they were placed for."""
    values = [v for v in pd.to_numeric(points[x], errors="coerce").dropna()]
    if current is not None and _num(current.get(x)) is not None:
        values.append(float(current[x]))
    if not values:
        return None
    lo, hi = min(values), max(values)
    pad = 0.08 * (hi - lo) if hi > lo else 0.1 * max(abs(lo), 1.0)
    x0, x1 = lo - pad, hi + pad
    markers = [
        (float(a), float(b))
        for a, b in zip(pd.to_numeric(points[x], errors="coerce"), points["quality"])
        if _num(a) is not None and _num(b) is not None
    ]
    entries = sum(1 for d in fig.data if d.showlegend is not False)
    height = min(QL_PLOT[1], QL_HEIGHT - QL_CHROME - LEGEND_ROW * entries)
    placer = _LabelPlacer(x0, x1, *QL_Y, markers, size=(QL_PLOT[0], height), offsets=QL_OFFSETS)
    for px, py, text, colour in labels:
        spot = placer.place(px, py, text, strict=True)
        if spot is None:
            continue
        dy, xanchor = spot
        fig.add_annotation(
            x=px,
            y=py,
            ax=0,
            ay=-dy,
            xanchor=xanchor,
            text=_pl(text),
            showarrow=True,  # places the text at (ax, ay); hidden when the label is close
            arrowhead=0,
            arrowwidth=1,
            arrowcolor=colour if abs(dy) > _LabelPlacer.NEAR else "rgba(0,0,0,0)",
            standoff=6,
            font={"size": 10, "color": colour},
            bgcolor="rgba(255,255,255,0.75)",
            borderpad=1,
            name="alpha",
        )
    return [x0, x1]


def quality_latency(
    points: pd.DataFrame,
    current: dict | None = None,
    x: str = "relative_latency",
    current_label: str | None = None,
    lang: str = "en",
    quality_label: str | None = None,
) -> go.Figure:
    """Alpha sweep: quality against cost, each method's points as markers (hover: α) and a
    line along that method's Pareto frontier (lower cost and higher quality dominates)."""
    fig = go.Figure()
    xlabel = t(f"fig.ql.x.{x}", lang) if has(f"fig.ql.x.{x}") else x
    qlabel = quality_label or t("fig.ql.quality", lang)
    qshort = t("fig.ql.quality_short", lang)
    xs = pd.to_numeric(points[x], errors="coerce").dropna()
    span = float(xs.max() - xs.min()) if len(xs) else 0.0
    labels = []  # (x, y, text, colour) of every method's α labels, placed at the end
    for k, (method, group) in enumerate(points.groupby("method", sort=False)):
        colour = DISTINCT_COLOURS[k % len(DISTINCT_COLOURS)]
        name = _pl(variant_label(str(method), lang))
        gx = [_num(v) for v in group[x]]
        gy = [_num(v) for v in group["quality"]]
        alphas = [_num(a) for a in group["alpha"]] if "alpha" in group else [None] * len(gx)
        keep = [i for i in range(len(gx)) if gx[i] is not None and gy[i] is not None]
        front = pareto_frontier([gx[i] for i in keep], [gy[i] for i in keep])
        front = [keep[i] for i in front]
        if len(front) > 1:
            fig.add_scatter(
                x=[gx[i] for i in front],
                y=[gy[i] for i in front],
                mode="lines",
                name=t("fig.ql.frontier", lang, name=name),
                legendgroup=str(method),
                showlegend=False,
                line={"color": colour, "width": 2},
                hoverinfo="skip",
            )
        named = alpha_labels(
            [gx[i] for i in keep], [gy[i] for i in keep], [alphas[i] for i in keep], span
        )
        if len(keep) <= 8:
            labels += [(gx[i], gy[i], text, colour) for i, text in zip(keep, named) if text]
        fig.add_scatter(
            x=[gx[i] for i in keep],
            y=[gy[i] for i in keep],
            mode="markers",
            text=named,
            name=name,
            legendgroup=str(method),
            marker={"color": colour, "size": 9, "line": {"width": 1, "color": "#fff"}},
            hovertext=[
                f"<b>{name}</b><br>α = {'–' if alphas[i] is None else f'{alphas[i]:g}'}"
                f"<br>{_pl(xlabel)}: {gx[i]:.3f}<br>{_pl(qshort)}: {gy[i]:.3f}"
                for i in keep
            ],
            hoverinfo="text",
        )
    if current is not None:
        fig.add_scatter(
            x=[current[x]],
            y=[current["quality"]],
            mode="markers",
            name=current_label or t("fig.ql.current", lang),
            marker={"symbol": "x", "size": 14, "color": "black"},
        )
    x_range = _alpha_annotations(fig, labels, points, x, current)
    fig.update_layout(
        title={"text": t("fig.ql.title", lang), "x": 0.01, "xanchor": "left"},
        xaxis={"title": {"text": xlabel}, "automargin": True, "range": x_range},
        yaxis={"title": {"text": qlabel}, "automargin": True, "range": list(QL_Y)},
        height=QL_HEIGHT,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    _legend_below(fig)
    return fig

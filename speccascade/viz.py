"""Figures and HTML: pure functions of Traces (and of bench rows). Nothing here runs a model."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from .engine import METHOD_REGISTRY
from .rules import RULES, Rule, decide
from .trace import SOURCES, TokenRecord, Trace

COLORS = {
    "accepted": "#b7e4c7",  # drafter token kept
    "resampled": "#ffb4a2",  # verifier took over
    "bonus": "#a9d6ff",  # bonus token from a fully kept window
    "drafter": "#d8f3dc",  # drafter alone
    "verifier": "#e4d4ff",  # verifier alone
}
WHATIF_COLOR = "#d00000"
DISTINCT_COLOURS = qualitative.Dark24


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _visible(text: str) -> str:
    """Whitespace a reader can see inside a coloured box."""
    return text.replace("\n", "↵").replace(" ", "\u00a0") or "∅"


def token_tooltip(t: TokenRecord, decision: bool | None = None) -> str:
    lines = [
        f"#{t.position} {t.text!r} (id {t.token_id}) — {SOURCES[t.source]}",
        f"q(x) = {_fmt(t.q)}   p(x) = {_fmt(t.p)}",
        f"max q = {_fmt(t.max_q)}   max p = {_fmt(t.max_p)}   D_TV = {_fmt(t.dtv)}",
    ]
    if t.draft_id is not None and t.draft_id != t.token_id:
        lines.append(f"drafted id {t.draft_id}: q = {_fmt(t.draft_q)}, p = {_fmt(t.draft_p)}")
    if t.defer is not None:
        lines.append(f"rule: {'defer' if t.defer else 'keep'} the draft")
    if t.accept_prob is not None:
        lines.append(f"acceptance probability {_fmt(t.accept_prob)}")
    if decision is not None:
        lines.append(f"what-if: would {'defer' if decision else 'keep'}")
    lines.append(f"round {t.round}")
    return "\n".join(lines)


def legend_html() -> str:
    items = "".join(
        f'<span class="sc-tok" style="background:{COLORS[k]}">{html.escape(v)}</span> '
        for k, v in SOURCES.items()
    )
    whatif = (
        f'<span class="sc-tok" style="outline:2px dashed {WHATIF_COLOR}">would defer '
        "(what-if)</span>"
    )
    return f'<div class="sc-legend">{items}{whatif}</div>'


def token_html(
    tokens: Sequence[TokenRecord] | None, whatif: Sequence[bool | None] | None = None
) -> str:
    """The generated text as coloured token boxes with hover details; `whatif` outlines the
    tokens a different alpha would defer."""
    if not tokens:
        return '<div class="sc-tokens sc-empty">No tokens yet.</div>'
    spans = []
    for i, t in enumerate(tokens):
        decision = whatif[i] if whatif is not None and i < len(whatif) else None
        style = f"background:{COLORS[t.source]}"
        if decision:
            style += f";outline:2px dashed {WHATIF_COLOR}"
        spans.append(
            f'<span class="sc-tok sc-{t.source}" style="{style}" data-pos="{t.position}" '
            f'title="{html.escape(token_tooltip(t, decision), quote=True)}">'
            f"{html.escape(_visible(t.text))}</span>"
        )
    # spaces inside the boxes are non-breaking (so they show); <wbr> lets lines wrap between tokens
    return f'<div class="sc-tokens">{"<wbr>".join(spans)}</div>'


def whatif_decisions(trace: Trace, rule: Rule, alpha: float) -> list[bool | None]:
    """Re-evaluate `rule` at `alpha` on the recorded draft statistics: where would it defer?
    None where a position had no draft (bonus tokens, single-model runs)."""
    rows = [
        i
        for i, t in enumerate(trace.tokens)
        if t.draft_id is not None and None not in (t.draft_q, t.draft_p, t.max_q, t.max_p, t.dtv)
    ]
    out: list[bool | None] = [None] * len(trace.tokens)
    if not rows or rule.defer is None:
        return out
    ts = [trace.tokens[i] for i in rows]
    got = decide(
        rule,
        alpha,
        [t.draft_q for t in ts],
        [t.draft_p for t in ts],
        [t.max_q for t in ts],
        [t.max_p for t in ts],
        [t.dtv for t in ts],
    )
    for i, d in zip(rows, got):
        out[i] = d
    return out


def heatmap(trace: Trace) -> go.Figure:
    """Rows: each model's confidence, each model's probability of the emitted token, D_TV and
    the rule's decision; columns: the generated tokens."""
    rows = [
        ("drafter confidence (max q)", [t.max_q for t in trace.tokens]),
        ("verifier confidence (max p)", [t.max_p for t in trace.tokens]),
        ("q(token)", [t.q for t in trace.tokens]),
        ("p(token)", [t.p for t in trace.tokens]),
        ("D_TV(p, q)", [t.dtv for t in trace.tokens]),
        ("deferred", [None if t.defer is None else float(t.defer) for t in trace.tokens]),
    ]
    z = [[math.nan if v is None else v for v in values] for _, values in rows]
    text = [[_fmt(v, 2) if v is not None else "" for v in values] for _, values in rows]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(len(trace.tokens))),
            y=[name for name, _ in rows],
            text=text,
            customdata=[[_visible(t.text) for t in trace.tokens]] * len(rows),
            hovertemplate="token %{x} %{customdata}<br>%{y}: %{text}<extra></extra>",
            colorscale="Viridis",
            zmin=0,
            zmax=1,
            colorbar={"title": "prob."},
        )
    )
    fig.update_layout(
        title="Where the two models disagree, and what the rule did",
        xaxis={
            "tickmode": "array",
            "tickvals": list(range(len(trace.tokens))),
            "ticktext": [_visible(t.text) for t in trace.tokens],
            "tickangle": -60,
        },
        yaxis={"autorange": "reversed"},
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 80},
    )
    return fig


def inspector(
    trace: Trace,
    position: int,
    rule: Rule | None = None,
    alpha: float | None = None,
    tokenizer=None,
) -> go.Figure:
    """Top-k of q, p and the run's target pi at one position, side by side; with a rule, the
    tokens it would keep (r(v) = 0) at `alpha` are marked (from the recorded top-k)."""
    t = trace.tokens[position]
    ids: list[int] = []
    for dist in (t.top_q, t.top_p, t.top_pi):
        ids += [i for i, _ in dist if i not in ids]
    q, p, pi = dict(t.top_q), dict(t.top_p), dict(t.top_pi)

    def name(i: int) -> str:
        piece = tokenizer.decode([i]) if tokenizer is not None else str(i)
        return f"{_visible(piece)} [{i}]"

    names = [name(i) for i in ids]
    fig = go.Figure()
    for label, dist, color in (
        ("drafter q", q, "#52b788"),
        ("verifier p", p, "#7b2cbf"),
        ("target pi", pi, "#f77f00"),
    ):
        if dist:
            fig.add_bar(name=label, x=names, y=[dist.get(i, 0.0) for i in ids], marker_color=color)
    title = f"Position {t.position}: {_visible(t.text)!s} ({SOURCES[t.source]})"
    if (
        rule is not None
        and rule.defer is not None
        and alpha is not None
        and t.max_q is not None
        and t.max_p is not None
        and t.dtv is not None
    ):
        keep = [
            not d
            for d in decide(
                rule,
                alpha,
                [q.get(i, 0.0) for i in ids],
                [p.get(i, 0.0) for i in ids],
                [t.max_q] * len(ids),
                [t.max_p] * len(ids),
                [t.dtv] * len(ids),
            )
        ]
        kept = [n for n, k in zip(names, keep) if k]
        fig.add_scatter(
            name=f"{rule.label} keeps (alpha={alpha:g})",
            x=kept,
            y=[max(q.get(i, 0), p.get(i, 0)) + 0.03 for i, k in zip(ids, keep) if k],
            mode="markers",
            marker={"symbol": "star", "size": 12, "color": "#111"},
        )
        title += f" — {len(kept)} of {len(ids)} shown tokens in {rule.label}'s accepted set"
    if t.draft_id is not None and t.draft_id in ids:
        fig.add_vline(x=ids.index(t.draft_id), line_dash="dot", line_color="#444")
    fig.update_layout(
        barmode="group",
        title=title,
        height=360,
        yaxis_title="probability",
        margin={"l": 10, "r": 10, "t": 50, "b": 60},
    )
    return fig


def timeline(trace: Trace) -> go.Figure:
    """Drafter and verifier calls on a time axis (where the time went), and drafted vs kept
    tokens per round."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=False,
        vertical_spacing=0.18,
        subplot_titles=("Model calls over time (ms)", "Drafted vs kept per round"),
    )
    rounds = trace.rounds
    for role, color in (("drafter", "#52b788"), ("verifier", "#7b2cbf")):
        starts, widths, text = [], [], []
        for r in rounds:
            dur = r.drafter_s if role == "drafter" else r.verifier_s
            if dur <= 0:
                continue
            offset = r.start_s + (r.drafter_s if role == "verifier" else 0.0)
            starts.append(1000 * offset)
            widths.append(1000 * dur)
            calls = r.drafter_calls if role == "drafter" else r.verifier_calls
            text.append(f"round {r.index}: {calls} call(s), {1000 * dur:.1f} ms")
        fig.add_bar(
            name=role,
            y=[role] * len(starts),
            x=widths,
            base=starts,
            orientation="h",
            marker_color=color,
            hovertext=text,
            hoverinfo="text",
            row=1,
            col=1,
        )
    if any(r.drafted for r in rounds):
        idx = [r.index for r in rounds]
        fig.add_bar(
            name="drafted",
            x=idx,
            y=[r.drafted for r in rounds],
            marker_color="#adb5bd",
            row=2,
            col=1,
        )
        fig.add_bar(
            name="kept", x=idx, y=[r.accepted for r in rounds], marker_color="#52b788", row=2, col=1
        )
    else:
        fig.add_bar(
            name="emitted",
            x=[r.index for r in rounds],
            y=[r.emitted for r in rounds],
            marker_color="#adb5bd",
            row=2,
            col=1,
        )
    fig.update_layout(barmode="overlay", height=420, margin={"l": 10, "r": 10, "t": 40, "b": 30})
    fig.update_xaxes(title_text="ms since start", row=1, col=1)
    fig.update_xaxes(title_text="round", row=2, col=1)
    return fig


def stats_frame(trace: Trace, verifier_wall_s: float | None = None) -> pd.DataFrame:
    """The run's headline numbers; speed-up needs a verifier-alone wall time to compare."""
    s = trace.summary
    rows = [
        ("wall time (s)", _fmt(s.wall_s)),
        ("tokens", str(s.new_tokens)),
        ("tokens / s", _fmt(s.tokens_per_s, 1)),
        ("verifier calls / token", _fmt(s.verifier_calls_per_token)),
        ("drafter calls / verifier calls", f"{s.drafter_calls} / {s.verifier_calls}"),
        ("acceptance rate", _fmt(s.acceptance_rate)),
        ("mean kept per round", _fmt(s.mean_accepted_length, 2)),
        ("drafter/verifier cost per call", _fmt(s.cost_ratio)),
        ("ideal speed-up (fact 5)", _fmt(s.ideal_speedup, 2)),
        ("stop reason", s.stop_reason),
    ]
    if verifier_wall_s:
        rows.insert(3, ("measured speed-up vs verifier", _fmt(verifier_wall_s / s.wall_s, 2)))
    return pd.DataFrame(rows, columns=["metric", "value"])


def latency_bars(table: pd.DataFrame) -> go.Figure:
    """Compare: wall time per method, coloured by verifier calls per token."""
    fig = go.Figure(
        go.Bar(
            x=table["method"],
            y=table["wall_s"],
            marker={
                "color": table["verifier_calls_per_token"],
                "colorscale": "Purples",
                "cmin": 0,
                "cmax": 1,
                "colorbar": {"title": "verifier<br>calls/token"},
            },
            text=[f"{s:.2f}x" for s in table["speedup"]],
            textposition="outside",
        )
    )
    fig.update_layout(
        title="Wall time per method (label: speed-up over the verifier alone)",
        yaxis_title="seconds",
        height=380,
        margin={"l": 10, "r": 10, "t": 50, "b": 80},
    )
    return fig


def quality_latency(
    points: pd.DataFrame,
    current: dict | None = None,
    x: str = "relative_latency",
    current_label: str = "current",
) -> go.Figure:
    """Alpha sweep: quality against latency relative to the verifier, one curve per method."""
    fig = go.Figure()
    for method, group in points.groupby("method", sort=False):
        group = group.sort_values(x)
        fig.add_scatter(
            x=group[x],
            y=group["quality"],
            mode="lines+markers",
            name=str(method),
            customdata=group["alpha"],
            hovertemplate=f"{method}<br>alpha=%{{customdata}}<br>{x}=%{{x:.3f}}"
            "<br>quality=%{y:.3f}<extra></extra>",
        )
    if current is not None:
        fig.add_scatter(
            x=[current[x]],
            y=[current["quality"]],
            mode="markers",
            name=current_label,
            marker={"symbol": "x", "size": 14, "color": "black"},
        )
    label = {
        "relative_latency": "latency relative to the verifier alone",
        "verifier_calls_per_token": "verifier calls per token",
    }.get(x, x)
    fig.update_layout(
        title="Quality vs cost over alpha",
        colorway=DISTINCT_COLOURS,  # up to 14 methods: plotly's default 10 would repeat
        xaxis_title=label,
        yaxis_title="quality (ROUGE-L)",
        height=420,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


def rule_for(method: str, rule: str | None) -> Rule | None:
    """The rule a method runs with: its registry row's, or `rule` where it takes the user's."""
    return METHOD_REGISTRY[method].target_rule(rule)


__all__ = [
    "COLORS",
    "RULES",
    "heatmap",
    "inspector",
    "latency_bars",
    "legend_html",
    "quality_latency",
    "rule_for",
    "stats_frame",
    "timeline",
    "token_html",
    "whatif_decisions",
]

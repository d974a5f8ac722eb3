"""Figures and HTML: pure functions of Traces (and of compare/bench tables). Nothing here runs
a model. Every function takes `lang` ('en', 'zh' or a browser tag); every word a reader sees
comes from the i18n tables (i18n/figures.py)."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from .analysis import whatif_decisions
from .engine import METHOD_REGISTRY
from .i18n import has, policy_label, t, variant_label
from .rules import RULES, Rule, decide
from .trace import SOURCES, TokenRecord, Trace, position_counts

COLORS = {
    "accepted": "#b7e4c7",  # drafter token kept
    "resampled": "#ffb4a2",  # verifier took over
    "bonus": "#a9d6ff",  # bonus token from a fully kept window
    "drafter": "#d8f3dc",  # drafter alone
    "verifier": "#e4d4ff",  # verifier alone
}
WHATIF_COLOR = "#d00000"
EOS_MARK = "∎"
EOS_RE = re.compile(r"^<\|[^|>]*\|>$|^</?s>$")
# Up to 23 methods without repeats; no near-black (the "current setting" marker is black).
DISTINCT_COLOURS = [c for c in qualitative.Dark24 if c != "#222A2A"]
# Speed vs quality: strong colours, none of them red (red marks a wrong answer there).
POINT_COLOURS = [
    "#2E91E5",
    "#1CA71C",
    "#DA16FF",
    "#B68100",
    "#750D86",
    "#00A08B",
    "#511CFB",
    "#EB663B",
    "#6C7C32",
    "#1616A7",
    "#778AAE",
    "#A777F1",
    "#0D2A63",
    "#E15F99",
]
# Timeline: each role and count its own colour.
TIMELINE_COLOURS = {
    "drafter": "#1b9aaa",  # teal
    "verifier": "#7b2cbf",  # purple
    "drafted": "#adb5bd",  # grey
    "kept": "#2b9348",  # green
    "emitted": "#5c7fa3",  # grey-blue
}
KEPT_COLOUR, DEFERRED_COLOUR = "#52b788", "#e85d04"
WRONG_COLOUR = "#d00000"

# The app adds this to its page CSS: token boxes, their popups, the legend chips.
TOKEN_CSS = """
.sc-tokens { line-height: 2.1; word-break: normal; }
.sc-tokens.sc-empty { color: #6c757d; font-style: italic; }
.sc-tok {
  position: relative; display: inline-block; max-width: 100%; overflow-wrap: anywhere;
  color: #111; padding: 0 2px; margin: 1px 0; border-radius: 3px; line-height: 1.5;
  cursor: pointer;
}
.sc-tok:hover, .sc-tok:focus { box-shadow: 0 0 0 2px #495057; z-index: 2; }
.sc-tok:focus:not(:focus-visible) { outline-offset: 0; }
.sc-tok.sc-selected { box-shadow: 0 0 0 3px #111; font-weight: 600; z-index: 1; }
.sc-tok.sc-eos {
  color: #6c757d; font-size: 0.8em; padding: 0 5px; vertical-align: 0.1em;
  border: 1px solid #adb5bd;
}
.sc-tok > .sc-pop {
  display: none; position: absolute; left: 0; top: calc(100% + 6px); z-index: 1000;
  width: max-content; max-width: min(24rem, calc(100vw - 24px));
  background: #1f2328; color: #f6f8fa; border-radius: 6px; padding: 6px 9px;
  box-shadow: 0 6px 18px rgba(0, 0, 0, 0.35);
  font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-weight: normal; text-align: left; white-space: pre-wrap; overflow-wrap: anywhere;
  pointer-events: none;
}
.sc-tok:hover > .sc-pop, .sc-tok:focus > .sc-pop, .sc-tok:focus-within > .sc-pop {
  display: block;
}
/* hovering another token hides the popup of the focused (tapped) one */
.sc-tokens:hover .sc-tok:focus:not(:hover) > .sc-pop { display: none; }
@media (max-width: 640px) {
  /* phones: the popup is a sheet along the bottom of the screen, always inside it */
  .sc-tok > .sc-pop {
    position: fixed; left: 8px; right: 8px; top: auto; bottom: 8px;
    width: auto; max-width: none;
  }
}
.sc-legend { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; }
.sc-chip {
  display: inline-block; white-space: nowrap; color: #111; padding: 2px 8px;
  border-radius: 4px; font-size: 0.9em; line-height: 1.5;
}
"""


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _visible(text: str) -> str:
    """Whitespace a reader can see inside a coloured box."""
    return text.replace("\n", "↵").replace(" ", "\u00a0") or "∅"


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _pl(text: str) -> str:
    """Text for plotly's pseudo-HTML labels: '<s>' would otherwise strike through."""
    return html.escape(str(text), quote=False)


def is_eos(text: str) -> bool:
    """Whether a token's text is an end-of-text marker (<|endoftext|>, </s>, <|im_end|>, …)."""
    return bool(EOS_RE.match(text))


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _rule_name(rule: Rule, lang: str) -> str:
    return t(f"rule.{rule.name}", lang) if has(f"rule.{rule.name}") else rule.label


def _legend_below(fig: go.Figure) -> None:
    """A horizontal legend along the bottom of the figure, under the axis titles."""
    fig.update_layout(
        legend={
            "orientation": "h",
            "yref": "container",
            "y": 0.01,
            "yanchor": "bottom",
            "x": 0,
            "xanchor": "left",
        }
    )


# -- tokens --------------------------------------------------------------------------------


def token_tooltip(t_: TokenRecord, decision: bool | None = None, lang: str = "en") -> str:
    """The lines of a token's popup: what each model thought and what the rule did."""
    lines = [
        t(
            "fig.tok.head",
            lang,
            pos=t_.position,
            text=repr(t_.text),
            id=t_.token_id,
            source=t(f"source.{t_.source}", lang),
        ),
        f"q(x) = {_fmt(t_.q)}   p(x) = {_fmt(t_.p)}",
        f"max q = {_fmt(t_.max_q)}   max p = {_fmt(t_.max_p)}   D_TV = {_fmt(t_.dtv)}",
    ]
    if t_.draft_id is not None and t_.draft_id != t_.token_id:
        lines.append(
            t("fig.tok.drafted", lang, id=t_.draft_id, q=_fmt(t_.draft_q), p=_fmt(t_.draft_p))
        )
    if t_.defer is not None:
        lines.append(t("fig.tok.rule_defer" if t_.defer else "fig.tok.rule_keep", lang))
    if t_.accept_prob is not None:
        lines.append(t("fig.tok.accept", lang, v=_fmt(t_.accept_prob)))
    if decision is not None:
        lines.append(t("fig.tok.whatif_defer" if decision else "fig.tok.whatif_keep", lang))
    lines.append(t("fig.tok.round", lang, n=t_.round))
    return "\n".join(lines)


def _chip(text: str, style: str) -> str:
    return (
        f'<span class="sc-chip" style="display:inline-block;white-space:nowrap;{style}">'
        f"{html.escape(text)}</span>"
    )


def legend_html(lang: str = "en") -> str:
    """Chips explaining the token colours, the what-if outline and the end-of-text mark."""
    chips = [_chip(t(f"source.{k}", lang), f"background:{COLORS[k]}") for k in SOURCES]
    chips.append(_chip(t("fig.legend.whatif", lang), f"outline:2px dashed {WHATIF_COLOR}"))
    chips.append(
        _chip(f"{EOS_MARK} {t('fig.legend.eos', lang)}", "background:#e9ecef;color:#495057")
    )
    return (
        '<div class="sc-legend" style="display:flex;flex-wrap:wrap;gap:6px 10px">'
        f"{''.join(chips)}</div>"
    )


def token_html(
    tokens: Sequence[TokenRecord] | None,
    whatif: Sequence[bool | None] | None = None,
    lang: str = "en",
    selected: int | None = None,
) -> str:
    """The generated text as coloured token boxes, each with a popup of its details (shown on
    hover and on focus, so a tap works on touch screens) and `data-pos` for click handlers.
    `whatif` outlines the tokens a different alpha would defer; `selected` (a position) gets a
    thicker outline; end-of-text tokens show as a small mark."""
    if not tokens:
        return f'<div class="sc-tokens sc-empty">{html.escape(t("fig.tok.empty", lang))}</div>'
    spans = []
    for i, tok in enumerate(tokens):
        decision = whatif[i] if whatif is not None and i < len(whatif) else None
        classes = ["sc-tok", f"sc-{tok.source}"]
        style = f"background:{COLORS[tok.source]}"
        if is_eos(tok.text):
            classes.append("sc-eos")
            style = f"background:#e9ecef;border-bottom:3px solid {COLORS[tok.source]}"
            shown = EOS_MARK
            label = t("fig.tok.eos", lang)
        else:
            shown = html.escape(_visible(tok.text))
            label = None
        if decision:
            classes.append("sc-whatif")
            style += f";outline:2px dashed {WHATIF_COLOR}"
        pressed = "false"
        if selected is not None and tok.position == selected:
            classes.append("sc-selected")
            pressed = "true"
        pop = token_tooltip(tok, decision, lang)
        if label:
            pop = f"{label}\n{pop}"
        aria = f' aria-label="{html.escape(label, quote=True)}"' if label else ""
        spans.append(
            f'<span class="{" ".join(classes)}" style="{style}" data-pos="{tok.position}" '
            f'tabindex="0" role="button" aria-pressed="{pressed}"{aria}>{shown}'
            f'<span class="sc-pop" role="tooltip">{html.escape(pop)}</span></span>'
        )
    # spaces inside the boxes are non-breaking (so they show); <wbr> lets lines wrap between tokens
    return (
        f'<div class="sc-tokens" aria-label="{html.escape(t("fig.tok.aria", lang), quote=True)}">'
        f"{'<wbr>'.join(spans)}</div>"
    )


# -- heatmap -------------------------------------------------------------------------------

MAX_TICKS = 30


def _tick(text: str) -> str:
    return EOS_MARK if is_eos(text) else _pl(_short(_visible(text), 8))


def _nan(v: float | None) -> float:
    return math.nan if v is None else v


def heatmap(trace: Trace, lang: str = "en") -> go.Figure:
    """Three stacked heatmaps over the generated tokens, each with its own colour bar: the two
    models' confidence and probability of the emitted token (one probability scale), D_TV
    (its own scale) and the rule's decision (kept / deferred; blank where no rule applied)."""
    toks = trace.tokens
    n = len(toks)
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, row_heights=[4, 1.8, 1.8], vertical_spacing=0.06
    )
    fig.update_layout(title={"text": t("fig.heat.title", lang), "x": 0.01, "xanchor": "left"})
    if not n:
        fig.add_annotation(
            text=t("fig.heat.empty", lang),
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
        fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 50, "b": 40})
        return fig
    x = list(range(n))
    where = [f"#{tok.position} {_pl(repr(tok.text))}" for tok in toks]
    prob_rows = [
        (t("fig.heat.max_q", lang), [tok.max_q for tok in toks]),
        (t("fig.heat.max_p", lang), [tok.max_p for tok in toks]),
        (t("fig.heat.q_tok", lang), [tok.q for tok in toks]),
        (t("fig.heat.p_tok", lang), [tok.p for tok in toks]),
    ]
    gap = 1 if n <= 96 else 0
    domains = [tuple(fig.layout[axis].domain) for axis in ("yaxis", "yaxis2", "yaxis3")]

    def bar(r: int, title: str, **extra) -> dict:
        lo, hi = domains[r]
        return {
            "title": {"text": title, "side": "right"},
            "y": (lo + hi) / 2,
            "yanchor": "middle",
            "len": (hi - lo) * 1.02,
            "thickness": 12,
            "x": 1.01,
            "xanchor": "left",
            **extra,
        }

    fig.add_trace(
        go.Heatmap(
            z=[[_nan(v) for v in vals] for _, vals in prob_rows],
            x=x,
            y=[name for name, _ in prob_rows],
            customdata=[where] * len(prob_rows),
            hovertemplate="%{customdata}<br>%{y}: %{z:.3f}<extra></extra>",
            colorscale="Viridis",
            zmin=0,
            zmax=1,
            xgap=gap,
            ygap=1,
            colorbar=bar(0, t("fig.prob", lang)),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Heatmap(
            z=[[_nan(tok.dtv) for tok in toks]],
            x=x,
            y=["D_TV(p, q)"],
            customdata=[where],
            hovertemplate="%{customdata}<br>%{y}: %{z:.3f}<extra></extra>",
            colorscale="OrRd",
            zmin=0,
            zmax=1,
            xgap=gap,
            colorbar=bar(1, t("fig.heat.dtv_bar", lang), tickvals=[0, 0.5, 1]),
        ),
        row=2,
        col=1,
    )
    kept, deferred = t("fig.heat.kept", lang), t("fig.heat.deferred", lang)
    no_rule = t("fig.heat.no_rule", lang)
    fig.add_trace(
        go.Heatmap(
            z=[[math.nan if tok.defer is None else float(tok.defer) for tok in toks]],
            x=x,
            y=[t("fig.heat.defer", lang)],
            customdata=[where],
            text=[
                [no_rule if tok.defer is None else deferred if tok.defer else kept for tok in toks]
            ],
            hovertemplate="%{customdata}<br>%{y}: %{text}<extra></extra>",
            colorscale=[
                [0, KEPT_COLOUR],
                [0.5, KEPT_COLOUR],
                [0.5, DEFERRED_COLOUR],
                [1, DEFERRED_COLOUR],
            ],
            zmin=0,
            zmax=1,
            xgap=gap,
            colorbar=bar(2, "", tickvals=[0.25, 0.75], ticktext=[kept, deferred], ticks=""),
        ),
        row=3,
        col=1,
    )
    step = max(1, math.ceil(n / MAX_TICKS))
    ticks = list(range(0, n, step))
    fig.update_xaxes(
        tickmode="array",
        tickvals=ticks,
        ticktext=[_tick(toks[i].text) for i in ticks],
        tickangle=-60,
        tickfont={"size": 10},
        range=[-0.5, n - 0.5],
    )
    fig.update_xaxes(
        title={
            "text": t("fig.heat.xaxis", lang, k=step)
            if step > 1
            else t("fig.heat.xaxis_all", lang),
            "font": {"size": 11},
        },
        row=3,
        col=1,
    )
    fig.update_yaxes(automargin=True, tickfont={"size": 11})
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_layout(height=470, margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


# -- inspector -----------------------------------------------------------------------------


def inspector(
    trace: Trace,
    position: int,
    rule: Rule | None = None,
    alpha: float | None = None,
    tokenizer=None,
    lang: str = "en",
) -> go.Figure:
    """Top-k of q, p and the run's target π at one position, side by side; with a rule, the
    tokens it would keep (r(v) = 0) at `alpha` are marked (from the recorded top-k)."""
    tok = trace.tokens[position]
    ids: list[int] = []
    for dist in (tok.top_q, tok.top_p, tok.top_pi):
        ids += [i for i, _ in dist if i not in ids]
    q, p, pi = dict(tok.top_q), dict(tok.top_p), dict(tok.top_pi)
    # candidates that none of the three laws gives 0.1% are padding of the recorded top-k
    shown = [i for i in ids if max(q.get(i, 0.0), p.get(i, 0.0), pi.get(i, 0.0)) >= 1e-3]
    ids = shown or ids[:1]

    def name(i: int) -> str:
        piece = tokenizer.decode([i]) if tokenizer is not None else str(i)
        return _pl(f"{_short(_visible(piece), 14)} [{i}]")

    names = [name(i) for i in ids]
    fig = go.Figure()
    for key, dist, color in (
        ("fig.insp.q", q, "#52b788"),
        ("fig.insp.p", p, "#7b2cbf"),
        ("fig.insp.pi", pi, "#f77f00"),
    ):
        if dist:
            fig.add_bar(
                name=t(key, lang), x=names, y=[dist.get(i, 0.0) for i in ids], marker_color=color
            )
    title = (
        f"#{tok.position} {_pl(repr(_short(tok.text, 20)))} · {t(f'fig.short.{tok.source}', lang)}"
    )
    if (
        rule is not None
        and rule.defer is not None
        and alpha is not None
        and tok.max_q is not None
        and tok.max_p is not None
        and tok.dtv is not None
    ):
        keep = [
            not d
            for d in decide(
                rule,
                alpha,
                [q.get(i, 0.0) for i in ids],
                [p.get(i, 0.0) for i in ids],
                [tok.max_q] * len(ids),
                [tok.max_p] * len(ids),
                [tok.dtv] * len(ids),
            )
        ]
        kept = [n for n, k in zip(names, keep) if k]
        rname = _rule_name(rule, lang)
        fig.add_scatter(
            name=t("fig.insp.keeps", lang, rule=rname, alpha=f"{alpha:g}"),
            x=kept,
            y=[max(q.get(i, 0), p.get(i, 0), pi.get(i, 0)) + 0.03 for i, k in zip(ids, keep) if k],
            mode="markers",
            marker={"symbol": "star", "size": 12, "color": "#111"},
        )
        sub = t("fig.insp.accepted_set", lang, n=len(kept), m=len(ids), rule=rname)
        title += f"<br><sup>{_pl(sub)}</sup>"
    if tok.draft_id is not None and tok.draft_id in ids:
        fig.add_vline(
            x=ids.index(tok.draft_id),
            line_dash="dot",
            line_color="#444",
            annotation_text=t("fig.insp.drafted", lang),
            annotation_position="top",
            annotation_font_size=10,
        )
    fig.update_layout(
        barmode="group",
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        height=400,
        yaxis_title=t("fig.prob", lang),
        xaxis={"title": {"text": t("fig.insp.xaxis", lang)}, "tickangle": -45, "automargin": True},
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
    )
    _legend_below(fig)
    return fig


# -- timeline ------------------------------------------------------------------------------


def timeline(trace: Trace, lang: str = "en") -> go.Figure:
    """Drafter and verifier calls on a time axis (where the time went), and drafted vs kept
    tokens per round."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=False,
        vertical_spacing=0.3,
        subplot_titles=(t("fig.tl.calls_title", lang), t("fig.tl.rounds_title", lang)),
    )
    rounds = trace.rounds
    for role in ("drafter", "verifier"):
        starts, widths, text = [], [], []
        for r in rounds:
            dur = r.drafter_s if role == "drafter" else r.verifier_s
            if dur <= 0:
                continue
            offset = r.start_s + (r.drafter_s if role == "verifier" else 0.0)
            starts.append(1000 * offset)
            widths.append(1000 * dur)
            calls = r.drafter_calls if role == "drafter" else r.verifier_calls
            text.append(
                t("fig.tl.call_hover", lang, i=r.index, calls=calls, ms=f"{1000 * dur:.1f}")
            )
        fig.add_bar(
            name=t(f"fig.tl.{role}_calls", lang),
            y=[t(f"fig.tl.{role}", lang)] * len(starts),
            x=widths,
            base=starts,
            orientation="h",
            marker_color=TIMELINE_COLOURS[role],
            hovertext=text,
            hoverinfo="text",
            row=1,
            col=1,
        )
    idx = [r.index for r in rounds]
    if any(r.drafted for r in rounds):
        for key, values in (
            ("drafted", [r.drafted for r in rounds]),
            ("kept", [r.accepted for r in rounds]),
        ):
            fig.add_bar(
                name=t(f"fig.tl.{key}", lang),
                x=idx,
                y=values,
                marker_color=TIMELINE_COLOURS[key],
                row=2,
                col=1,
            )
    else:
        fig.add_bar(
            name=t("fig.tl.emitted", lang),
            x=idx,
            y=[r.emitted for r in rounds],
            marker_color=TIMELINE_COLOURS["emitted"],
            row=2,
            col=1,
        )
    fig.update_layout(barmode="overlay", height=480, margin={"l": 10, "r": 10, "t": 40, "b": 50})
    _legend_below(fig)
    fig.update_annotations(font_size=13)
    fig.update_xaxes(title={"text": t("fig.tl.ms", lang), "standoff": 4}, row=1, col=1)
    fig.update_xaxes(title={"text": t("fig.tl.round", lang), "standoff": 4}, dtick=1, row=2, col=1)
    fig.update_yaxes(automargin=True)
    fig.update_yaxes(title_text=t("fig.tl.tokens", lang), row=2, col=1)
    return fig


# -- stats ---------------------------------------------------------------------------------


def stats_frame(
    trace: Trace | None, verifier_wall_s: float | None = None, lang: str = "en"
) -> pd.DataFrame:
    """The run's headline numbers; speed-up needs a verifier-alone wall time to compare.
    Without a trace: no rows, just the (localized) headers."""
    columns = [t("fig.stats.metric", lang), t("fig.stats.value", lang)]
    if trace is None:
        return pd.DataFrame([], columns=columns)
    s = trace.summary
    stop = (
        t(f"fig.stop.{s.stop_reason}", lang) if has(f"fig.stop.{s.stop_reason}") else s.stop_reason
    )
    rows = [
        ("fig.stats.wall", _fmt(s.wall_s)),
        ("fig.stats.tokens", str(s.new_tokens)),
        ("fig.stats.tps", _fmt(s.tokens_per_s, 1)),
        ("fig.stats.vcalls", _fmt(s.verifier_calls_per_token)),
        ("fig.stats.calls", f"{s.drafter_calls} / {s.verifier_calls}"),
        ("fig.stats.acceptance", _fmt(s.acceptance_rate)),
        ("fig.stats.mean_kept", _fmt(s.mean_accepted_length, 2)),
        ("fig.stats.window", _fmt(s.mean_window, 2)),
        ("fig.stats.wasted", str(s.wasted_drafts) if s.mean_window is not None else "—"),
        ("fig.stats.cost", _fmt(s.cost_ratio)),
        ("fig.stats.ideal", _fmt(s.ideal_speedup, 2)),
        ("fig.stats.stop", stop),
    ]
    if verifier_wall_s:
        rows.insert(3, ("fig.stats.speedup", _fmt(verifier_wall_s / s.wall_s, 2)))
    return pd.DataFrame([(t(k, lang), v) for k, v in rows], columns=columns)


# -- compare: speed vs quality -------------------------------------------------------------


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
    fig.add_annotation(
        x=x1,
        y=1.12,
        xanchor="right",
        yanchor="top",
        text=t("fig.sq.good_facts" if facts else "fig.sq.good_agree", lang),
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

    def __init__(self, x0: float, x1: float, y0: float, y1: float, points: list[tuple]):
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
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

    def place(self, x: float, y: float, text: str) -> tuple[float, str]:
        """(pixels up from the point, xanchor) for this label; remembers its box."""
        px, py = self._px(x, y)
        w = 6.3 * sum(2 if ord(c) > 0x2E80 else 1 for c in text) + 6
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
        dy, box = fallback or (self.OFFSETS[0], self._box(px, py + 20, w, 15, anchor))
        self.boxes.append(box)
        return dy, anchor


# -- alpha sweep: quality vs cost ----------------------------------------------------------


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
        fig.add_scatter(
            x=[gx[i] for i in keep],
            y=[gy[i] for i in keep],
            mode="markers+text" if len(keep) <= 8 else "markers",
            text=[None if alphas[i] is None else f"α={alphas[i]:g}" for i in keep],
            textposition="top center",
            textfont={"size": 9, "color": colour},
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
    fig.update_layout(
        title={"text": t("fig.ql.title", lang), "x": 0.01, "xanchor": "left"},
        xaxis={"title": {"text": xlabel}, "automargin": True},
        yaxis={"title": {"text": qlabel}, "automargin": True, "range": [-0.05, 1.12]},
        height=440,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    _legend_below(fig)
    return fig


def rule_for(method: str, rule: str | None) -> Rule | None:
    """The rule a method runs with: its registry row's, or `rule` where it takes the user's."""
    return METHOD_REGISTRY[method].target_rule(rule)


__all__ = [
    "COLORS",
    "RULES",
    "TOKEN_CSS",
    "heatmap",
    "inspector",
    "is_eos",
    "legend_html",
    "pareto_frontier",
    "quality_latency",
    "rule_for",
    "speed_quality",
    "stats_frame",
    "timeline",
    "token_html",
    "whatif_decisions",
]


def drafting(trace: Trace, lang: str = "en") -> go.Figure | None:
    """Where in the window drafts die, and how long the windows were: the per-position kept
    rate (position j counts when the j - 1 drafts before it were kept) and the planned vs
    drafted vs kept window per round. None for methods that do not draft."""
    rounds = [r for r in trace.rounds if r.drafted]
    if not rounds:
        return None
    s = trace.summary
    fig = make_subplots(
        rows=2,
        cols=1,
        vertical_spacing=0.3,
        subplot_titles=(t("fig.dp.by_position_title", lang), t("fig.dp.windows_title", lang)),
    )
    reached, kept = position_counts(rounds)
    positions = list(range(1, len(reached) + 1))
    fig.add_bar(
        x=positions,
        y=[x if x is not None else 0 for x in s.acceptance_by_position],
        marker_color=TIMELINE_COLOURS["kept"],
        hovertext=[
            t("fig.dp.rate_hover", lang, j=j, kept=k, reached=n)
            for j, k, n in zip(positions, kept, reached)
        ],
        hoverinfo="text",
        text=[f"{k}/{n}" for k, n in zip(kept, reached)],  # how many tested: 1/1 is not 40/40
        textposition="outside",
        cliponaxis=False,
        name=t("fig.dp.kept_rate", lang),
        showlegend=False,
        row=1,
        col=1,
    )
    idx = [r.index for r in rounds]
    # drawn last on top, dotted and hollow, so the planned window shows where it equals the rest
    for key, values, colour, dash, width in (
        ("drafted", [r.drafted for r in rounds], TIMELINE_COLOURS["drafted"], "solid", 4),
        ("kept", [r.accepted for r in rounds], TIMELINE_COLOURS["kept"], "solid", 2),
        ("planned", [r.window for r in rounds], TIMELINE_COLOURS["verifier"], "dot", 2),
    ):
        fig.add_scatter(
            x=idx,
            y=values,
            mode="lines+markers",
            line={"color": colour, "dash": dash, "shape": "hv", "width": width},
            marker={
                "size": 7 if key == "planned" else 5,
                "symbol": "circle-open" if key == "planned" else "circle",
            },  # fmt: skip
            name=t(f"fig.dp.{key}", lang),
            row=2,
            col=1,
        )
    fig.update_xaxes(title_text=t("fig.dp.position", lang), dtick=1, row=1, col=1)
    fig.update_yaxes(title_text=t("fig.dp.kept_rate", lang), range=[0, 1.2], row=1, col=1)
    fig.update_xaxes(
        title_text=t("fig.tl.round", lang), dtick=max(1, len(rounds) // 8), row=2, col=1
    )
    fig.update_yaxes(title_text=t("fig.tl.tokens", lang), rangemode="tozero", row=2, col=1)
    fig.update_layout(height=480, margin={"l": 10, "r": 10, "t": 40, "b": 50})
    _legend_below(fig)
    return fig


def drafting_note(trace: Trace, lang: str = "en") -> str:
    """One line under the drafting panel: the policy, the mean window and the waste."""
    s = trace.summary
    if s.mean_window is None:
        return t("fig.dp.none", lang)
    return t(
        "fig.dp.summary",
        lang,
        policy=policy_label(s.draft_policy, lang, s.draft_threshold),
        window=f"{s.mean_window:.2f}",
        wasted=s.wasted_drafts,
    )

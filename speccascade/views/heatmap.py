"""One run position by position: the heatmap of both models' confidence, D_TV and the rule's
decisions, and the token inspector (q, p and pi at one position, and what the rule keeps)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from speccascade.core.rules import Rule, decide
from speccascade.core.trace import Trace
from speccascade.i18n import t
from speccascade.views.style import (
    DEFERRED_COLOUR,
    EOS_MARK,
    KEPT_COLOUR,
    _legend_below,
    _pl,
    _rule_name,
    _short,
    _visible,
    is_eos,
)

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
        return _pl(f"{_short(_visible(piece), 10)} [{i}]")

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
        # the title's outcome is the run's; at another alpha the set is a what-if, said so
        run = trace.summary.alpha
        whatif = run is not None and not math.isclose(alpha, run)
        sub = t(
            "fig.insp.accepted_set_whatif" if whatif else "fig.insp.accepted_set",
            lang,
            n=len(kept),
            m=len(ids),
            rule=rname,
            alpha=f"{alpha:g}",
            run=f"{run:g}" if run is not None else "",
        )
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
        height=440,  # a phone's slanted labels and stacked legend leave the bars the rest
        yaxis_title=t("fig.prob", lang),
        xaxis={"title": {"text": t("fig.insp.xaxis", lang)}, "tickangle": -45, "automargin": True},
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
    )
    _legend_below(fig)
    return fig

"""One run in time: the round timeline, the stats table and the draft windows (kept rate by
position in the window; planned, drafted and kept per round)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from speccascade.core.trace import Trace, position_counts, rounds_in_text
from speccascade.i18n import has, policy_label, t
from speccascade.views.style import TIMELINE_COLOURS, _fmt, _legend_below


def timeline(trace: Trace, lang: str = "en") -> go.Figure:
    """Drafter and verifier calls on a time axis (where the time went), and drafted vs kept
    tokens per round (kept up to the end of the text, as everywhere: `rounds_in_text`)."""
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
            ("kept", [r.accepted for r in rounds_in_text(rounds)]),
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


def drafting(trace: Trace, lang: str = "en") -> go.Figure | None:
    """Where in the window drafts die, and how long the windows were: the per-position kept
    rate (position j counts when the j - 1 drafts before it were kept) and the planned vs
    drafted vs kept window per round. None for methods that do not draft. Kept drafts count up
    to the end of the text, like the summary's (`rounds_in_text`); drafted ones what the
    drafter did."""
    rounds = [r for r in trace.rounds if r.drafted]
    if not rounds:
        return None
    in_text = [r for r in rounds_in_text(trace.rounds) if r.drafted]
    s = trace.summary
    fig = make_subplots(
        rows=2,
        cols=1,
        vertical_spacing=0.3,
        subplot_titles=(t("fig.dp.by_position_title", lang), t("fig.dp.windows_title", lang)),
    )
    reached, kept = position_counts(in_text)
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
        ("kept", [r.accepted for r in in_text], TIMELINE_COLOURS["kept"], "solid", 2),
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

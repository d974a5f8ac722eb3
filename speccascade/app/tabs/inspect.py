"""The Inspect tab: the decision plane (the run's drafts on its rule's own axes), the round
replay, and the fidelity audit of the current settings."""

from __future__ import annotations

import math
from dataclasses import asdict

import gradio as gr

from speccascade.analysis.audit import MAX_POSITIONS, audit
from speccascade.analysis.plane import PLANES, boundary, box, plane_points
from speccascade.analysis.replay import replay_round, rounds_of
from speccascade.app.components import Page
from speccascade.app.context import AppContext, _bind, _hidden, _int, _num, label, settings_of
from speccascade.app.plot import slide_plot
from speccascade.app.serving import (
    prompt_problem,
)
from speccascade.core.engine import (
    Settings,
)
from speccascade.core.errors import (
    SpecCascadeError,
)
from speccascade.core.trace import Trace
from speccascade.core.trace_file import trace_from_data
from speccascade.i18n import t
from speccascade.views.plane import decision_plane_figure
from speccascade.views.replay import replay_html
from speccascade.views.zoo import audit_figure, audit_frame, audit_verdict


def inspect_parts(lang: str = "en") -> dict:
    """The Inspect tab: the decision plane, then the round replay."""
    gr.Markdown(label("views.plane.intro"), elem_id="plane-intro")
    plane_note = gr.Markdown(label("views.plane.none"), elem_id="plane-note")
    plane_fig = slide_plot(show_label=False, elem_id="plane")
    gr.Markdown(label("views.replay.intro"), elem_id="replay-intro")
    with gr.Row(equal_height=True):
        replay_prev = gr.Button(label("views.replay.prev"), size="sm", min_width=60)
        replay_play = gr.Button(label("views.replay.play"), size="sm", min_width=60)
        replay_next = gr.Button(label("views.replay.next"), size="sm", min_width=60)
    replay_round = gr.Slider(
        0, 1, value=0, step=1, label=label("views.replay.round"), interactive=False,
        elem_id="replay-round",
    )  # fmt: skip
    replay_timer = gr.Timer(1.5, active=False)
    replay_html = gr.HTML("", elem_id="replay")
    replay_playing = gr.State(False)
    return dict(
        replay_playing=replay_playing,
        plane_fig=plane_fig,
        plane_note=plane_note,
        replay_round=replay_round,
        replay_prev=replay_prev,
        replay_next=replay_next,
        replay_play=replay_play,
        replay_timer=replay_timer,
        replay_html=replay_html,
    )


def audit_parts(lang: str = "en") -> dict:
    """The Inspect tab's fidelity audit: many seeded runs of the current settings against the
    law the method promises."""
    gr.Markdown(label("views.audit.intro"), elem_id="audit-intro")
    with gr.Row():
        audit_positions = gr.Slider(
            1, 4, value=2, step=1, label=label("views.audit.positions"), min_width=160,
            elem_id="audit-positions",
        )  # fmt: skip
        audit_seconds = gr.Slider(
            10, AUDIT_MAX_SECONDS, value=60, step=5, label=label("views.audit.seconds"),
            min_width=160, elem_id="audit-seconds",
        )  # fmt: skip
    audit_btn = gr.Button(label("views.audit.run"), elem_id="audit-run")
    audit_note = gr.Markdown("", elem_id="audit-note")
    audit_fig = slide_plot(show_label=False, elem_id="audit-fig")
    audit_table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="audit-table")
    return {k: v for k, v in locals().items() if k.startswith("audit_")}


AUDIT_MAX_SECONDS = 120


def plane_view(page, trace: Trace | None, alpha, decode=None, lang: str = "en") -> dict:
    """The run's drafts on its rule's own axes, decided at `alpha` (the what-if slider)."""
    v = page
    if trace is None or not any(tok.draft_id is not None for tok in trace.tokens):
        return {v.plane_fig: None, v.plane_note: t("views.plane.none", lang)}
    rule = trace.summary.rule if trace.summary.rule in PLANES else None
    if rule is None:
        return {v.plane_fig: None, v.plane_note: t("views.plane.none", lang)}
    a = alpha if isinstance(alpha, (int, float)) and not math.isnan(alpha) else None
    plane = plane_points(trace, rule, a, decode=decode)
    deferred = sum(p.deferred for p in plane.points)
    key = {"sd": "views.plane.note_sd", "lossy": "views.plane.note_lossy"}.get(
        plane.rule, "views.plane.note"
    )
    note = t(
        key,
        lang,
        n=len(plane.points),
        deferred=deferred,
        differ=sum(bool(p.differs_from_verifier) for p in plane.points),
        alpha=f"{plane.alpha:g}",
    )
    return {v.plane_fig: decision_plane_figure(plane, plane.alpha, lang=lang), v.plane_note: note}


def replay_view(page, trace: Trace | None, index, decode=None, lang: str = "en") -> dict:
    """One round of the run, replayed from its record (no model runs)."""
    v = page
    n = rounds_of(trace) if trace is not None else 0
    if not n:
        return {
            v.replay_html: f"<p>{t('views.replay.none', lang)}</p>",
            v.replay_round: gr.update(value=0, maximum=1, interactive=False),
        }
    i = min(max(0, int(index or 0)), n - 1)
    html = replay_html(replay_round(trace, i, decode=decode), lang=lang)
    return {
        v.replay_html: html,
        v.replay_round: gr.update(value=i, minimum=0, maximum=max(1, n - 1), interactive=n > 1),
    }


def replay_step(page, trace: Trace | None, index, step: int, decode=None, lang="en") -> dict:
    """Previous / next round (clamped at the ends); stepping by hand pauses the player."""
    out = replay_view(page, trace, int(index or 0) + step, decode, lang)
    out[page.replay_timer] = gr.Timer(active=False)
    out[page.replay_play] = gr.update(value=t("views.replay.play", lang))
    return out


def replay_toggle(page, playing: bool, lang="en") -> dict:
    """Play / pause."""
    v = page
    key = "views.replay.play" if playing else "views.replay.pause"
    return {
        v.replay_timer: gr.Timer(active=not playing),
        v.replay_play: gr.update(value=t(key, lang)),
    }


def replay_tick(page, trace: Trace | None, index, decode=None, lang="en") -> dict:
    """The player: one round per tick; the timer stops itself after the last round."""
    n = rounds_of(trace) if trace is not None else 0
    nxt = int(index or 0) + 1
    out = replay_view(page, trace, nxt, decode, lang)
    out[page.replay_timer] = gr.Timer(active=nxt < n - 1)
    if nxt >= n - 1:
        out[page.replay_play] = gr.update(value=t("views.replay.play", lang))
    return out


def audit_view(
    ctx, page, prompt, models: list, settings: Settings, positions, seconds, lang="en"
) -> dict:
    """The current settings audited: many seeded runs of the first tokens of the prompt
    against the law the method promises, position by position."""
    v = page
    empty = {v.audit_fig: None, v.audit_table: _hidden()}
    problem = prompt_problem(prompt, ctx.config)
    if problem is not None:
        code, values = problem
        return {
            **empty,
            v.audit_note: t("status.error", lang, message=t(f"error.{code}", lang, **values)),
        }
    try:
        k = int(positions)
        budget = float(seconds)
        if not 1 <= k <= MAX_POSITIONS or not 0 < budget <= AUDIT_MAX_SECONDS:
            raise SpecCascadeError(t("views.audit.bad", lang, k=MAX_POSITIONS, s=AUDIT_MAX_SECONDS))
        result = audit(ctx.pair(*models), prompt, settings, positions=k, seconds=budget)
    except (SpecCascadeError, TypeError, ValueError) as e:
        return {**empty, v.audit_note: t("status.error", lang, message=str(e))}
    note = (
        audit_verdict(result, lang)
        + " "
        + t("views.audit.note", lang, n=result.samples, s=f"{result.seconds:.0f}")
    )
    return {
        v.audit_note: note,
        v.audit_fig: audit_figure(result, lang),
        v.audit_table: gr.update(value=audit_frame(result, lang), visible=True),
    }


def plane_api(trace: dict, alpha: float | None = None, rule: str | None = None) -> dict:
    """The decision plane of a trace (the /run output `trace_json`): every drafted position on
    the rule's axes with its decision at alpha, and the boundary's line in that box."""
    tr = trace_from_data(trace)
    plane = plane_points(tr, rule, alpha)
    line = boundary(plane.rule, plane.alpha).line(box(plane))
    return {
        "rule": plane.rule,
        "alpha": plane.alpha,
        "x": plane.x,
        "y": plane.y,
        "points": [asdict(p) for p in plane.points],
        "boundary": line,
    }


def replay_api(trace: dict, round: int = 0) -> dict:
    """One round of a trace (the /run output `trace_json`) replayed from its record."""
    return asdict(replay_round(trace_from_data(trace), int(round)))


# -- handlers bound to the page --------------------------------------------------------------


def _texts(ctx: AppContext, preset, drafter, verifier):
    """The pair's decoder of token ids, and of one id (texts the trace does not store)."""
    tok = ctx.pair(preset, drafter, verifier).tokenizer
    return (lambda ids: tok.decode(ids)), (lambda i: tok.decode([i]))


def plane(ctx: AppContext, page: Page, trace, alpha, preset, drafter, verifier, lang="en") -> dict:
    many, _ = _texts(ctx, preset, drafter, verifier)
    return plane_view(page, trace, _num(alpha), many, lang)


def replay_first(ctx: AppContext, page: Page, trace, preset, drafter, verifier, lang="en") -> dict:
    _, one = _texts(ctx, preset, drafter, verifier)
    return replay_view(page, trace, 0, one, lang)


def replay_move(
    ctx: AppContext, page: Page, trace, index, preset, drafter, verifier, lang="en", step=0
) -> dict:
    """Go to a round (the slider), or one round back or on (the buttons: `step`)."""
    _, one = _texts(ctx, preset, drafter, verifier)
    return replay_step(page, trace, _int(index), step, one, lang)


def replay_back(ctx: AppContext, page: Page, *args) -> dict:
    return replay_move(ctx, page, *args, step=-1)


def replay_on(ctx: AppContext, page: Page, *args) -> dict:
    return replay_move(ctx, page, *args, step=1)


def replay_tick_on(
    ctx: AppContext, page: Page, trace, index, preset, drafter, verifier, lang="en"
) -> dict:
    """One tick of Play: the next round, and whether the player goes on."""
    _, one = _texts(ctx, preset, drafter, verifier)
    out = replay_tick(page, trace, _int(index), one, lang)
    return {**out, page.replay_playing: out[page.replay_timer].active}


def replay_play_pause(page: Page, on, lang="en") -> dict:
    return {**replay_toggle(page, on, lang), page.replay_playing: not on}


def run_audit(
    ctx: AppContext, page: Page, prompt, preset, drafter, verifier, method, rule, alpha,
    gamma, temperature, seed, draft_policy, draft_threshold, positions, seconds, lang="en",
) -> dict:  # fmt: skip
    """The audit of the page's current settings."""
    settings = settings_of(
        method, rule, alpha, gamma, temperature, 8, seed, draft_policy, draft_threshold
    )
    models = [preset, drafter, verifier]
    return audit_view(ctx, page, prompt, models, settings, positions, seconds, lang)


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    return {**inspect_parts(lang), **audit_parts(lang)}


def wire(ctx: AppContext, page: Page, heavy: dict, opened) -> None:
    """The plane and the replay follow the last run (a new trace, a restored file) and the
    parameter slider; the replay's own controls; the audit of the current settings."""
    p = page
    plane_io = dict(
        fn=_bind(plane, ctx, p), inputs=[p.trace, p.alpha, *p.models, p.lang],
        outputs=[p.plane_fig, p.plane_note], api_name=False, queue=False,
    )  # fmt: skip
    first = dict(
        fn=_bind(replay_first, ctx, p), inputs=[p.trace, *p.models, p.lang],
        outputs=[p.replay_html, p.replay_round], api_name=False, queue=False,
    )  # fmt: skip
    p.trace.change(**plane_io)
    p.trace.change(**first)
    p.alpha.change(**plane_io)
    opened.then(**plane_io).then(**first)  # a restored file skips the queue: chained
    inputs = [p.trace, p.replay_round, *p.models, p.lang]
    steps = [p.replay_html, p.replay_round, p.replay_timer, p.replay_play]
    for event, fn in ((p.replay_round.release, replay_move), (p.replay_prev.click, replay_back),
                      (p.replay_next.click, replay_on)):  # fmt: skip
        event(_bind(fn, ctx, p), inputs, steps, api_name=False, queue=False)
        event(lambda: False, None, p.replay_playing, api_name=False, queue=False)
    p.replay_play.click(
        _bind(replay_play_pause, p), [p.replay_playing, p.lang],
        [p.replay_timer, p.replay_play, p.replay_playing], api_name=False, queue=False,
    )  # fmt: skip
    p.replay_timer.tick(
        _bind(replay_tick_on, ctx, p), inputs, [*steps, p.replay_playing], api_name=False,
        queue=False,
    )  # fmt: skip
    p.audit_btn.click(
        _bind(run_audit, ctx, p),
        [
            p.prompt,
            *p.models,
            *p.knobs,
            p.seed,
            p.draft_policy,
            p.draft_threshold,
            p.audit_positions,
            p.audit_seconds,
            p.lang,
        ],  # fmt: skip
        [p.audit_note, p.audit_fig, p.audit_table],
        api_name="audit",
        **heavy,
    )
    gr.api(plane_api, api_name="plane")
    gr.api(replay_api, api_name="replay_round")

"""The Run tab's what-if and inspector: the last run recoloured at another parameter value from
its recorded numbers, and q, p and pi at one position (a slider, or a click on a token)."""

from __future__ import annotations

import math

import gradio as gr

from speccascade.analysis.verdict import whatif
from speccascade.app.components import Page
from speccascade.app.context import AppContext, _bind, _int, _num
from speccascade.core.trace import Trace
from speccascade.i18n import t
from speccascade.views.heatmap import inspector
from speccascade.views.style import rule_for
from speccascade.views.tokens import token_html


def show_whatif(
    ctx: AppContext,
    page: Page,
    trace: Trace | None,
    alpha,
    position=0,
    preset="demo",
    drafter="",
    verifier="",
    lang="en",
) -> dict:
    """Recolour the last run (finished or stopped) for a new α from its recorded numbers, and
    show the inspector's accepted set at that α. A typed α outside the rule's range is set to
    the nearest end, and the note says so."""
    if trace is None:
        return {
            page.tokens: gr.skip(),
            page.whatif_note: t("whatif.none", lang),
            page.alpha: gr.skip(),
            page.insp: gr.skip(),
        }
    rule = rule_for(trace.summary.method, trace.summary.rule)
    a = _num(alpha)
    if rule is None or rule.defer is None or not isinstance(a, float) or not math.isfinite(a):
        return {
            page.tokens: token_html(trace.tokens, lang=lang, stop=trace.summary.stop_reason),
            page.whatif_note: t("whatif.no_rule", lang),
            page.alpha: gr.skip(),
            page.insp: gr.skip(),
        }
    lo, hi = rule.slider
    clamped = min(max(a, lo), hi)
    w = whatif(trace, rule, clamped)
    note = whatif_note(w, rule, lang)
    if clamped != a:
        label = t(f"rule.{rule.name}", lang)
        note = t("whatif.range", lang, rule=label, lo=lo, hi=hi, value=clamped) + " " + note
    pos = _int(position) if isinstance(_int(position), int) else 0
    pos = min(max(0, pos), max(0, len(trace.tokens) - 1))
    tokenizer = ctx.pair(preset, drafter, verifier).tokenizer
    return {
        page.tokens: token_html(
            trace.tokens, w.decisions, lang=lang, selected=pos, stop=trace.summary.stop_reason
        ),
        page.whatif_note: note,
        page.alpha: gr.update(value=clamped) if clamped != a else gr.skip(),
        page.insp: inspector(trace, pos, rule, clamped, tokenizer, lang=lang)
        if trace.tokens
        else None,
    }


def inspect_position(
    ctx: AppContext, page: Page, trace, position, alpha, preset, drafter, verifier, lang="en"
) -> dict:
    """q, p and π at one position of the last run; the token strip marks it."""
    if trace is None or not trace.tokens:
        return {page.insp: None, page.position: gr.skip(), page.tokens: gr.skip()}
    pos = min(
        max(0, _int(position) if isinstance(_int(position), int) else 0), len(trace.tokens) - 1
    )
    rule = rule_for(trace.summary.method, trace.summary.rule)
    a = _num(alpha)
    a = a if isinstance(a, float) and rule is not None and rule.has_alpha else trace.summary.alpha
    decisions = whatif(trace, rule, a).decisions if rule is not None and a is not None else None
    tokenizer = ctx.pair(preset, drafter, verifier).tokenizer
    return {
        page.insp: inspector(trace, pos, rule, a, tokenizer, lang=lang),
        page.position: gr.update(value=pos),
        page.tokens: token_html(
            trace.tokens, decisions, lang=lang, selected=pos, stop=trace.summary.stop_reason
        ),
    }


def click_token(
    ctx: AppContext, page: Page, trace, alpha, preset, drafter, verifier, lang, evt: gr.EventData
) -> dict:
    """A click (or tap, or Enter) on a token moves the position and the inspector to it."""
    pos = (getattr(evt, "_data", None) or {}).get("pos", 0)
    return inspect_position(ctx, page, trace, pos, alpha, preset, drafter, verifier, lang)


def whatif_note(w, rule, lang: str) -> str:
    return t(
        "whatif.note",
        lang,
        alpha=w.alpha,
        rule=t(f"rule.{rule.name}", lang),
        would=w.would_defer,
        drafted=w.drafted,
        ran=w.deferred_in_run,
    )


def wire(ctx: AppContext, page: Page) -> gr.Number:
    """Moving the parameter recolours the last run; the position slider and a click on a token
    move the inspector. Returns the hidden number the parameter is copied into (the story
    leaves the scene when it changes)."""
    p = page
    # Dragging (release) and typing a number (input) both recolour the last run. The value is
    # copied in the browser into an unbounded number first, so a typed value outside the
    # slider's range reaches the handler (which sets it to the nearest end and says so)
    # instead of failing Gradio's range check with a bare error badge.
    alpha_typed = gr.Number(visible=False, elem_id="alpha-typed")
    for event in (p.alpha.release, p.alpha.input):
        event(None, p.alpha, alpha_typed, js="(a) => a", api_name=False, queue=False)
    alpha_typed.change(
        _bind(show_whatif, ctx, p),
        [p.trace, alpha_typed, p.position, *p.models, p.lang],
        [p.tokens, p.whatif_note, p.alpha, p.insp],
        api_name="whatif",
        queue=False,
    )
    p.position.release(
        _bind(inspect_position, ctx, p),
        [p.trace, p.position, p.alpha, *p.models, p.lang],
        [p.insp, p.position, p.tokens],
        api_name="inspect",
        queue=False,
    )
    p.tokens.click(
        _bind(click_token, ctx, p),
        [p.trace, p.alpha, *p.models, p.lang],
        [p.insp, p.position, p.tokens],
        api_name=False,
        queue=False,
    )
    return alpha_typed

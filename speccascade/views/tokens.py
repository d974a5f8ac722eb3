"""The token strip: every emitted token as a coloured box (drafter token kept, verifier took over,
bonus, single model) with a popup of its numbers, the legend, and what the what-if would
defer. Its CSS is assets/static/tokens.css (`TOKEN_CSS`)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from speccascade.core.trace import SOURCES, TokenRecord
from speccascade.i18n import t
from speccascade.models.assets import static_text
from speccascade.views.style import (
    COLORS,
    EMPTY_MARK,
    EOS_MARK,
    WHATIF_COLOR,
    _fmt,
    _visible,
    is_eos,
)


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
    for mark, key in ((EOS_MARK, "fig.legend.eos"), (EMPTY_MARK, "fig.legend.empty")):
        chips.append(_chip(f"{mark} {t(key, lang)}", "background:#e9ecef;color:#495057"))
    chips.append(_chip(t("fig.legend.cut", lang), "border:1px dashed #adb5bd;color:#495057"))
    return (
        '<div class="sc-legend" style="display:flex;flex-wrap:wrap;gap:6px 10px">'
        f"{''.join(chips)}</div>"
    )


# Stop reasons that cut the text short (the others end it: end of text, a stop string).
CUT = ("max_new_tokens", "context", "cancelled")


def token_html(
    tokens: Sequence[TokenRecord] | None,
    whatif: Sequence[bool | None] | None = None,
    lang: str = "en",
    selected: int | None = None,
    stop: str | None = None,
) -> str:
    """The generated text as coloured token boxes, each with a popup of its details (shown on
    hover and on focus, so a tap works on touch screens) and `data-pos` for click handlers.
    `whatif` outlines the tokens a different alpha would defer; `selected` (a position) gets a
    thicker outline; end-of-text tokens show as a small mark. A text cut short (`stop`, the
    run's stop reason: the token limit, a full context, Stop) ends with a mark that says so:
    an answer ending mid-sentence is otherwise easy to read as the model's whole answer."""
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
    if stop in CUT:
        spans.append(f'<span class="sc-cut">… {html.escape(t(f"reason.{stop}", lang))}</span>')
    # spaces inside the boxes are non-breaking (so they show); <wbr> lets lines wrap between tokens
    return (
        f'<div class="sc-tokens" aria-label="{html.escape(t("fig.tok.aria", lang), quote=True)}">'
        f"{'<wbr>'.join(spans)}</div>"
    )


# The page adds this to its CSS: token boxes, their popups, the legend chips.
TOKEN_CSS = static_text("tokens.css")

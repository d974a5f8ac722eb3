"""The token-aligned diff as HTML: a pure function of a `diff.Diff`. Three rows (cascade,
verifier alone, drafter alone), one box per token, wrapping on any screen width; every token's
text is escaped. Styles are inline so the view needs no page CSS."""

from __future__ import annotations

import html

from speccascade.analysis.diff import Diff, KeyFacts
from speccascade.core.trace import TokenRecord
from speccascade.i18n import method_label, t
from speccascade.views.style import COLORS, EOS_MARK, TIMELINE_COLOURS, _visible, is_eos

KEPT_NEW_COLOUR = "#f77f00"  # kept drafter text the verifier alone would not have written
DIFFERS_STYLE = "border-bottom:2px dashed #495057"
FIRST_COLOURS = {"verifier": TIMELINE_COLOURS["verifier"], "drafter": TIMELINE_COLOURS["drafter"]}

_ROW = "margin:0 0 10px 0;max-width:100%;min-width:0"
_TOKENS = "display:flex;flex-wrap:wrap;gap:3px 0;max-width:100%;min-width:0;line-height:1.5"
_TOKEN = (
    "display:inline-block;max-width:100%;min-width:0;overflow-wrap:anywhere;word-break:normal;"
    "color:#111;padding:0 2px;margin-right:1px;border-radius:3px"
)


def _facts_text(facts: KeyFacts | None, lang: str) -> str:
    if facts is None:
        return t("fig.diff.no_facts", lang)
    verdict = t("fig.diff.correct" if facts.correct else "fig.diff.wrong", lang)
    return f"{t('fig.diff.facts', lang, stated=facts.stated, total=facts.total)} · {verdict}"


def _first_mark(role: str, lang: str) -> str:
    label = f"{t('fig.diff.legend.first', lang)} · {method_label(role, lang=lang)}"
    return (
        f'<span class="sc-first" data-vs="{role}" title="{html.escape(label, quote=True)}" '
        f'style="display:inline-block;width:3px;margin:0 2px;align-self:stretch;'
        f'background:{FIRST_COLOURS[role]}"></span>'
    )


def _token(tok: TokenRecord, background: str, classes: list[str], extra: str, lang: str) -> str:
    shown = EOS_MARK if is_eos(tok.text) else html.escape(_visible(tok.text))
    tip = f"#{tok.position} [{tok.token_id}] {t(f'source.{tok.source}', lang)}"
    return (
        f'<span class="{" ".join(["sc-dtok", *classes])}" data-pos="{tok.position}" '
        f'title="{html.escape(tip, quote=True)}" '
        f'style="{_TOKEN};background:{background}{extra}">{shown}</span>'
    )


def _row(
    role: str,
    label: str,
    tokens: list[TokenRecord],
    notes: list[str],
    marks: dict[int, list[str]],
    styled: dict[int, tuple[list[str], str]],
    lang: str,
) -> str:
    """One output: a heading (name, key facts, notes) and its token boxes. `marks` puts
    first-difference markers before a position (at len(tokens): after the last token);
    `styled` gives a position extra classes and style."""
    spans = []
    for i, tok in enumerate(tokens):
        spans += [_first_mark(vs, lang) for vs in marks.get(i, [])]
        classes, extra = styled.get(i, ([], ""))
        spans.append(_token(tok, COLORS[tok.source], classes, extra, lang))
    spans += [_first_mark(vs, lang) for vs in marks.get(len(tokens), [])]
    if not tokens:
        spans.append(f'<span style="color:#6c757d">{html.escape(t("fig.diff.empty", lang))}</span>')
    head = " · ".join(html.escape(x) for x in notes)
    return (
        f'<div class="sc-diff-row" data-role="{role}" style="{_ROW}">'
        f'<div style="font-size:0.9em;margin-bottom:3px;overflow-wrap:anywhere">'
        f"<b>{html.escape(label)}</b> · {head}</div>"
        f'<div class="sc-diff-tokens" style="{_TOKENS}">{"".join(spans)}</div></div>'
    )


def _chip(text: str, style: str) -> str:
    """A legend chip that may wrap (viz's chips do not, and these labels are long)."""
    return (
        '<span class="sc-chip" style="display:inline-block;max-width:100%;color:#111;'
        f'padding:2px 8px;border-radius:4px;font-size:0.9em;line-height:1.5;{style}">'
        f"{html.escape(text)}</span>"
    )


def _legend(lang: str) -> str:
    chips = [_chip(t(f"source.{k}", lang), f"background:{COLORS[k]}") for k in COLORS]
    chips.append(_chip(t("fig.diff.legend.kept_new", lang), f"outline:2px solid {KEPT_NEW_COLOUR}"))
    chips.append(_chip(t("fig.diff.legend.differs", lang), DIFFERS_STYLE))
    for role, colour in FIRST_COLOURS.items():
        label = f"{t('fig.diff.legend.first', lang)} · {method_label(role, lang=lang)}"
        chips.append(_chip(label, f"border-left:3px solid {colour}"))
    return (
        '<div class="sc-legend" style="display:flex;flex-wrap:wrap;gap:6px 10px;'
        f'margin-bottom:8px;max-width:100%">{"".join(chips)}</div>'
    )


def _divergence_note(first: int | None, lang: str) -> str:
    return t("fig.diff.same", lang) if first is None else t("fig.diff.first_div", lang, pos=first)


def diff_html(diff: Diff, lang: str = "en") -> str:
    """Cascade, verifier alone and drafter alone, token by token: where each single-model
    output first leaves the cascade's, the cascade's kept drafter tokens the verifier alone
    would not have written, and each output's key facts."""
    s = diff.cascade.summary
    vs_v, vs_d = diff.vs_verifier, diff.vs_drafter
    cascade_marks: dict[int, list[str]] = {}
    for cmp in (vs_v, vs_d):
        if cmp.first_divergence is not None:
            cascade_marks.setdefault(cmp.first_divergence, []).append(cmp.other)
    kept = {
        i: (["sc-kept-new"], f";outline:2px solid {KEPT_NEW_COLOUR};outline-offset:-1px")
        for i in vs_v.kept_drafter
    }
    rows = [
        _row(
            "cascade",
            method_label(s.method, s.rule, lang),
            diff.cascade.tokens,
            [
                _facts_text(diff.facts["cascade"], lang),
                t("fig.diff.kept_new", lang, n=len(vs_v.kept_drafter)),
            ],
            cascade_marks,
            kept,
            lang,
        )
    ]
    for cmp in (vs_v, vs_d):
        tr = diff.trace(cmp.other)
        differs = {j: (["sc-differs"], f";{DIFFERS_STYLE}") for j in cmp.alignment.changed_b()}
        first = cmp.first_divergence
        rows.append(
            _row(
                cmp.other,
                method_label(cmp.other, lang=lang),
                tr.tokens,
                [_facts_text(diff.facts[cmp.other], lang), _divergence_note(first, lang)],
                {} if first is None else {first: [cmp.other]},
                differs,
                lang,
            )
        )
    aria = html.escape(t("fig.diff.aria", lang), quote=True)
    return (
        f'<div class="sc-diff" role="group" aria-label="{aria}" '
        f'style="max-width:100%;min-width:0;overflow-wrap:anywhere">'
        f"{_legend(lang)}{''.join(rows)}</div>"
    )

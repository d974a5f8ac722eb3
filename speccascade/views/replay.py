"""The round replay for people: a compact HTML card (`replay_html`) and plain text for the CLI
(`replay_text`), both pure functions of a `replay.RoundReplay`.

Each draft gets the rule's arithmetic with the numbers filled in ("p(x) = 0.12 < (1 − α)·max p
= (1 − 0.3) × 0.4 = 0.28: defer") and its accept draw ("u = 0.31 < min(1, π/q) = 0.92:
keep"); then the residual or bonus draw and the KV-cache rollback. The two sides come from
`explain` (the comparison `rules.decide` makes); this module only writes them out. Formula text
is the same in both languages and is written here; the words around it are i18n strings."""

from __future__ import annotations

import html
import math
import re

from speccascade.analysis.explain import SIDES
from speccascade.analysis.replay import Candidate, DraftStep, Draw, RoundReplay
from speccascade.core.rules import RULES
from speccascade.i18n import method_label, t
from speccascade.views.style import COLORS, DEFERRED_COLOUR, EOS_MARK, KEPT_COLOUR, _visible, is_eos

# Each rule's test as text, in the order explain.SIDES computes its sides: the left side's
# name, the right side's name and the right side's arithmetic ({max_p}, {alpha}, {dtv} filled
# in from the draft; None where the right side is α itself).
SIDES_TEXT: dict[str, tuple[str, str, str | None]] = {
    "chow": ("max q", "1 − α", "1 − {alpha}"),
    "diff": ("max q", "max p − α", "{max_p} − {alpha}"),
    "opt": ("max q", "max p − α·D_TV", "{max_p} − {alpha} × {dtv}"),
    "token_v1": ("q(x)", "max p − α", "{max_p} − {alpha}"),
    "token_v2": ("p(x)", "max p − α", "{max_p} − {alpha}"),
    "token_v3": ("p(x)", "(1 − α)·max p", "(1 − {alpha}) × {max_p}"),
    "bild": ("D_TV", "α", None),
    "typical": ("p(x)", "min(ε, √ε·e^(−H(p)))", "min({alpha}, √{alpha} × e^(−{ent}))"),
    "fuzzy": ("JSD(p, q)", "T", None),
    "kl_judge": ("KL(p‖q)", "τ", None),
}
KEEP_OP = {"<": "≥", ">": "≤", "<=": ">"}  # keeping negates deferring; ties keep (typical: defer)
ACCEPT_TEXT = "min(1, π/q)"
BLOCK_ACCEPT_TEXT = "h"
LOSSY_ACCEPT_TEXT = "min(1, p(x) / ((1 − α)·q(x)))"
RESIDUAL_TEXT = {
    "lenient": "norm(max(0, p − q))",
    "block": "norm(max(0, p_τ·p − q))",
    "other": "norm(max(0, π − q))",
}
BADGE_COLOURS = {
    "kept": COLORS["accepted"],
    "unwritten": COLORS["accepted"],
    "rejected": COLORS["resampled"],
    "untested": "#e9ecef",
}
TOP_SHOWN = 3  # residual / π candidates listed under the outcome


# -- numbers ---------------------------------------------------------------------------------


def _minus(text: str) -> str:
    """A real minus sign in front (not inside an exponent: 1.2e-05 stays as Python writes it)."""
    return "−" + text[1:] if text.startswith("-") else text


def num(x: float | None, digits: int = 3) -> str:
    """A probability or threshold: up to `digits` decimals, tiny values as 1.2e-05, ±∞."""
    if x is None or math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x != 0 and abs(x) < 10**-digits:
        return _minus(f"{x:.2g}")
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else _minus(text)


def pair(a: float, b: float) -> tuple[str, str]:
    """Both sides of a comparison, with more digits where rounding would make unequal numbers
    print alike: rounding is monotone, so the printed numbers always compare as the real ones."""
    x, y = num(a), num(b)
    if x == y and a != b:
        x, y = f"{a:.6g}", f"{b:.6g}"
        if x == y:
            x, y = repr(a), repr(b)
        x, y = _minus(x), _minus(y)
    return x, y


def _operand(x: float) -> str:
    """A number inside arithmetic: negatives in parentheses, "1 − (−0.1)"."""
    text = num(x)
    return f"({text})" if text.startswith("−") else text


# -- the lines -------------------------------------------------------------------------------


def _token_text(token: str | None, token_id: int | None, lang: str) -> str:
    if token is None:
        return t("fig.replay.id", lang, id=token_id)
    return repr(token)


def _verdict(defer: bool, lang: str) -> str:
    return t("fig.replay.defer" if defer else "fig.replay.keep", lang)


def rule_line(step: DraftStep, replay: RoundReplay, lang: str = "en") -> str:
    """The rule's comparison for one draft with its numbers, and its decision."""
    rule = RULES[replay.rule]
    if rule.kind in ("lenient", "soft"):  # `rule_note` says once per card what they do instead
        return t("fig.replay.rule_none", lang)
    if step.relation is None:  # SD: every draft defers, π = p
        return f"π = p: {_verdict(True, lang)}"
    lhs_name, rhs_name, arithmetic = SIDES_TEXT[rule.name]
    lhs, rhs = pair(step.lhs, step.rhs)
    op = step.relation if step.defer else KEEP_OP[step.relation]
    right = rhs_name
    if arithmetic is not None:
        alpha = _operand(replay.alpha if replay.alpha is not None else 0.0)
        filled = arithmetic.format(
            alpha=alpha,
            max_p=_operand(step.max_p),
            dtv=_operand(step.dtv),
            ent=_operand(step.ent_p if step.ent_p is not None else math.nan),
        )
        right += f" = {filled}"
    line = f"{lhs_name} = {lhs} {op} {right} = {rhs}: {_verdict(step.defer, lang)}"
    if step.recorded_defer is not None and step.recorded_defer != step.defer:
        line += " " + t(
            "fig.replay.recorded_differs", lang, verdict=_verdict(step.recorded_defer, lang)
        )
    return line


def rule_note(replay: RoundReplay, lang: str = "en") -> str | None:
    """For SD, lossy SD, the static ensemble and block verification, which have no deferral
    predicate: what decides instead."""
    rule = RULES[replay.rule]
    if rule.kind == "lenient":
        test = f"{LOSSY_ACCEPT_TEXT}, α = {num(replay.alpha)}"
        return t("fig.replay.rule_lossy", lang, test=test)
    if rule.kind == "soft":
        return t("fig.replay.rule_soft", lang, w=num(replay.alpha))
    if rule.kind == "block":
        return t("fig.replay.rule_block", lang, tau=replay.accepted)
    if SIDES.get(rule.name) is None:
        return t("fig.replay.rule_sd", lang)
    return None


def accept_text(replay: RoundReplay) -> str:
    """What u is compared with: min(1, π/q), lossy SD's lenient version of it, or block
    verification's level h."""
    kind = RULES[replay.rule].kind
    return {"lenient": LOSSY_ACCEPT_TEXT, "block": BLOCK_ACCEPT_TEXT}.get(kind, ACCEPT_TEXT)


def accept_line(step: DraftStep, replay: RoundReplay, lang: str = "en") -> str:
    """The accept draw: u against the acceptance probability, and what it did."""
    if not step.tested:
        return t("fig.replay.untested", lang)
    u, a = pair(step.u, step.accept_prob)
    block = RULES[replay.rule].kind == "block"
    passed = step.passed if block else step.kept
    op = "<" if passed else "≥"
    verdict = t("fig.replay.pass" if step.kept else "fig.replay.fail", lang)
    if block and step.kept and not passed:
        verdict = t("fig.replay.block_carried", lang)
    return f"u = {u} {op} {accept_text(replay)} = {a}: {verdict}"


def _law_text(draw: Draw, replay: RoundReplay) -> str:
    if draw.law == "residual":
        kind = RULES[replay.rule].kind
        return RESIDUAL_TEXT[kind if kind in RESIDUAL_TEXT else "other"]
    return "π = p" if draw.law == "p1" else "π"


def _prob_text(draw: Draw, lang: str) -> str:
    if draw.prob is None:
        return t("fig.replay.unlisted", lang, k=len(draw.top))
    return num(draw.prob)


def _candidates(top: list[Candidate], lang: str) -> str:
    return ", ".join(f"{_token_text(c.token, c.token_id, lang)} {num(c.prob)}" for c in top)


def outcome_lines(replay: RoundReplay, lang: str = "en") -> list[str]:
    """What ended the round: the residual draw, the bonus token, or the end of the run; then
    the law's top candidates and, on the last round, why the run stopped."""
    lines: list[str] = []
    draw = replay.draw
    reason = t(f"fig.stop.{replay.stop_reason}", lang) if replay.stop_reason else ""
    if replay.outcome == "end":
        lines.append(t("fig.replay.end", lang, n=replay.drafted, reason=reason))
    elif draw is not None and draw.token_id is None:
        lines.append(t("fig.replay.residual_cut", lang, k=replay.accepted))
    elif draw is not None:
        token = _token_text(draw.token, draw.token_id, lang)
        law, prob = _law_text(draw, replay), _prob_text(draw, lang)
        if replay.outcome == "rejected":
            lines.append(
                t("fig.replay.residual", lang, k=replay.accepted, token=token, law=law, prob=prob)
            )
        else:
            line = t("fig.replay.bonus", lang, n=replay.drafted, token=token, law=law, prob=prob)
            if draw.law == "p1":
                line += " " + t("fig.replay.bonus_p1", lang)
            lines.append(line)
    if draw is not None and draw.top:
        top = _candidates(draw.top[:TOP_SHOWN], lang)
        lines.append(t("fig.replay.top", lang, law=_law_text(draw, replay), top=top))
    if replay.stop_reason and replay.outcome != "end":
        lines.append(t("fig.replay.stopped", lang, reason=reason, n=len(replay.emitted)))
    return lines


def rollback_line(replay: RoundReplay, lang: str = "en") -> str:
    d, v = replay.drafter_rolled_back, replay.verifier_rolled_back
    if not d and not v:
        return t("fig.replay.no_rollback", lang)
    return t("fig.replay.rollback", lang, d=d, v=v)


def header_lines(replay: RoundReplay, lang: str = "en") -> list[str]:
    """Round i of the run, the setting, window/drafted/kept and each model's time."""
    method = method_label(replay.method, replay.rule, lang)
    temp = f"{replay.temperature:g}"
    if replay.alpha is None or not RULES[replay.rule].has_alpha:
        setting = t("fig.replay.setting_no_alpha", lang, method=method, t=temp)
    else:
        setting = t("fig.replay.setting", lang, method=method, alpha=num(replay.alpha), t=temp)
    head = t("fig.replay.head", lang, i=replay.index, last=replay.rounds - 1)
    counts = t(
        "fig.replay.counts",
        lang,
        window=replay.window,
        drafted=replay.drafted,
        kept=replay.accepted,
    )
    times = t(
        "fig.replay.times",
        lang,
        d_ms=f"{replay.drafter_s * 1e3:.1f}",
        d_calls=replay.drafter_calls,
        v_ms=f"{replay.verifier_s * 1e3:.1f}",
        v_calls=replay.verifier_calls,
    )
    return [f"{head} · {setting}", f"{counts} · {times}"]


def temperature_note(replay: RoundReplay, lang: str = "en") -> str | None:
    """Where q and p (T = 1) differ from what the accept test used (scaled laws)."""
    if replay.temperature == 0:
        return t("fig.replay.greedy_note", lang, accept=accept_text(replay))
    if replay.temperature != 1:
        return t("fig.replay.t_note", lang, accept=accept_text(replay), t=f"{replay.temperature:g}")
    return None


def badge(step: DraftStep) -> str:
    """kept / rejected / untested, and "unwritten" for a kept draft the output ended before."""
    return "unwritten" if step.kept and not step.written else step.status


def _draft_head(step: DraftStep, lang: str) -> str:
    token = _token_text(step.token, step.token_id, lang)
    return f"{t('fig.replay.draft', lang, k=step.slot)} {token} · q = {num(step.q)} · p = {num(step.p)}"


# -- plain text (CLI) ------------------------------------------------------------------------


def replay_text(replay: RoundReplay, lang: str = "en") -> str:
    """The round as plain text: the header, each draft's arithmetic, the outcome, rollback."""
    lines = header_lines(replay, lang)
    if not replay.recorded:
        return "\n".join([*lines, t("fig.replay.not_recorded", lang)])
    lines += [x for x in (temperature_note(replay, lang), rule_note(replay, lang)) if x]
    for step in replay.steps:
        lines.append(f"[{t(f'fig.replay.badge.{badge(step)}', lang)}] {_draft_head(step, lang)}")
        lines.append("    " + t("fig.replay.rule", lang, line=rule_line(step, replay, lang)))
        lines.append("    " + t("fig.replay.test", lang, line=accept_line(step, replay, lang)))
    lines += outcome_lines(replay, lang)
    lines.append(rollback_line(replay, lang))
    wrote = " ".join(repr(tok.text) for tok in replay.emitted)
    lines.append(t("fig.replay.wrote", lang, tokens=wrote))
    return "\n".join(lines)


# -- HTML ------------------------------------------------------------------------------------

_CARD = (
    "max-width:100%;min-width:0;box-sizing:border-box;overflow-wrap:anywhere;"
    "border:1px solid #dee2e6;border-radius:6px;padding:8px 10px;line-height:1.45"
)
_LINE = "margin:2px 0;max-width:100%;min-width:0;overflow-wrap:anywhere"
_MATH = (
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.88em;"
    "margin:2px 0 2px 6px;padding-left:6px;overflow-wrap:anywhere"
)
_BADGE = (
    "display:inline-block;color:#111;padding:0 6px;border-radius:4px;font-size:0.85em;"
    "margin-right:6px;white-space:nowrap"
)
_TOKEN = (
    "display:inline-block;max-width:100%;overflow-wrap:anywhere;color:#111;padding:0 2px;"
    "margin:1px 1px 1px 0;border-radius:3px"
)


def _math(text: str) -> str:
    """Arithmetic that wraps between terms, not inside one: spaces within (…) do not break."""
    return re.sub(r"\([^()]*\)", lambda m: m[0].replace(" ", "\u00a0"), text)


def _div(text: str, style: str = _LINE, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<div{klass} style="{style}">{html.escape(text)}</div>'


def _token_box(text: str, background: str) -> str:
    shown = EOS_MARK if is_eos(text) else _visible(text)
    return f'<span class="sc-rtok" style="{_TOKEN};background:{background}">{html.escape(shown)}</span>'


def _draft_html(step: DraftStep, replay: RoundReplay, lang: str) -> str:
    kind = badge(step)
    colour = BADGE_COLOURS[kind]
    token = (
        _token_box(step.token, colour)
        if step.token is not None
        else html.escape(t("fig.replay.id", lang, id=step.token_id))
    )
    rule_colour = (
        "#adb5bd" if step.defer is None else DEFERRED_COLOUR if step.defer else KEPT_COLOUR
    )
    draft = html.escape(t("fig.replay.draft", lang, k=step.slot))
    numbers = html.escape(f"q = {num(step.q)} · p = {num(step.p)}")
    return (
        f'<div class="sc-replay-draft" data-slot="{step.slot}" data-status="{step.status}" '
        f'style="margin:6px 0;max-width:100%;min-width:0">'
        f'<div style="{_LINE}"><span style="{_BADGE};background:{colour}">'
        f"{html.escape(t(f'fig.replay.badge.{kind}', lang))}</span>{draft} {token} "
        f'<span style="white-space:nowrap">{numbers}</span></div>'
        + _div(
            _math(t("fig.replay.rule", lang, line=rule_line(step, replay, lang))),
            f"{_MATH};border-left:3px solid {rule_colour}",
            "sc-replay-rule",
        )
        + _div(
            _math(t("fig.replay.test", lang, line=accept_line(step, replay, lang))),
            f"{_MATH};border-left:3px solid {colour}",
            "sc-replay-accept",
        )
        + "</div>"
    )


def replay_html(replay: RoundReplay, lang: str = "en") -> str:
    """One round as a card that wraps on a 390 px screen: header, a block per draft (token,
    q, p, the rule's arithmetic, the accept draw, a kept/rejected/untested badge), the
    outcome, the KV-cache rollback and the tokens written. All text is escaped."""
    head, counts = header_lines(replay, lang)
    parts = [
        f'<div style="{_LINE};font-weight:600">{html.escape(head)}</div>',
        _div(counts, f"{_LINE};font-size:0.9em;color:#495057"),
    ]
    if not replay.recorded:
        parts.append(_div(t("fig.replay.not_recorded", lang), cls="sc-replay-missing"))
    else:
        note = temperature_note(replay, lang)
        if note:
            parts.append(_div(note, f"{_LINE};font-size:0.85em;color:#6c757d"))
        note = rule_note(replay, lang)
        if note:
            parts.append(_div(note, cls="sc-replay-rule-note"))
        parts += [_draft_html(step, replay, lang) for step in replay.steps]
        parts += [_div(x, cls="sc-replay-outcome") for x in outcome_lines(replay, lang)]
        parts.append(_div(rollback_line(replay, lang), cls="sc-replay-rollback"))
    boxes = "".join(_token_box(tok.text, COLORS[tok.source]) for tok in replay.emitted)
    wrote = html.escape(t("fig.replay.wrote", lang, tokens="\0")).replace("\0", boxes)
    parts.append(f'<div class="sc-replay-wrote" style="{_LINE}">{wrote}</div>')
    aria = html.escape(t("fig.replay.aria", lang), quote=True)
    return (
        f'<div class="sc-replay" data-round="{replay.index}" role="group" aria-label="{aria}" '
        f'style="{_CARD}">{"".join(parts)}</div>'
    )


__all__ = [
    "SIDES_TEXT",
    "accept_line",
    "badge",
    "header_lines",
    "num",
    "outcome_lines",
    "pair",
    "replay_html",
    "replay_text",
    "rollback_line",
    "rule_line",
    "rule_note",
    "temperature_note",
]

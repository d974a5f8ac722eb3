"""The Learn tab, in English and Chinese: its strings (key -> (English, Chinese)) and
`learn_markdown(lang, example)`, which assembles the tab from them, the rule registry and,
after a run, a worked example with that run's numbers (`speccascade.explain`).

Formulas are `$$…$$` (the app renders them inline with KaTeX). Strings formatted with values
need `{{ }}` for literal LaTeX braces; the ones used without values keep single braces."""

from __future__ import annotations

import math
import re

from speccascade.analysis.explain import TokenStep, WorkedExample
from speccascade.core.rules import RULES, Rule
from speccascade.i18n import join, t
from speccascade.views.loop_svg import loop_html

# The two sides of each rule's test in LaTeX, in the order `explain.SIDES` computes them.
SIDES_TEX: dict[str, tuple[str, str]] = {
    "chow": (r"\max q", r"1 - \alpha"),
    "diff": (r"\max q", r"\max p - \alpha"),
    "opt": (r"\max q", r"\max p - \alpha \cdot D_{TV}(p, q)"),
    "token_v1": (r"q(x)", r"\max p - \alpha"),
    "token_v2": (r"p(x)", r"\max p - \alpha"),
    "token_v3": (r"p(x)", r"(1 - \alpha) \cdot \max p"),
    "bild": (r"D_{TV}(p, q)", r"\alpha"),
    "typical": (r"p(x)", r"\min(\epsilon, \sqrt{\epsilon}\, e^{-H(p)})"),
    "fuzzy": (r"\mathrm{JSD}(p, q)", r"T"),
    "kl_judge": (r"\mathrm{KL}(p \,\Vert\, q)", r"\tau"),
}


# Keeping is the negation of deferring: defer when lhs < rhs keeps when lhs >= rhs.
_KEEP_OP = {"<": r"\ge", ">": r"\le", "<=": ">"}


_DEFER_OP = {"<": "<", ">": ">", "<=": r"\le"}


def number(x: float | None) -> str:
    """A probability or threshold for the page: up to 3 decimals, tiny values as a × 10^k
    (LaTeX, for use inside $$…$$), ±∞ for infinities, — when unknown."""
    if x is None or math.isnan(x):
        return "—"
    if math.isinf(x):
        return r"+\infty" if x > 0 else r"-\infty"
    if x != 0 and abs(x) < 0.001:
        mantissa, exponent = f"{x:.1e}".split("e")
        return rf"{mantissa} \times 10^{{{int(exponent)}}}"
    text = f"{x:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _pair(a: float, b: float) -> tuple[str, str]:
    """Both sides of a comparison, with more digits where rounding would make them equal."""
    x, y = number(a), number(b)
    if x == y and a != b:
        x, y = f"{a:.6g}", f"{b:.6g}"
    return x, y


def alpha_text(a: float) -> str:
    """An α end for the table: −1, 0.5, +∞ (plain text, with a real minus sign)."""
    if math.isinf(a):
        return "+∞" if a > 0 else "−∞"
    return f"{a:g}".replace("-", "−")


def _code(text: str) -> str:
    """User text (a prompt, a token) as a Markdown code span, safe whatever it contains."""
    shown = " ".join(text.split()) or repr(text)
    if len(shown) > 80:
        shown = shown[:79] + "…"
    fence = "`" * (max((len(r) for r in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def _t(key: str, lang: str, **values) -> str:
    return t(key, lang, **values)


def _label(rule: str, lang: str) -> str:
    """A rule's display name, Markdown-safe (the asterisk of BiLD* is not emphasis)."""
    return _t(f"rule.{rule}", lang).replace("*", r"\*")


def _rule_row(rule: Rule, lang: str) -> str:
    """One row of the rule table: name, deferral test, the two α ends, description."""
    if rule.kind == "lenient":
        when = _t("learn.rules.lossy", lang)
    elif rule.has_alpha:
        when = f"$${rule.formula}$$"
    else:
        when = _t("learn.rules.always", lang)
    if not rule.has_alpha:
        sd_end = drafter_end = "—"
    else:
        # TokenV3 is SD for every α < 0 (docs/method.md, §4.2); the registry stores −0.1
        below = rule.name == "token_v3"
        sd_end = _t("learn.rules.below_zero", lang) if below else alpha_text(rule.alpha_sd)
        drafter_end = alpha_text(rule.alpha_drafter)
    source = _t("learn.rules.source", lang, source=_t(f"learn.source.{rule.name}", lang))
    desc = join([_t(f"rule.{rule.name}.desc", lang), source], lang)
    name = f"**{_label(rule.name, lang)}** `{rule.name}`"
    return f"| {name} | {when} | {sd_end} | {drafter_end} | {desc} |"


def rule_table(lang: str) -> str:
    head = _t("learn.rules.head", lang)
    return "\n".join([head, "|---|---|---|---|---|", *(_rule_row(r, lang) for r in RULES.values())])


def _step_text(step: TokenStep, ex: WorkedExample, lang: str) -> str:
    """The paragraph explaining one drafted position of the run."""
    rule = RULES[ex.rule]
    label = _label(rule.name, lang)
    token = _code(step.token) if step.token is not None else _code(f"id {step.token_id}")
    parts = [
        _t(
            "learn.example.proposed",
            lang,
            position=step.position,
            token=token,
            q=number(step.q),
            p=number(step.p),
            max_p=number(step.max_p),
        )
    ]
    if rule.kind == "mixture" and rule.has_alpha:
        parts.append(
            _t(
                "learn.example.position_stats",
                lang,
                max_q=number(step.max_q),
                dtv=number(step.dtv),
            )
        )
    accept = number(step.accept_prob)
    if rule.kind == "lenient":
        parts.append(_t("learn.example.test_lossy", lang, alpha=number(ex.alpha), accept=accept))
    else:
        if step.relation is None:
            parts.append(_t("learn.example.test_sd", lang))
        else:
            lhs_tex, rhs_tex = SIDES_TEX[rule.name]
            lhs, rhs = _pair(step.lhs, step.rhs)
            op = _DEFER_OP[step.relation] if step.defer else _KEEP_OP[step.relation]
            verdict = "learn.example.verdict_defer" if step.defer else "learn.example.verdict_keep"
            parts.append(
                _t(
                    "learn.example.test",
                    lang,
                    rule=label,
                    alpha=number(ex.alpha),
                    keep=f"{lhs_tex} {_KEEP_OP[step.relation]} {rhs_tex} = {rhs}",
                    numbers=f"{lhs} {op} {rhs}",
                    verdict=_t(verdict, lang),
                )
            )
        if step.pi is not None:
            parts.append(_t("learn.example.accept", lang, pi=number(step.pi), accept=accept))
        elif step.accept_prob is not None:
            parts.append(_t("learn.example.accept_no_pi", lang, accept=accept))
    if step.outcome == "replaced":
        parts.append(_t("learn.example.replaced", lang, emitted=_code(step.emitted)))
    elif step.defer:
        parts.append(_t("learn.example.kept_anyway", lang))
    else:
        parts.append(_t("learn.example.kept", lang))
    return join(parts, lang)


def example_markdown(lang: str, ex: WorkedExample | None) -> str:
    """The worked-example section: the run's numbers, or a note that it appears after a run."""
    out = [_t("learn.example.title", lang)]
    if ex is None:
        return "\n\n".join(out + [_t("learn.example.none", lang)])
    label = _label(ex.rule, lang)
    if ex.alpha is None:
        setting = _t("learn.example.setting_no_alpha", lang, rule=label, gamma=ex.gamma)
    else:
        setting = _t(
            "learn.example.setting", lang, rule=label, alpha=number(ex.alpha), gamma=ex.gamma
        )
    if ex.prompt:
        out.append(_t("learn.example.intro", lang, prompt=_code(ex.prompt), setting=setting))
    else:
        out.append(_t("learn.example.intro_noprompt", lang, setting=setting))
    if ex.kept is not None:
        out.append(f"{_t('learn.example.kept_title', lang)} {_step_text(ex.kept, ex, lang)}")
    else:
        out.append(_t("learn.example.none_kept", lang))
    if ex.deferred is not None:
        title = "deferred_title" if ex.deferred.defer else "replaced_title"
        out.append(f"{_t(f'learn.example.{title}', lang)} {_step_text(ex.deferred, ex, lang)}")
    else:
        out.append(_t("learn.example.none_deferred", lang))
    if ex.temperature == 0:
        out.append(_t("learn.example.greedy", lang))
    elif ex.temperature != 1:
        out.append(_t("learn.example.temperature", lang, temperature=f"{ex.temperature:g}"))
    fraction = "—" if ex.kept_fraction is None else f"{ex.kept_fraction:.0%}"
    out.append(
        _t(
            "learn.example.summary",
            lang,
            tokens=ex.tokens,
            calls=ex.verifier_calls,
            accepted=ex.accepted,
            drafted=ex.drafted,
            fraction=fraction,
        )
    )
    return "\n\n".join(out)


def _slow_markdown(lang: str, ex: WorkedExample | None) -> str:
    out = [_t("learn.slow.title", lang), _t("learn.slow.body", lang)]
    if ex is not None and ex.kept_fraction is not None and ex.ideal_speedup is not None:
        out.append(
            _t(
                "learn.slow.yours",
                lang,
                b=number(ex.kept_fraction),
                c=number(ex.cost_ratio),
                gamma=ex.gamma,
                ideal=number(ex.ideal_speedup),
                per_call=number(ex.tokens_per_verifier_call),
            )
        )
    out.append(_t("learn.slow.try", lang))
    return "\n\n".join(out)


def loop_markdown(lang: str, example: WorkedExample | None = None) -> str:
    """The loop as a picture (views/loop_svg.py) under its heading, with a caption saying
    whose numbers it carries, or that a run will put its numbers there."""
    if example is None:
        caption = _t("learn.loop.caption_none", lang)
    elif example.prompt:
        caption = _t("learn.loop.caption", lang, prompt=_code(example.prompt))
    else:
        caption = _t("learn.loop.caption_noprompt", lang)
    return "\n\n".join([_t("learn.loop.title", lang), loop_html(lang, example), caption])


def learn_markdown(lang: str, example: WorkedExample | None = None) -> str:
    """The whole Learn tab in `lang` ('en', 'zh' or a browser tag), as Markdown.

    `example` (from `explain.worked_example`) puts the run's numbers on the loop's picture and
    fills in the worked example and the run's speed-up numbers; without it the page says
    they appear after a run."""
    steps = "\n".join(f"{i}. {_t(f'learn.steps.{i}', lang)}" for i in range(1, 6))
    show = join(
        [_t(f"learn.show.{k}", lang) for k in ("colours", "heatmap", "inspector", "whatif")], lang
    )
    sections = [
        loop_markdown(lang, example),
        _t("learn.story.title", lang),
        _t("learn.story.easy", lang),
        _t("learn.story.hard", lang),
        _t("learn.steps.title", lang),
        steps,
        _t("learn.steps.after", lang),
        _t("learn.rules.title", lang),
        _t("learn.rules.intro", lang),
        rule_table(lang),
        example_markdown(lang, example),
        _slow_markdown(lang, example),
        _t("learn.show.title", lang),
        show,
    ]
    return "\n\n".join(sections) + "\n"


__all__ = ["SIDES_TEX", "alpha_text", "learn_markdown", "loop_markdown", "number", "rule_table"]

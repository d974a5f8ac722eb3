"""The controls column: prompt, examples, method, rule, the rule's parameter slider (its range
and ends follow the rule), and More settings; their choices in the page's language."""

from __future__ import annotations

import gradio as gr

from speccascade.analysis.calibrate import CALIBRATABLE
from speccascade.analysis.evalsets import SHOWCASE
from speccascade.app.components import Page
from speccascade.app.context import LATEX, _bind, _finite, _num, label
from speccascade.app.serving import ServeConfig
from speccascade.core.drafting import DRAFT_POLICIES
from speccascade.core.engine import (
    APP_DEFAULTS,
    METHOD_REGISTRY,
)
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES
from speccascade.i18n import has, lang_of, method_label, policy_label, t
from speccascade.models.presets import DEFAULT_PRESET, PRESETS
from speccascade.views.style import rule_for


def pair_label(preset: str | None, lang: str, drafter: str = "", verifier: str = "") -> str:
    """A model pair in users' words (custom models: their ids)."""
    if drafter or verifier:
        return t("pair.custom", lang, drafter=drafter or "?", verifier=verifier or "?")
    name = preset or DEFAULT_PRESET
    chosen = PRESETS.get(name)
    words = t(f"pair.{name}", lang) if has(f"pair.{name}") else (chosen.label if chosen else name)
    if chosen is not None and not chosen.available():
        words += t("pair.unavailable", lang)
    return words


def pair_choices(lang: str) -> list[tuple[str, str]]:
    return [(pair_label(name, lang), name) for name in PRESETS]


def method_choices(lang: str) -> list[tuple[str, str]]:
    return [(method_label(m, None, lang), m) for m in METHOD_REGISTRY]


def policy_choices(lang: str) -> list[tuple[str, str]]:
    return [(policy_label(p, lang), p) for p in DRAFT_POLICIES]


def rule_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"rule.{r}", lang), r) for r in SPEC_CASCADE_RULES]


def examples_for(lang: str, preset: str | None = None) -> dict:
    """The page's example questions: the pair's own (a general model's, in any language), or
    the embedded pair's showcase in the page's language, each captioned easy or hard."""
    own = PRESETS[preset].examples if preset in PRESETS else ()
    if own:
        return {"samples": [[q] for q in own], "sample_labels": list(own)}
    lang = lang_of(lang)
    shown = [x for x in SHOWCASE if x.lang == lang]
    return {
        "samples": [[x.question] for x in shown],
        "sample_labels": [f"{x.question} · {t(f'example.{x.level}', lang)}" for x in shown],
    }


def prompt_info(lang: str, preset: str | None, limit: int) -> str:
    """The prompt's hint: what the embedded pair knows, or that a general pair tries all."""
    general = preset in PRESETS and preset != DEFAULT_PRESET
    if general:
        return t("prompt.info.pair", lang, limit=limit)
    return t("prompt.info", lang, limit=limit, context=PRESETS[DEFAULT_PRESET].context() or "?")


def pair_changed(preset: str | None, lang: str, limit: int) -> tuple:
    """A new pair (the picker, or the offer's switch): its examples and the prompt's hint;
    the prompt itself is the user's."""
    return gr.Dataset(**examples_for(lang, preset)), gr.update(
        info=prompt_info(lang, preset, limit)
    )


def rule_markdown(method: str, rule: str | None, lang: str = "en") -> str:
    r = rule_for(method, rule)
    if r is None:
        return t("rule_md.none", lang, method=method_label(method, None, lang))
    return t(
        "rule_md.rule",
        lang,
        label=t(f"rule.{r.name}", lang),
        formula=r.formula,
        desc=t(f"rule.{r.name}.desc", lang),
    )


def alpha_update(method: str, rule: str | None, alpha: float | None, lang: str = "en") -> dict:
    """The α slider narrowed to the rule's range, its ends named (SD and drafter alone)."""
    r = rule_for(method, rule)
    if r is None or not r.has_alpha:
        return gr.update(interactive=False, label=t("alpha.unused", lang))
    lo, hi = r.slider
    value = r.alpha_default if alpha is None or not lo <= alpha <= hi else alpha
    return gr.update(
        minimum=lo,
        maximum=hi,
        value=value,
        interactive=True,
        label=t(
            "alpha.label",
            lang,
            param=r.param,
            rule=t(f"rule.{r.name}", lang),
            lo=f"{lo:g}",
            hi=f"{hi:g}",
            **dict(zip(("lo_end", "hi_end"), slider_ends(r, lang))),
        ),
    )


def slider_ends(r, lang: str) -> tuple[str, str]:
    """What the slider's low and high ends are: speculative decoding and the drafter alone
    (exactly, or towards them where the exact value lies outside the slider), in whichever
    order the rule's parameter runs."""
    lo, hi = r.slider
    sd_end, drafter_end = (lo, hi) if r.sd_at_low else (hi, lo)
    sd = t("alpha.is_sd" if r.alpha_sd == sd_end else "alpha.to_sd", lang)
    drafter = t("alpha.is_drafter" if r.alpha_drafter == drafter_end else "alpha.to_drafter", lang)
    return (sd, drafter) if r.sd_at_low else (drafter, sd)


def choose_method(page: Page, method, rule, alpha, lang="en") -> dict:
    """A new method or rule: the α slider's range and ends, the rule's formula."""
    return {
        page.alpha: alpha_update(method, rule, _num(alpha), lang),
        page.rule_md: rule_markdown(method, rule, lang),
        page.rule: gr.update(interactive=bool(METHOD_REGISTRY[method].rules)),
    }


def rule_info(method: str, rule: str) -> dict:
    """The rule a method runs with: formula, α range and the alphas that give SD and the
    drafter alone (what the α slider shows)."""
    r = rule_for(method, rule) if method in METHOD_REGISTRY else None
    if r is None:
        return {"method": method, "rule": None}
    return {
        "method": method,
        "rule": r.name,
        "label": r.label,
        "formula": r.formula,
        "alpha_min": _finite(r.alpha_min),
        "alpha_max": _finite(r.alpha_max),
        "alpha_sd": _finite(r.alpha_sd),
        "alpha_drafter": _finite(r.alpha_drafter),
        "alpha_default": r.alpha_default,
        "slider": list(r.slider),
    }


def calibratable_choices(lang: str) -> list[tuple[str, str]]:
    """Every rule with a parameter (the paper's and the zoo's): what calibration and the zoo
    can move."""
    return [(f"{t(f'rule.{r}', lang)} ({RULES[r].param})", r) for r in CALIBRATABLE]


# -- layout --------------------------------------------------------------------------------


def parts(config: ServeConfig, lang: str = "en") -> dict:
    """The controls column: the prompt with Run and Stop, the examples, method, rule and its
    parameter, Compare, then More settings (in the current gr.Blocks; English defaults that
    `page.localize` swaps for the browser's language on load)."""
    shown = examples_for(lang, config.preset)
    prompt = gr.Textbox(
        label=label("ui.prompt"), value=shown["samples"][0][0], lines=2, max_lines=6,
        info=prompt_info(lang, config.preset, config.max_prompt_chars), elem_id="prompt",
    )  # fmt: skip
    # the pair answers the prompt: its selector sits with it (it was last under More settings)
    preset = gr.Dropdown(
        pair_choices(lang), value=config.preset, label=label("ui.pair"), elem_id="pair"
    )
    with gr.Row():
        run_btn = gr.Button(label("ui.run"), variant="primary", elem_id="run", scale=2)
        stop_btn = gr.Button(label("ui.stop"), variant="stop", elem_id="stop", scale=1)
    examples = gr.Dataset(
        components=[prompt], type="values", label=label("ui.examples"), elem_id="examples",
        samples_per_page=8, **shown,
    )  # fmt: skip
    method = gr.Dropdown(method_choices(lang), value=APP_DEFAULTS.method, label=label("ui.method"))
    rule = gr.Dropdown(rule_choices(lang), value=APP_DEFAULTS.rule, label=label("ui.rule"))
    # Server-side bounds span every rule (API clients may pick any); the page load and every
    # method/rule change narrow the visible slider to the chosen rule.
    alpha = gr.Slider(
        min(r.slider[0] for r in RULES.values()), max(r.slider[1] for r in RULES.values()),
        value=APP_DEFAULTS.alpha, step=0.01, label="α", elem_id="alpha",
    )  # fmt: skip
    rule_md = gr.Markdown(
        rule_markdown(APP_DEFAULTS.method, APP_DEFAULTS.rule, lang),
        latex_delimiters=LATEX,
        elem_id="rule-md",
    )
    compare_btn = gr.Button(label("ui.compare"), elem_id="compare")
    with gr.Accordion(label("ui.more"), open=False, elem_id="more"):
        more = more_parts(config, lang)
    return dict(
        prompt=prompt, run_btn=run_btn, stop_btn=stop_btn, examples=examples, method=method,
        rule=rule, alpha=alpha, rule_md=rule_md, compare_btn=compare_btn, preset=preset,
        **more,
    )  # fmt: skip


def more_parts(config: ServeConfig, lang: str) -> dict:
    """More settings: gamma, temperature, max new tokens, seed, the draft policy, custom
    models."""
    gamma = gr.Slider(1, 12, value=APP_DEFAULTS.gamma, step=1, label=label("ui.gamma"))
    temperature = gr.Slider(
        0, 2, value=APP_DEFAULTS.temperature, step=0.05, label=label("ui.temperature"),
        elem_id="temperature",
    )  # fmt: skip
    max_new = gr.Slider(
        1, config.max_new_tokens, value=min(APP_DEFAULTS.max_new_tokens, config.max_new_tokens),
        step=1, label=label("ui.max_new_tokens"), elem_id="max-new",
    )  # fmt: skip
    seed = gr.Number(0, precision=0, minimum=0, label=label("ui.seed"))
    draft_policy = gr.Dropdown(
        policy_choices(lang), value=APP_DEFAULTS.draft_policy, label=label("ui.draft_policy"),
        info=label("ui.draft_policy_info"), elem_id="draft-policy",
    )  # fmt: skip
    draft_threshold = gr.Slider(
        0, 1, value=APP_DEFAULTS.draft_threshold, step=0.05, label=label("ui.draft_threshold"),
        interactive=DRAFT_POLICIES[APP_DEFAULTS.draft_policy].stops_early,
        elem_id="draft-threshold",
    )  # fmt: skip
    with gr.Row(visible=config.allow_custom_models):
        drafter = gr.Textbox("", label=label("ui.custom_drafter"), placeholder="owner/name")
        verifier = gr.Textbox("", label=label("ui.custom_verifier"), placeholder="owner/name")
    return dict(
        gamma=gamma, temperature=temperature, max_new=max_new, seed=seed,
        draft_policy=draft_policy, draft_threshold=draft_threshold, drafter=drafter,
        verifier=verifier,
    )  # fmt: skip


def wire(page: Page, limit: int) -> None:
    """A new method or rule redraws the parameter slider; an example fills the prompt; a new
    pair brings its examples and hint (`limit`: the prompt's length limit); a draft policy
    without a threshold greys it out."""
    p = page
    for control in (p.method, p.rule):
        control.input(
            _bind(choose_method, p),
            [p.method, p.rule, p.alpha, p.lang],
            [p.alpha, p.rule_md, p.rule],
            api_name=False,
            queue=False,
        )
    p.examples.click(lambda row: row[0], p.examples, p.prompt, api_name=False, queue=False)
    p.preset.change(
        lambda preset, lang: pair_changed(preset, lang, limit),
        [p.preset, p.lang],
        [p.examples, p.prompt],
        api_name=False,
        queue=False,
    )
    p.draft_policy.change(
        lambda policy: gr.update(interactive=DRAFT_POLICIES[policy].stops_early),
        p.draft_policy,
        p.draft_threshold,
        api_name=False,
        queue=False,
    )

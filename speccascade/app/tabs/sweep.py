"""The alpha sweep tab: quality against cost over each rule's parameter (Pareto frontiers,
scaled to the deployment's token budget) and the calibration of each rule to a target."""

from __future__ import annotations

from dataclasses import replace

import gradio as gr
import pandas as pd

from speccascade.analysis.calibrate import Target, calibrate, evaluations_needed
from speccascade.analysis.compare import (
    SWEPT,
    SweepTooLarge,
    Variant,
    plan_sweep,
    sweep,
)
from speccascade.analysis.evalsets import find_item, load_evalset
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    AppContext,
    UserError,
    _bind,
    _hidden,
    _int,
    _message,
    _num,
    _positive,
    check_budget,
    check_prompt,
    gpu,
    label,
    settings_of,
)
from speccascade.app.controls import calibratable_choices
from speccascade.app.plot import slide_plot
from speccascade.app.tabs.compare import question_slice
from speccascade.core.engine import (
    CASCADE,
    METHOD_REGISTRY,
    Settings,
)
from speccascade.core.errors import (
    SettingsError,
    SpecCascadeError,
)
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES
from speccascade.i18n import lang_of, t, variant_label
from speccascade.views.compare import quality_latency


def sweep_sources(lang: str) -> list[tuple[str, str]]:
    return [(t("sweep.this_prompt", lang), "prompt"), (t("sweep.eval", lang), "eval")]


def sweep_axes(lang: str) -> list[tuple[str, str]]:
    return [
        (t("sweep.x.latency", lang), "relative_latency"),
        (t("sweep.x.calls", lang), "verifier_calls_per_token"),
    ]


def _sweep_plan(
    ctx: AppContext, prompt, source, n_alpha, rule, alpha, gamma, temperature, max_new_tokens,
    seed, lang,
) -> tuple:  # fmt: skip
    """The sweep's questions (the prompt, or the eval slice), variants (the user's rule first:
    a budget cut drops those at the end) and settings, scaled to the token budget; a
    UserError or SpecCascadeError naming what to change."""
    n = _int(n_alpha)
    if not isinstance(n, int) or not 2 <= n <= 11:
        raise SettingsError(f"α values per rule must be in [2, 11]; got {n_alpha}")
    max_new = check_budget(max_new_tokens, 1, ctx.config, lang)
    if source == "eval":
        items = eval_slice(lang_of(lang))
    else:
        known = find_item(check_prompt(prompt, ctx.config, lang))
        items = [known] if known else []
    prompts = [(x.question, x.answer) for x in items] or [(prompt, None)]
    facts = [x.facts for x in items] or None
    variants = [Variant.cascade(rule)] + [Variant(m) for m in SWEPT if METHOD_REGISTRY[m].drafts]
    variants += [Variant.cascade(r) for r in SPEC_CASCADE_RULES if r != rule]
    try:
        plan = plan_sweep(prompts, variants, n, max_new, ctx.config.max_total_tokens)
    except SweepTooLarge as e:
        raise UserError(
            t("error.budget", lang, tokens=e.tokens, limit=ctx.config.max_total_tokens)
        ) from None
    settings = settings_of(CASCADE, rule, alpha, gamma, temperature, max_new, seed)
    settings.validated(ctx.config.max_new_tokens)
    return plan, facts, settings


@gpu
def run_sweep(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    source,
    n_alpha,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    x_axis,
    lang="en",
    progress=gr.Progress(),
) -> dict:
    """Quality against cost over an α grid for every rule (and lossy SD, BiLD*), scaled to
    the deployment's token budget, with the current rule and α marked."""
    models = [preset, drafter, verifier]
    try:
        plan, facts, settings = _sweep_plan(
            ctx, prompt, source, n_alpha, rule, alpha, gamma, temperature, max_new_tokens, seed,
            lang,
        )  # fmt: skip
        pair = ctx.pair(*models)
    except (UserError, *_USER_ERRORS) as e:
        return {
            page.sweep_note: t("status.error", lang, message=_message(e, lang)),
            page.sweep_fig: None,
            page.sweep_table: None,
        }
    current = (Variant.cascade(rule), round(settings.validated().alpha, 4))
    table = sweep(
        pair,
        list(plan.prompts),
        list(plan.variants),
        n_alpha=plan.n_alpha,
        progress=lambda f, label, a: progress(f, desc=sweep_progress(label, a, lang)),
        extra=[current],
        settings=settings,
        facts=facts,
    )
    mark = table[(table.method == current[0].label) & (table.alpha == current[1])]
    quality = t("sweep.quality.facts" if facts else "sweep.quality.verifier", lang)
    notes = [
        t(
            "sweep.done",
            lang,
            runs=len(table) * len(plan.prompts),
            prompts=len(plan.prompts),
            quality=quality,
        )
    ]
    if plan.scaled:
        cuts = "; ".join(
            t(f"sweep.cut.{what}", lang, before=a, after=b) for what, a, b in plan.scaled
        )
        notes.insert(0, t("sweep.scaled", lang, budget=ctx.config.max_total_tokens, cuts=cuts))
    return {
        page.sweep_note: " ".join(notes),
        page.sweep_fig: quality_latency(
            table,
            current=mark.iloc[0].to_dict() if len(mark) else None,
            x=x_axis
            if x_axis in ("relative_latency", "verifier_calls_per_token")
            else "relative_latency",
            lang=lang,
            quality_label=quality,
        ),
        page.sweep_table: sweep_view(table, lang),
    }


def sweep_progress(label: str | None, alpha: float | None, lang: str) -> str:
    """The progress bar's words for the job about to run: the method by its name and its α
    ('speculative cascade · TokenV3, α = 0.725'), or that the sweep is done."""
    if label is None:
        return t("sweep.progress.done", lang)
    name = variant_label(label, lang)
    if alpha is None:
        return name
    return t("sweep.progress", lang, method=name, alpha=f"{alpha:g}".replace("-", "−"))


def sweep_view(table: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The sweep's points with human headers in the page's language."""
    return pd.DataFrame(
        {
            t("col.method", lang): table["method"].map(lambda v: variant_label(v, lang)),
            "α": table["alpha"],
            t("col.quality", lang): table["quality"].round(3),
            t("col.relative_time", lang): table["relative_latency"].round(3),
            t("col.calls", lang): table["verifier_calls_per_token"].round(3),
            t("col.kept", lang): pd.to_numeric(table["acceptance_rate"], errors="coerce").round(3),
        }
    )


def eval_slice(lang: str, per_level: int = 2) -> list:
    """The sweep's eval slice: the first easy and the first hard questions in `lang`."""
    items = [x for x in load_evalset() if x.lang == lang]
    return [
        x for level in ("easy", "hard") for x in [y for y in items if y.level == level][:per_level]
    ]


def calibrate_parts(lang: str = "en") -> dict:
    """The α sweep tab's calibration: a target in users' terms, each rule's α meeting it."""
    gr.Markdown(label("views.cal.intro"), elem_id="cal-intro")
    with gr.Row():
        cal_max_calls = gr.Number(
            None, label=label("views.cal.max_calls"), minimum=0, maximum=1, step=0.05
        )
        cal_min_share = gr.Number(
            0.9, label=label("views.cal.min_share"), minimum=0, maximum=1, step=0.05
        )
    cal_rules = gr.CheckboxGroup(
        calibratable_choices(lang),
        value=list(CALIBRATE_RULES),
        label=label("views.cal.rules"),
    )
    cal_btn = gr.Button(label("views.cal.run"), elem_id="cal-run")
    cal_note = gr.Markdown("", elem_id="cal-note")
    cal_table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="cal-table")
    return dict(
        cal_max_calls=cal_max_calls,
        cal_min_share=cal_min_share,
        cal_rules=cal_rules,
        cal_btn=cal_btn,
        cal_note=cal_note,
        cal_table=cal_table,
    )


CALIBRATE_TOKENS = 32  # eval answers are short; a calibration runs the slice many times


CALIBRATE_RULES = ("token_v3", "chow", "diff")


def calibration_plan(rules: int, items: int, limit: int, max_steps: int = 6) -> int | None:
    """The most bisection steps (2..max_steps) whose worst case fits the token budget."""
    for steps in range(max_steps, 1, -1):
        if evaluations_needed(rules, steps) * items * CALIBRATE_TOKENS <= limit:
            return steps
    return None


def calibrate_view(
    ctx, page, max_calls, min_share, rules, models: list, settings: Settings, lang="en"
) -> dict:
    """Each chosen rule's alpha meeting the target on the eval slice, side by side."""
    v = page
    rules = [r for r in (rules or []) if r]
    try:
        target = Target(_positive(max_calls), _positive(min_share))
        if not rules:
            raise SpecCascadeError(t("views.cal.no_rules", lang))
    except SpecCascadeError as e:
        return {v.cal_note: t("status.error", lang, message=str(e)), v.cal_table: _hidden()}
    items = question_slice(models[0], lang)
    steps = calibration_plan(len(rules), len(items), ctx.config.max_total_tokens)
    if steps is None:
        return {v.cal_note: t("views.cal.too_large", lang), v.cal_table: _hidden()}
    base = replace(settings, max_new_tokens=CALIBRATE_TOKENS)
    try:
        verifier, results = calibrate(ctx.pair(*models), items, target, base, rules, steps=steps)
    except SpecCascadeError as e:
        return {v.cal_note: t("status.error", lang, message=str(e)), v.cal_table: _hidden()}
    rows = [(t("method.verifier", lang), "—", verifier, None, 1)] + [
        (t(f"rule.{r}", lang), f"{RULES[r].param} = {c.point.alpha:.3g}", c.point, c.met,
         c.evaluations)
        for r, c in results.items()
    ]  # fmt: skip
    table = pd.DataFrame(
        [
            {
                t("views.cal.col.rule", lang): name,
                t("views.cal.col.param", lang): alpha,
                t("views.cal.col.calls", lang): round(p.calls_per_token, 3),
                t("views.cal.col.accuracy", lang): round(p.accuracy, 2),
                t("views.cal.col.time", lang): round(p.wall_s, 2),
                t("views.cal.col.met", lang): "—"
                if met is None
                else t("views.cal.yes" if met else "views.cal.no", lang),
                t("views.cal.col.runs", lang): n,
            }
            for name, alpha, p, met, n in rows
        ]
    )
    note = t("views.cal.note", lang, items=len(items), steps=steps, tokens=CALIBRATE_TOKENS)
    return {v.cal_note: note, v.cal_table: gr.update(value=table, visible=True)}


def run_calibrate(
    ctx: AppContext, page: Page, max_calls, min_share, rules, preset, drafter, verifier, gamma,
    temperature, seed, lang="en",
) -> dict:  # fmt: skip
    """Calibration from the page's settings."""
    settings = settings_of(CASCADE, None, None, gamma, temperature, 32, seed)
    models = [preset, drafter, verifier]
    return calibrate_view(
        ctx, page, _num(max_calls), _num(min_share), rules, models, settings, lang
    )


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    """The sweep's source, grid and axis, its figure and table, then calibration."""
    with gr.Row():
        sweep_source = gr.Radio(sweep_sources(lang), value="prompt", label=label("ui.sweep_source"))
        sweep_n = gr.Slider(2, 11, value=5, step=1, label=label("ui.sweep_alphas"))
        sweep_x = gr.Radio(sweep_axes(lang), value="relative_latency", label=label("ui.sweep_x"))
    sweep_btn = gr.Button(label("ui.sweep_run"), elem_id="sweep")
    sweep_note = gr.Markdown("", elem_id="sweep-note")
    sweep_fig = slide_plot(show_label=False, elem_id="sweep-fig")
    sweep_table = gr.Dataframe(interactive=False, elem_id="sweep-table")
    return dict(
        sweep_source=sweep_source, sweep_n=sweep_n, sweep_x=sweep_x, sweep_btn=sweep_btn,
        sweep_note=sweep_note, sweep_fig=sweep_fig, sweep_table=sweep_table,
        **calibrate_parts(lang),
    )  # fmt: skip


def wire(ctx: AppContext, page: Page, heavy: dict) -> None:
    p = page
    p.sweep_btn.click(
        _bind(run_sweep, ctx, p),
        [
            p.prompt,
            *p.models,
            p.sweep_source,
            p.sweep_n,
            p.rule,
            p.alpha,
            p.gamma,
            p.temperature,
            p.max_new,
            p.seed,
            p.sweep_x,
            p.lang,
        ],  # fmt: skip
        [p.sweep_note, p.sweep_fig, p.sweep_table],
        api_name="sweep",
        **heavy,
    )
    p.cal_btn.click(
        _bind(run_calibrate, ctx, p),
        [
            p.cal_max_calls,
            p.cal_min_share,
            p.cal_rules,
            *p.models,
            p.gamma,
            p.temperature,
            p.seed,
            p.lang,
        ],  # fmt: skip
        [p.cal_note, p.cal_table],
        api_name="calibrate",
        **heavy,
    )

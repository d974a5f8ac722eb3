"""The Compare tab: every method on the prompt (speed against quality), the token-aligned
diff, the cost projector, and the rule zoo at matched deferral rates."""

from __future__ import annotations

from dataclasses import replace

import gradio as gr
import pandas as pd

from speccascade.analysis.compare import (
    Variant,
    compare,
    compare_variants,
)
from speccascade.analysis.diff import run_diff
from speccascade.analysis.evalsets import GENERAL_QA, find_item, load_evalset
from speccascade.analysis.project import (
    DTYPE_BYTES,
    GPUS,
    PROFILES,
    CostModel,
    best_gammas,
    build_profile,
    project_methods,
)
from speccascade.analysis.zoo import DEFAULT_RATES, zoo
from speccascade.analysis.zoo import evaluations_needed as zoo_evaluations
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    AppContext,
    UserError,
    _bind,
    _error,
    _hidden,
    _message,
    _num,
    check_cascade_request,
    check_context,
    gpu,
    label,
    lang_code,
    settings_of,
)
from speccascade.app.controls import calibratable_choices
from speccascade.app.plot import slide_plot
from speccascade.app.serving import (
    budget_problem,
    prompt_problem,
)
from speccascade.core.engine import (
    CASCADE,
    Settings,
)
from speccascade.core.errors import (
    SpecCascadeError,
)
from speccascade.core.trace import Trace
from speccascade.core.trace_file import trace_from_data
from speccascade.i18n import method_label, t, variant_label
from speccascade.models.presets import DEFAULT_PRESET, PRESETS
from speccascade.views.compare import speed_quality
from speccascade.views.diff import diff_html
from speccascade.views.project import (
    assumptions_html,
    best_gamma_table,
    gamma_figure,
    projection_figure,
    projection_table,
)
from speccascade.views.zoo import zoo_figure, zoo_frame

# Timing rounds of Compare: one run's clock is noisy on a busy machine, so each method runs up
# to this many times (interleaved) and shows its median, while the rounds fit in this budget
# (the demo pair's 8 methods take ~3 s a round here; SmolLM2's, ~15 s).
COMPARE_ROUNDS = 3
COMPARE_BUDGET_S = 30.0


@gpu
def run_compare(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    lang="en",
    progress=gr.Progress(),
):
    """Every baseline and the chosen speculative cascade on the same prompt: speed and
    quality in one figure (key facts where the eval set knows the question)."""
    models = [preset, drafter, verifier]
    variants = compare_variants(rule)
    yield {page.tabs: gr.Tabs(selected="compare"), page.compare_status: t("status.loading", lang)}
    try:
        prompt, tokens, settings = check_cascade_request(
            ctx, prompt, preset, rule, alpha, gamma, temperature, max_new_tokens, seed,
            len(variants), lang,
        )  # fmt: skip
        pair = ctx.pair(*models)
        check_context(pair, prompt, settings.chat, lang)
    except (UserError, *_USER_ERRORS) as e:
        yield {
            page.compare_status: t("status.error", lang, message=_message(e, lang)),
            page.compare_fig: None,
            page.compare_table: empty_compare_view(lang),
        }
        return
    chosen = None if drafter or verifier else PRESETS.get(preset or DEFAULT_PRESET)
    item = find_item(prompt, taught_by=chosen.taught if chosen else None)
    facts = item.facts if item else ()
    n = len(variants)  # timing rounds stay within the job's token budget too
    rounds = max(1, min(COMPARE_ROUNDS, ctx.config.max_total_tokens // (tokens * n)))
    runs = compare(pair, prompt, variants, settings=settings, facts=facts, rounds=rounds,
                   budget_s=COMPARE_BUDGET_S)  # fmt: skip
    table, traces = None, {}
    try:
        for k, (variant, trace, table) in enumerate(runs):
            traces.setdefault(variant.label, trace)  # a timing round's tokens are the same
            progress((k + 1) / (n * rounds))  # of all the runs, the rounds included
            if k + 1 < n:
                nxt = variants[k + 1]
                status = t("compare.running", lang, k=k + 2, n=n,
                           method=method_label(nxt.method, nxt.rule, lang))  # fmt: skip
            elif (k + 1) % n == 0 and k + 1 < n * rounds:
                status = t("compare.timing", lang, r=(k + 1) // n + 1, rounds=rounds)
            else:
                continue
            yield {page.compare_status: status, page.compare_table: compare_view(table, lang)}
    except _USER_ERRORS as e:
        yield {page.compare_status: t("status.error", lang, message=_message(e, lang))}
        return
    quality = t("compare.quality.facts" if facts else "compare.quality.verifier", lang)
    yield {
        page.compare_status: t("compare.done", lang, n=len(table), quality=quality)
        + " "
        + t("compare.columns", lang, timing=_timing(int(table["runs"].min()), lang)),
        page.compare_fig: speed_quality(table, lang=lang),
        page.compare_table: compare_view(table, lang),
        page.compared: traces,
    }


def _timing(runs: int, lang: str) -> str:
    return t("compare.median", lang, runs=runs) if runs > 1 else t("compare.once", lang)


def compare_view(table: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The compare table with human headers in the page's language, rounded."""
    view = pd.DataFrame(
        {
            t("col.method", lang): table["method"].map(lambda v: variant_label(v, lang)),
            t("col.answer", lang): table["text"].str.strip(),
            t("col.time", lang): pd.to_numeric(table["wall_s"]).round(2),
            t("col.speedup", lang): pd.to_numeric(table["speedup"]).round(2),
            t("col.calls", lang): pd.to_numeric(table["verifier_calls_per_token"]).round(2),
            t("col.kept", lang): pd.to_numeric(table["acceptance_rate"], errors="coerce")
            .round(2)
            .map(lambda x: "—" if pd.isna(x) else f"{x:g}"),
            t("col.agreement", lang): pd.to_numeric(table["quality_vs_verifier"]).round(2),
        }
    )
    # "—" where the eval set does not know the question: no key facts to check
    facts = pd.to_numeric(table["key_facts"], errors="coerce").round(2)
    view[t("col.facts", lang)] = facts.map(lambda x: "—" if pd.isna(x) else f"{x:g}")
    return view


def empty_compare_view(lang: str) -> pd.DataFrame:
    """The compare table's headers with no rows: what the table shows before a comparison
    (an empty Dataframe would show Gradio's placeholder headers, "1 2 3")."""
    columns = ["method", "text", "wall_s", "speedup", "verifier_calls_per_token",
               "acceptance_rate", "quality_vs_verifier", "key_facts"]  # fmt: skip
    return compare_view(pd.DataFrame({c: pd.Series(dtype=object) for c in columns}), lang)


def profile_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"views.proj.profile.{name}", lang), name) for name in PROFILES]


def rate_choices() -> list[tuple[str, float]]:
    return [(f"{x:.0%}", x) for x in ZOO_RATES]


def diff_parts(lang: str = "en") -> dict:
    """The Compare tab's diff: the cascade beside both models alone, token by token."""
    gr.Markdown(label("views.diff.intro"), elem_id="diff-intro")
    diff_btn = gr.Button(label("views.diff.run"), elem_id="diff-run")
    diff_html = gr.HTML("", elem_id="diff")
    return dict(diff_btn=diff_btn, diff_html=diff_html)


def project_parts(lang: str = "en") -> dict:
    """The Project tab: a cost model (this machine, a GPU roofline, or custom numbers) and
    the recorded runs re-priced under it."""
    gr.Markdown(label("views.proj.intro"), elem_id="proj-intro")
    proj_profile = gr.Radio(
        profile_choices(lang),
        value="roofline",
        label=label("views.proj.profile"),
        elem_id="proj-profile",
    )
    with gr.Row():
        proj_gpu = gr.Dropdown(
            [(g.label, g.name) for g in GPUS.values()], value="h100-sxm",
            label=label("views.proj.gpu"), min_width=160,
        )  # fmt: skip
        proj_dtype = gr.Dropdown(
            list(DTYPE_BYTES), value="bfloat16", label=label("views.proj.dtype"), min_width=120
        )
        proj_launch_ms = gr.Number(
            1.0, minimum=0, label=label("views.proj.launch_ms"), min_width=120
        )
    with gr.Row():
        proj_drafter_params = gr.Number(
            135e6, minimum=1, label=label("views.proj.drafter_params"), min_width=160
        )
        proj_verifier_params = gr.Number(
            1.7e9, minimum=1, label=label("views.proj.verifier_params"), min_width=160
        )
    with gr.Row():
        proj_drafter_ms = gr.Number(
            2.0, minimum=0, label=label("views.proj.drafter_ms"), min_width=120
        )
        proj_verifier_fixed_ms = gr.Number(
            12.0, minimum=0, label=label("views.proj.verifier_fixed_ms"), min_width=120
        )
        proj_verifier_token_ms = gr.Number(
            0.3, minimum=0, label=label("views.proj.verifier_token_ms"), min_width=120
        )
        proj_round_ms = gr.Number(0.5, minimum=0, label=label("views.proj.round_ms"), min_width=120)
    proj_btn = gr.Button(label("views.proj.run"), elem_id="proj-run")
    proj_note = gr.Markdown("", elem_id="proj-note")
    proj_fig = slide_plot(show_label=False, elem_id="proj-fig")
    proj_table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="proj-table")
    proj_gamma_fig = slide_plot(show_label=False, elem_id="proj-gamma-fig")
    proj_gamma_table = gr.Dataframe(
        interactive=False, wrap=True, visible=False, elem_id="proj-gamma-table"
    )
    return {k: v for k, v in locals().items() if k.startswith("proj_")}


def zoo_parts(lang: str = "en") -> dict:
    """The Compare tab's rule zoo: every acceptance rule calibrated to the same deferral
    rates on a few questions, side by side."""
    gr.Markdown(label("views.zoo.intro"), elem_id="zoo-intro")
    zoo_rules = gr.CheckboxGroup(
        calibratable_choices(lang), value=list(ZOO_DEFAULT_RULES), label=label("views.zoo.rules")
    )
    zoo_rates = gr.CheckboxGroup(
        rate_choices(), value=list(DEFAULT_RATES[:2]), label=label("views.zoo.rates")
    )
    zoo_btn = gr.Button(label("views.zoo.run"), elem_id="zoo-run")
    zoo_note = gr.Markdown("", elem_id="zoo-note")
    zoo_fig = slide_plot(show_label=False, elem_id="zoo-fig")
    zoo_table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="zoo-table")
    return {k: v for k, v in locals().items() if k.startswith("zoo_")}


ZOO_RATES = (0.1, 0.25, 0.5)


ZOO_DEFAULT_RULES = ("token_v3", "typical", "ensemble", "fuzzy")


ZOO_TOKENS = 32  # answers are short; the zoo runs its questions dozens of times


def diff_view(ctx, page, prompt, models: list, settings: Settings, lang: str = "en") -> dict:
    """The cascade beside the verifier alone and the drafter alone (same prompt and settings),
    aligned token by token."""
    v = page
    problem = prompt_problem(prompt, ctx.config) or budget_problem(
        settings.max_new_tokens, 3, ctx.config
    )
    if problem is not None:
        code, values = problem
        return {v.diff_html: f"<p>{t(f'error.{code}', lang, **values)}</p>"}
    try:
        diff = run_diff(ctx.pair(*models), prompt, replace(settings, method=CASCADE))
    except (SpecCascadeError, ValueError) as e:
        return {v.diff_html: f"<p>{_error(e, lang)}</p>"}
    return {v.diff_html: diff_html(diff, lang=lang)}


def question_slice(preset: str | None, lang: str) -> list:
    """A few questions the pair can be judged on: the embedded pair's eval slice (2 easy + 2
    hard in the page's language), else 4 general-knowledge questions (a real model knows
    capitals and authors, not the demo corpus's obscure people)."""
    if preset in (None, "", "demo"):
        items = [x for x in load_evalset() if x.lang == lang_code(lang)]
        return [x for lv in ("easy", "hard") for x in [y for y in items if y.level == lv][:2]]
    return load_evalset(GENERAL_QA)[:4]


def zoo_plan(rules: int, rates: int, items: int, limit: int, max_steps: int = 4) -> int | None:
    """The most bisection steps (2..max_steps) whose worst case fits the token budget."""
    for steps in range(max_steps, 1, -1):
        if zoo_evaluations(rules, rates, steps) * items * ZOO_TOKENS <= limit:
            return steps
    return None


def zoo_view(ctx, page, rules, rates, models: list, settings: Settings, lang="en") -> dict:
    """Each chosen rule calibrated to each chosen deferral rate on a few questions, beside
    lossless SD, block verification and the verifier alone."""
    v = page
    rules = [r for r in (rules or []) if r]
    rates = sorted({float(x) for x in (rates or [])})
    empty = {v.zoo_fig: None, v.zoo_table: _hidden()}
    if not rules or not rates:
        return {**empty, v.zoo_note: t("status.error", lang, message=t("views.zoo.empty", lang))}
    items = question_slice(models[0], lang)
    steps = zoo_plan(len(rules), len(rates), len(items), ctx.config.max_total_tokens)
    if steps is None:
        return {**empty, v.zoo_note: t("views.zoo.too_large", lang)}
    base = replace(settings, max_new_tokens=ZOO_TOKENS)
    try:
        result = zoo(ctx.pair(*models), items, base, rules, rates, steps=steps)
    except SpecCascadeError as e:
        return {**empty, v.zoo_note: t("status.error", lang, message=str(e))}
    note = t(
        "views.zoo.note", lang, items=len(items), steps=steps, runs=result.evaluations,
        tokens=ZOO_TOKENS,
    )  # fmt: skip
    return {
        v.zoo_note: note,
        v.zoo_fig: zoo_figure(result, lang),
        v.zoo_table: gr.update(value=zoo_frame(result, lang), visible=True),
    }


def cost_model(ctx, profile: str, models: list, values: dict) -> CostModel:
    """The chosen profile's cost model from the page's numbers (measured: timed once per pair
    on this machine and kept)."""
    if profile == "measured":
        return ctx.measured_profile(*models)
    if profile == "roofline":
        return build_profile(
            "roofline",
            values["drafter_params"],
            values["verifier_params"],
            gpu=values["gpu"],
            dtype=values["dtype"],
            launch_ms=values["launch_ms"],
        )
    return build_profile(
        "custom",
        values["drafter_ms"],
        values["verifier_fixed_ms"],
        values["verifier_token_ms"],
        round_overhead_ms=values["round_ms"],
    )


def project_view(
    ctx, page, traces: dict | None, trace: Trace | None, profile, models, values, lang="en"
) -> dict:
    """Re-price the recorded runs (the Compare tab's, else the last run) under a cost model:
    latency per method and speed-up against the verifier alone, the best gamma per drafting
    run (exact where the trace allows, else estimated, labelled), the break-even acceptance."""
    v = page
    runs = dict(traces or {})
    if not runs and trace is not None:
        runs = {_run_label(trace): trace}
    empty = {
        v.proj_fig: None,
        v.proj_table: _hidden(),
        v.proj_gamma_fig: None,
        v.proj_gamma_table: _hidden(),
    }
    if not runs:
        return {**empty, v.proj_note: t("views.proj.none", lang)}
    try:
        cost = cost_model(ctx, profile, models, values)
        records = project_methods(runs, cost)
        gammas = best_gammas(runs, cost)
    except (SpecCascadeError, ValueError, TypeError) as e:
        return {**empty, v.proj_note: t("status.error", lang, message=str(e))}
    note = t("views.proj.note", lang, n=len(runs)) + assumptions_html(cost, lang)
    return {
        v.proj_note: note,
        v.proj_fig: projection_figure(records, lang),
        v.proj_table: gr.update(value=projection_table(records, lang), visible=True),
        v.proj_gamma_fig: gamma_figure(gammas, lang) if gammas else None,
        v.proj_gamma_table: gr.update(value=best_gamma_table(gammas, lang), visible=True)
        if gammas
        else _hidden(),
    }


def _run_label(trace: Trace) -> str:
    """A run's method label, as the Compare tab's runs are labelled (compare.Variant)."""
    return Variant(trace.summary.method, trace.summary.rule).label


def project_api(
    trace: dict,
    profile: str = "roofline",
    drafter_params: float = 135e6,
    verifier_params: float = 1.7e9,
    gpu: str = "h100-sxm",
    dtype: str = "bfloat16",
    launch_ms: float = 1.0,
    drafter_ms: float = 2.0,
    verifier_fixed_ms: float = 12.0,
    verifier_token_ms: float = 0.3,
    round_ms: float = 0.5,
) -> dict:
    """A trace (the /run output) re-priced under a roofline or custom cost model: the
    projection and the best gamma (a projection, never a measurement)."""
    if profile not in ("roofline", "custom"):
        raise SpecCascadeError("the API projects under 'roofline' or 'custom' profiles")
    values = dict(locals())
    tr = trace_from_data(trace)
    cost = cost_model(None, profile, [], values)
    label = _run_label(tr)
    return {
        "projection": project_methods({label: tr}, cost),
        "best_gamma": best_gammas({label: tr}, cost),
        "kind": "projection",
    }


# -- handlers bound to the page's controls ---------------------------------------------------


def diff(
    ctx: AppContext, page: Page, prompt, preset, drafter, verifier, rule, alpha, gamma,
    temperature, max_new, seed, draft_policy, draft_threshold, lang="en",
) -> dict:  # fmt: skip
    """The cascade beside both models alone, from the page's settings."""
    settings = settings_of(
        CASCADE, rule, alpha, gamma, temperature, max_new, seed, draft_policy, draft_threshold
    )
    return diff_view(ctx, page, prompt, [preset, drafter, verifier], settings, lang)


PROJECT_KEYS = ("gpu", "dtype", "drafter_params", "verifier_params", "launch_ms", "drafter_ms",
                "verifier_fixed_ms", "verifier_token_ms", "round_ms")  # fmt: skip


def run_projector(ctx: AppContext, page: Page, compared, trace, profile, *rest) -> dict:
    """The projector's button: the profile's numbers from the page, then the re-pricing."""
    *numbers, preset, drafter, verifier, lang = rest
    values = {
        k: (_num(x) if k not in ("gpu", "dtype") else x) for k, x in zip(PROJECT_KEYS, numbers)
    }
    return project_view(ctx, page, compared, trace, profile, [preset, drafter, verifier], values,
                        lang)  # fmt: skip


def run_zoo(
    ctx: AppContext, page: Page, rules, rates, preset, drafter, verifier, gamma, temperature,
    seed, draft_policy, draft_threshold, lang="en",
) -> dict:  # fmt: skip
    """The rule zoo from the page's settings (each rule's parameter is calibrated)."""
    settings = settings_of(
        CASCADE, None, None, gamma, temperature, 32, seed, draft_policy, draft_threshold
    )
    return zoo_view(ctx, page, rules, rates, [preset, drafter, verifier], settings, lang)


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    """The Compare tab: every method's speed and quality, then the diff, the projector and
    the rule zoo."""
    compare_status = gr.Markdown(label("ui.compare_intro"), elem_id="compare-status")
    compare_fig = slide_plot(show_label=False, elem_id="compare-fig")
    # (tall enough for every method's row with its wrapped answer: the table must not scroll
    # inside the page; the numbers' headers get the room "agreement" needs)
    compare_table = gr.Dataframe(
        empty_compare_view(lang), interactive=False, wrap=True, elem_id="compare-table",
        max_height=4000,
        column_widths=["15%", "22%", "10%", "10%", "11%", "9%", "12%", "11%"],
    )  # fmt: skip
    return dict(
        compare_status=compare_status, compare_fig=compare_fig, compare_table=compare_table,
        **diff_parts(lang), **project_parts(lang), **zoo_parts(lang),
    )  # fmt: skip


def wire(ctx: AppContext, page: Page, heavy: dict) -> None:
    p = page
    p.compare_btn.click(
        _bind(run_compare, ctx, p),
        p.cascade_inputs,
        [p.tabs, p.compare_status, p.compare_fig, p.compare_table, p.compared],
        api_name="compare",
        show_progress_on=[p.compare_fig],  # the status line says the progress in words
        **heavy,
    )
    p.diff_btn.click(
        _bind(diff, ctx, p),
        [
            p.prompt,
            *p.models,
            p.rule,
            p.alpha,
            p.gamma,
            p.temperature,
            p.max_new,
            p.seed,
            p.draft_policy,
            p.draft_threshold,
            p.lang,
        ],  # fmt: skip
        [p.diff_html],
        api_name="diff",
        **heavy,
    )
    numbers = [
        p.proj_gpu, p.proj_dtype, p.proj_drafter_params, p.proj_verifier_params, p.proj_launch_ms,
        p.proj_drafter_ms, p.proj_verifier_fixed_ms, p.proj_verifier_token_ms, p.proj_round_ms,
    ]  # fmt: skip
    p.proj_btn.click(
        _bind(run_projector, ctx, p),
        [p.compared, p.trace, p.proj_profile, *numbers, *p.models, p.lang],
        [p.proj_note, p.proj_fig, p.proj_table, p.proj_gamma_fig, p.proj_gamma_table],
        api_name=False,
        **heavy,
    )
    p.zoo_btn.click(
        _bind(run_zoo, ctx, p),
        [
            p.zoo_rules,
            p.zoo_rates,
            *p.models,
            p.gamma,
            p.temperature,
            p.seed,
            p.draft_policy,
            p.draft_threshold,
            p.lang,
        ],  # fmt: skip
        [p.zoo_note, p.zoo_fig, p.zoo_table],
        api_name="zoo",
        **heavy,
    )
    gr.api(project_api, api_name="project")

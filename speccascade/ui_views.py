"""The app's analysis views beyond a single run: the decision plane, the round replay, the
token-aligned diff, alpha calibration and the cost projector (issue "beyond every peer").

Wiring only, like ui.py: each handler takes the app context and the page, reads a recorded
trace or runs the library, and returns outputs by component. Handlers never import ui.py (ui
imports this module); the page is whatever `ui.Page` is. The API functions at the end take and
return plain JSON, so `gradio_client` users get data, not figures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import gradio as gr
import pandas as pd

from .calibrate import Target, calibrate, evaluations_needed
from .compare import Variant
from .diff import run_diff
from .engine import CASCADE, Settings
from .errors import SpecCascadeError
from .evalsets import load_evalset
from .i18n import t
from .plane import PLANES, boundary, box, plane_points
from .project import (
    DTYPE_BYTES,
    GPUS,
    PROFILES,
    CostModel,
    best_gammas,
    build_profile,
    project_methods,
)
from .replay import replay_round, rounds_of
from .rules import SPEC_CASCADE_RULES
from .serving import budget_problem, prompt_problem
from .share import trace_from_data
from .trace import Trace
from .viz_diff import diff_html
from .viz_plane import decision_plane_figure
from .viz_project import (
    assumptions_html,
    best_gamma_table,
    gamma_figure,
    projection_figure,
    projection_table,
)
from .viz_replay import replay_html


@dataclass
class Views:
    """The components of the analysis views (built inside ui.layout's tabs)."""

    plane_fig: gr.Plot
    plane_note: gr.Markdown
    replay_round: gr.Slider
    replay_prev: gr.Button
    replay_next: gr.Button
    replay_play: gr.Button
    replay_timer: gr.Timer
    replay_html: gr.HTML
    diff_btn: gr.Button
    diff_html: gr.HTML
    cal_max_calls: gr.Number
    cal_min_share: gr.Number
    cal_rules: gr.CheckboxGroup
    cal_btn: gr.Button
    cal_note: gr.Markdown
    cal_table: gr.Dataframe
    proj_profile: gr.Radio
    proj_gpu: gr.Dropdown
    proj_dtype: gr.Dropdown
    proj_drafter_params: gr.Number
    proj_verifier_params: gr.Number
    proj_launch_ms: gr.Number
    proj_drafter_ms: gr.Number
    proj_verifier_fixed_ms: gr.Number
    proj_verifier_token_ms: gr.Number
    proj_round_ms: gr.Number
    proj_btn: gr.Button
    proj_note: gr.Markdown
    proj_fig: gr.Plot
    proj_table: gr.Dataframe
    proj_gamma_fig: gr.Plot
    proj_gamma_table: gr.Dataframe


def profile_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"views.proj.profile.{name}", lang), name) for name in PROFILES]


def rule_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"rule.{r}", lang), r) for r in SPEC_CASCADE_RULES]


def inspect_parts(label, lang: str) -> dict:
    """The Inspect tab: the decision plane, then the round replay."""
    gr.Markdown(label("views.plane.intro"), elem_id="plane-intro")
    plane_note = gr.Markdown(label("views.plane.none"), elem_id="plane-note")
    plane_fig = gr.Plot(show_label=False, elem_id="plane")
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
    return dict(
        plane_fig=plane_fig,
        plane_note=plane_note,
        replay_round=replay_round,
        replay_prev=replay_prev,
        replay_next=replay_next,
        replay_play=replay_play,
        replay_timer=replay_timer,
        replay_html=replay_html,
    )


def diff_parts(label, lang: str) -> dict:
    """The Compare tab's diff: the cascade beside both models alone, token by token."""
    gr.Markdown(label("views.diff.intro"), elem_id="diff-intro")
    diff_btn = gr.Button(label("views.diff.run"), elem_id="diff-run")
    diff_html = gr.HTML("", elem_id="diff")
    return dict(diff_btn=diff_btn, diff_html=diff_html)


def calibrate_parts(label, lang: str) -> dict:
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
        rule_choices(lang),
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


def project_parts(label, lang: str) -> dict:
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
    proj_fig = gr.Plot(show_label=False, elem_id="proj-fig")
    proj_table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="proj-table")
    proj_gamma_fig = gr.Plot(show_label=False, elem_id="proj-gamma-fig")
    proj_gamma_table = gr.Dataframe(
        interactive=False, wrap=True, visible=False, elem_id="proj-gamma-table"
    )
    return {k: v for k, v in locals().items() if k.startswith("proj_")}


CALIBRATE_TOKENS = 32  # eval answers are short; a calibration runs the slice many times
CALIBRATE_RULES = ("token_v3", "chow", "diff")


def _error(e: Exception, lang: str) -> str:
    return t("error.other", lang, detail=str(e))


# -- decision plane --------------------------------------------------------------------------


def plane_view(page, trace: Trace | None, alpha, decode=None, lang: str = "en") -> dict:
    """The run's drafts on its rule's own axes, decided at `alpha` (the what-if slider)."""
    v = page.views
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


# -- round replay ----------------------------------------------------------------------------


def replay_view(page, trace: Trace | None, index, decode=None, lang: str = "en") -> dict:
    """One round of the run, replayed from its record (no model runs)."""
    v = page.views
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
    out[page.views.replay_timer] = gr.Timer(active=False)
    out[page.views.replay_play] = gr.update(value=t("views.replay.play", lang))
    return out


def replay_toggle(page, playing: bool, lang="en") -> dict:
    """Play / pause."""
    v = page.views
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
    out[page.views.replay_timer] = gr.Timer(active=nxt < n - 1)
    if nxt >= n - 1:
        out[page.views.replay_play] = gr.update(value=t("views.replay.play", lang))
    return out


# -- token-aligned diff ----------------------------------------------------------------------


def diff_view(ctx, page, prompt, models: list, settings: Settings, lang: str = "en") -> dict:
    """The cascade beside the verifier alone and the drafter alone (same prompt and settings),
    aligned token by token."""
    v = page.views
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


# -- alpha calibration -----------------------------------------------------------------------


def calibration_plan(rules: int, items: int, limit: int, max_steps: int = 6) -> int | None:
    """The most bisection steps (2..max_steps) whose worst case fits the token budget."""
    for steps in range(max_steps, 1, -1):
        if evaluations_needed(rules, steps) * items * CALIBRATE_TOKENS <= limit:
            return steps
    return None


def _positive(x) -> float | None:
    """A target number from the page: blank or 0 means no such target."""
    return float(x) if isinstance(x, (int, float)) and x == x and x > 0 else None


def calibrate_view(
    ctx, page, max_calls, min_share, rules, models: list, settings: Settings, lang="en"
) -> dict:
    """Each chosen rule's alpha meeting the target on the eval slice, side by side."""
    v = page.views
    rules = [r for r in (rules or []) if r]
    try:
        target = Target(_positive(max_calls), _positive(min_share))
        if not rules:
            raise SpecCascadeError(t("views.cal.no_rules", lang))
    except SpecCascadeError as e:
        return {v.cal_note: t("status.error", lang, message=str(e)), v.cal_table: _hidden()}
    items = [x for x in load_evalset() if x.lang == lang]
    items = [x for lv in ("easy", "hard") for x in [y for y in items if y.level == lv][:2]]
    steps = calibration_plan(len(rules), len(items), ctx.config.max_total_tokens)
    if steps is None:
        return {v.cal_note: t("views.cal.too_large", lang), v.cal_table: _hidden()}
    base = replace(settings, max_new_tokens=CALIBRATE_TOKENS)
    try:
        verifier, results = calibrate(ctx.pair(*models), items, target, base, rules, steps=steps)
    except SpecCascadeError as e:
        return {v.cal_note: t("status.error", lang, message=str(e)), v.cal_table: _hidden()}
    rows = [(t("method.verifier", lang), "—", verifier, None, 1)] + [
        (t(f"rule.{r}", lang), f"{c.point.alpha:.3g}", c.point, c.met, c.evaluations)
        for r, c in results.items()
    ]
    table = pd.DataFrame(
        [
            {
                t("views.cal.col.rule", lang): name,
                "α": alpha,
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


def _hidden() -> dict:
    return gr.update(value=None, visible=False)


# -- cost projector --------------------------------------------------------------------------


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
    v = page.views
    runs = dict(traces or {})
    if not runs and trace is not None:
        runs = {_label(trace): trace}
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


def _label(trace: Trace) -> str:
    """A run's method label, as the Compare tab's runs are labelled (compare.Variant)."""
    return Variant(trace.summary.method, trace.summary.rule).label


# -- JSON API (gradio_client): data in, data out ---------------------------------------------


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
    label = _label(tr)
    return {
        "projection": project_methods({label: tr}, cost),
        "best_gamma": best_gammas({label: tr}, cost),
        "kind": "projection",
    }

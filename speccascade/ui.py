"""The Gradio app: `layout` builds the page, module-level handlers answer its events, and
`build_demo` wires the two. Handlers take an `AppContext` (deployment config, loaded pairs,
per-session stop flags) and the `Page`, and return their outputs keyed by component. Strings
come from `i18n`; every decision and number comes from the library.

API names (for gradio_client): /run, /stop, /compare, /sweep, /whatif, /inspect, /rule_info.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
import tempfile
import threading
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import gradio as gr
import pandas as pd

from . import share, ui_views, viz
from .analysis import verdict, verifier_seconds_per_token, whatif
from .bench import verifier_token
from .compare import (
    SWEPT,
    SweepTooLarge,
    Variant,
    compare,
    compare_variants,
    plan_sweep,
    sweep,
)
from .drafting import DRAFT_POLICIES
from .engine import APP_DEFAULTS, CASCADE, METHOD_REGISTRY, RoundEvent, Settings, stream
from .errors import ModelRuntimeError, SettingsError, SpecCascadeError, TraceFileError
from .evalsets import SHOWCASE, find_item, load_evalset
from .explain import worked_example
from .i18n import STRINGS, lang_of, method_label, policy_label, t, variant_label
from .i18n.learn import learn_markdown
from .models import ModelPair
from .quality import fact_token_mask, states_facts
from .rules import RULES, SPEC_CASCADE_RULES
from .serving import (
    PRESET_CHOICES,
    PairCache,
    ServeConfig,
    budget_problem,
    in_background,
    prompt_problem,
)
from .story import SCENE, SCENES
from .trace import Summary, Trace

try:  # ZeroGPU on Hugging Face Spaces; a no-op everywhere else
    import spaces

    gpu = spaces.GPU
except ImportError:  # pragma: no cover - depends on the deployment

    def gpu(fn):
        return fn


log = logging.getLogger("speccascade.app")

# Static labels render in the browser's language (Gradio picks the locale); keys are the i18n
# keys with dots replaced (the browser's i18n library reads dots as nesting).
UI_KEYS = [k for k in STRINGS if k.startswith(("ui.", "views."))]
# Gradio's own page chrome has a key its Chinese locale lacks (the run-history footer shows
# the raw key "common.complete" after a run): supplied here under Gradio's own key.
GRADIO_CHROME = {"common.complete": ("complete", "完成")}
I18N = gr.I18n(
    en={k.replace(".", "_"): STRINGS[k][0] for k in UI_KEYS}
    | {k: v[0] for k, v in GRADIO_CHROME.items()},
    zh={k.replace(".", "_"): STRINGS[k][1] for k in UI_KEYS}
    | {k: v[1] for k, v in GRADIO_CHROME.items()},
)


def label(key: str):
    return I18N(key.replace(".", "_"))


CSS = (
    viz.TOKEN_CSS
    + """
.sc-title h1 { font-size: 1.35rem; margin: 0; }
.sc-intro p { margin: 0; }
#story { gap: 6px; }
#story .sc-scenes { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 6px; }
#story button { white-space: normal; line-height: 1.2; min-height: 2.6em; }
@media (max-width: 640px) {
  #story .sc-scenes { grid-template-columns: repeat(2, minmax(0, 1fr)); }
  .sc-intro { display: none; }
}
#verdict p { font-size: 1.02rem; margin: 0; }
#compare-table th, #compare-table td, #compare-table span,
#stats th, #stats td, #stats span { font-family: var(--font); }
#stats th .cell-menu-button { display: none; }
#sweep-table th, #sweep-table td, #sweep-table span { font-family: var(--font); }
@media (max-width: 640px) {
  #compare-table .table-wrap, #learn { overflow-x: auto; }
  #compare-table table { min-width: 760px; }
  #learn table { display: block; overflow-x: auto; }
}
#compare-table th, #compare-table th .header { white-space: nowrap; font-size: 12px; }
#compare-table th .cell-wrap { padding-left: 5px; padding-right: 4px; }
#compare-table th .cell-menu-button { display: none; }
.sc-whatif p { margin: 0; font-size: 0.92rem; }
select, .wrap-inner input { text-overflow: ellipsis; padding-right: 1.8em !important; }
"""
)

# Token clicks (and Enter on a focused token) report its position to the server.
TOKENS_JS = """
const pick = (e) => {
  const tok = e.target.closest('[data-pos]');
  if (tok) trigger('click', {pos: Number(tok.dataset.pos)});
};
element.addEventListener('click', pick);
element.addEventListener('keydown', (e) => { if (e.key === 'Enter') pick(e); });
"""

# What `Blocks.launch` needs besides the Blocks: the strings, the styles, and a footer without
# the run-history link (Gradio's Chinese locale lacks its words).
LAUNCH = {"i18n": I18N, "css": CSS, "footer_links": ["api", "gradio", "settings"]}

_USER_ERRORS = (SpecCascadeError, ModelRuntimeError, FileNotFoundError)


# -- the app's context: what every handler may use --------------------------------------------


@dataclass
class AppContext:
    """What handlers share across sessions: the deployment's limits, the loaded pairs, the
    verifier's measured speed per pair, and one stop flag per session."""

    config: ServeConfig
    cache: PairCache
    _speed: dict = field(default_factory=dict)
    _profiles: dict = field(default_factory=dict)
    _stops: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pair(self, preset, drafter="", verifier="") -> ModelPair:
        return self.cache.get(preset, drafter, verifier)

    def verifier_speed(self, preset, drafter="", verifier="") -> float:
        """Seconds per token of the verifier alone on this machine, measured once per pair."""
        key = self.cache.key(preset, drafter, verifier)
        if key not in self._speed:
            self._speed[key] = verifier_seconds_per_token(self.pair(preset, drafter, verifier))
        return self._speed[key]

    def measured_profile(self, preset, drafter="", verifier=""):
        """This machine's cost model for a pair (project.measure_profile), timed once."""
        from .project import measure_profile

        key = self.cache.key(preset, drafter, verifier)
        if key not in self._profiles:
            self._profiles[key] = measure_profile(self.pair(preset, drafter, verifier))
        return self._profiles[key]

    def measured(self, preset, drafter="", verifier="") -> bool:
        return self.cache.key(preset, drafter, verifier) in self._speed

    def new_stop(self, session: str) -> threading.Event:
        with self._lock:
            self._stops[session] = event = threading.Event()
        return event

    def stop(self, session: str) -> bool:
        """Ask this session's run to end after its current round; False if none runs."""
        with self._lock:
            event = self._stops.get(session)
        if event is None or event.is_set():
            return False
        event.set()
        return True

    def done(self, session: str, event: threading.Event) -> None:
        with self._lock:
            if self._stops.get(session) is event:
                del self._stops[session]


def _session(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "api"


# -- the page --------------------------------------------------------------------------------


@dataclass
class Page:
    """Every component a handler reads or writes (built by `layout`)."""

    lang: gr.State
    trace: gr.State
    story: gr.State
    compared: gr.State  # the last Compare's traces by method label (the projector re-prices)
    prompt: gr.Textbox
    examples: gr.Dataset
    preset: gr.Dropdown
    drafter: gr.Textbox
    verifier: gr.Textbox
    method: gr.Dropdown
    rule: gr.Dropdown
    alpha: gr.Slider
    rule_md: gr.Markdown
    gamma: gr.Slider
    temperature: gr.Slider
    max_new: gr.Slider
    seed: gr.Number
    draft_policy: gr.Dropdown
    draft_threshold: gr.Slider
    run_btn: gr.Button
    stop_btn: gr.Button
    compare_btn: gr.Button
    scene_btns: list
    caption: gr.Markdown
    story_fig: gr.Plot
    tabs: gr.Tabs
    verdict: gr.Markdown
    status: gr.Markdown
    legend: gr.HTML
    tokens: gr.HTML
    whatif_note: gr.Markdown
    heat: gr.Plot
    position: gr.Slider
    insp: gr.Plot
    stats: gr.Dataframe
    timeline: gr.Plot
    drafting: gr.Plot
    drafting_note: gr.Markdown
    share_btn: gr.Button
    share_link: gr.Textbox
    upload: gr.UploadButton
    files: gr.File
    trace_json: gr.JSON
    compare_status: gr.Markdown
    compare_fig: gr.Plot
    compare_table: gr.Dataframe
    sweep_source: gr.Radio
    sweep_n: gr.Slider
    sweep_x: gr.Radio
    sweep_btn: gr.Button
    sweep_note: gr.Markdown
    sweep_fig: gr.Plot
    sweep_table: gr.Dataframe
    learn: gr.Markdown
    views: ui_views.Views

    @property
    def models(self) -> list:
        return [self.preset, self.drafter, self.verifier]

    @property
    def knobs(self) -> list:
        return [self.method, self.rule, self.alpha, self.gamma, self.temperature]

    @property
    def run_outputs(self) -> list:
        """What a run shows (the API returns them in this order, States left out)."""
        return [
            self.tokens,
            self.heat,
            self.timeline,
            self.stats,
            self.trace_json,
            self.position,
            self.insp,
            self.files,
            self.verdict,
            self.whatif_note,
            self.drafting,
            self.drafting_note,
            self.learn,
            self.status,
            self.trace,
        ]


LATEX = [{"left": "$$", "right": "$$", "display": False}]


def layout(config: ServeConfig) -> Page:
    """The page's components, inside the current gr.Blocks. Values are the English defaults;
    `localize` swaps in the browser's language on load."""
    lang = "en"
    gr.Markdown(f"# {label('ui.title')}", elem_classes="sc-title", elem_id="title")
    gr.Markdown(label("ui.intro"), elem_classes="sc-intro")
    lang_state, trace_state, story_state = gr.State("en"), gr.State(None), gr.State({})
    with gr.Group(elem_id="story"):
        gr.Markdown(label("ui.story"))
        with gr.Row(elem_classes="sc-scenes"):
            scene_btns = [
                gr.Button(label(f"ui.scene.{s.key}"), size="sm", elem_id=f"scene-{s.key}")
                for s in SCENES
            ]
        caption = gr.Markdown(t("story.hint", lang), elem_id="caption")
        story_fig = gr.Plot(visible=False, show_label=False, elem_id="story-fig")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=300):
            prompt = gr.Textbox(
                label=label("ui.prompt"),
                value=SHOWCASE[0].question,
                lines=2,
                max_lines=6,
                info=t("prompt.info", lang, limit=config.max_prompt_chars),
                elem_id="prompt",
            )
            with gr.Row():
                run_btn = gr.Button(label("ui.run"), variant="primary", elem_id="run", scale=2)
                stop_btn = gr.Button(label("ui.stop"), variant="stop", elem_id="stop", scale=1)
            examples = gr.Dataset(
                components=[prompt],
                type="values",
                label=label("ui.examples"),
                elem_id="examples",
                samples_per_page=8,
                **examples_for(lang),
            )
            method = gr.Dropdown(
                method_choices(lang), value=APP_DEFAULTS.method, label=label("ui.method")
            )
            rule = gr.Dropdown(rule_choices(lang), value=APP_DEFAULTS.rule, label=label("ui.rule"))
            # Server-side bounds span every rule (API clients may pick any); the page load and
            # every method/rule change narrow the visible slider to the chosen rule.
            alpha = gr.Slider(
                min(r.slider[0] for r in RULES.values()),
                max(r.slider[1] for r in RULES.values()),
                value=APP_DEFAULTS.alpha,
                step=0.01,
                label="α",
                elem_id="alpha",
            )
            rule_md = gr.Markdown(
                rule_markdown(APP_DEFAULTS.method, APP_DEFAULTS.rule, lang),
                latex_delimiters=LATEX,
                elem_id="rule-md",
            )
            compare_btn = gr.Button(label("ui.compare"), elem_id="compare")
            with gr.Accordion(label("ui.more"), open=False, elem_id="more"):
                gamma = gr.Slider(1, 12, value=APP_DEFAULTS.gamma, step=1, label=label("ui.gamma"))
                temperature = gr.Slider(
                    0,
                    2,
                    value=APP_DEFAULTS.temperature,
                    step=0.05,
                    label=label("ui.temperature"),
                    elem_id="temperature",
                )
                max_new = gr.Slider(
                    1,
                    config.max_new_tokens,
                    value=min(APP_DEFAULTS.max_new_tokens, config.max_new_tokens),
                    step=1,
                    label=label("ui.max_new_tokens"),
                    elem_id="max-new",
                )
                seed = gr.Number(0, precision=0, minimum=0, label=label("ui.seed"))
                draft_policy = gr.Dropdown(
                    policy_choices(lang),
                    value=APP_DEFAULTS.draft_policy,
                    label=label("ui.draft_policy"),
                    info=label("ui.draft_policy_info"),
                    elem_id="draft-policy",
                )
                draft_threshold = gr.Slider(
                    0,
                    1,
                    value=APP_DEFAULTS.draft_threshold,
                    step=0.05,
                    label=label("ui.draft_threshold"),
                    interactive=DRAFT_POLICIES[APP_DEFAULTS.draft_policy].stops_early,
                    elem_id="draft-threshold",
                )
                preset = gr.Dropdown(PRESET_CHOICES, value=config.preset, label=label("ui.pair"))
                with gr.Row(visible=config.allow_custom_models):
                    drafter = gr.Textbox(
                        "", label=label("ui.custom_drafter"), placeholder="owner/name"
                    )
                    verifier = gr.Textbox(
                        "", label=label("ui.custom_verifier"), placeholder="owner/name"
                    )
        with gr.Column(scale=2, min_width=300), gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab(label("ui.tab_run"), id="run"):
                verdict_md = gr.Markdown("", elem_id="verdict")
                status = gr.Markdown(t("status.idle", lang), elem_id="status")
                legend = gr.HTML(viz.legend_html(lang=lang), elem_id="legend")
                tokens = gr.HTML(
                    viz.token_html(None, lang=lang), elem_id="tokens", js_on_load=TOKENS_JS
                )
                whatif_note = gr.Markdown("", elem_classes="sc-whatif", elem_id="whatif")
                heat = gr.Plot(label=label("ui.heatmap"), elem_id="heatmap")
                position = gr.Slider(
                    0,
                    1,
                    value=0,
                    step=1,
                    label=label("ui.position"),
                    interactive=False,
                    elem_id="position",
                )
                insp = gr.Plot(label=label("ui.inspector"), elem_id="inspector")
                stats = gr.Dataframe(
                    empty_stats(lang),
                    label=label("ui.stats"),
                    interactive=False,
                    wrap=True,
                    column_widths=["50%", "50%"],
                    elem_id="stats",
                )
                time_fig = gr.Plot(label=label("ui.timeline"), elem_id="timeline")
                drafting_note = gr.Markdown("", elem_id="drafting-note")
                drafting = gr.Plot(show_label=False, elem_id="drafting")
                files = gr.File(label=label("ui.downloads"), file_count="multiple")
                with gr.Row(equal_height=True):
                    share_btn = gr.Button(label("ui.share"), size="sm", elem_id="share")
                    upload = gr.UploadButton(
                        label("ui.open_trace"),
                        file_types=[".json"],
                        type="filepath",
                        size="sm",
                        elem_id="open-trace",
                    )
                share_link = gr.Textbox(
                    "",
                    label=label("ui.share_link"),
                    interactive=False,
                    buttons=["copy"],
                    elem_id="share-link",
                )
                with gr.Accordion(label("ui.raw_trace"), open=False):
                    trace_json = gr.JSON()
            with gr.Tab(label("ui.tab_inspect"), id="inspect"):
                inspect = ui_views.inspect_parts(label, lang)
            with gr.Tab(label("ui.tab_compare"), id="compare"):
                compare_status = gr.Markdown("", elem_id="compare-status")
                compare_fig = gr.Plot(show_label=False, elem_id="compare-fig")
                compare_table = gr.Dataframe(
                    interactive=False,
                    wrap=True,
                    elem_id="compare-table",
                    max_height=1000,
                    column_widths=["17%", "23%", "10%", "10%", "10%", "10%", "10%", "10%"],
                )
                diff = ui_views.diff_parts(label, lang)
                proj = ui_views.project_parts(label, lang)
            with gr.Tab(label("ui.tab_sweep"), id="sweep"):
                with gr.Row():
                    sweep_source = gr.Radio(
                        sweep_sources(lang), value="prompt", label=label("ui.sweep_source")
                    )
                    sweep_n = gr.Slider(2, 11, value=5, step=1, label=label("ui.sweep_alphas"))
                    sweep_x = gr.Radio(
                        sweep_axes(lang), value="relative_latency", label=label("ui.sweep_x")
                    )
                sweep_btn = gr.Button(label("ui.sweep_run"), elem_id="sweep")
                sweep_note = gr.Markdown("", elem_id="sweep-note")
                sweep_fig = gr.Plot(show_label=False, elem_id="sweep-fig")
                sweep_table = gr.Dataframe(interactive=False, elem_id="sweep-table")
                cal = ui_views.calibrate_parts(label, lang)
            with gr.Tab(label("ui.tab_learn"), id="learn"):
                learn = gr.Markdown(
                    learn_markdown(lang, None), latex_delimiters=LATEX, elem_id="learn"
                )
    return Page(
        lang=lang_state,
        trace=trace_state,
        story=story_state,
        compared=gr.State(None),
        prompt=prompt,
        examples=examples,
        preset=preset,
        drafter=drafter,
        verifier=verifier,
        method=method,
        rule=rule,
        alpha=alpha,
        rule_md=rule_md,
        gamma=gamma,
        temperature=temperature,
        max_new=max_new,
        seed=seed,
        draft_policy=draft_policy,
        draft_threshold=draft_threshold,
        run_btn=run_btn,
        stop_btn=stop_btn,
        compare_btn=compare_btn,
        scene_btns=scene_btns,
        caption=caption,
        story_fig=story_fig,
        tabs=tabs,
        verdict=verdict_md,
        status=status,
        legend=legend,
        tokens=tokens,
        whatif_note=whatif_note,
        heat=heat,
        position=position,
        insp=insp,
        stats=stats,
        timeline=time_fig,
        drafting=drafting,
        drafting_note=drafting_note,
        share_btn=share_btn,
        share_link=share_link,
        upload=upload,
        files=files,
        trace_json=trace_json,
        compare_status=compare_status,
        compare_fig=compare_fig,
        compare_table=compare_table,
        sweep_source=sweep_source,
        sweep_n=sweep_n,
        sweep_x=sweep_x,
        sweep_btn=sweep_btn,
        sweep_note=sweep_note,
        sweep_fig=sweep_fig,
        sweep_table=sweep_table,
        learn=learn,
        views=ui_views.Views(**inspect, **diff, **cal, **proj),
    )


# -- choices and texts in a language -----------------------------------------------------------


def method_choices(lang: str) -> list[tuple[str, str]]:
    return [(method_label(m, None, lang), m) for m in METHOD_REGISTRY]


def policy_choices(lang: str) -> list[tuple[str, str]]:
    return [(policy_label(p, lang), p) for p in DRAFT_POLICIES]


def rule_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"rule.{r}", lang), r) for r in SPEC_CASCADE_RULES]


def sweep_sources(lang: str) -> list[tuple[str, str]]:
    return [(t("sweep.this_prompt", lang), "prompt"), (t("sweep.eval", lang), "eval")]


def sweep_axes(lang: str) -> list[tuple[str, str]]:
    return [
        (t("sweep.x.latency", lang), "relative_latency"),
        (t("sweep.x.calls", lang), "verifier_calls_per_token"),
    ]


def examples_for(lang: str) -> dict:
    """The showcase questions in the page's language, each captioned easy or hard."""
    lang = lang_of(lang)
    shown = [x for x in SHOWCASE if x.lang == lang]
    return {
        "samples": [[x.question] for x in shown],
        "sample_labels": [f"{x.question} · {t(f'example.{x.level}', lang)}" for x in shown],
    }


def rule_markdown(method: str, rule: str | None, lang: str = "en") -> str:
    r = viz.rule_for(method, rule)
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
    r = viz.rule_for(method, rule)
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
            rule=t(f"rule.{r.name}", lang),
            lo=f"{lo:g}",
            hi=f"{hi:g}",
            sd=t("alpha.is_sd" if r.alpha_sd >= lo else "alpha.to_sd", lang),
            drafter=t("alpha.is_drafter" if r.alpha_drafter <= hi else "alpha.to_drafter", lang),
        ),
    )


def empty_stats(lang: str) -> pd.DataFrame:
    """The stats panel before any run: its headers and one line saying what will be there."""
    columns = list(viz.stats_frame(None, lang=lang).columns)
    return pd.DataFrame([["—", t("stats.empty", lang)]], columns=columns)


def verdict_text(trace: Trace, verifier_token_s: float | None, lang: str) -> str:
    """One plain sentence: what was kept, what the verifier did, and the speed against the
    verifier alone (with the reason and what to try when slower)."""
    v = verdict(trace, verifier_token_s)
    stopped = t("verdict.stopped", lang) if v.stopped else ""
    if v.method == "verifier":
        return stopped + t("verdict.yardstick", lang, tokens=v.tokens, s=v.wall_s)
    if v.drafts:
        head = t(
            "verdict.drafts",
            lang,
            kept=v.kept_fraction,
            n_kept=v.kept,
            drafted=v.drafted,
            calls=v.verifier_calls,
            tokens=v.tokens,
        )
    else:
        head = t(
            "verdict.single",
            lang,
            method=method_label(v.method, None, lang),
            tokens=v.tokens,
            calls=v.verifier_calls,
        )
    x = v.speedup
    if x is None:
        tail = "."
    elif 0.9 <= x <= 1.1:
        tail = t("verdict.same", lang)
    elif x > 1:
        tail = t("verdict.faster", lang, x=x)
    else:
        reason = v.reason
        rule = viz.rule_for(trace.summary.method, trace.summary.rule)
        if reason == "low_acceptance" and rule is not None and not rule.has_alpha:
            reason = "low_acceptance_sd"  # no α to raise: point to the cascade instead
        tail = t(f"verdict.slower.{reason}" if reason else "verdict.slower", lang, x=1 / x)
    return stopped + head + tail


# -- checks with messages in the page's language --------------------------------------------


class UserError(Exception):
    """Bad input: shown in the page (in its language), logged as one line."""


def check_prompt(prompt, config: ServeConfig, lang: str) -> str:
    """The prompt, or a UserError worded in the page's language (serving.prompt_problem)."""
    problem = prompt_problem(prompt, config)
    if problem is not None:
        code, values = problem
        raise UserError(t(f"error.{code}", lang, **values))
    return prompt


def check_budget(max_new_tokens, runs: int, config: ServeConfig, lang: str) -> int:
    """max new tokens, or a UserError worded in the page's language (serving.budget_problem)."""
    value = _int(max_new_tokens)
    problem = budget_problem(value, runs, config)
    if problem is not None:
        code, values = problem
        raise UserError(t(f"error.{code}", lang, **values))
    return value


def _message(e: Exception, lang: str) -> str:
    log.warning("user error: %s: %s", type(e).__name__, e)  # one line, no traceback
    return str(e) if isinstance(e, UserError) else t("error.other", lang, detail=str(e))


def settings_of(
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
) -> Settings:
    """The one options object, from the page's (or an API client's) values."""
    return Settings(
        draft_policy=draft_policy or "fixed",
        draft_threshold=_num(draft_threshold),
        method=method,
        rule=rule,
        alpha=_num(alpha),
        gamma=_int(gamma),
        temperature=_num(temperature),
        max_new_tokens=_int(max_new_tokens),
        seed=_int(seed),
    )


# -- handlers --------------------------------------------------------------------------------


def _cleared(page: Page, lang: str, message: str) -> dict:
    """A failed request: the old run's outputs go, and the status says what to change."""
    return {
        page.tokens: viz.token_html(None, lang=lang),
        page.heat: None,
        page.timeline: None,
        page.stats: empty_stats(lang),
        page.trace_json: None,
        page.position: gr.update(value=0, maximum=1, interactive=False),
        page.insp: None,
        page.files: None,
        page.verdict: "",
        page.whatif_note: "",
        page.drafting: None,
        page.drafting_note: "",
        page.status: t("status.error", lang, message=message),
        page.trace: None,
    }


def _shown(
    ctx: AppContext,
    page: Page,
    trace: Trace,
    models: list,
    lang: str,
    prompt: str,
    measure: bool = True,
) -> dict:
    """Every run panel showing `trace` (finished or stopped): they always agree. Without
    `measure` (a restored trace file) the verdict does not time the verifier on this machine."""
    s = trace.summary
    pair = ctx.pair(*models)
    rule = viz.rule_for(s.method, s.rule)
    stopped = s.stop_reason == "cancelled"
    status = (
        t("status.stopped", lang, n=s.new_tokens)
        if stopped
        else t(
            "status.done",
            lang,
            n=s.new_tokens,
            s=s.wall_s,
            reason=t(f"reason.{s.stop_reason}", lang),
        )
    )
    example = worked_example(trace, prompt=prompt, decode=lambda i: pair.tokenizer.decode([i]))
    return {
        page.tokens: viz.token_html(trace.tokens, lang=lang, selected=0 if trace.tokens else None),
        page.heat: viz.heatmap(trace, lang=lang) if trace.tokens else None,
        page.timeline: viz.timeline(trace, lang=lang),
        page.stats: viz.stats_frame(trace, lang=lang),
        page.trace_json: trace.to_dict(),
        page.position: gr.update(
            minimum=0,
            maximum=max(1, len(trace.tokens) - 1),
            value=0,
            step=1,
            interactive=len(trace.tokens) > 1,
        ),
        page.insp: viz.inspector(trace, 0, rule, s.alpha, pair.tokenizer, lang=lang)
        if trace.tokens
        else None,
        page.files: _write_exports(trace),
        page.verdict: verdict_text(trace, ctx.verifier_speed(*models) if measure else None, lang),
        page.whatif_note: "",
        page.drafting: viz.drafting(trace, lang=lang),
        page.drafting_note: f"**{t('ui.drafting', lang)}** · {viz.drafting_note(trace, lang=lang)}",
        page.status: status,
        page.learn: learn_markdown(lang, example) if example is not None else gr.skip(),
        page.trace: trace,
    }


def _execute(
    ctx: AppContext, page: Page, prompt, settings: Settings, models: list, lang: str, session
) -> Iterator[dict]:
    """Run one method, streaming the token strip, then show the whole run in every panel.
    Returns the trace (None after a user error, which clears the panels instead)."""
    try:
        prompt = check_prompt(prompt, ctx.config, lang)
        check_budget(settings.max_new_tokens, 1, ctx.config, lang)
        settings.validated(ctx.config.max_new_tokens)
        if not ctx.measured(*models):
            yield {page.status: t("status.loading", lang)}
            ctx.verifier_speed(*models)
        pair = ctx.pair(*models)
    except (UserError, *_USER_ERRORS) as e:
        yield _cleared(page, lang, _message(e, lang))
        return None
    stop = ctx.new_stop(session)
    partial, trace = [], None
    events = in_background(
        lambda bg_stop: stream(
            pair, prompt, settings, should_stop=lambda: bg_stop() or stop.is_set()
        )
    )
    try:
        with contextlib.closing(events):  # a closed page closes `run`, and with it the worker
            for batch in events:
                for event in batch:
                    if isinstance(event, RoundEvent):
                        partial.extend(event.tokens)
                    else:
                        trace = event
                if trace is None and partial:
                    yield {
                        page.tokens: viz.token_html(partial, lang=lang),
                        page.status: t("status.running", lang, n=len(partial)),
                    }
    except _USER_ERRORS as e:
        yield _cleared(page, lang, _message(e, lang))
        return None
    finally:
        ctx.done(session, stop)
    yield _shown(ctx, page, trace, models, lang, prompt)
    return trace


@gpu
def run(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
    lang="en",
    request: gr.Request = None,
):
    """Run one method: coloured tokens stream in, then every panel shows the run."""
    try:
        settings = settings_of(
            method,
            rule,
            alpha,
            gamma,
            temperature,
            max_new_tokens,
            seed,
            draft_policy,
            draft_threshold,
        )
    except (TypeError, ValueError) as e:  # pragma: no cover - Settings takes any values
        yield _cleared(page, lang, _message(e, lang))
        return
    yield from _execute(
        ctx, page, prompt, settings, [preset, drafter, verifier], lang, _session(request)
    )


def stop(ctx: AppContext, page: Page, lang="en", request: gr.Request = None) -> dict:
    """Ask this session's run to end after its current round; the run then shows the partial
    output in every panel itself."""
    asked = ctx.stop(_session(request))
    # nothing running: the status keeps describing the last run
    return {page.status: t("status.stop_requested", lang) if asked else gr.skip()}


def open_trace(ctx: AppContext, page: Page, path, preset, drafter, verifier, lang="en") -> dict:
    """Restore every run panel from a trace file (the app's own download) without running a
    model. A wrong file changes nothing but the status line."""
    if not path:
        return {page.status: gr.skip()}
    models = [preset, drafter, verifier]
    try:
        trace = share.load_trace(path)
        pair = ctx.pair(*models)
        bad = [i for i in trace.new_token_ids + trace.prompt_ids if not 0 <= i < pair.vocab_size]
        if bad:
            raise UserError(t("share.other_pair", lang, id=bad[0], vocab=pair.vocab_size))
        prompt = pair.decode(trace.prompt_ids)
    except TraceFileError as e:
        log.warning("bad trace file: %s", e)
        return {page.status: t("share.bad_trace", lang, detail=str(e))}
    except (UserError, *_USER_ERRORS) as e:
        return {page.status: t("status.error", lang, message=_message(e, lang))}
    out = _shown(ctx, page, trace, models, lang, prompt, measure=False)
    out.update(_run_controls(page, trace.summary, lang))  # what the restored run used
    out[page.status] = t("share.restored_trace", lang, n=trace.summary.new_tokens)
    return out


def _run_controls(page: Page, s: Settings | Summary, lang: str) -> dict:
    """The decoding controls set to a run's values (a shared link's Settings, or a restored
    trace's Summary): sliders widened where the run went past them."""
    out = {
        page.method: gr.update(value=s.method, choices=method_choices(lang)),
        page.alpha: alpha_update(s.method, s.rule, s.alpha, lang),
        page.gamma: gr.update(value=s.gamma, maximum=max(12, s.gamma)),
        page.temperature: gr.update(value=s.temperature, maximum=max(2, s.temperature)),
        page.draft_policy: gr.update(value=s.draft_policy, choices=policy_choices(lang)),
    }
    if s.rule in SPEC_CASCADE_RULES:
        out[page.rule] = gr.update(value=s.rule, choices=rule_choices(lang))
    if s.draft_threshold is not None:
        out[page.draft_threshold] = s.draft_threshold
    return out


def share_query(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
    lang="en",
) -> dict:
    """The query string of a link that reproduces the page's run (the browser adds its own
    address and copies it)."""
    try:
        check_prompt(prompt, ctx.config, lang)
        settings = settings_of(
            method, rule, alpha, gamma, temperature, max_new_tokens, seed, draft_policy,
            draft_threshold,
        )  # fmt: skip
        query = share.to_query(prompt, settings, preset, drafter or None, verifier or None)
    except (UserError, SpecCascadeError) as e:
        return {page.share_link: "", page.status: t("status.error", lang, message=str(e))}
    return {page.share_link: "?" + query, page.status: t("share.link_made", lang)}


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
    rule = viz.rule_for(trace.summary.method, trace.summary.rule)
    a = _num(alpha)
    if rule is None or rule.defer is None or not isinstance(a, float) or not math.isfinite(a):
        return {
            page.tokens: viz.token_html(trace.tokens, lang=lang),
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
        page.tokens: viz.token_html(trace.tokens, w.decisions, lang=lang, selected=pos),
        page.whatif_note: note,
        page.alpha: gr.update(value=clamped) if clamped != a else gr.skip(),
        page.insp: viz.inspector(trace, pos, rule, clamped, tokenizer, lang=lang)
        if trace.tokens
        else None,
    }


def leave_story(lang="en") -> tuple:
    """Any run or control change of the user's own: the story's caption and curve describe a
    run that is no longer on screen, so they go."""
    return t("story.hint", lang), gr.update(visible=False)


def inspect_position(
    ctx: AppContext, page: Page, trace, position, alpha, preset, drafter, verifier, lang="en"
) -> dict:
    """q, p and π at one position of the last run; the token strip marks it."""
    if trace is None or not trace.tokens:
        return {page.insp: None, page.position: gr.skip(), page.tokens: gr.skip()}
    pos = min(
        max(0, _int(position) if isinstance(_int(position), int) else 0), len(trace.tokens) - 1
    )
    rule = viz.rule_for(trace.summary.method, trace.summary.rule)
    a = _num(alpha)
    a = a if isinstance(a, float) and rule is not None and rule.has_alpha else trace.summary.alpha
    decisions = whatif(trace, rule, a).decisions if rule is not None and a is not None else None
    tokenizer = ctx.pair(preset, drafter, verifier).tokenizer
    return {
        page.insp: viz.inspector(trace, pos, rule, a, tokenizer, lang=lang),
        page.position: gr.update(value=pos),
        page.tokens: viz.token_html(trace.tokens, decisions, lang=lang, selected=pos),
    }


def click_token(
    ctx: AppContext, page: Page, trace, alpha, preset, drafter, verifier, lang, evt: gr.EventData
) -> dict:
    """A click (or tap, or Enter) on a token moves the position and the inspector to it."""
    pos = (getattr(evt, "_data", None) or {}).get("pos", 0)
    return inspect_position(ctx, page, trace, pos, alpha, preset, drafter, verifier, lang)


def play_scene(
    ctx: AppContext,
    page: Page,
    key: str,
    story: dict,
    preset,
    drafter,
    verifier,
    lang="en",
    request: gr.Request = None,
):
    """One story scene: set the controls, run, then caption the run with its own numbers."""
    scene = SCENE[key]
    s = scene.settings
    models = [preset, drafter, verifier]
    question = scene.question(lang, preset)
    controls = {
        page.prompt: question,
        page.method: s.method,
        page.rule: gr.update(value=s.rule or APP_DEFAULTS.rule, interactive=bool(s.rule)),
        page.alpha: alpha_update(s.method, s.rule, s.alpha, lang),
        page.rule_md: rule_markdown(s.method, s.rule, lang),
        page.temperature: s.temperature,
        page.gamma: s.gamma,
        page.tabs: gr.Tabs(selected="run"),
        page.story_fig: gr.update(visible=False),
        page.caption: "",
    }
    settings = replace(s, max_new_tokens=min(s.max_new_tokens, ctx.config.max_new_tokens))
    trace = None
    first = True
    for out in _execute(ctx, page, question, settings, models, lang, _session(request)):
        if first:
            out = {**controls, **out}
            first = False
        if page.trace in out:
            trace = out[page.trace]
        yield out
    if trace is None:
        return
    numbers = scene_numbers(trace)
    story = {**(story or {}), key: numbers}
    item = find_item(question)
    if key != "alpha":
        caption = scene_caption(key, trace, story, item, lang)
        yield {page.story: story, page.caption: caption}
        return
    # scene 4: the what-if at the SD end, then the trade-off curve on the same question
    rule = viz.rule_for(trace.summary.method, trace.summary.rule)
    alpha = scene.whatif_alpha
    w = whatif(trace, rule, alpha)
    tokenizer = ctx.pair(*models).tokenizer

    def caption(runs) -> str:
        return t(
            "story.alpha",
            lang,
            alpha=trace.summary.alpha,
            whatif=alpha,
            would=w.would_defer,
            runs=runs,
            **numbers,
        )

    yield {
        page.story: story,
        page.alpha: gr.update(value=alpha),
        page.tokens: viz.token_html(trace.tokens, w.decisions, lang=lang, selected=0),
        page.insp: viz.inspector(trace, 0, rule, alpha, tokenizer, lang=lang),
        page.whatif_note: whatif_note(w, rule, lang),
        page.caption: caption("…"),
    }
    fig, runs = tradeoff_curve(ctx.pair(*models), question, item, settings, lang)
    yield {
        page.story_fig: gr.update(value=fig, visible=True),
        page.sweep_fig: fig,
        page.caption: caption(runs),
    }


def scene_numbers(trace: Trace) -> dict:
    """What a scene's caption quotes from its run."""
    s = trace.summary
    return {
        "kept": s.accepted / s.drafted if s.drafted else 0.0,
        "calls": s.verifier_calls,
        "tokens": s.new_tokens,
        "s": s.wall_s,
    }


def scene_caption(key: str, trace: Trace, story: dict, item, lang: str) -> str:
    """Scenes 1-3: what to look at, with the run's numbers (and scene 1's, beside scene 2's)."""
    numbers = story[key]
    right = item is not None and states_facts(trace.text, item.facts)
    correct = t("story.correct" if right else "story.wrong", lang)
    if key == "sd":
        return t("story.sd", lang, **numbers)
    if key == "cascade":
        before = story.get("sd")
        versus = t("story.versus", lang, calls=before["calls"], s=before["s"]) if before else ""
        return t("story.cascade", lang, versus=versus, correct=correct, **numbers)
    mask = fact_token_mask([tok.text for tok in trace.tokens], item.facts if item else ())
    fact_tokens = [tok for tok, m in zip(trace.tokens, mask) if m]
    return t(
        "story.hard",
        lang,
        fact_tokens=len(fact_tokens),
        fact_deferred=sum(map(verifier_token, fact_tokens)),
        correct=correct,
        **numbers,
    )


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


def tradeoff_curve(pair, question: str, item, settings: Settings, lang: str) -> tuple:
    """The scene's rule over an α grid on its question: key-fact accuracy (or agreement with
    the verifier) against time; the run's own α marked. Returns (figure, runs)."""
    facts = [item.facts] if item else None
    variant = Variant.cascade(settings.rule)
    table = sweep(pair, [(question, None)], [variant], n_alpha=6, settings=settings, facts=facts)
    mark = table[(table.method == variant.label) & (table.alpha == round(settings.alpha, 4))]
    fig = viz.quality_latency(
        table,
        current=mark.iloc[0].to_dict() if len(mark) else None,
        lang=lang,
        quality_label=t("sweep.quality.facts" if facts else "sweep.quality.verifier", lang),
    )
    return fig, len(table)


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
        prompt = check_prompt(prompt, ctx.config, lang)
        check_budget(max_new_tokens, len(variants), ctx.config, lang)
        settings = settings_of(CASCADE, rule, alpha, gamma, temperature, max_new_tokens, seed)
        settings.validated(ctx.config.max_new_tokens)
        pair = ctx.pair(*models)
    except (UserError, *_USER_ERRORS) as e:
        yield {
            page.compare_status: t("status.error", lang, message=_message(e, lang)),
            page.compare_fig: None,
            page.compare_table: None,
        }
        return
    item = find_item(prompt)
    facts = item.facts if item else ()
    runs = compare(pair, prompt, variants, settings=settings, facts=facts)
    table, traces = None, {}
    try:
        for k, (variant, trace, table) in enumerate(runs):
            traces[variant.label] = trace
            progress((k + 1) / len(variants))
            if k + 1 < len(variants):
                nxt = variants[k + 1]
                yield {
                    page.compare_status: t(
                        "compare.running",
                        lang,
                        k=k + 2,
                        n=len(variants),
                        method=method_label(nxt.method, nxt.rule, lang),
                    ),
                    page.compare_table: compare_view(table, lang),
                }
    except _USER_ERRORS as e:
        yield {page.compare_status: t("status.error", lang, message=_message(e, lang))}
        return
    quality = t("compare.quality.facts" if facts else "compare.quality.verifier", lang)
    yield {
        page.compare_status: t("compare.done", lang, n=len(table), quality=quality)
        + " "
        + t("compare.columns", lang),
        page.compare_fig: viz.speed_quality(table, lang=lang),
        page.compare_table: compare_view(table, lang),
        page.compared: traces,
    }


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
        # the user's rule first: a budget cut drops the variants at the end
        variants = [Variant.cascade(rule)] + [
            Variant(m) for m in SWEPT if METHOD_REGISTRY[m].drafts
        ]
        variants += [Variant.cascade(r) for r in SPEC_CASCADE_RULES if r != rule]
        try:
            plan = plan_sweep(prompts, variants, n, max_new, ctx.config.max_total_tokens)
        except SweepTooLarge as e:
            raise UserError(
                t("error.budget", lang, tokens=e.tokens, limit=ctx.config.max_total_tokens)
            ) from None
        settings = settings_of(CASCADE, rule, alpha, gamma, temperature, max_new, seed)
        settings.validated(ctx.config.max_new_tokens)
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
        progress=lambda f, d: progress(f, desc=d),
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
        page.sweep_fig: viz.quality_latency(
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


def choose_method(page: Page, method, rule, alpha, lang="en") -> dict:
    """A new method or rule: the α slider's range and ends, the rule's formula."""
    return {
        page.alpha: alpha_update(method, rule, _num(alpha), lang),
        page.rule_md: rule_markdown(method, rule, lang),
        page.rule: gr.update(interactive=bool(METHOD_REGISTRY[method].rules)),
    }


def localize(
    ctx: AppContext,
    page: Page,
    browser_lang: str,
    method,
    rule,
    alpha,
    request: gr.Request = None,
) -> dict:
    """On page load: everything the browser's language changes that gr.I18n cannot (values,
    choices, figures' words), and the first example of that language in the prompt. A shared
    link's settings (the URL query, see share.py) then fill the controls, ready to run."""
    try:
        shared = share.from_query(getattr(request, "query_params", None) or "", ctx.config)
        problem = None
    except SpecCascadeError as e:
        shared, problem = None, str(e)
    lang = lang_of((shared.lang if shared else None) or browser_lang)
    if shared is not None and shared.given:
        s = shared.settings
        method, rule, alpha = s.method, s.rule if s.rule in SPEC_CASCADE_RULES else rule, s.alpha
    shown = examples_for(lang)
    info = t("prompt.info", lang, limit=ctx.config.max_prompt_chars)
    out = {
        page.lang: lang,
        page.alpha: alpha_update(method, rule, _num(alpha), lang),
        page.rule_md: rule_markdown(method, rule, lang),
        page.method: gr.update(choices=method_choices(lang)),
        page.rule: gr.update(choices=rule_choices(lang)),
        page.draft_policy: gr.update(choices=policy_choices(lang)),
        page.views.proj_profile: gr.update(choices=ui_views.profile_choices(lang)),
        page.views.cal_rules: gr.update(choices=ui_views.rule_choices(lang)),
        page.sweep_source: gr.update(choices=sweep_sources(lang)),
        page.sweep_x: gr.update(choices=sweep_axes(lang)),
        page.caption: t("story.hint", lang),
        page.status: t("status.idle", lang),
        page.legend: viz.legend_html(lang=lang),
        page.tokens: viz.token_html(None, lang=lang),
        page.stats: empty_stats(lang),
        page.learn: learn_markdown(lang, None),
        page.prompt: gr.update(info=info),
    }
    if lang == "zh":
        out[page.examples] = gr.Dataset(**shown)
        out[page.prompt] = gr.update(value=shown["samples"][0][0], info=info)
    if problem is not None:
        out[page.status] = t("share.bad_link", lang, detail=problem)
    elif shared is not None and shared.given:
        out.update(_restored(page, shared, info, lang))
    return out


def _restored(page: Page, shared, info: str, lang: str) -> dict:
    """The controls a shared link sets (sliders widened where the link goes past them)."""
    s = shared.settings
    out = {
        **_run_controls(page, s, lang),
        page.max_new: s.max_new_tokens,
        page.seed: s.seed,
        page.preset: shared.preset or "demo",
        page.drafter: shared.drafter or "",
        page.verifier: shared.verifier or "",
        page.status: t("share.restored", lang)
        + (
            " " + t("share.ignored", lang, problems="; ".join(shared.problems))
            if shared.problems
            else ""
        ),
    }
    if shared.prompt:
        out[page.prompt] = gr.update(value=shared.prompt, info=info)
    return out


def rule_info(method: str, rule: str) -> dict:
    """The rule a method runs with: formula, α range and the alphas that give SD and the
    drafter alone (what the α slider shows)."""
    r = viz.rule_for(method, rule) if method in METHOD_REGISTRY else None
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


# -- wiring ----------------------------------------------------------------------------------


def build_demo(config: ServeConfig | None = None, cache: PairCache | None = None) -> gr.Blocks:
    config = config or ServeConfig.from_env()
    ctx = AppContext(config, cache or PairCache(config))
    with gr.Blocks(title="speccascade") as demo:
        page = layout(config)
        wire(ctx, page, demo)
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def _bind(fn, *bound):
    """`fn` with its leading arguments (context, page) bound. A plain function (a generator
    where `fn` is one) with the remaining signature and resolved annotations, because Gradio
    finds the gr.Request / gr.EventData / gr.Progress parameters it injects from those."""
    part = functools.partial(fn, *bound)
    if inspect.isgeneratorfunction(fn):

        def bound_fn(*args, **kwargs):
            yield from part(*args, **kwargs)

    else:

        def bound_fn(*args, **kwargs):
            return part(*args, **kwargs)

    signature = inspect.signature(part)
    hints = typing.get_type_hints(fn)
    bound_fn.__name__, bound_fn.__doc__ = fn.__name__, fn.__doc__
    bound_fn.__signature__ = signature
    bound_fn.__annotations__ = {k: v for k, v in hints.items() if k in signature.parameters}
    return bound_fn


def wire(ctx: AppContext, page: Page, demo: gr.Blocks) -> None:
    p = page
    models = p.models
    heavy = {"concurrency_limit": ctx.config.concurrency, "concurrency_id": "models"}
    run_inputs = [
        p.prompt,
        *models,
        *p.knobs,
        p.max_new,
        p.seed,
        p.draft_policy,
        p.draft_threshold,
        p.lang,
    ]
    p.run_btn.click(_bind(run, ctx, p), run_inputs, p.run_outputs, api_name="run", **heavy)
    p.prompt.submit(_bind(run, ctx, p), run_inputs, p.run_outputs, api_name=False, **heavy)
    p.stop_btn.click(_bind(stop, ctx, p), [p.lang], [p.status], api_name="stop", queue=False)
    scene_outputs = [
        *p.run_outputs,
        p.prompt,
        p.method,
        p.rule,
        p.alpha,
        p.rule_md,
        p.temperature,
        p.gamma,
        p.tabs,
        p.story_fig,
        p.caption,
        p.story,
        p.sweep_fig,
    ]
    for scene, btn in zip(SCENES, p.scene_btns):
        btn.click(
            _bind(play_scene, ctx, p, scene.key),
            [p.story, *models, p.lang],
            scene_outputs,
            api_name=False,
            **heavy,
        )
    p.compare_btn.click(
        _bind(run_compare, ctx, p),
        [p.prompt, *models, p.rule, p.alpha, p.gamma, p.temperature, p.max_new, p.seed, p.lang],
        [p.tabs, p.compare_status, p.compare_fig, p.compare_table, p.compared],
        api_name="compare",
        **heavy,
    )
    p.sweep_btn.click(
        _bind(run_sweep, ctx, p),
        [
            p.prompt,
            *models,
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
        ],
        [p.sweep_note, p.sweep_fig, p.sweep_table],
        api_name="sweep",
        **heavy,
    )
    for control in (p.method, p.rule):
        control.input(
            _bind(choose_method, p),
            [p.method, p.rule, p.alpha, p.lang],
            [p.alpha, p.rule_md, p.rule],
            api_name=False,
            queue=False,
        )
    # Dragging (release) and typing a number (input) both recolour the last run. The value is
    # copied in the browser into an unbounded number first, so a typed α outside the slider's
    # range reaches the handler (which sets it to the nearest end and says so) instead of
    # failing Gradio's range check with a bare error badge.
    alpha_typed = gr.Number(visible=False, elem_id="alpha-typed")
    for event in (p.alpha.release, p.alpha.input):
        event(None, p.alpha, alpha_typed, js="(a) => a", api_name=False, queue=False)
    alpha_typed.change(
        _bind(show_whatif, ctx, p),
        [p.trace, alpha_typed, p.position, *models, p.lang],
        [p.tokens, p.whatif_note, p.alpha, p.insp],
        api_name="whatif",
        queue=False,
    )
    # the user's own run or control change ends the story scene on screen
    leave = {"fn": leave_story, "inputs": [p.lang], "outputs": [p.caption, p.story_fig]}
    for event in (p.run_btn.click, p.prompt.submit, p.method.input, p.rule.input):
        event(**leave, api_name=False, queue=False)
    alpha_typed.change(**leave, api_name=False, queue=False)
    p.position.release(
        _bind(inspect_position, ctx, p),
        [p.trace, p.position, p.alpha, *models, p.lang],
        [p.insp, p.position, p.tokens],
        api_name="inspect",
        queue=False,
    )
    p.tokens.click(
        _bind(click_token, ctx, p),
        [p.trace, p.alpha, *models, p.lang],
        [p.insp, p.position, p.tokens],
        api_name=False,
        queue=False,
    )
    p.examples.click(lambda row: row[0], p.examples, p.prompt, api_name=False, queue=False)
    browser_lang = gr.Textbox(visible=False)
    demo.load(
        _bind(localize, ctx, p),
        [browser_lang, p.method, p.rule, p.alpha],
        [
            p.lang,
            p.alpha,
            p.rule_md,
            p.method,
            p.rule,
            p.sweep_source,
            p.sweep_x,
            p.caption,
            p.status,
            p.legend,
            p.tokens,
            p.stats,
            p.learn,
            p.prompt,
            p.examples,
            p.draft_policy,
            p.draft_threshold,
            p.gamma,
            p.temperature,
            p.max_new,
            p.seed,
            *models,
            p.views.proj_profile,
            p.views.cal_rules,
        ],
        js="(l, m, r, a) => [navigator.language || 'en', m, r, a]",
        api_name=False,
        queue=False,
    )
    gr.api(rule_info, api_name="rule_info")
    opened = p.upload.upload(
        _bind(open_trace, ctx, p),
        [p.upload, *models, p.lang],
        [*p.run_outputs, p.share_link, *p.knobs, p.draft_policy, p.draft_threshold],
        api_name="load_trace",
        queue=False,
    )
    p.share_btn.click(
        _bind(share_query, ctx, p),
        [p.prompt, *models, *p.knobs, p.max_new, p.seed, p.draft_policy, p.draft_threshold, p.lang],
        [p.share_link, p.status],
        api_name="share",
        queue=False,
    ).then(
        None,
        p.share_link,
        p.share_link,
        # the page's own address (the server sees only its API's): written into the box, the
        # address bar and, where the browser allows it, the clipboard
        js="""(q) => { if (!q) return q; const u = new URL(window.location.href);
            u.search = q; window.history.replaceState(null, '', u);
            if (navigator.clipboard) navigator.clipboard.writeText(u.toString()).catch(() => {});
            return u.toString(); }""",
        api_name=False,
        queue=False,
    )
    _wire_views(ctx, p, models, heavy, opened)


def _wire_views(ctx: AppContext, p: Page, models: list, heavy: dict, opened) -> None:
    """The analysis views: they follow the last run (its trace State), the what-if α and
    their own controls; their JSON API is data in, data out."""
    v = p.views

    def decoder(preset, drafter, verifier):
        tok = ctx.pair(preset, drafter, verifier).tokenizer
        return lambda ids: tok.decode(ids)

    def id_decoder(preset, drafter, verifier):
        tok = ctx.pair(preset, drafter, verifier).tokenizer
        return lambda i: tok.decode([i])

    def plane(trace, alpha, preset, drafter, verifier, lang="en"):
        return ui_views.plane_view(p, trace, _num(alpha), decoder(preset, drafter, verifier), lang)

    def replay(trace, index, preset, drafter, verifier, lang="en", step=0):
        dec = id_decoder(preset, drafter, verifier)
        return ui_views.replay_step(p, trace, _int(index), step, dec, lang)

    def tick(trace, index, preset, drafter, verifier, lang="en"):
        dec = id_decoder(preset, drafter, verifier)
        out = ui_views.replay_tick(p, trace, _int(index), dec, lang)
        return {**out, playing: out[v.replay_timer].active}

    plane_io = dict(
        fn=plane,
        inputs=[p.trace, p.alpha, *models, p.lang],
        outputs=[v.plane_fig, v.plane_note],
        api_name=False,
        queue=False,
    )
    replay_in = [p.trace, v.replay_round, *models, p.lang]
    replay_out = [v.replay_html, v.replay_round]
    # a new trace (a run, a scene, a restored file) redraws both views
    p.trace.change(**plane_io)

    def replay_first(trace, preset, drafter, verifier, lang="en"):
        return ui_views.replay_view(p, trace, 0, id_decoder(preset, drafter, verifier), lang)

    p.trace.change(
        replay_first,
        [p.trace, *models, p.lang],
        replay_out,
        api_name=False,
        queue=False,
    )
    p.alpha.change(**plane_io)
    step_out = [*replay_out, v.replay_timer, v.replay_play]
    v.replay_round.release(replay, replay_in, step_out, api_name=False, queue=False)
    v.replay_prev.click(
        functools.partial(replay, step=-1), replay_in, step_out, api_name=False, queue=False
    )
    v.replay_next.click(
        functools.partial(replay, step=1), replay_in, step_out, api_name=False, queue=False
    )
    playing = gr.State(False)
    v.replay_play.click(
        lambda on, lang="en": {**ui_views.replay_toggle(p, on, lang), playing: not on},
        [playing, p.lang],
        [v.replay_timer, v.replay_play, playing],
        api_name=False,
        queue=False,
    )
    for event in (v.replay_round.release, v.replay_prev.click, v.replay_next.click):
        event(lambda: False, None, playing, api_name=False, queue=False)
    v.replay_timer.tick(
        tick,
        replay_in,
        [*replay_out, v.replay_timer, v.replay_play, playing],
        api_name=False,
        queue=False,
    )
    # a restored trace file (its event does not go through the queue) redraws both views too
    opened.then(**plane_io).then(
        replay_first, [p.trace, *models, p.lang], replay_out, api_name=False, queue=False
    )
    # a plot drawn while its tab was hidden keeps the hidden width: resize on showing a tab
    p.tabs.select(
        None,
        js="() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 50); }",
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

    def diff(prompt, preset, drafter, verifier, rule, alpha, gamma, temperature, max_new, seed,
             draft_policy, draft_threshold, lang="en"):  # fmt: skip
        settings = settings_of(
            CASCADE, rule, alpha, gamma, temperature, max_new, seed, draft_policy, draft_threshold
        )
        return ui_views.diff_view(ctx, p, prompt, [preset, drafter, verifier], settings, lang)

    diff.__name__ = "diff"
    v.diff_btn.click(
        diff,
        [
            p.prompt,
            *models,
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
        [v.diff_html],
        api_name="diff",
        **heavy,
    )

    def calibrate(max_calls, min_share, rules, preset, drafter, verifier, gamma, temperature,
                  seed, lang="en"):  # fmt: skip
        settings = settings_of(CASCADE, None, None, gamma, temperature, 32, seed)
        return ui_views.calibrate_view(
            ctx, p, _num(max_calls), _num(min_share), rules, [preset, drafter, verifier],
            settings, lang,
        )  # fmt: skip

    calibrate.__name__ = "calibrate"
    v.cal_btn.click(
        calibrate,
        [
            v.cal_max_calls,
            v.cal_min_share,
            v.cal_rules,
            *models,
            p.gamma,
            p.temperature,
            p.seed,
            p.lang,
        ],  # fmt: skip
        [v.cal_note, v.cal_table],
        api_name="calibrate",
        **heavy,
    )
    proj_inputs = [
        v.proj_profile,
        v.proj_gpu,
        v.proj_dtype,
        v.proj_drafter_params,
        v.proj_verifier_params,
        v.proj_launch_ms,
        v.proj_drafter_ms,
        v.proj_verifier_fixed_ms,
        v.proj_verifier_token_ms,
        v.proj_round_ms,
    ]
    keys = ["gpu", "dtype", "drafter_params", "verifier_params", "launch_ms", "drafter_ms",
            "verifier_fixed_ms", "verifier_token_ms", "round_ms"]  # fmt: skip

    def project(compared, trace, profile, *rest):
        *numbers, preset, drafter, verifier, lang = rest
        values = {k: (_num(x) if k not in ("gpu", "dtype") else x) for k, x in zip(keys, numbers)}
        return ui_views.project_view(
            ctx, p, compared, trace, profile, [preset, drafter, verifier], values, lang
        )

    v.proj_btn.click(
        project,
        [p.compared, p.trace, *proj_inputs, *models, p.lang],
        [v.proj_note, v.proj_fig, v.proj_table, v.proj_gamma_fig, v.proj_gamma_table],
        api_name=False,
        **heavy,
    )
    gr.api(ui_views.project_api, api_name="project")
    gr.api(ui_views.plane_api, api_name="plane")
    gr.api(ui_views.replay_api, api_name="replay_round")


# -- small helpers ---------------------------------------------------------------------------


def _write_exports(trace: Trace) -> list[str]:
    """Per-request temp files (never a shared location) for the download buttons."""
    folder = Path(tempfile.mkdtemp(prefix="speccascade-"))
    csv, js = folder / "trace.csv", folder / "trace.json"
    trace.to_frame().to_csv(csv, index=False)
    js.write_text(trace.to_json(indent=1))
    return [str(csv), str(js)]


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _num(x) -> float | None:
    """Numbers from the page or an API client; anything else is left for the engine to refuse
    with a message naming the field."""
    if x is None or isinstance(x, bool):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def _int(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            return x
    return x


def launch(**kwargs) -> None:
    """Build and serve the app; kwargs go to `Blocks.launch` (server_name, server_port, ...)."""
    import torch

    config = ServeConfig.from_env()
    torch.set_num_threads(config.threads())
    demo = build_demo(config)
    demo.launch(**{**LAUNCH, **kwargs})

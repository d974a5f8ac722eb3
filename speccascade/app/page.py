"""The page: its components (`Page`), built from the controls and each tab's parts (`layout`),
wired (`wire`), localised on load (`localize`), and served (`build_demo`, `launch`)."""

from __future__ import annotations

import gradio as gr

from speccascade.app import controls, present, share
from speccascade.app.components import Page
from speccascade.app.context import LAUNCH, AppContext, _bind, _num, label
from speccascade.app.controls import (
    alpha_update,
    calibratable_choices,
    examples_for,
    method_choices,
    pair_choices,
    policy_choices,
    prompt_info,
    rule_choices,
    rule_info,
    rule_markdown,
)
from speccascade.app.serving import (
    PairCache,
    ServeConfig,
)
from speccascade.app.tabs import compare as compare_tab
from speccascade.app.tabs import inspect as inspect_tab
from speccascade.app.tabs import learn as learn_tab
from speccascade.app.tabs import links as links_tab
from speccascade.app.tabs import race as race_tab
from speccascade.app.tabs import run as run_tab
from speccascade.app.tabs import story as story_tab
from speccascade.app.tabs import sweep as sweep_tab
from speccascade.app.tabs import whatif as whatif_tab
from speccascade.app.tabs.compare import empty_compare_view, profile_choices
from speccascade.app.tabs.links import _run_controls
from speccascade.app.tabs.run import empty_stats
from speccascade.app.tabs.sweep import sweep_axes, sweep_sources
from speccascade.core.errors import (
    SpecCascadeError,
)
from speccascade.core.rules import SPEC_CASCADE_RULES
from speccascade.i18n import lang_of, t
from speccascade.models import hub
from speccascade.models.presets import PRESETS
from speccascade.views.learn import learn_markdown
from speccascade.views.tokens import legend_html, token_html


def layout(config: ServeConfig) -> Page:
    """The page's components, inside the current gr.Blocks: the story, the controls column and
    the tabs, each part built by its own module. Values are the English defaults; `localize`
    swaps in the browser's language on load."""
    lang = "en"
    with gr.Row(elem_id="masthead", equal_height=True):
        gr.Markdown(f"# {label('ui.title')}", elem_classes="sc-title", elem_id="title")
        masthead = dict(
            **present.parts(),
            lang_btn=gr.Button(
                label("ui.lang_switch"), elem_id="lang-switch", size="sm", scale=0, min_width=80
            ),
            lang_query=gr.Textbox(visible=False),
        )
    gr.Markdown(label("ui.intro"), elem_classes="sc-intro")
    states = dict(lang=gr.State("en"), trace=gr.State(None), asked=gr.State(""),
                  shown_pair=gr.State(None),
                  story=gr.State({}), compared=gr.State(None))  # fmt: skip
    story = story_tab.parts(lang)
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=300, elem_id="controls-col"):
            column = controls.parts(config, lang)
        with gr.Column(scale=2, min_width=300), gr.Tabs(elem_id="tabs") as tabs:
            shown, items = {}, []
            for key, tab in TABS:
                with gr.Tab(label(f"ui.tab_{key}"), id=key, elem_id=f"tab-{key}") as item:
                    shown.update(tab.parts(lang))
                items.append(item)
    return Page(**states, **masthead, **story, **column, tabs=tabs, tab_items=items, **shown)


# The tabs in their order on the page: (key, module with `parts`).
TABS = (
    ("run", run_tab),
    ("race", race_tab),
    ("inspect", inspect_tab),
    ("compare", compare_tab),
    ("sweep", sweep_tab),
    ("learn", learn_tab),
)


def wire(ctx: AppContext, page: Page, demo: gr.Blocks) -> None:
    """Each part's events, then what the page does on load and on showing a tab."""
    p = page
    heavy = {"concurrency_limit": ctx.config.concurrency, "concurrency_id": "models"}
    run_tab.wire(ctx, p, heavy)
    alpha_typed = whatif_tab.wire(ctx, p)
    story_tab.wire(ctx, p, heavy, alpha_typed)
    controls.wire(p, ctx.config.max_prompt_chars)
    opened = links_tab.wire(ctx, p)
    inspect_tab.wire(ctx, p, heavy, opened)
    compare_tab.wire(ctx, p, heavy)
    race_tab.wire(ctx, p, heavy)
    present.wire(p, demo)
    sweep_tab.wire(ctx, p, heavy)
    browser_lang = gr.Textbox(visible=False)
    demo.load(
        _bind(localize, ctx, p),
        [browser_lang, p.method, p.rule, p.alpha],
        LOCALIZED(p),
        js=LOAD_JS,
        api_name=False,
        queue=False,
    ).then(None, js=links_tab.RUN_AGAIN_JS, api_name=False, queue=False)
    gr.api(rule_info, api_name="rule_info")
    # a plot drawn while its tab was hidden keeps the hidden width: resize on showing a tab
    p.tabs.select(
        None,
        js="() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 50); }",
        api_name=False,
        queue=False,
    )


# On load: the page's language is the link's (`?lang=`), else the browser's. Gradio picks the
# labels' locale from the browser alone; a link's language is given to it through its own
# `changeLocale` (the module that exports it is found among the page's loaded scripts; where it
# is not, the labels stay in the browser's language and the values follow the link).
LOAD_JS = r"""async (l, m, r, a) => {
  const asked = new URLSearchParams(window.location.search).get('lang');
  if (asked) {
    try {
      const core = performance.getEntriesByType('resource').map((e) => e.name)
        .find((n) => /\/assets\/core-[\w-]+\.js(\?|$)/.test(n));
      const mod = core && await import(core);
      if (mod && mod.changeLocale) mod.changeLocale(asked === 'zh' ? 'zh-CN' : 'en');
    } catch (e) { console.warn('speccascade: no label locale for ?lang=' + asked, e); }
  }
  return [asked || navigator.language || 'en', m, r, a];
}"""


def LOCALIZED(p: Page) -> list:  # noqa: N802 - a list of components, named like a constant
    """What `localize` may change on load."""
    return [
        p.lang, p.alpha, p.rule_md, p.method, p.rule, p.sweep_source, p.sweep_x, p.caption,
        p.status, p.legend, p.tokens, p.stats, p.learn, p.prompt, p.examples, p.draft_policy,
        p.draft_threshold, p.gamma, p.temperature, p.max_new, p.seed, *p.models,
        p.proj_profile, p.cal_rules, p.zoo_rules, p.compare_status, p.compare_table,
        *p.tab_items,
    ]  # fmt: skip


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
    # a link that names only a language restores nothing (the page's defaults stand)
    restores = shared is not None and any(k != share.LANG_KEY for k in shared.given)
    if restores:
        s = shared.settings
        method, rule, alpha = s.method, s.rule if s.rule in SPEC_CASCADE_RULES else rule, s.alpha
    preset = ctx.config.preset  # the pair the page was built for (a link's comes with _restored)
    shown = examples_for(lang, preset)
    info = prompt_info(lang, preset, ctx.config.max_prompt_chars)
    out = {
        page.lang: lang,
        page.alpha: alpha_update(method, rule, _num(alpha), lang),
        page.rule_md: rule_markdown(method, rule, lang),
        page.method: gr.update(choices=method_choices(lang)),
        page.rule: gr.update(choices=rule_choices(lang)),
        page.draft_policy: gr.update(choices=policy_choices(lang)),
        page.preset: gr.update(choices=pair_choices(lang)),
        page.proj_profile: gr.update(choices=profile_choices(lang)),
        page.cal_rules: gr.update(choices=calibratable_choices(lang)),
        page.zoo_rules: gr.update(choices=calibratable_choices(lang)),
        page.sweep_source: gr.update(choices=sweep_sources(lang)),
        page.sweep_x: gr.update(choices=sweep_axes(lang)),
        page.caption: t("story.hint", lang),
        page.status: t("status.idle", lang),
        page.legend: legend_html(lang=lang),
        page.tokens: token_html(None, lang=lang),
        page.stats: empty_stats(lang),
        page.compare_status: t("ui.compare_intro", lang),
        page.compare_table: empty_compare_view(lang),
        page.learn: learn_markdown(lang, None),
        page.prompt: gr.update(info=info),
    }
    if shared is not None and shared.lang:  # Gradio relabels the tabs' labels only on mount
        out.update({item: gr.Tab(label=t(f"ui.tab_{key}", lang))
                    for item, (key, _) in zip(page.tab_items, TABS)})  # fmt: skip
    if lang == "zh" and not PRESETS[preset].examples:  # a general pair's are in English
        out[page.examples] = gr.Dataset(**shown)
        out[page.prompt] = gr.update(value=shown["samples"][0][0], info=info)
    if problem is not None:
        out[page.status] = t("share.bad_link", lang, detail=problem)
    elif restores:
        out.update(_restored(page, shared, info, lang))
    return out


def _restored(page: Page, shared, info: str, lang: str) -> dict:
    """The controls a shared link sets (sliders widened where the link goes past them)."""
    s = shared.settings
    out = {
        **_run_controls(page, s, lang),
        page.max_new: s.max_new_tokens,
        page.seed: s.seed,
        page.preset: gr.update(value=shared.preset or "demo", choices=pair_choices(lang)),
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


def build_demo(config: ServeConfig | None = None, cache: PairCache | None = None) -> gr.Blocks:
    config = config or ServeConfig.from_env()
    ctx = AppContext(config, cache or PairCache(config))
    hub.PROBE.state()  # probed now, in the background: the first switch offer then knows
    with gr.Blocks(title="speccascade") as demo:
        page = layout(config)
        wire(ctx, page, demo)
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def launch(**kwargs) -> None:
    """Build and serve the app; kwargs go to `Blocks.launch` (server_name, server_port, ...)."""
    import torch

    config = ServeConfig.from_env()
    torch.set_num_threads(config.threads())
    demo = build_demo(config)
    demo.launch(**{**LAUNCH, **kwargs})

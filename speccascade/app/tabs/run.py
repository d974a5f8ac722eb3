"""The Run tab: one method's tokens streaming in, then every panel showing the run (token strip,
heatmap, inspector, timeline, stats, draft windows, downloads), the verdict, Stop, and the
offer of another pair when this one declined the question."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

import gradio as gr
import pandas as pd

from speccascade.analysis.evalsets import taught_count
from speccascade.analysis.explain import worked_example
from speccascade.analysis.verdict import doubt, repetition, verdict
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    TOKENS_JS,
    AppContext,
    UserError,
    _bind,
    _message,
    _session,
    _write_exports,
    check_budget,
    check_context,
    check_prompt,
    check_readable,
    gpu,
    label,
    log,
    settings_of,
)
from speccascade.app.controls import pair_label
from speccascade.app.plot import slide_plot
from speccascade.app.serving import in_background, waiting
from speccascade.app.yardstick import time_against_verifier
from speccascade.core.engine import (
    APP_DEFAULTS,
    RoundEvent,
    Settings,
    stream,
)
from speccascade.core.trace import Trace
from speccascade.i18n import join, lang_of, method_label, size, t
from speccascade.models import hub
from speccascade.models.presets import (
    DEFAULT_PRESET,
    PRESETS,
    Target,
    first_use,
    switch_target,
    why_no_target,
)
from speccascade.views.heatmap import heatmap, inspector
from speccascade.views.learn import learn_markdown
from speccascade.views.style import _short, rule_for
from speccascade.views.timeline import drafting, drafting_note, stats_frame, timeline
from speccascade.views.tokens import legend_html, token_html


def empty_stats(lang: str) -> pd.DataFrame:
    """The stats panel before any run: its headers and one line saying what will be there."""
    columns = list(stats_frame(None, lang=lang).columns)
    return pd.DataFrame([["—", t("stats.empty", lang)]], columns=columns)


def repeats_note(text: str, lang: str) -> str:
    """Where the answer repeats itself (analysis.verdict.repetition: "A lone soul, a lone
    soul, …"), a paragraph saying so, with the phrase it loops on; else nothing."""
    loop = repetition(text)
    if loop is None:
        return ""
    phrase = _short(loop.phrase, 48)
    key = "verdict.repeats" if loop.times > 1 else "verdict.repeats_apart"
    return t(key, lang, share=loop.share, phrase=phrase, times=loop.times) + "\n\n"


def verdict_text(
    trace: Trace, timed: tuple[float, int] | None, lang: str, pending: bool = False
) -> str:
    """One plain sentence: what was kept, what the verifier did, and the speed against the
    verifier alone: `timed` is (speed-up, runs of each), speed.speedup of interleaved runs
    (app/yardstick.py), the number Compare, the story and the race quote too; `pending`
    while it is being timed. With the reason and what to try when slower; after a note on an
    answer that repeats itself, where it does."""
    v = verdict(trace, None)
    if timed is not None:
        v = replace(v, speedup=timed[0])
    runs = timed[1] if timed is not None else 0
    stopped = repeats_note(trace.text, lang) + (t("verdict.stopped", lang) if v.stopped else "")
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
        tail = t("verdict.timing", lang) if pending else "."
    elif 0.9 <= x <= 1.1:
        tail = t("verdict.same", lang, runs=runs)
    elif x > 1:
        tail = t("verdict.faster", lang, x=x, runs=runs)
    else:
        reason = v.reason
        rule = rule_for(trace.summary.method, trace.summary.rule)
        if reason == "low_acceptance" and rule is not None and not rule.has_alpha:
            reason = "low_acceptance_sd"  # no α to raise: point to the cascade instead
        key = f"verdict.slower.{reason}" if reason else "verdict.slower"
        tail = t(key, lang, x=1 / x, runs=runs)
    return stopped + head + tail


def loading_status(models: list, lang: str) -> str:
    """The status while a pair loads for the first time: how much of a hub pair's download
    is here so far (its size measured by scripts/bench_hub_pairs.py), else that it loads."""
    preset, drafter, verifier = models
    chosen = PRESETS.get(preset or DEFAULT_PRESET)
    first = first_use(chosen.name) if chosen is not None else None
    custom = bool((drafter or "").strip() or (verifier or "").strip())
    if (
        custom
        or chosen is None
        or chosen.offline
        or not first
        or not first.download_bytes
        or chosen.cached()
    ):
        return t("status.loading", lang)
    done = sum(hub.cache_bytes(m) for m in dict.fromkeys((chosen.drafter, chosen.verifier)))
    total = first.download_bytes
    return t("status.downloading", lang, pair=chosen.label, done=size(min(done, total)),
             total=size(total))  # fmt: skip


def _refused(page: Page, lang: str, message: str) -> dict:
    """A request refused before it ran (bad input, a pair that cannot load): the status says
    what to change, and nothing else moves: the last run stays on every panel."""
    return {page.status: t("status.error", lang, message=message)}


def _cleared(page: Page, lang: str, message: str) -> dict:
    """A run that failed midway (its partial tokens were on the strip already): the outputs
    go, and the status says what happened."""
    return {
        page.tokens: token_html(None, lang=lang),
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
        page.asked: "",
        page.answer_note: "",
        page.shown_pair: None,
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
    rule = rule_for(s.method, s.rule)
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
        page.tokens: token_html(
            trace.tokens, lang=lang, selected=0 if trace.tokens else None, stop=s.stop_reason
        ),
        page.answer_note: t("answer.pair", lang, pair=pair_label(*models[:1], lang, *models[1:])),
        page.shown_pair: list(models),
        page.heat: heatmap(trace, lang=lang) if trace.tokens else None,
        page.timeline: timeline(trace, lang=lang),
        page.stats: stats_frame(trace, lang=lang),
        page.trace_json: trace.to_dict(),
        page.position: gr.update(
            minimum=0,
            maximum=max(1, len(trace.tokens) - 1),
            value=0,
            step=1,
            interactive=len(trace.tokens) > 1,
        ),
        page.insp: inspector(trace, 0, rule, s.alpha, pair.tokenizer, lang=lang)
        if trace.tokens
        else None,
        page.files: _write_exports(trace),
        page.verdict: verdict_text(
            trace, None, lang, pending=measure and s.method != "verifier" and not stopped
        ),
        page.whatif_note: "",
        page.drafting: drafting(trace, lang=lang),
        page.drafting_note: f"**{t('ui.drafting', lang)}** · {drafting_note(trace, lang=lang)}",
        page.status: status,
        page.learn: learn_markdown(lang, example) if example is not None else gr.skip(),
        page.trace: trace,
        page.asked: prompt,
    }


def _execute(
    ctx: AppContext, page: Page, prompt, settings: Settings, models: list, lang: str, session
) -> Iterator[dict]:
    """Run one method, streaming the token strip, then show the whole run in every panel.
    Returns the trace, or None: after a user error (the status says what to change) or a
    Stop pressed while the pair was loading, both leaving the panels as they were, and after
    a run that failed midway, which clears them."""
    stop = ctx.new_stop(session)  # before loading: Stop during a first load must count too
    try:
        prompt = check_prompt(prompt, ctx.config, lang)
        check_readable(prompt, models[0], lang)
        check_budget(settings.max_new_tokens, 1, ctx.config, lang)
        settings.validated(ctx.config.max_new_tokens)
        if not ctx.measured(*models):  # a first load: a hub pair's shows its download
            shown = t("status.loading", lang)
            yield {page.status: shown}
            for _ in waiting(lambda: ctx.measured_profile(*models)):
                now = loading_status(models, lang)
                if now != shown:  # only what changed: a download's progress
                    shown = now
                    yield {page.status: now}
        pair = ctx.pair(*models)
        check_context(pair, prompt, settings.chat, lang)
    except (UserError, *_USER_ERRORS) as e:
        ctx.done(session, stop)
        yield _refused(page, lang, _message(e, lang))
        return None
    if stop.is_set():
        ctx.done(session, stop)
        yield {page.status: t("status.stopped_loading", lang)}
        return None
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
                        page.tokens: token_html(partial, lang=lang),
                        page.status: t("status.running", lang, n=len(partial)),
                    }
    except _USER_ERRORS as e:
        yield _cleared(page, lang, _message(e, lang))
        return None
    finally:
        ctx.done(session, stop)
    shown = _shown(ctx, page, trace, models, lang, prompt)
    yield shown
    s = trace.summary
    if s.method != "verifier" and s.stop_reason != "cancelled":  # the verdict's speed-up, timed
        timed = time_against_verifier(pair, prompt, settings)
        yield {**shown, page.verdict: verdict_text(trace, timed, lang)}  # all: API reads last
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
        yield _refused(page, lang, _message(e, lang))
        return
    yield from _execute(
        ctx, page, prompt, settings, [preset, drafter, verifier], lang, _session(request)
    )


def switch_offer(
    page: Page, trace: Trace | None, preset, lang="en", prompt="", box="", shown_pair=None
) -> dict:
    """After a run: where the pair answered with its honest out-of-domain line (presets:
    `declines`), say so and offer the pair that can answer instead; where it answered a
    question about something it was never taught (presets: `taught`; "What is the tallest
    mountain?" got "the Grand Canyon"), say the answer is likely made up; where a finished
    answer misses the key facts of what it was taught ("Who is Einstein?" got "a Jewish
    god"), say it is likely wrong and what it was taught. Each offers the same switch, to
    the first pair that can load here (presets.switch_target: a hub pair where the hub
    answers the page's probe or its models are cached, else the offline pair where it is
    installed), named with its download and first load; where none can, the note says this
    server has none, with no button (the operator's log says what to install). A target
    that cannot read the question (an English-only pair, a Chinese question) is offered with
    the advice to ask there in English (it refuses the question itself, and the page keeps
    this run)."""
    hidden = {
        page.switch_box: gr.update(visible=False),
        page.switch_note: "",
        page.switch_btn: gr.update(visible=False),
        **answer_marks(page, trace, shown_pair, prompt, box, lang),
    }
    current = PRESETS.get(preset or DEFAULT_PRESET)
    if current is not None and box.strip() and current.cannot_read(box):
        return {**hidden, **demo_offer(page, current, lang)}  # refused: the demo pair reads it
    if trace is None or current is None or not current.switch_to:
        return hidden
    summary = getattr(trace, "summary", None)
    d = doubt(current, prompt, trace.text, summary.stop_reason if summary else "eos")
    if d is None:
        return hidden
    n = round(taught_count(current.taught), -2) if current.taught else 0
    heads = {"declined": "switch.note", "unknown": "switch.unknown"}
    head = t(heads[d.kind], lang, n=n) if d.kind in heads else _wrong(d.taught, lang)
    hub_up = bool(hub.PROBE.state())
    target = switch_target(current, hub_up)
    if target is None:
        _log_no_target(why_no_target(current, hub_up))
    button = gr.update(visible=False)
    if target is not None:
        button = gr.update(visible=True, value=t("switch.btn", lang, pair=target.preset.label))
    return {
        **hidden,
        page.switch_box: gr.update(visible=True),
        page.switch_note: join([head, *target_sentences(target, prompt or "", lang)], lang),
        page.switch_btn: button,
    }


def answer_marks(page: Page, trace, shown_pair, asked: str, box: str, lang: str) -> dict:
    """The note above the answer: which pair wrote it; and where the box now holds another
    question (one refused before it ran, or typed since), that the answer on the panels is
    the previous question's, dimmed (page.css: .sc-stale)."""
    if trace is None:
        return {page.answer_note: "", page.tokens: gr.update(elem_classes=[])}
    models = list(shown_pair or [DEFAULT_PRESET, "", ""])
    pair = pair_label(*models[:1], lang, *models[1:])
    stale = bool(box.strip()) and " ".join(box.split()) != " ".join((asked or "").split())
    if not stale:
        return {page.answer_note: t("answer.pair", lang, pair=pair),
                page.tokens: gr.update(elem_classes=[])}  # fmt: skip
    return {
        page.answer_note: t("answer.previous", lang, asked=asked, pair=pair),
        page.tokens: gr.update(elem_classes=["sc-stale"]),
    }


def demo_offer(page: Page, current, lang: str) -> dict:
    """A question in a script the chosen pair cannot read (SmolLM2 and Chinese): the embedded
    demo pair reads it, one click away."""
    return {
        page.switch_box: gr.update(visible=True),
        page.switch_note: t("switch.to_demo", lang, pair=current.label),
        page.switch_btn: gr.update(visible=True, value=t("switch.to_demo_btn", lang)),
    }


def target_sentences(target: Target | None, prompt: str, lang: str) -> list[str]:
    """The offer's words about where it switches: the pair, what its first use costs here
    (download, first load), and to ask in English where it reads nothing else; or that this
    server has no general pair (never how to install one: that is the operator's)."""
    if target is None:
        return [t("switch.none", lang)]
    pair = target.preset.label
    out = [t("switch.pair.offline" if target.kind == "offline" else "switch.pair.hub", lang,
             pair=pair)]  # fmt: skip
    first = target.first
    if first is not None and (target.kind != "hub" or first.download_bytes):
        out.append(t(f"switch.first.{target.kind}", lang, size=size(first.download_bytes),
                     s=first.first_load_s))  # fmt: skip
    if target.preset.cannot_read(prompt):
        out.append(t("switch.foreign", lang))
    return out


def _log_no_target(why: str) -> None:
    """The operator's side of an offer with no target: what this server lacks, with the
    commands that install it (never shown on the page)."""
    log.warning("no general model pair for the switch offer on this server: %s", why)


def _wrong(items, lang: str) -> str:
    """The note on an answer that misses what the pair was taught: what it was taught (the
    answer, for one item; the questions, for a surname several taught people share)."""
    if len(items) == 1:
        x = items[0]
        return t("switch.wrong", lang, question=x.question, answer=x.short or x.answer)
    quoted = ("；" if lang_of(lang) == "zh" else "; ").join(
        t("switch.taught_one", lang, question=x.question, answer=x.short or x.answer) for x in items
    )
    return t("switch.wrong_many", lang, questions=quoted)


def take_switch(page: Page, preset, lang="en", asked="", box="") -> dict:
    """The offer's button: the page moves to the pair the offer named (the same choice), and
    the question the offer is about (`asked`: the shown run's, not whatever the box holds
    since) runs on it; its first load shows its download's progress in the status."""
    current = PRESETS.get(preset or DEFAULT_PRESET)
    if current is not None and box.strip() and current.cannot_read(box):  # demo_offer's
        return {
            page.preset: DEFAULT_PRESET,
            page.prompt: box,
            page.switch_box: gr.update(visible=False),
            page.status: t("switch.switched", lang, pair=pair_label(DEFAULT_PRESET, lang)),
        }
    target = switch_target(current, bool(hub.PROBE.state())) if current is not None else None
    if target is None:  # the hub went away since the offer: nowhere to go
        return {page.switch_box: gr.update(visible=False), page.status: t("switch.none", lang)}
    return {
        page.preset: target.preset.name,
        page.prompt: asked or gr.skip(),
        page.switch_box: gr.update(visible=False),
        page.status: t("switch.switched", lang, pair=target.preset.label),
    }


def offer_event(page: Page) -> dict:
    """The event that follows everything that shows a run (Run, a scene, an opened file):
    the offer, or none, for the run now on the panels."""
    p = page
    return {
        "fn": _bind(switch_offer, p),
        "inputs": [p.trace, p.preset, p.lang, p.asked, p.prompt, p.shown_pair],
        "outputs": [p.switch_box, p.switch_note, p.switch_btn, p.answer_note, p.tokens],
        "api_name": False,
        "queue": False,
    }


def stop(ctx: AppContext, page: Page, lang="en", request: gr.Request = None) -> dict:
    """Ask this session's run to end after its current round; the run then shows the partial
    output in every panel itself."""
    asked = ctx.stop(_session(request))
    # nothing running: the status keeps describing the last run
    return {page.status: t("status.stop_requested", lang) if asked else gr.skip()}


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    """The Run tab's components: the offer of another pair, the verdict and status, the token
    strip, heatmap, position and inspector, stats, timeline, draft windows, downloads, link."""
    with gr.Group(visible=False, elem_classes="sc-switch-offer") as switch_box:
        switch_note = gr.Markdown("", elem_id="switch-note")
        switch_btn = gr.Button(
            label("ui.switch_btn"), variant="primary", size="sm", elem_id="switch-pair"
        )
    verdict = gr.Markdown("", elem_id="verdict")
    status = gr.Markdown(t("status.idle", lang), elem_id="status")
    answer_note = gr.Markdown("", elem_id="answer-note")
    legend = gr.HTML(legend_html(lang=lang), elem_id="legend")
    tokens = gr.HTML(token_html(None, lang=lang), elem_id="tokens", js_on_load=TOKENS_JS)
    whatif_note = gr.Markdown("", elem_classes="sc-whatif", elem_id="whatif")
    heat = slide_plot(label=label("ui.heatmap"), elem_id="heatmap")
    position = gr.Slider(
        0, 1, value=0, step=1, label=label("ui.position"), interactive=False, elem_id="position"
    )
    insp = slide_plot(label=label("ui.inspector"), elem_id="inspector")
    stats = gr.Dataframe(
        empty_stats(lang), label=label("ui.stats"), interactive=False, wrap=True,
        column_widths=["50%", "50%"], elem_id="stats",
    )  # fmt: skip
    timeline = slide_plot(label=label("ui.timeline"), elem_id="timeline")
    drafting_note = gr.Markdown("", elem_id="drafting-note")
    drafting = slide_plot(show_label=False, elem_id="drafting")
    files = gr.File(label=label("ui.downloads"), file_count="multiple")
    with gr.Row(equal_height=True):
        share_btn = gr.Button(label("ui.share"), size="sm", elem_id="share")
        upload = gr.UploadButton(
            label("ui.open_trace"), file_types=[".json"], type="filepath", size="sm",
            elem_id="open-trace",
        )  # fmt: skip
    share_link = gr.Textbox(
        "", label=label("ui.share_link"), interactive=False, buttons=["copy"],
        elem_id="share-link",
    )  # fmt: skip
    with gr.Accordion(label("ui.raw_trace"), open=False):
        trace_json = gr.JSON()
    return {k: v for k, v in locals().items() if k != "lang"}


# As a run starts (in the browser, before its inputs go to the server; a separate JS event on
# the same click ran only after the run had ended): Stop is marked live (red, page.css; grey
# while nothing runs), and on a narrow screen, where the tabs sit below the controls column two
# screens down, they scroll into view, where the offer, the verdict and the tokens appear; a
# run started from another tab shows the Run tab (Compare kept the last comparison on screen).
SHOW_OUTPUT_JS = """(...inputs) => {
  document.body.classList.add('sc-running');
  const first = document.querySelector('#tabs [role=tab]');  // Run, from any other tab
  if (first && first.getAttribute('aria-selected') !== 'true') first.click();
  if (window.innerWidth < 768) {
    document.getElementById('tabs')?.scrollIntoView({behavior: 'smooth', block: 'start'});
  }
  return inputs;
}"""


# The run is over (done, stopped or failed): Stop goes grey again.
RUN_OVER_JS = "() => { document.body.classList.remove('sc-running'); }"


def run_inputs(page: Page) -> list:
    """What a run reads from the page (the `/run` API's inputs, in order)."""
    p = page
    return [p.prompt, *p.models, *p.knobs, p.max_new, p.seed, p.draft_policy, p.draft_threshold,
            p.lang]  # fmt: skip


def wire(ctx: AppContext, page: Page, heavy: dict) -> None:
    """Run (the button, Enter in the prompt, and the offer's button after switching pairs),
    then the offer of another pair where this one declined; Stop."""
    p = page
    inputs = run_inputs(p)
    offer = offer_event(p)
    runner = _bind(run, ctx, p)
    over = {"fn": None, "js": RUN_OVER_JS, "api_name": False, "queue": False}
    started = {"js": SHOW_OUTPUT_JS, **heavy}
    p.run_btn.click(runner, inputs, p.run_outputs, api_name="run", **started).then(**offer).then(
        **over
    )
    p.prompt.submit(runner, inputs, p.run_outputs, api_name=False, **started).then(**offer).then(
        **over
    )
    p.stop_btn.click(_bind(stop, ctx, p), [p.lang], [p.status], api_name="stop", queue=False)
    p.switch_btn.click(
        _bind(take_switch, p),
        [p.preset, p.lang, p.asked, p.prompt],
        [p.preset, p.prompt, p.switch_box, p.status],
        api_name=False,
        queue=False,
    ).then(runner, inputs, p.run_outputs, api_name=False, **started).then(**offer).then(**over)

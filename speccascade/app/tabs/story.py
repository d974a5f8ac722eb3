"""The guided story: four scenes, each one button that sets the controls, runs, and captions
the run with its own numbers."""

from __future__ import annotations

from dataclasses import dataclass, replace

import gradio as gr

from speccascade.analysis.bench import verifier_token
from speccascade.analysis.compare import (
    Variant,
    sweep,
)
from speccascade.analysis.evalsets import find_item, story_question
from speccascade.analysis.quality import fact_token_mask, states_facts
from speccascade.analysis.race import lane_of
from speccascade.analysis.verdict import whatif
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    AppContext,
    UserError,
    _bind,
    _message,
    _session,
    label,
)
from speccascade.app.controls import alpha_update, rule_markdown
from speccascade.app.plot import slide_plot
from speccascade.app.tabs.race import RACE_ROUNDS, race_outputs, races_for
from speccascade.app.tabs.run import _execute, _shown, offer_event
from speccascade.app.tabs.whatif import whatif_note
from speccascade.core.engine import (
    APP_DEFAULTS,
    CASCADE,
    Settings,
)
from speccascade.core.rules import RULES
from speccascade.core.trace import Trace
from speccascade.i18n import t
from speccascade.models.presets import PRESETS
from speccascade.views.compare import quality_latency
from speccascade.views.heatmap import inspector
from speccascade.views.race import lane_label
from speccascade.views.style import rule_for
from speccascade.views.tokens import token_html


@dataclass(frozen=True)
class Scene:
    """A scene: a question and the settings that show one point of the method on the
    embedded pair; the tab runs it and captions it from the run."""

    key: str  # names the scene's strings (story.<key>.*)
    level: str  # easy or hard: which story question it asks
    settings: Settings
    whatif_alpha: float | None = None  # recolour the run at this alpha afterwards
    sweep: bool = False  # then draw the rule's trade-off curve on the same question
    races: tuple[str, ...] = ()  # race the approaches on these levels' questions instead

    def question(self, lang: str = "en", preset: str | None = None, level: str = "") -> str:
        """The scene's question: the preset's own story where it has one (a real model pair
        knows other things than the embedded one), else the embedded pair's in `lang`."""
        level = level or self.level
        own = own_story(preset)
        if own is not None:
            return own[0 if level == "easy" else 1]
        return story_question(level, "zh" if lang.startswith("zh") else "en")


def own_story(preset: str | None) -> tuple[str, str] | None:
    """The (easy, hard) questions a pair tells the story with where it has its own (a real
    model pair, presets.story); None: the embedded pair's."""
    return PRESETS[preset].story if preset in PRESETS else None


_SD = replace(APP_DEFAULTS, method="speculative", rule=None, alpha=None)

SCENES: tuple[Scene, ...] = (
    # 1. lossless SD on the easy question: good drafts rejected for not being the verifier's
    Scene("sd", "easy", _SD),
    # 2. the speculative cascade on the same question: the drafter's correct answer is kept
    Scene("cascade", "easy", APP_DEFAULTS),
    # 3. a hard question: the rule hands the facts to the verifier; the sequence cascade's
    #    draft is thrown away and the verifier starts over, beside SD and the cascade (raced:
    #    the cascade's run is shown, the others' medians quoted)
    Scene("hard", "hard", APP_DEFAULTS, races=("hard",)),
    # 4. moving alpha: at alpha < 0 TokenV3 is exactly SD; the what-if shows what it would
    #    defer, the sweep the whole trade-off
    Scene("alpha", "easy", APP_DEFAULTS, whatif_alpha=-0.1, sweep=True),
    # 5. the race on the easy and then the hard question (and the controls back at the
    #    defaults, which scene 4 left at the SD end)
    Scene("race", "easy", APP_DEFAULTS, races=("easy", "hard")),
)
SCENE = {s.key: s for s in SCENES}


def leave_story(lang="en") -> tuple:
    """Any run or control change of the user's own: the story's caption and curve describe a
    run that is no longer on screen, so they go."""
    return t("story.hint", lang), gr.update(visible=False)


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
    """One story scene: set the controls, run, then caption the run with its own numbers
    (scene 4's curve box opens at the click, at the curve's height: page.css)."""
    scene = SCENE[key]
    if scene.races:
        yield from play_race_scene(ctx, page, scene, story, [preset, drafter, verifier], lang)
        return
    s = scene.settings
    models = [preset, drafter, verifier]
    question = scene.question(lang, preset)
    controls = {
        **scene_controls(page, scene, question, lang),
        page.tabs: gr.Tabs(selected="run"),
        page.story_fig: gr.update(visible=key == "alpha", value=None),  # opens at the click
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
        own = own_story(preset) is not None
        caption = scene_caption(key, trace, story, item, lang, own_story=own)
        yield {page.story: story, page.caption: with_answer_link(caption, lang)}
        return
    # scene 4: the what-if at the SD end, then the trade-off curve on the same question
    rule = rule_for(trace.summary.method, trace.summary.rule)
    alpha = scene.whatif_alpha
    w = whatif(trace, rule, alpha)
    tokenizer = ctx.pair(*models).tokenizer

    def caption(runs) -> str:
        text = t("story.alpha", lang, alpha=trace.summary.alpha, whatif=alpha,
                 would=w.would_defer, runs=runs, **numbers)  # fmt: skip
        return with_answer_link(text, lang)

    yield {
        page.story: story,
        page.alpha: gr.update(value=alpha),
        page.tokens: token_html(
            trace.tokens, w.decisions, lang=lang, selected=0, stop=trace.summary.stop_reason
        ),
        page.insp: inspector(trace, 0, rule, alpha, tokenizer, lang=lang),
        page.whatif_note: whatif_note(w, rule, lang),
        page.caption: caption("…"),
    }
    fig, runs = tradeoff_curve(ctx.pair(*models), question, item, settings, lang)
    yield {
        page.story_fig: gr.update(value=fig, visible=True),
        page.sweep_fig: fig,
        page.caption: caption(runs),
    }


def scene_controls(page: Page, scene: Scene, question: str, lang: str) -> dict:
    """The controls a scene sets (the story's own settings, so the page shows what ran)."""
    s = scene.settings
    return {
        page.prompt: question,
        page.method: s.method,
        page.rule: gr.update(value=s.rule or APP_DEFAULTS.rule, interactive=bool(s.rule)),
        page.alpha: alpha_update(s.method, s.rule, s.alpha, lang),
        page.rule_md: rule_markdown(s.method, s.rule, lang),
        page.temperature: s.temperature,
        page.gamma: s.gamma,
    }


def play_race_scene(ctx: AppContext, page: Page, scene: Scene, story: dict, models, lang):
    """Scenes 3 and 5: the approaches raced on the scene's questions. Scene 3 shows the
    speculative cascade's run in the Run tab and quotes the others; scene 5 opens the Race
    tab on the easy and then the hard question."""
    preset = models[0]
    questions = [scene.question(lang, preset, level) for level in scene.races]
    tab = "race" if scene.key == "race" else "run"
    yield {
        **scene_controls(page, scene, questions[-1], lang),
        page.tabs: gr.Tabs(selected=tab),
        page.story_fig: gr.update(visible=False, value=None),
        page.caption: t("story.racing", lang, rounds=RACE_ROUNDS),
        page.race_status: t("race.running", lang, rounds=RACE_ROUNDS),
    }
    settings = replace(scene.settings, max_new_tokens=min(scene.settings.max_new_tokens,
                                                          ctx.config.max_new_tokens))  # fmt: skip
    try:
        races = races_for(ctx, questions, settings, models, lang, lambda _: None)
    except (UserError, *_USER_ERRORS) as e:
        yield {page.caption: t("status.error", lang, message=_message(e, lang))}
        return
    out = race_outputs(page, races, lang)
    own = own_story(preset) is not None
    if scene.key == "hard":
        race = races[0]
        shown = lane_of(race, CASCADE).trace
        out.update(_shown(ctx, page, shown, models, lang, race.question))
        caption = hard_caption(race, find_item(race.question), lang, own)
    else:
        caption = race_caption(races, lang)
    story = {**(story or {}), scene.key: {"races": len(races)}}
    yield {**out, page.story: story, page.caption: with_answer_link(caption, lang)}


def speed_words(x: float, lang: str) -> str:
    """ "2.31x faster" / "1.52x slower" (than the verifier alone) from a speed-up."""
    if abs(x - 1) < 0.05:
        return t("race.same", lang)
    key = "race.faster" if x > 1 else "race.slower"
    return t(key, lang, x=f"{x if x > 1 else 1 / x:.2f}")


def hard_caption(race, item, lang: str, own_story: bool = False) -> str:
    """Scene 3: the speculative cascade's run (on screen) beside the sequence cascade's
    thrown-away draft and SD, each timed by its median run."""
    ver, seq = lane_of(race, "verifier"), lane_of(race, "seq_cascade")
    sd, casc = lane_of(race, "speculative"), lane_of(race, CASCADE)
    trace = casc.trace
    mask = fact_token_mask([tok.text for tok in trace.tokens], item.facts if item else ())
    facts = [tok for tok, m in zip(trace.tokens, mask) if m]
    correct = t("story.unchecked", lang) if item is None else t(
        "story.correct" if casc.correct else "story.wrong", lang)  # fmt: skip
    extra = seq.trace.extra
    timed = dict(s=seq.finish_s, x=speed_words(seq.speedup, lang))
    if extra.get("deferred"):
        draft = extra.get("draft_text", "").strip()
        seq_text = t("story.hard.seq_deferred", lang, draft=draft[:80] + ("…" if len(draft) > 80 else ""),
                     conf=extra.get("sequence_confidence", 0.0),
                     bar=1 - RULES["chow"].alpha_default, **timed)  # fmt: skip
    else:
        right = t("story.correct" if seq.correct else "story.wrong", lang)
        seq_text = t("story.hard.seq_kept", lang, conf=extra.get("sequence_confidence", 0.0),
                     right=right, **timed)  # fmt: skip
    return t(
        "story.hard.pair" if own_story else "story.hard",
        lang,
        seq=seq_text,
        ver_s=ver.finish_s,
        sd_s=sd.finish_s,
        sd_x=speed_words(sd.speedup, lang),
        casc_s=casc.finish_s,
        casc_x=speed_words(casc.speedup, lang),
        fact_tokens=len(facts),
        fact_deferred=sum(map(verifier_token, facts)),
        kept=trace.summary.accepted / trace.summary.drafted if trace.summary.drafted else 0.0,
        correct=correct,
        rounds=race.rounds,
    )


def race_caption(races, lang: str) -> str:
    """Scene 5: each question's lanes by speed, from the one speed function."""
    parts = []
    for race in races:
        lanes = ", ".join(
            f"{lane_label(x.method, x.rule, lang)} {speed_words(x.speedup, lang)}"
            for x in race.lanes
            if x.method != "verifier"
        )
        parts.append(t("story.race.line", lang, question=race.question, lanes=lanes))
    return t("story.race", lang, rounds=races[0].rounds, lines=" ".join(parts))


def scene_numbers(trace: Trace) -> dict:
    """What a scene's caption quotes from its run."""
    s = trace.summary
    return {
        "kept": s.accepted / s.drafted if s.drafted else 0.0,
        "calls": s.verifier_calls,
        "tokens": s.new_tokens,
        "s": s.wall_s,
    }


def with_answer_link(caption: str, lang: str) -> str:
    """The caption and a link down to the answer: on a phone the answer's tokens lie a page
    of settings below the caption (page.css shows the link there only)."""
    return f"{caption}\n\n{t('story.to_answer', lang)}"


def scene_caption(
    key: str, trace: Trace, story: dict, item, lang: str, own_story: bool = False
) -> str:
    """Scenes 1 and 2: what to look at, with the run's numbers (and scene 1's beside scene
    2's).
    A pair with its own story (a real small model) gets scene 1 without the embedded pair's
    claim that the drafter knows the answer (SmolLM2's drafter invented one for Helen Hayes)."""
    numbers = story[key]
    if item is None:  # no key facts on record, so no verdict on them (it said "misses one")
        correct = t("story.unchecked", lang)
    else:
        correct = t(
            "story.correct" if states_facts(trace.text, item.facts) else "story.wrong", lang
        )
    if key == "sd":
        return t("story.sd.pair" if own_story else "story.sd", lang, **numbers)
    before = story.get("sd")
    versus = t("story.versus", lang, calls=before["calls"], s=before["s"]) if before else ""
    return t("story.cascade", lang, versus=versus, correct=correct, **numbers)


def tradeoff_curve(pair, question: str, item, settings: Settings, lang: str) -> tuple:
    """The scene's rule over an α grid on its question: key-fact accuracy (or agreement with
    the verifier) against time; the run's own α marked. Returns (figure, runs)."""
    facts = [item.facts] if item else None
    variant = Variant.cascade(settings.rule)
    table = sweep(pair, [(question, None)], [variant], n_alpha=6, settings=settings, facts=facts,
                  extra=[(variant, settings.alpha)])  # the run's own α is on the curve  # fmt: skip
    mark = table[(table.method == variant.label) & (table.alpha == round(settings.alpha, 4))]
    fig = quality_latency(
        table,
        current=mark.iloc[0].to_dict() if len(mark) else None,
        current_label=t("fig.ql.run", lang, alpha=f"{settings.alpha:g}"),
        lang=lang,
        quality_label=t("sweep.quality.facts" if facts else "sweep.quality.verifier", lang),
    )
    return fig, len(table)


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    """The story: one button per scene, the caption, and scene 4's trade-off curve."""
    with gr.Group(elem_classes="sc-story"):  # a class: Group repeats its elem_id inside
        gr.Markdown(label("ui.story"))
        with gr.Row(elem_classes="sc-scenes"):
            scene_btns = [
                gr.Button(label(f"ui.scene.{s.key}"), size="sm", elem_id=f"scene-{s.key}")
                for s in SCENES
            ]
        caption = gr.Markdown(t("story.hint", lang), elem_id="caption")
        story_fig = slide_plot(visible=False, show_label=False, elem_id="story-fig")
    return dict(scene_btns=scene_btns, caption=caption, story_fig=story_fig)


def wire(ctx: AppContext, page: Page, heavy: dict, alpha_typed) -> None:
    """Each scene's button plays it; the user's own run or control change ends the scene on
    screen (its caption and curve describe a run that is no longer there)."""
    p = page
    outputs = [
        *p.run_outputs, p.prompt, p.method, p.rule, p.alpha, p.rule_md, p.temperature, p.gamma,
        p.tabs, p.story_fig, p.caption, p.story, p.sweep_fig, p.race_status, p.race_view,
        p.race_files,
    ]  # fmt: skip
    for scene, btn in zip(SCENES, p.scene_btns):
        btn.click(
            _bind(play_scene, ctx, p, scene.key),
            [p.story, *p.models, p.lang],
            outputs,
            api_name=False,
            **heavy,
        ).then(**offer_event(p))  # the last run's offer goes with it
    leave = {"fn": leave_story, "inputs": [p.lang], "outputs": [p.caption, p.story_fig]}
    for event in (p.run_btn.click, p.prompt.submit, p.method.input, p.rule.input):
        event(**leave, api_name=False, queue=False)
    alpha_typed.change(**leave, api_name=False, queue=False)

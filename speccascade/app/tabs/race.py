"""The Race tab: the seed's approaches on the prompt, replayed together on one clock, with the
race's self-contained page and an animated GIF to download."""

from __future__ import annotations

import html
import tempfile
from pathlib import Path

import gradio as gr

from speccascade.analysis.evalsets import find_item
from speccascade.analysis.race import LANES, Race, run_race
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    AppContext,
    UserError,
    _bind,
    _message,
    check_cascade_request,
    check_context,
    gpu,
    label,
)
from speccascade.i18n import t
from speccascade.models.presets import DEFAULT_PRESET, PRESETS
from speccascade.views.race import FRAME_JS, lane_label, race_document
from speccascade.views.race_gif import race_gif

RACE_ROUNDS = 3  # timed runs per lane; the replay shows each lane's median run


def race_frame(races: list[Race], lang: str) -> str:
    """The race's page in a frame (its script runs there; the download is the same page)."""
    doc = html.escape(race_document(races, lang), quote=True)
    return f'<iframe class="sc-race-frame" title="race" srcdoc="{doc}"></iframe>'


def write_race_files(races: list[Race], lang: str) -> list[str]:
    """The race as a page that plays offline and as an animated GIF for slides (per-request
    temporary files)."""
    folder = Path(tempfile.mkdtemp(prefix="speccascade-race-"))
    page, gif = folder / "race.html", folder / "race.gif"
    page.write_text(race_document(races, lang), encoding="utf-8")
    gif.write_bytes(race_gif(races, lang))
    return [str(page), str(gif)]


def facts_for(prompt: str, models: list) -> tuple[str, ...]:
    """The question's key facts where the pair's taught list or the eval set has them."""
    preset, drafter, verifier = models
    chosen = None if drafter or verifier else PRESETS.get(preset or DEFAULT_PRESET)
    item = find_item(prompt, taught_by=chosen.taught if chosen else None)
    return item.facts if item else ()


def races_for(ctx: AppContext, prompts: list[str], settings, models: list, lang, progress):
    """Run one race per prompt (the story's last scene races two questions)."""
    pair = ctx.pair(*models)
    races = []
    for i, prompt in enumerate(prompts):
        check_context(pair, prompt, settings.chat, lang)

        def step(done: int, total: int, i=i) -> None:
            progress((i + done / total) / len(prompts))

        races.append(run_race(pair, prompt, settings, rounds=RACE_ROUNDS,
                              facts=facts_for(prompt, models), progress=step))  # fmt: skip
    return races


@gpu
def start_race(
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
    """The four lanes on the prompt at the page's settings, then the replay."""
    models = [preset, drafter, verifier]
    yield {
        page.tabs: gr.Tabs(selected="race"),
        page.race_status: t("race.running", lang, rounds=RACE_ROUNDS),
    }
    try:
        runs = len(LANES) * (RACE_ROUNDS + 1)
        prompt, _, settings = check_cascade_request(
            ctx, prompt, preset, rule, alpha, gamma, temperature, max_new_tokens, seed, runs, lang
        )
        if settings.seed is None and settings.temperature > 0:
            raise UserError(t("race.needs_seed", lang))
        races = races_for(ctx, [prompt], settings, models, lang, progress)
    except (UserError, *_USER_ERRORS) as e:
        yield {page.race_status: t("status.error", lang, message=_message(e, lang))}
        return
    yield race_outputs(page, races, lang)


def race_outputs(page: Page, races: list[Race], lang: str) -> dict:
    """What a finished race shows: its status, the replay and the downloads."""
    return {
        page.race_status: race_summary(races, lang),
        page.race_view: race_frame(races, lang),
        page.race_files: gr.update(value=write_race_files(races, lang), visible=True),
    }


def race_summary(races: list[Race], lang: str) -> str:
    """One line per race: who finished first, and the cascade's speed-up."""
    lines = []
    for race in races:
        lanes = {x.method: x for x in race.lanes}
        order = [lane_label(m, lanes[m].rule, lang) for m in race.order]
        lines.append(t("race.done", lang, question=race.question, order=" › ".join(order),
                       rounds=race.rounds))  # fmt: skip
    return "\n\n".join(lines)


# -- layout and wiring ---------------------------------------------------------------------


def parts(lang: str = "en") -> dict:
    gr.Markdown(label("ui.race_intro"))
    race_btn = gr.Button(label("ui.race_run"), variant="primary", elem_id="race-run")
    race_status = gr.Markdown(elem_id="race-status")
    race_view = gr.HTML("", elem_id="race-view", js_on_load=FRAME_JS)
    race_files = gr.File(label=label("ui.race_files"), file_count="multiple", visible=False,
                         interactive=False, elem_id="race-files")  # fmt: skip
    return dict(race_btn=race_btn, race_status=race_status, race_view=race_view,
                race_files=race_files)  # fmt: skip


def wire(ctx: AppContext, page: Page, heavy: dict) -> None:
    p = page
    p.race_btn.click(
        _bind(start_race, ctx, p),
        p.cascade_inputs,
        [p.tabs, p.race_status, p.race_view, p.race_files],
        api_name="race",
        **heavy,
    )

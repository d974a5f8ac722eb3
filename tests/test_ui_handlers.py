"""The app's handlers, called directly (no server): each returns its outputs by component."""

from __future__ import annotations

import json
import re
import string
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from speccascade.app.context import AppContext, _message, settings_of
from speccascade.app.controls import pair_label
from speccascade.app.page import layout, localize
from speccascade.app.serving import PairCache, ServeConfig
from speccascade.app.tabs.compare import diff_view, project_api, project_view, run_compare, zoo_view
from speccascade.app.tabs.inspect import (
    audit_view,
    plane_api,
    plane_view,
    replay_api,
    replay_step,
    replay_tick,
    replay_view,
)
from speccascade.app.tabs.links import open_trace, other_lang_query, share_query
from speccascade.app.tabs.run import run as run_handler
from speccascade.app.tabs.run import stop, switch_offer, take_switch, verdict_text
from speccascade.app.tabs.story import SCENES, leave_story, play_scene
from speccascade.app.tabs.sweep import calibrate_view, calibration_plan, run_sweep
from speccascade.app.tabs.whatif import click_token, inspect_position, show_whatif
from speccascade.core.engine import APP_DEFAULTS
from speccascade.i18n import STRINGS, join, size, t
from speccascade.models import hub
from speccascade.models.presets import PRESETS, PresetMissingError, first_use

MODELS = ("demo", "", "")
EASY, HARD = "Who is Buzz Aldrin?", "Who is Michael Collins?"
ENGLISH = re.compile(r"\b[A-Za-z]{4,}\b")
# names that stay as they are in Chinese: rules, authors and venues cited
CITED = (
    r"TokenV\d|BiLD\*?|OPT|Chow|Diff|ROUGE-L|D_TV|Narasimhan|Leviathan|Chen|Tran-Thien|Cai|"
    r"Medusa|Holsman|DIVERSE|Jensen|Shannon|assistant_ensemble_weight|transformers|weight|arXiv|ICLR"
)


@pytest.fixture(scope="module")
def app():
    config = ServeConfig(max_new_tokens=256, max_prompt_chars=200, max_total_tokens=4096)
    ctx = AppContext(config, PairCache(config))
    with gr.Blocks():
        page = layout(config)
    return ctx, page


def request(session="s1"):
    return SimpleNamespace(session_hash=session)


def last(outputs) -> dict:
    merged: dict = {}
    for out in outputs:
        merged.update(out)
    return merged


def run(app, prompt=EASY, lang="en", session="s1", **changes):
    ctx, page = app
    s = {**vars(APP_DEFAULTS), **changes}
    return run_handler(
        ctx,
        page,
        prompt,
        *MODELS,
        s["method"],
        s["rule"],
        s["alpha"],
        s["gamma"],
        s["temperature"],
        s["max_new_tokens"],
        0,
        s["draft_policy"],
        s["draft_threshold"],
        lang,
        request(session),
    )


def test_a_run_fills_every_panel_with_the_same_trace(app):
    ctx, page = app
    out = last(run(app))
    trace = out[page.trace]
    assert set(page.run_outputs) <= set(out)
    assert out[page.tokens].count('class="sc-tok ') == len(trace.tokens) > 0
    assert out[page.trace_json]["new_token_ids"] == trace.new_token_ids
    assert out[page.position]["maximum"] == len(trace.tokens) - 1
    assert out[page.status].startswith("Done:")
    s = trace.summary
    kept = f"{s.accepted / s.drafted:.0%}"
    assert kept in out[page.verdict] and f"{s.verifier_calls} times" in out[page.verdict]
    # the speed clause compares with the verifier alone (its direction is timing, not tested)
    assert "than the verifier alone" in out[page.verdict] or "as fast" in out[page.verdict]


def test_stop_shows_the_partial_run_in_every_panel(app):
    ctx, page = app
    outputs = run(app, HARD, method="verifier", rule=None, alpha=None, max_new_tokens=256)
    seen = []
    for out in outputs:
        seen.append(out)
        if page.tokens in out and page.trace not in out and out[page.status].startswith("Running"):
            break
    assert stop(ctx, page, "en", request())[page.status].startswith("Stopping")
    final = last(outputs)
    trace = final[page.trace]
    n = len(trace.tokens)
    assert trace.summary.stop_reason == "cancelled" and 0 < n < 256
    assert final[page.status] == t("status.stopped", "en", n=n)
    assert final[page.tokens].count('class="sc-tok ') == n
    assert final[page.position]["maximum"] == max(1, n - 1)
    assert len(final[page.trace_json]["tokens"]) == n
    assert final[page.verdict].startswith("Stopped early.")
    # the what-if and the inspector work on the partial run
    assert show_whatif(ctx, page, trace, 0.2)[page.whatif_note] == t("whatif.no_rule", "en")
    assert inspect_position(ctx, page, trace, n - 1, 0.2, *MODELS)[page.insp] is not None
    # nothing runs now: Stop leaves the status describing the last run
    assert stop(ctx, page, "en", request())[page.status] == gr.skip()


def test_stop_while_the_pair_loads_ends_the_run_before_it_begins():
    """A first run loads the pair (seconds for a real one): Stop pressed then is honoured once
    the pair is in (it was ignored, and the run went on to 256 tokens); the panels keep what
    they showed, and the next run starts at once."""
    config = ServeConfig(max_new_tokens=256, max_prompt_chars=200, max_total_tokens=4096)
    ctx = AppContext(config, PairCache(config))
    with gr.Blocks():
        page = layout(config)
    outputs = run((ctx, page), HARD, session="loading")
    first = next(outputs)
    assert first == {page.status: t("status.loading", "en")}
    assert stop(ctx, page, "en", request("loading"))[page.status].startswith("Stopping")
    rest = list(outputs)
    assert rest == [{page.status: t("status.stopped_loading", "en")}]
    assert stop(ctx, page, "en", request("loading"))[page.status] == gr.skip()  # none runs
    out = last(run((ctx, page), HARD, session="loading"))
    assert out[page.status].startswith("Done:") and out[page.trace].tokens


def test_an_english_only_pair_refuses_a_chinese_question_before_loading(app):
    """The offer's switch sent a Chinese question on to SmolLM2, which repeated it in byte
    pieces for 64 tokens under a verdict of "85% kept". Now the page says to ask in English,
    before any model loads; English with a Chinese name in it still runs."""
    ctx, page = app
    smol = PRESETS["smollm2-135m-offline"]
    assert smol.cannot_read("法国的首都是哪里？") and not smol.cannot_read("Who is 毛泽东?")
    assert not PRESETS["demo"].cannot_read("法国的首都是哪里？")
    knobs = ("spec_cascade", "token_v3", 0.5, 5, 0.0, 32, 0, "fixed", 0.4)
    for lang in ("en", "zh"):
        out = last(run_handler(ctx, page, "法国的首都是哪里？", smol.name, "", "", *knobs, lang,
                               request()))  # fmt: skip
        assert out[page.status] == t("status.error", lang, message=t("error.english_only", lang))
        assert page.trace not in out
        outs = list(run_compare(ctx, page, "法国的首都是哪里？", smol.name, "", "", "token_v3",
                                0.5, 5, 0.0, 32, 0, lang))  # fmt: skip
        assert t("error.english_only", lang) in last(outs)[page.compare_status]
        assert list(last(outs)[page.compare_table].columns) == [
            t(f"col.{c}", lang)
            for c in ("method", "answer", "time", "speedup", "calls", "kept", "agreement", "facts")
        ]  # the headers, no rows: None would show Gradio's placeholder headers "1 2 3"
        assert last(outs)[page.compare_table].empty
    assert ctx.cache.key(smol.name, "", "") not in ctx.cache._pairs  # nothing was loaded


def test_compare_tab_says_how_to_start_and_shows_its_headers_before_a_run(app):
    """Before any comparison the tab said nothing: a blank plot and a table headed "1 2 3"."""
    ctx, page = app
    for browser, lang in (("en-US", "en"), ("zh-CN", "zh")):
        out = localize(ctx, page, browser, "spec_cascade", "token_v3", 0.5)
        assert out[page.compare_status] == t("ui.compare_intro", lang)
        assert t("ui.compare", lang) in out[page.compare_status]  # names the button it needs
        assert list(out[page.compare_table].columns)[0] == t("col.method", lang)
        assert out[page.compare_table].empty


def test_stop_only_touches_its_own_session(app):
    ctx, page = app
    event = ctx.new_stop("a")
    assert not ctx.stop("b") and not event.is_set()
    assert ctx.stop("a") and event.is_set()
    ctx.done("a", event)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_user_errors_change_only_the_status_and_say_what_to_change(app, lang, caplog):
    ctx, page = app
    shown = last(run(app, EASY, lang))
    assert shown[page.trace] is not None and shown[page.asked] == EASY  # the offer reads it
    out = last(run(app, "   ", lang))
    # refused before running: only the status changes, the last run stays on every panel
    assert list(out) == [page.status], list(out)
    assert t("error.empty_prompt", lang) in out[page.status]
    out = last(run(app, "x" * 201, lang))
    assert "200" in out[page.status] and "201" in out[page.status]
    # 200 characters that fill more than the demo models' 512-token context: refused before
    # the run starts, so the panels keep the last run here too, and said in the page's words
    out = last(run(app, "🜁" * 200, lang))
    assert list(out) == [page.status] and "808" in out[page.status] and "512" in out[page.status]
    out = last(run(app, EASY, lang, max_new_tokens=999))
    assert "256" in out[page.status]
    if lang == "zh":
        assert not ENGLISH.search(out[page.status])
    assert all("Traceback" not in r.getMessage() for r in caplog.records)


def test_whatif_recolours_and_counts(app):
    ctx, page = app
    trace = last(run(app))[page.trace]
    out = show_whatif(ctx, page, trace, -0.1)
    assert "dashed" in out[page.tokens] and "α = -0.1" in out[page.whatif_note]
    out = show_whatif(ctx, page, trace, 1.0)
    assert "would defer 0 of" in out[page.whatif_note]
    assert show_whatif(ctx, page, None, 0.3)[page.whatif_note] == t("whatif.none", "en")


def test_a_typed_alpha_outside_the_range_is_set_to_the_nearest_end(app):
    ctx, page = app
    trace = last(run(app))[page.trace]
    out = show_whatif(ctx, page, trace, 7, 2, *MODELS)
    assert out[page.alpha]["value"] == 1.0 and "between -0.1 and 1" in out[page.whatif_note]
    # everything else is what typing the end itself shows: the strip and the inspector at 1
    at_end = show_whatif(ctx, page, trace, 1.0, 2, *MODELS)
    assert out[page.tokens] == at_end[page.tokens]
    assert out[page.insp].to_dict() == at_end[page.insp].to_dict()
    assert out[page.insp].to_dict()["data"][-1]["name"] == "TokenV3 keeps (α = 1)"


def test_own_runs_clear_the_story_caption():
    caption, fig = leave_story("zh")
    assert caption == t("story.hint", "zh") and fig["visible"] is False


def test_clicking_a_token_moves_the_inspector(app):
    ctx, page = app
    trace = last(run(app))[page.trace]
    evt = SimpleNamespace(_data={"pos": 3})
    out = click_token(ctx, page, trace, 0.5, *MODELS, "en", evt)
    assert out[page.position]["value"] == 3
    assert "#3" in out[page.insp].layout.title.text
    assert 'data-pos="3"' in out[page.tokens] and "sc-selected" in out[page.tokens]


def test_verdict_explains_a_slower_run():
    from speccascade.core.engine import generate
    from speccascade.models.presets import load_preset

    pair = load_preset("demo")
    # a run whose drafts were mostly rejected (the Chinese story question: the drafter's own
    # wording, which SD replaces): the verdict says why it was slower
    trace = generate(pair, "布兹·奥尔德林是谁？", method="speculative", rule=None, temperature=0)
    trace = replace(trace, summary=replace(trace.summary, method="spec_cascade", rule="token_v3"))
    assert trace.summary.accepted / trace.summary.drafted < 0.5  # the showcase: few kept
    slow = verdict_text(trace, (0.5, 3), lang="en")  # timed: half the verifier's speed
    assert "2.00× slower" in slow and "few drafts were kept" in slow and "larger α" in slow
    assert "medians of 3 runs each" in slow
    zh = verdict_text(trace, (0.5, 3), lang="zh")
    assert "慢 2.00 倍" in zh and not ENGLISH.search(zh)
    assert verdict_text(trace, None, "en", pending=True).endswith("timing it against the "
                                                                 "verifier alone…")  # fmt: skip
    # lossless SD has no α to raise: the advice points to the cascade instead
    sd = generate(pair, "布兹·奥尔德林是谁？", method="speculative", rule=None, temperature=0)
    advice = verdict_text(sd, (0.5, 3), lang="en")
    assert "larger α" not in advice and "speculative cascade" in advice


def test_the_verdict_flags_an_answer_that_repeats_itself():
    """An answer that loops (SmolLM2: "A lone soul, a lone soul, …") gets a note above the
    verdict, in the page's language, naming the phrase; a real answer gets none."""
    from speccascade.core.engine import generate
    from speccascade.models.presets import load_preset

    trace = generate(load_preset("demo"), EASY, APP_DEFAULTS)
    assert "repeats itself" not in verdict_text(trace, None, "en")
    looped = replace(trace, text=" A lone soul," + " a lone soul," * 9)
    en, zh = (verdict_text(looped, None, lang) for lang in ("en", "zh"))
    assert en.startswith("**This answer repeats itself:** 100% of it")
    assert "“a lone soul”, 10 times" in en
    assert en.endswith(verdict_text(trace, None, "en"))  # the verdict follows the note
    assert zh.startswith("**这个回答在重复自己**：") and "连说 10 次" in zh


def test_every_view_quotes_the_one_speed_function(app, monkeypatch):
    """The verdict, Compare, the race and the story quote speed.speedup (the verifier alone's
    median time to its answer over the method's): with it replaced, all four show the
    replacement's number."""
    from speccascade.analysis import speed
    from speccascade.analysis.race import run_race

    ctx, page = app
    monkeypatch.setattr(speed, "speedup", lambda verifier, method: 7.77)
    final = last(run(app))  # the verdict is timed after the run is shown
    assert "7.77× faster than the verifier alone" in final[page.verdict]
    assert "medians of 3 interleaved runs each" in final[page.verdict]
    outs = list(run_compare(ctx, page, EASY, *MODELS, "token_v3", 0.5, 5, 0.0, 32, 0, "en"))
    table = last(outs)[page.compare_table]
    assert set(table[t("col.speedup", "en")]) == {7.77}
    race = run_race(ctx.pair(*MODELS), HARD, APP_DEFAULTS, rounds=1)
    assert {lane.speedup for lane in race.lanes} == {7.77}
    caption = last(play_scene(ctx, page, "hard", {}, *MODELS, "en", request("s77")))[page.caption]
    assert caption.count("7.77x faster than the verifier") >= 2


def test_compare_switches_tab_and_scores_key_facts(app):
    ctx, page = app
    outs = list(run_compare(ctx, page, EASY, *MODELS, "token_v3", 0.5, 5, 0.0, 32, 0, "en"))
    assert outs[0][page.tabs].selected == "compare"
    final = last(outs)
    view = final[page.compare_table]
    assert list(view.columns)[-1] == "key facts" and len(view) == 8
    assert final[page.compare_fig] is not None
    assert all(len(c) <= 22 for c in view.columns)  # one-line headers
    # timed in interleaved rounds, each row the median of its runs, and said so
    assert any("timing them again (round 2 of up to 3)" in str(o.get(page.compare_status, ""))
               for o in outs)  # fmt: skip
    assert "each the median of 3 interleaved runs" in final[page.compare_status]
    outs = list(
        run_compare(ctx, page, "Tell me a story.", *MODELS, "token_v3", 0.5, 5, 0, 16, 0, "zh")
    )
    view = last(outs)[page.compare_table]
    assert set(view[t("col.facts", "zh")]) == {"—"} and t("col.agreement", "zh") in view.columns


def test_sweep_at_its_defaults_fits_the_budget(app):
    ctx, page = app
    out = run_sweep(
        ctx,
        page,
        EASY,
        *MODELS,
        "eval",
        5,
        "token_v3",
        0.5,
        5,
        0.0,
        64,
        0,
        "relative_latency",
        "en",
    )
    assert out[page.sweep_fig] is not None, out[page.sweep_note]
    assert "scaled down" in out[page.sweep_note]
    assert out[page.sweep_table]["method"].str.contains("TokenV3").any()


def test_the_sweeps_progress_speaks_in_method_names():
    """The progress bar names the job about to run as the page names methods, never by its
    internal id ('spec_cascade/token_v3 alpha=0.725')."""
    from speccascade.app.tabs.sweep import sweep_progress

    en = sweep_progress("spec_cascade/token_v3", 0.725, "en")
    assert en == "speculative cascade · TokenV3, α = 0.725"
    assert sweep_progress("lossy_speculative", -0.5, "zh") == "有损投机解码，α = −0.5"
    assert sweep_progress(None, None, "en") == "drawing the curves"
    assert sweep_progress(None, None, "zh") == "正在绘制曲线"


def test_localize_zh_leaves_no_english(app):
    ctx, page = app
    out = localize(ctx, page, "zh-CN", "spec_cascade", "token_v3", 0.5)
    assert out[page.lang] == "zh" and out[page.prompt]["value"] == "布兹·奥尔德林是谁？"
    texts = [out[page.caption], out[page.status], out[page.learn], out[page.rule_md]]
    texts += [c[0] for c in out[page.method]["choices"]] + [out[page.alpha]["label"]]
    for text in texts:
        prose = re.sub(r"\$\$.*?\$\$|`[^`]*`", "", text, flags=re.S)
        prose = re.sub(r"<[^>]*>", "", prose)  # tags (the Learn tab's picture), not prose
        prose = re.sub(CITED, "", prose)
        assert not ENGLISH.search(prose), text[:200]


@pytest.mark.parametrize("scene", SCENES, ids=lambda s: s.key)
def test_each_story_scene_captions_its_own_numbers(app, scene):
    ctx, page = app
    outs = list(play_scene(ctx, page, scene.key, {}, *MODELS, "en", request("story")))
    final = last(outs)
    asked = scene.question("en", level=(scene.races or (scene.level,))[-1])
    assert final[page.prompt] == asked and final[page.method] == scene.settings.method
    caption = final[page.caption]
    if scene.key == "race":  # the Race tab, on the easy and then the hard question
        assert final[page.tabs].selected == "race" and "<iframe" in final[page.race_view]
        for level in scene.races:
            assert scene.question("en", level=level) in caption
        assert "faster than the verifier" in caption or "slower than the verifier" in caption
        return
    trace = final[page.trace]
    s = trace.summary
    kept = f"{s.accepted / s.drafted:.0%}" if s.drafted else "0%"
    if scene.key in ("sd", "cascade"):
        assert kept in caption
        assert f"{s.new_tokens} tokens" in caption and f"{s.wall_s:.2f} s" in caption
    if scene.key == "hard":  # the cascade's run on screen, the others quoted beside it
        assert s.method == "spec_cascade" and "<iframe" in final[page.race_view]
        assert "sequential cascade" in caption and "medians of 3 runs" in caption
        assert "states the key facts" in caption
    if scene.key == "alpha":
        assert kept in caption
        assert final[page.story_fig]["visible"] is True
        assert "dashed" in final[page.tokens]
        assert "sets it back to 0.5" in caption  # the page says what it left at the SD end


def test_scene_one_claims_a_knowing_drafter_only_on_the_embedded_pair(app):
    """SmolLM2's story question gets an invented answer from its drafter: its scene 1 says
    what SD kept without calling the drafts correct (en and zh)."""
    from speccascade.app.tabs.story import scene_caption, scene_numbers

    ctx, page = app
    trace = last(run(app, method="speculative", rule=None))[page.trace]
    story = {"sd": scene_numbers(trace)}
    for lang, claim in (("en", "short and correct"), ("zh", "简短而正确")):
        assert claim in scene_caption("sd", trace, story, None, lang)
        own = scene_caption("sd", trace, story, None, lang, own_story=True)
        assert claim not in own and f"{story['sd']['kept']:.0%}" in own
        # a question with no key facts on record is not said to miss one
        story["cascade"] = story["sd"]
        cascade = scene_caption("cascade", trace, story, None, lang, own_story=True)
        assert t("story.unchecked", lang) in cascade and t("story.wrong", lang) not in cascade


def test_scene_three_claims_only_on_the_embedded_pair(app):
    """Scene 3's caption on a real pair's race quotes the numbers without the embedded
    pair's claims ("only the verifier knows"), and asks to read the answer."""
    from speccascade.analysis.race import run_race
    from speccascade.app.tabs.story import hard_caption

    ctx, page = app
    race = run_race(ctx.pair(*MODELS), HARD, APP_DEFAULTS, rounds=1)
    for lang, claim, read in (("en", "only the verifier knows", "read the answer"),
                              ("zh", "只有验证模型知道", "请读一读回答本身")):  # fmt: skip
        assert claim in hard_caption(race, None, lang)
        own = hard_caption(race, None, lang, own_story=True)
        assert claim not in own and read in own, own
        assert t("story.unchecked", lang) in own


def test_story_scene_one_and_two_tell_the_story(app):
    ctx, page = app
    story: dict = {}
    for key in ("sd", "cascade"):
        final = last(play_scene(ctx, page, key, story, *MODELS, "en", request("story2")))
        story = final[page.story]
    # SD writes the verifier's longer answer; the cascade keeps the drafter's short one
    assert story["cascade"]["kept"] >= 0.7
    assert story["cascade"]["tokens"] < story["sd"]["tokens"]
    assert story["cascade"]["calls"] < story["sd"]["calls"]


def test_every_string_exists_in_both_languages_with_the_same_fields():
    def fields(s: str) -> set | None:
        try:
            return {f for _, f, _, _ in string.Formatter().parse(s) if f}
        except ValueError:  # LaTeX braces: a text never formatted
            return None

    for key, (en, zh) in STRINGS.items():
        assert en.strip() and zh.strip(), key
        assert fields(en) == fields(zh), key


def test_counts_of_one_read_in_the_singular():
    """ "Done: 1 tokens" and "the verifier ran 1 times for 1 tokens" read wrong: English
    counts of one are singular, whatever the string; other counts and Chinese are as written."""
    assert t("status.done", "en", n=1, s=0.5, reason="end of text") == (
        "Done: 1 token in 0.50 s (end of text)."
    )
    assert t("status.done", "en", n=2, s=0.5, reason="x").startswith("Done: 2 tokens in")
    assert t("status.running", "en", n=11) == "Running: 11 tokens so far…"
    line = t("verdict.drafts", "en", kept=1.0, n_kept=1, drafted=1, calls=1, tokens=1)
    assert line.endswith("the verifier ran 1 time for 1 token"), line
    assert "ran 1 time for 21 tokens" in t(
        "verdict.drafts", "en", kept=1.0, n_kept=1, drafted=1, calls=1, tokens=21
    )
    assert t("status.stopped", "zh", n=1) == "已在 1 个词元后停止。"


def test_handlers_run_concurrently_in_separate_sessions(app):
    """Two sessions' runs at once: both finish, each with its own trace."""
    results = {}

    def go(session, prompt):
        results[session] = last(run(app, prompt, session=session))

    threads = [threading.Thread(target=go, args=(s, p)) for s, p in (("x", EASY), ("y", HARD))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    _, page = app
    assert results["x"][page.trace].text != results["y"][page.trace].text


def test_compare_at_an_alpha_only_the_users_rule_accepts(app):
    """α = −0.1 is valid for TokenV3 (= SD) but not for Chow: the baselines with their own
    rule run at that rule's default α, and all eight methods run."""
    ctx, page = app
    outs = list(run_compare(ctx, page, EASY, *MODELS, "token_v3", -0.1, 5, 0.0, 16, 0, "en"))
    final = last(outs)
    assert len(final[page.compare_table]) == 8, final[page.compare_status]


def test_sweep_plans_scale_to_the_budget_and_say_what_the_smallest_needs():
    from speccascade.analysis.compare import SweepTooLarge, Variant, plan_sweep

    variants = [Variant.cascade(r) for r in ("token_v3", "chow", "opt")]
    plan = plan_sweep([("a", None)] * 4, variants, 5, 64, 4096)
    assert plan.tokens <= 4096 and plan.variants[0] == variants[0]
    assert plan.scaled and plan.scaled[0][0] == "n_alpha"
    with pytest.raises(SweepTooLarge) as err:
        plan_sweep([("a", None)], variants, 5, 256, 1000)
    assert err.value.tokens == 256 * (2 + 3)  # one prompt: verifier, extra point, 3 alphas


# -- draft policies, sharing and the analysis views ---------------------------------------------


def test_a_run_with_a_draft_policy_shows_its_windows(app):
    ctx, page = app
    out = last(run(app, prompt=HARD, draft_policy="confidence"))
    trace = out[page.trace]
    assert trace.summary.draft_policy == "confidence"
    assert out[page.drafting] is not None
    assert "stop when unsure (0.4)" in out[page.drafting_note]
    assert str(trace.summary.wasted_drafts) in out[page.drafting_note]
    bad = last(run(app, draft_policy="sometimes"))
    assert "unknown draft_policy 'sometimes'" in bad[page.status] and page.trace not in bad


def test_share_link_round_trips_through_the_page_load(app):
    ctx, page = app
    out = share_query(ctx, page, HARD, *MODELS, "spec_cascade", "chow", 0.2, 3, 0.7, 40, 5,
                         "heuristic", 0.4, "en")  # fmt: skip
    query = out[page.share_link]
    assert query.startswith("?") and "rule=chow" in query
    # the link carries the result: its page runs again, in the link's language
    assert "_run=1" in query and "lang=en" in query
    zh = share_query(ctx, page, HARD, *MODELS, "spec_cascade", "chow", 0.2, 3, 0.7, 40, 5,
                     "heuristic", 0.4, "zh")[page.share_link]  # fmt: skip
    assert "lang=zh" in zh
    params = SimpleNamespace(query_params=query[1:], session_hash="s9")
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, params)
    assert load[page.prompt]["value"] == HARD
    assert load[page.rule]["value"] == "chow" and load[page.gamma]["value"] == 3
    assert load[page.temperature]["value"] == 0.7 and load[page.max_new] == 40
    assert load[page.seed] == 5 and load[page.draft_policy]["value"] == "heuristic"
    assert load[page.alpha]["value"] == 0.2
    assert load[page.status] == t("share.restored", "en")
    broken = SimpleNamespace(query_params="gamma=abc", session_hash="s9")
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, broken)
    assert "gamma" in load[page.status] and page.gamma not in load  # nothing else changes
    plain = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, request())
    assert page.gamma not in plain and plain[page.status] == t("status.idle", "en")


def vars_of_defaults() -> tuple:
    """The app's default knobs, as the page sends them (method .. draft threshold)."""
    d = APP_DEFAULTS
    return (d.method, d.rule, d.alpha, d.gamma, d.temperature, d.max_new_tokens, d.seed,
            d.draft_policy, d.draft_threshold)  # fmt: skip


def test_the_language_switch_opens_this_page_in_the_other_language(app):
    """The switch's link: the other language, with the typed prompt, pair and settings (which
    the page then restores); this language's own example gives way to the other's; what a
    link cannot carry is left behind, never the switch itself."""
    ctx, page = app

    def query_of(prompt, knobs):
        return other_lang_query(ctx, page, prompt, *MODELS, *knobs, "en")

    knobs = ("spec_cascade", "chow", 0.2, 3, 0.7, 40, 5, "heuristic", 0.4)
    typed = "who is buzz aldrin?"
    query = other_lang_query(ctx, page, typed, *MODELS, *knobs, "en")
    params = SimpleNamespace(query_params=query[1:], session_hash="s9")
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, params)
    assert load[page.lang] == "zh" and load[page.status].startswith(t("share.restored", "zh"))
    assert load[page.prompt]["value"] == typed and load[page.rule]["value"] == "chow"
    assert load[page.gamma]["value"] == 3 and load[page.alpha]["value"] == 0.2
    # the page's first example becomes the other language's, and back; a picked one stays
    query = other_lang_query(ctx, page, EASY, *MODELS, *knobs, "en")
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, SimpleNamespace(
        query_params=query[1:], session_hash="s9"))  # fmt: skip
    assert "prompt=" not in query and load[page.prompt]["value"] == "布兹·奥尔德林是谁？"
    back = other_lang_query(ctx, page, "布兹·奥尔德林是谁？", *MODELS, *knobs, "zh")
    assert "lang=en" in back and "prompt=" not in back
    assert "prompt=" in other_lang_query(ctx, page, HARD, *MODELS, *knobs, "en")
    # untouched settings are the page's own: the link names the language alone, and the page
    # it opens restores nothing (no "restored from the link" status)
    plain = other_lang_query(ctx, page, EASY, *MODELS, *vars_of_defaults(), "en")
    assert plain == "?lang=zh", plain
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, SimpleNamespace(
        query_params=plain[1:], session_hash="s9"))  # fmt: skip
    assert load[page.lang] == "zh" and load[page.status] == t("status.idle", "zh")
    assert page.alpha in load and load[page.alpha]["value"] == APP_DEFAULTS.alpha
    # the SmolLM2 pair's English examples are the same in both languages: kept
    smol = PRESETS["smollm2-135m-offline"]
    query = other_lang_query(ctx, page, smol.examples[0], smol.name, "", "", *knobs, "en")
    assert "prompt=" in query and f"preset={smol.name}" in query
    # a prompt too long for a link, or a setting out of range, stays behind; the switch works
    long = other_lang_query(ctx, page, "Who? " * 2000, *MODELS, *knobs, "en")
    assert long.endswith("lang=zh") and "prompt=" not in long and "rule=chow" in long
    bad = other_lang_query(ctx, page, typed, *MODELS, "spec_cascade", "chow", 7.0, *knobs[3:],
                           "zh")  # fmt: skip
    assert "lang=en" in bad and "prompt=" in bad and "alpha=7" not in bad
    # after a run, the reloaded page runs again (its panels were empty): the link says so in a
    # key links ignore, and restores the same settings
    ran = other_lang_query(ctx, page, typed, *MODELS, *knobs, "en", object())
    assert ran == query_of(typed, knobs) + "&_run=1" and "_run" not in query_of(typed, knobs)
    load = localize(ctx, page, "en-US", "spec_cascade", "token_v3", 0.5, SimpleNamespace(
        query_params=ran[1:], session_hash="s9"))  # fmt: skip
    assert load[page.prompt]["value"] == typed and "unknown" not in load[page.status]


def test_a_trace_file_restores_every_panel_without_a_model(app, tmp_path):
    ctx, page = app
    trace = last(run(app, prompt=HARD))[page.trace]
    path = tmp_path / "trace.json"
    path.write_text(trace.to_json())
    out = open_trace(ctx, page, str(path), *MODELS, "zh")
    assert set(page.run_outputs) <= set(out)
    assert out[page.trace] == trace
    assert out[page.status] == t("share.restored_trace", "zh", n=trace.summary.new_tokens)
    bad = tmp_path / "bad.json"
    bad.write_text('{"tokens": 3}')
    out = open_trace(ctx, page, str(bad), *MODELS, "en")
    assert set(out) == {page.status} and "trace" in out[page.status]


def test_a_trace_file_restores_the_question_its_doubts_are_judged_against(app, tmp_path):
    """A trace file keeps the prompt's text: reopening an answer to "Who is Einstein?" puts
    that question back in the box, and the offer judges the answer against it (it read the
    decoded chat template before, found no such question, and called the answer made up,
    under "Who is Buzz Aldrin?" in the box). A file from before traces kept the prompt says
    the prompt is unknown, empties the box and judges no doubt."""
    ctx, page = app
    question = "Who is Einstein?"
    trace = last(run(app, question))[page.trace]
    assert trace.prompt == question
    path = tmp_path / "einstein.json"
    path.write_text(trace.to_json())
    out = open_trace(ctx, page, str(path), *MODELS, "en")
    assert out[page.prompt] == question and out[page.asked] == question
    offer = switch_offer(page, out[page.trace], "demo", "en", out[page.asked])
    assert offer[page.switch_note].startswith("**Probably wrong"), offer[page.switch_note]
    assert "Who is Albert Einstein?" in offer[page.switch_note]
    old = trace.to_dict()
    del old["prompt"]
    path.write_text(json.dumps(old))
    for lang in ("en", "zh"):
        out = open_trace(ctx, page, str(path), *MODELS, lang)
        assert out[page.trace].prompt is None and out[page.asked] == "" and out[page.prompt] == ""
        n = trace.summary.new_tokens
        assert out[page.status] == t("share.restored_trace_noprompt", lang, n=n)
        offer = switch_offer(page, out[page.trace], "demo", lang, out[page.asked])
        assert offer[page.switch_box]["visible"] is False


def test_plane_follows_the_what_if_alpha(app):

    ctx, page = app
    trace = last(run(app, prompt=HARD))[page.trace]
    at_run = plane_view(page, trace, 0.5, lang="en")
    n = sum(tok.draft_id is not None for tok in trace.tokens)
    deferred = sum(bool(tok.defer) for tok in trace.tokens if tok.draft_id is not None)
    assert at_run[page.plane_note].startswith(f"{n} drafts at α = 0.5: {deferred} deferred")
    sd_end = plane_view(page, trace, -0.1, lang="zh")
    assert f"{n} 个推迟" in sd_end[page.plane_note]
    solo = last(run(app, method="verifier"))[page.trace]
    assert plane_view(page, solo, 0.5)[page.plane_fig] is None
    api = plane_api(trace.to_dict(), 0.5)
    assert len(api["points"]) == n and api["rule"] == "token_v3" and api["boundary"]


def test_diff_view_and_its_errors(app):
    from speccascade.core.engine import Settings

    ctx, page = app
    out = diff_view(ctx, page, EASY, list(MODELS), APP_DEFAULTS, "en")
    html = out[page.diff_html]
    assert "verifier" in html.lower() and "drafter" in html.lower()
    out = diff_view(ctx, page, "", list(MODELS), APP_DEFAULTS, "zh")
    assert t("error.empty_prompt", "zh") in out[page.diff_html]
    out = diff_view(ctx, page, EASY, list(MODELS), Settings(max_new_tokens=9999), "en")
    assert "9999" in out[page.diff_html] or "budget" in out[page.diff_html].lower()


def test_calibration_plan_and_bad_targets(app):

    ctx, page = app
    assert calibration_plan(3, 4, 4096) == 6
    assert calibration_plan(6, 4, 4096) == 3  # (1 + 6 * 5) * 4 * 32 = 3968
    assert calibration_plan(6, 4, 1000) is None
    v = page
    out = calibrate_view(ctx, page, None, None, ["chow"], list(MODELS), APP_DEFAULTS)
    assert "give a target" in out[v.cal_note] and not out[v.cal_table]["visible"]
    out = calibrate_view(ctx, page, 0.5, None, [], list(MODELS), APP_DEFAULTS, "zh")
    assert t("views.cal.no_rules", "zh") in out[v.cal_note]


def test_replay_player_steps_and_stops_at_the_ends(app):

    ctx, page = app
    trace = last(run(app, prompt=HARD))[page.trace]
    v = page
    n = len(trace.rounds)
    first = replay_view(page, trace, 0, lang="en")
    assert first[v.replay_round]["maximum"] == n - 1 and "round 0" in first[v.replay_html]
    back = replay_step(page, trace, 0, -1, lang="en")
    assert back[v.replay_round]["value"] == 0  # clamped at the first round
    tick = replay_tick(page, trace, n - 2, lang="zh")
    assert tick[v.replay_round]["value"] == n - 1 and not tick[v.replay_timer].active
    assert replay_tick(page, trace, 0)[v.replay_timer].active
    solo = last(run(app, method="verifier"))[page.trace]
    none = replay_view(page, solo, 0, lang="en")
    assert t("views.replay.none", "en") in none[v.replay_html]
    api = replay_api(trace.to_dict(), 1)
    assert api["index"] == 1 and len(api["steps"]) == trace.rounds[1].drafted


def test_projector_reprices_the_compared_runs_without_a_model(app):

    ctx, page = app
    v = page
    trace = last(run(app, prompt=EASY))[page.trace]
    values = dict(gpu="h100-sxm", dtype="bfloat16", drafter_params=135e6, verifier_params=1.7e9,
                  launch_ms=1.0, drafter_ms=2.0, verifier_fixed_ms=12.0, verifier_token_ms=0.3,
                  round_ms=0.5)  # fmt: skip
    out = project_view(ctx, page, None, trace, "roofline", list(MODELS), values, "en")
    assert "1 recorded run(s) re-priced" in out[v.proj_note]
    assert out[v.proj_table]["visible"] and len(out[v.proj_table]["value"]) == 1
    assert out[v.proj_gamma_table]["visible"]  # a drafting run gets its best gamma
    custom = project_view(ctx, page, {"a": trace}, None, "custom", list(MODELS),
                                   {**values, "drafter_ms": -1}, "zh")  # fmt: skip
    assert "drafter_ms" in custom[v.proj_note] and not custom[v.proj_table]["visible"]
    none = project_view(ctx, page, None, None, "roofline", list(MODELS), values, "en")
    assert none[v.proj_note] == t("views.proj.none", "en")
    api = project_api(trace.to_dict(), "custom")
    assert api["kind"] == "projection" and api["projection"][0]["new_tokens"] == len(trace.tokens)


def test_a_preset_with_its_own_story_asks_its_own_questions():
    """A real pair tells the story with questions it knows (SmolLM2 knows Shakespeare, not the
    demo corpus's astronauts); every other pair keeps the embedded pair's, in the page's
    language, and the general-knowledge questions are scored by their key facts."""
    from speccascade.analysis.evalsets import find_item, story_question
    from speccascade.models.presets import PRESETS

    easy, hard = PRESETS["smollm2-135m-offline"].story
    by_key = {s.key: s for s in SCENES}
    assert by_key["cascade"].question("en", "smollm2-135m-offline") == easy
    assert by_key["hard"].question("zh", "smollm2-135m-offline") == hard
    assert by_key["hard"].question("zh", "demo") == story_question("hard", "zh")
    assert by_key["sd"].question("en", None) == story_question("easy", "en")
    item = find_item(hard)
    assert item is not None and item.correct("It was William Shakespeare.")
    assert not item.correct("It was Gabore de Grail.")


# -- outside the pair's domain: the honest answer and the offer of the real pair -------------

OFFLINE, HUB = "smollm2-135m-offline", PRESETS["demo"].switch_to[0]


@pytest.fixture
def general(monkeypatch):
    """Pins where the offer can lead: whether the hub answers the page's probe, and whether
    the offline SmolLM2 pair is installed (its check; nothing loads in these tests)."""

    def pin(hub_up: bool, offline: bool = True) -> None:
        monkeypatch.setattr(hub, "PROBE", hub.HubProbe.answered(hub_up))
        target = PRESETS[OFFLINE]
        missing = "" if offline else "SmolLM2 is not installed: pip install gguf"
        monkeypatch.setitem(PRESETS, OFFLINE, replace(target, check=lambda: missing))

    return pin


@pytest.mark.parametrize(
    ("question", "lang", "note"),
    [
        ("What is the capital of France?", "en", "Outside what the demo pair knows"),
        ("怎么做蛋糕？", "zh", "超出了演示模型对的知识范围"),
    ],
)
def test_an_out_of_domain_question_gets_the_honest_answer_and_the_offer(
    app, general, question, lang, note
):
    """A question the shipped pair was not built for, run at the app's defaults through the
    Run handler: the pair's own answer is its honest decline, and the page's next step (the
    offer that follows every run) shows the switch to the real pair."""
    ctx, page = app
    general(hub_up=False)
    trace = last(run(app, question, lang=lang))[page.trace]
    assert PRESETS["demo"].declined(trace.text), trace.text
    offer = switch_offer(page, trace, "demo", lang, question)
    assert offer[page.switch_box]["visible"] is True and note in offer[page.switch_note]
    assert offer[page.switch_btn]["visible"] is True
    # the real pair reads only English: a Chinese question's offer says to ask there in English
    pair = t("switch.pair.offline", lang, pair=PRESETS[OFFLINE].label)
    assert offer[page.switch_note].startswith(join([t("switch.note", lang, n=1300), pair], lang))
    assert (t("switch.foreign", lang) in offer[page.switch_note]) is (lang == "zh")


def test_an_answer_that_declines_gets_the_switch_offer(app, general):
    """The offer follows the pair's own answer: its honest decline line, and no offer for a
    real answer."""
    ctx, page = app
    general(hub_up=False)
    declined = SimpleNamespace(text=" " + PRESETS["demo"].declines[0])
    offer = switch_offer(page, declined, "demo", "en")
    assert offer[page.switch_box]["visible"] is True
    assert "Outside what the demo pair knows" in offer[page.switch_note]
    assert offer[page.switch_btn]["visible"] is True
    # the button moves the page to the pair that can answer
    moved = take_switch(page, "demo", "en", "What is the capital of France?")
    assert moved[page.preset] == OFFLINE
    # the question the offer is about runs there, not what the box holds since
    assert moved[page.prompt] == "What is the capital of France?"
    assert moved[page.switch_box]["visible"] is False
    # a question the pair knows: no offer
    known = last(run(app, "Who is Buzz Aldrin?"))[page.trace]
    assert not PRESETS["demo"].declined(known.text)
    assert switch_offer(page, known, "demo", "en")[page.switch_box]["visible"] is False


def test_an_answer_about_something_the_pair_never_learnt_is_flagged(app, general):
    """ "What is the tallest mountain?" is shaped like the questions the demo pair knows, and
    it answered with a gloss of something else ("the Grand Canyon…"), not its decline: the
    page says the answer is likely made up and offers the real pair, in both languages. So
    for a WordNet word it saw only for fluency ("What is a dog?"). A right answer to a
    question it knows gets no such note."""
    ctx, page = app
    general(hub_up=False)
    for question in ("What is the tallest mountain?", "What is a dog?"):
        trace = last(run(app, question))[page.trace]
        assert not PRESETS["demo"].declined(trace.text), trace.text
        for lang, head in (("en", "Probably made up"), ("zh", "这个回答很可能是编造的")):
            offer = switch_offer(page, trace, "demo", lang, question)
            assert offer[page.switch_box]["visible"] is True
            assert offer[page.switch_note].startswith(f"**{head}"), offer[page.switch_note]
    offer = switch_offer(page, trace, "demo", "zh", "最高的山是什么？")
    assert "再用英文提问" in offer[page.switch_note]  # SmolLM2 reads English only
    for typed in ("who is buzz aldrin?", "布兹·奥尔德林是谁?", "tell me about albert einstein"):
        known = last(run(app, typed))[page.trace]
        assert switch_offer(page, known, "demo", "en", typed)[page.switch_box]["visible"] is False


def test_a_wrong_answer_about_what_the_pair_was_taught_is_flagged(app, general):
    """ "Who is Einstein?" (taught as "Who is Albert Einstein?") got "a Jewish god…": the
    answer misses the key facts of what the pair was taught, so the page says it is likely
    wrong, quotes what it was taught, and offers the real pair. An answer cut off by the
    token limit is not judged (its facts may still have been coming)."""
    ctx, page = app
    general(hub_up=False)
    question = "Who is Einstein?"
    trace = last(run(app, question))[page.trace]
    assert trace.summary.stop_reason == "eos" and "physicist" not in trace.text, trace.text
    for lang, head in (("en", "Probably wrong"), ("zh", "这个回答很可能是错的")):
        offer = switch_offer(page, trace, "demo", lang, question)
        assert offer[page.switch_box]["visible"] is True
        note = offer[page.switch_note]
        assert note.startswith(f"**{head}") and "Who is Albert Einstein?" in note, note
        assert "Albert Einstein was a physicist born in Germany" in note
    cut = replace(trace, summary=replace(trace.summary, stop_reason="max_new_tokens"))
    assert switch_offer(page, cut, "demo", "en", question)[page.switch_box]["visible"] is False
    # a surname two taught people share: wrong only if it says what neither was taught
    question = "Who is Armstrong?"
    trace = last(run(app, question))[page.trace]  # the pair answers with Neil Armstrong's facts
    assert "Apollo 11" in trace.text, trace.text
    assert switch_offer(page, trace, "demo", "en", question)[page.switch_box]["visible"] is False
    wrong = replace(trace, text=" American painter of water lilies (1840-1926)")
    note = switch_offer(page, wrong, "demo", "en", question)[page.switch_note]
    assert "“Who is Louis Armstrong?” (“" in note and "; “Who is Neil Armstrong?” (“" in note, note


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_offer_leads_somewhere_in_each_case(app, general, lang, caplog):
    """The three cases of the offer, in each language: where the hub answers, the hub pair,
    named with its download and its first load (both measured: first_use.json); where it
    does not, the offline pair if installed, with its first load; where neither, a plain
    note that this server has no general model, no button, and no install command on the
    page (the command goes to the server's log). Every case's note keeps the decline's head."""
    ctx, page = app
    declined = SimpleNamespace(text=PRESETS["demo"].declines[0])
    head = t("switch.note", lang, n=1300)
    hub_pair, offline = PRESETS[HUB], PRESETS[OFFLINE]
    cases = {
        (True, True): ("switch.pair.hub", hub_pair, "hub"),
        (True, False): ("switch.pair.hub", hub_pair, "hub"),
        (False, True): ("switch.pair.offline", offline, "offline"),
        (False, False): (None, None, None),
    }
    for (hub_up, installed), (key, target, kind) in cases.items():
        general(hub_up=hub_up, offline=installed)
        caplog.clear()
        offer = switch_offer(page, declined, "demo", lang, "What is the capital of France?")
        note, button = offer[page.switch_note], offer[page.switch_btn]
        assert offer[page.switch_box]["visible"] is True and note.startswith(head), note
        assert "pip" not in note and "install" not in note, note
        if target is None:
            assert note == join([head, t("switch.none", lang)], lang)
            assert button["visible"] is False
            assert "pip install gguf" in caplog.text  # the operator's side
            assert take_switch(page, "demo", lang)[page.status] == t("switch.none", lang)
            continue
        first = first_use(target.name)
        sentences = [t(key, lang, pair=target.label),
                     t(f"switch.first.{kind}", lang, size=size(first.download_bytes),
                       s=first.first_load_s)]  # fmt: skip
        assert note == join([head, *sentences], lang), note
        assert button["visible"] is True
        assert button["value"] == t("switch.btn", lang, pair=target.label)
        moved = take_switch(page, "demo", lang, "What is the capital of France?")
        assert moved[page.preset] == target.name
        assert moved[page.status] == t("switch.switched", lang, pair=target.label)
    # the hub pair's first use downloads something, the offline pair's nothing
    assert first_use(HUB).download_bytes > 100e6 and first_use(OFFLINE).download_bytes == 0
    # a pair with no switch (SmolLM2 itself), no trace, or an unknown preset: no offer
    for trace, preset in ((declined, OFFLINE), (None, "demo"), (declined, "?")):
        assert switch_offer(page, trace, preset, "en")[page.switch_box]["visible"] is False


def test_a_pair_that_is_not_set_up_is_refused_without_an_install_command(caplog):
    """Picking a pair the server lacks: the page says it is not set up here and to pick
    another; the command that installs it goes to the log, for the operator."""
    e = PresetMissingError(OFFLINE, "SmolLM2-135M-Instruct is not installed: pip install gguf")
    for lang, words in (("en", "not set up on this server"), ("zh", "本服务器没有配置")):
        message = _message(e, lang)
        assert words in message and PRESETS[OFFLINE].label in message and "pip" not in message
    assert "pip install gguf" in caplog.text


# -- the rule zoo (Compare tab) and the fidelity audit (Inspect tab) -------------------------


def test_the_rule_zoo_view_compares_rules_at_matched_deferral_rates(app):

    ctx, page = app
    v = page
    settings = settings_of("spec_cascade", None, None, 4, 0.0, 32, 0)
    out = zoo_view(ctx, page, ["token_v3", "typical"], [0.25], MODELS, settings, "en")
    frame = out[v.zoo_table]["value"]
    assert out[v.zoo_table]["visible"] and out[v.zoo_fig] is not None
    names = list(frame.iloc[:, 0])
    assert names[:3] == ["verifier alone", "Speculative decoding", "Block verification"]
    assert names[3:] == ["TokenV3", "Typical acceptance"]
    assert frame.iloc[4, 2].startswith("ε = ")
    assert "4 questions" in out[v.zoo_note]
    zh = zoo_view(ctx, page, ["token_v3"], [0.5], MODELS, settings, "zh")
    assert "推迟率" in zh[v.zoo_table]["value"].columns
    # nothing chosen, or more than the budget: a message, and nothing runs
    none = zoo_view(ctx, page, [], [0.25], MODELS, settings, "en")
    assert "choose at least one rule" in none[v.zoo_note] and not none[v.zoo_table]["visible"]
    small = AppContext(ServeConfig(max_total_tokens=200), ctx.cache)
    big = zoo_view(small, page, ["token_v3", "chow"], [0.1, 0.5], MODELS, settings, "en")
    assert "token budget" in big[v.zoo_note]


AUDIT_RUNS = 200  # the handler test's sample count: fixed, not sized by this machine's speed


def test_the_audit_view_checks_the_current_settings(app, monkeypatch):
    """The handler audits the page's settings with the slider's time budget. The audit sizes
    its sample count from that budget and this machine's speed; here the count is fixed
    (seeds 0..199 at the audit's level 0.01: a correct loop misses "Consistent" with
    probability at most 1%), and the budget the handler passed is checked."""
    from speccascade.analysis import audit as audit_module
    from speccascade.app.tabs import inspect

    calls = []

    def fixed_runs(pair, prompt, settings, **kw):
        calls.append(kw)
        return audit_module.audit(pair, prompt, settings, **{**kw, "samples": AUDIT_RUNS})

    monkeypatch.setattr(inspect, "audit", fixed_runs)
    ctx, page = app
    v = page
    # T = 2: the retrained verifier is all but sure of Buzz Aldrin's first tokens at T = 1
    # (one outcome per position: "Nothing to test"), a flatter law gives the test something
    settings = settings_of("speculative", None, None, 4, 2.0, 8, 0)
    out = audit_view(ctx, page, "Who is Buzz Aldrin?", MODELS, settings, 2, 10, "en")
    assert calls == [dict(positions=2, seconds=10.0)]
    assert out[v.audit_note].startswith("Consistent with the promised law (the verifier's law p)")
    assert f"({AUDIT_RUNS} runs, " in out[v.audit_note]
    frame = out[v.audit_table]["value"]
    assert list(frame.iloc[:, 0]) == [1, 2] and out[v.audit_fig] is not None
    zh = audit_view(ctx, page, "布兹·奥尔德林是谁？", MODELS, settings, 1, 10, "zh")
    assert calls[1] == dict(positions=1, seconds=10.0)
    assert (
        zh[v.audit_note].startswith("与承诺的分布") and f"{AUDIT_RUNS} 次运行" in zh[v.audit_note]
    )
    for bad in (("", 2, 10), ("Who is Buzz Aldrin?", 9, 10), ("Who is Buzz Aldrin?", 2, 999)):
        out = audit_view(ctx, page, bad[0], MODELS, settings, bad[1], bad[2], "en")
        assert out[v.audit_note].startswith("Nothing was run") and not out[v.audit_table]["visible"]
    seq = settings_of("seq_cascade", None, None, 4, 1.0, 8, 0)
    out = audit_view(ctx, page, "Who is Buzz Aldrin?", MODELS, seq, 2, 10, "en")
    assert "whole answers" in out[v.audit_note]


def test_a_pair_brings_its_own_examples_and_hint():
    """The SmolLM2 pair's page (built for it, or switched to it) shows its own questions and
    says it tries any question; the embedded pair's says what it knows and what it declines."""
    from speccascade.analysis.evalsets import SHOWCASE
    from speccascade.app.controls import pair_changed

    smol = PRESETS["smollm2-135m-offline"]
    for lang in ("en", "zh"):
        examples, prompt = pair_changed(smol.name, lang, 200)
        assert examples.raw_samples == [[q] for q in smol.examples]
        assert prompt["info"] == t("prompt.info.pair", lang, limit=200)
        examples, prompt = pair_changed("demo", lang, 200)
        assert examples.raw_samples == [[x.question] for x in SHOWCASE if x.lang == lang]
        assert prompt["info"] == t("prompt.info", lang, limit=200, context=512)
    assert (
        "say so" in t("prompt.info", "en", limit=1, context=512)
        and "nonsense" not in STRINGS["prompt.info"][0]
    )
    config = ServeConfig(preset=smol.name, max_prompt_chars=200)
    ctx = AppContext(config, PairCache(config))
    with gr.Blocks():
        page = layout(config)
    assert page.prompt.value == smol.examples[0]
    assert page.examples.raw_samples == [[q] for q in smol.examples]
    for browser in ("en-US", "zh-CN"):  # English questions whatever the page's language
        out = localize(ctx, page, browser, "spec_cascade", "token_v3", 0.5)
        assert page.examples not in out
        assert out[page.prompt]["info"] == t("prompt.info.pair", browser, limit=200)


def test_the_race_handler_shows_the_race_and_its_downloads(app):
    from speccascade.app.tabs.race import start_race

    ctx, page = app
    outs = list(start_race(ctx, page, EASY, *MODELS, "token_v3", 0.5, 5, 0.0, 64, 0, "en",
                           progress=lambda *a, **k: None))  # fmt: skip
    final = last(outs)
    assert final[page.tabs].selected == "race"
    assert "<iframe" in final[page.race_view] and "Verifier alone" in final[page.race_view]
    files = final[page.race_files]["value"]
    assert [Path(f).suffix for f in files] == [".html", ".gif"]
    assert Path(files[1]).read_bytes()[:6] == b"GIF89a"
    assert "order of finish" in final[page.race_status] and EASY in final[page.race_status]
    # bad input changes nothing but the status: an empty prompt, then a sampled race with no seed
    for prompt, temperature, seed in (("", 0.0, 0), (EASY, 1.0, None)):
        bad = last(start_race(ctx, page, prompt, *MODELS, "token_v3", 0.5, 5, temperature, 64,
                              seed, "en", progress=lambda *a, **k: None))  # fmt: skip
        assert page.race_view not in bad and "Nothing was run" in bad[page.race_status], bad


def test_a_refused_question_dims_the_previous_answer_and_offers_the_demo_pair(app):
    """A question refused before it ran leaves the last answer on the panels: the note above
    it names the pair that wrote it and says it is the previous question's (dimmed); a
    Chinese question refused by SmolLM2 (English only) is offered the embedded pair."""
    from speccascade.app.tabs.run import switch_offer, take_switch

    ctx, page = app
    trace = last(run(app))[page.trace]
    shown = ["demo", "", ""]
    same = switch_offer(page, trace, "demo", "en", EASY, EASY, shown)
    assert same[page.answer_note] == t("answer.pair", "en", pair=pair_label("demo", "en"))
    assert same[page.tokens]["elem_classes"] == [] and not same[page.switch_box]["visible"]
    question = "布兹·奥尔德林是谁？"
    refused = last(run_handler(ctx, page, question, "smollm2-135m-offline", "", "",
                               "spec_cascade", "token_v3", 0.5, 5, 0.0, 64, 0, lang="en",
                               request=request("s-zh")))  # fmt: skip
    assert set(refused) == {page.status} and "reads only English" in refused[page.status]
    out = switch_offer(page, trace, "smollm2-135m-offline", "en", EASY, question, shown)
    assert out[page.tokens]["elem_classes"] == ["sc-stale"]
    assert "previous question" in out[page.answer_note] and EASY in out[page.answer_note]
    assert out[page.switch_box]["visible"] and out[page.switch_btn]["visible"]
    assert out[page.switch_btn]["value"] == t("switch.to_demo_btn", "en")
    moved = take_switch(page, "smollm2-135m-offline", "en", EASY, question)
    assert moved[page.preset] == "demo" and moved[page.prompt] == question
    zh = switch_offer(page, trace, "smollm2-135m-offline", "zh", EASY, question, shown)
    assert "上一个问题" in zh[page.answer_note] and "内置演示模型对" in zh[page.switch_note]

"""Round replay (analysis.replay, views.replay, `speccascade replay`): every replayed round agrees
with what the engine recorded and with the output it wrote, and its printed arithmetic is the
comparison the run made."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from test_viz import _english_words, _plain

from speccascade import cli
from speccascade.analysis.explain import SIDES
from speccascade.analysis.replay import replay_round, rounds_of
from speccascade.core.engine import APP_DEFAULTS, generate
from speccascade.core.errors import SettingsError
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES
from speccascade.core.trace import Trace
from speccascade.i18n import STRINGS, t
from speccascade.models.presets import load_preset
from speccascade.views.replay import (
    ACCEPT_TEXT,
    LOSSY_ACCEPT_TEXT,
    RESIDUAL_TEXT,
    SIDES_TEXT,
    accept_line,
    num,
    pair,
    replay_html,
    replay_text,
    rule_line,
)

HARD, EASY = "Who is Michael Collins?", "Who is Buzz Aldrin?"
# every rule the speculative loop runs: the cascade's rules and the three fixed-rule methods
METHODS = [("spec_cascade", r) for r in SPEC_CASCADE_RULES] + [
    ("speculative", None),
    ("lossy_speculative", None),
    ("bild", None),
]
NUMBER = r"(−?[0-9.]+(?:e[-+][0-9]+)?|−?∞)"


@pytest.fixture(scope="module")
def demo():
    return load_preset(None)


@pytest.fixture(scope="module")
def hard(demo):
    return generate(demo, HARD, APP_DEFAULTS)


def _float(text: str) -> float:
    return float(text.replace("−", "-").replace("∞", "inf"))


def _printed_sides(line: str) -> tuple[float, str, float, str]:
    """lhs, operator, rhs and verdict of a printed rule line: 'p(x) = 0.1 < … = 0.2: defer'."""
    m = re.fullmatch(rf"[^=]+ = {NUMBER} ([<>≥≤]) .* = {NUMBER}: (\w+)", line)
    assert m, line
    return _float(m[1]), m[2], _float(m[3]), m[4]


def _printed_draw(line: str) -> tuple[float, str, float, str]:
    m = re.fullmatch(rf"u = {NUMBER} ([<≥]) .* = {NUMBER}: (\w+)", line)
    assert m, line
    return _float(m[1]), m[2], _float(m[3]), m[4]


def check_trace(trace: Trace) -> dict[str, int]:
    """Every round of a run replayed and checked against the record and the output; returns
    how often each outcome and draft status occurred."""
    seen: dict[str, int] = {}
    n = rounds_of(trace)
    assert n == len(trace.rounds) > 0
    rule = RULES[trace.summary.rule]
    written = 0
    for i in range(n):
        rnd, rep = trace.rounds[i], replay_round(trace, i)
        assert rep.recorded and rep.index == i and rep.first_position == written
        assert (rep.window, rep.drafted, rep.accepted) == (rnd.window, rnd.drafted, rnd.accepted)
        assert len(rep.steps) == rnd.drafted == len(rnd.draft_ids)
        ids = [t.token_id for t in rep.emitted]
        assert ids == trace.new_token_ids[written : written + len(ids)]
        written += len(ids)
        for step, draft, drafted_id in zip(rep.steps, rnd.drafts, rnd.draft_ids, strict=True):
            seen[step.status] = seen.get(step.status, 0) + 1
            assert step.token_id == draft.token_id == drafted_id
            assert step.defer == draft.defer == step.recorded_defer  # the rule, recomputed
            assert (step.kept, step.tested) == (draft.kept, draft.tested)
            line = rule_line(step, rep)
            if step.relation is not None:
                holds = step.lhs < step.rhs if step.relation == "<" else step.lhs > step.rhs
                assert holds == step.defer, (i, step.slot)
                lhs, op, rhs, verdict = _printed_sides(line)
                printed = lhs < rhs if step.relation == "<" else lhs > rhs
                assert printed == step.defer, line
                assert op == (step.relation if step.defer else {"<": "≥", ">": "≤"}[step.relation])
                assert verdict == ("defer" if step.defer else "keep")
            else:  # SD defers every draft; lossy SD decides nothing: its accept test decides
                assert step.defer is (True if rule.kind == "mixture" else None)
                lenient = rule.kind == "lenient"
                assert line == (t("fig.replay.rule_none", "en") if lenient else "π = p: defer")
            draw_line = accept_line(step, rep)
            if step.tested:
                assert (step.u < step.accept_prob) == step.kept, (i, step.slot)
                u, op, a, verdict = _printed_draw(draw_line)
                assert (u < a) == step.kept and op == ("<" if step.kept else "≥"), draw_line
                assert verdict == ("keep" if step.kept else "reject")
            else:
                assert draw_line == t("fig.replay.untested", "en")
        # the accept test keeps a prefix: drafts up to the first rejection were tested
        statuses = [s.status for s in rep.steps]
        assert statuses == ["kept"] * rep.accepted + (
            ["rejected"] + ["untested"] * (rep.drafted - rep.accepted - 1)
            if rep.accepted < rep.drafted
            else []
        )
        seen[rep.outcome] = seen.get(rep.outcome, 0) + 1
        after = written - len(ids) + rep.accepted  # the output position of the drawn token
        if rep.outcome == "rejected":
            assert rep.verifier_rolled_back == rep.drafted - rep.accepted
            assert rep.drafter_rolled_back == rep.drafted - rep.accepted - 1
            assert rep.rejected_at == rep.accepted
        else:
            assert rep.verifier_rolled_back == rep.drafter_rolled_back == 0
        if rep.outcome == "end":
            assert i == n - 1 and rep.draw is None
        elif len(ids) > rep.accepted:  # the residual or bonus token was written
            draw = rep.draw
            assert draw.token_id == trace.new_token_ids[after]
            source = "resampled" if rep.outcome == "rejected" else "bonus"
            assert rep.emitted[rep.accepted].source == source
            if draw.prob is not None:
                assert draw.prob > 0  # it was drawn, so its law gave it mass
            if trace.summary.temperature == 0 and draw.law != "p1":
                # greedy: the drawn token is the law's most likely one
                assert draw.top and draw.top[0].token_id == draw.token_id
        html, text = replay_html(rep), replay_text(rep)
        assert f'data-round="{i}"' in html and text.startswith(f"round {i} ")
    assert written == trace.summary.new_tokens
    return seen


# -- the demo pair's story -----------------------------------------------------------------


def DEFERRED_ROUND(trace) -> int:  # noqa: N802 - read as a constant of the trace
    """The first round in which the rule deferred a draft (and the caches rolled back)."""
    return next(
        i for i in range(len(trace.rounds)) if replay_round(trace, i).drafter_rolled_back > 0
    )


def test_hard_question_replays_every_round(hard):
    seen = check_trace(hard)
    # the hard question: the rule hands the verifier the token where the drafter goes wrong
    # (after it, the drafter, distilled from the verifier, follows the verifier's answer)
    assert seen["rejected"] >= 1 and seen["kept"] > seen["rejected"]
    r = DEFERRED_ROUND(hard)
    rep = replay_round(hard, r)
    i = next(k for k, step in enumerate(rep.steps) if step.defer)
    assert rep.steps[i].status == "rejected" and rep.emitted[i].source == "resampled"
    assert rep.draw.law == "residual" and rep.draw.prob == 1.0  # greedy: one-hot residual


def test_easy_question_has_bonus_rounds(demo):
    trace = generate(demo, EASY, APP_DEFAULTS)
    seen = check_trace(trace)
    assert seen.get("bonus", 0) >= 1 and seen["kept"] > seen.get("rejected", 0)
    reps = [replay_round(trace, i) for i in range(len(trace.rounds) - 1)]
    rep = next(r for r in reps if r.accepted == r.drafted)
    assert rep.outcome == "bonus" and rep.draw.law == "pi"
    assert rep.verifier_rolled_back == rep.drafter_rolled_back == 0


def test_demo_pair_sampled_runs_replay(demo):
    settings = replace(APP_DEFAULTS, temperature=1.0, seed=3, max_new_tokens=40)
    seen = check_trace(generate(demo, HARD, settings))
    assert seen["kept"] and seen["rejected"]


def test_decoder_gives_every_draft_a_text(demo, hard):
    decode = lambda i: demo.tokenizer.decode([i])  # noqa: E731
    rep = replay_round(hard, 0, decode=decode)
    assert all(s.token == decode(s.token_id) for s in rep.steps)
    assert all(c.token == decode(c.token_id) for c in rep.draw.top)
    # without it, drafts the run never wrote have no text and show their id
    bare = replay_round(hard, 0)
    missing = [s for s in bare.steps if s.token is None]
    assert missing and f"id {missing[0].token_id}" in replay_text(bare)


# -- every rule, greedy and sampled, on the tiny pair ----------------------------------------


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize(("method", "rule"), METHODS)
def test_every_rule_replays(llama_pair, method, rule, temperature):
    settings = replace(
        APP_DEFAULTS,
        method=method,
        rule=rule or APP_DEFAULTS.rule,
        alpha=None,
        gamma=4,
        temperature=temperature,
        max_new_tokens=24,
        seed=1,
    )
    trace = generate(llama_pair, "hi", settings)
    check_trace(trace)
    rep = replay_round(trace, 0)
    text = replay_text(rep)
    if temperature == 0:
        assert t("fig.replay.greedy_note", "en", accept=ACCEPT_TEXT if method != "lossy_speculative" else LOSSY_ACCEPT_TEXT) in text  # fmt: skip
    if method == "lossy_speculative":
        assert LOSSY_ACCEPT_TEXT in text and "π = p" not in text
        assert f"{LOSSY_ACCEPT_TEXT}, α = 0.3" in replay_html(rep)  # the note, once per card
    if method == "speculative":
        assert text.count(t("fig.replay.rule_sd", "en")) == 1
    if rep.outcome == "rejected" and method == "lossy_speculative":
        assert RESIDUAL_TEXT["lenient"] in text


def test_sd_bonus_token_is_drawn_from_p(llama_pair):
    """SD records no row of π after a fully kept window (π = p): the replay reads p's (T = 1)."""
    trace = generate(llama_pair, "hi", method="speculative", gamma=1, temperature=1.0,
                     max_new_tokens=30, seed=0)  # fmt: skip
    reps = [replay_round(trace, i) for i in range(len(trace.rounds))]
    bonus = [r for r in reps if r.outcome == "bonus"]
    assert bonus
    for rep in bonus:
        record = rep.emitted[-1]
        assert rep.draw.law == "p1" and record.source == "bonus"
        if rep.draw.prob is not None:
            assert rep.draw.prob == pytest.approx(record.p)
        assert t("fig.replay.bonus_p1", "en") in replay_text(rep)


def test_scaled_temperature_is_stated(llama_pair):
    trace = generate(llama_pair, "hi", method="spec_cascade", rule="token_v3", temperature=0.7,
                     max_new_tokens=12, seed=2)  # fmt: skip
    check_trace(trace)
    text = replay_text(replay_round(trace, 0))
    assert t("fig.replay.t_note", "en", accept=ACCEPT_TEXT, t="0.7") in text


def test_negative_alpha_is_parenthesised(llama_pair):
    trace = generate(llama_pair, "hi", method="spec_cascade", rule="token_v3", alpha=-0.05,
                     temperature=0.0, max_new_tokens=8)  # fmt: skip
    check_trace(trace)
    assert "(1 − (−0.05)) × " in replay_text(replay_round(trace, 0))


# -- the views -------------------------------------------------------------------------------


def test_sides_text_covers_every_rule_with_sides():
    assert set(SIDES_TEXT) == {name for name, sides in SIDES.items() if sides is not None}


def test_numbers_print_in_the_order_they_compare():
    for a, b in [(0.25, 0.2500001), (1e-9, 1.0000001e-9), (0.1, 0.1 + 1e-12), (-0.3, -0.2999)]:
        x, y = pair(a, b)
        assert x != y and (_float(x) < _float(y)) == (a < b), (a, b, x, y)
    assert pair(0.5, 0.5) == ("0.5", "0.5")
    assert (num(float("inf")), num(float("-inf")), num(None)) == ("∞", "−∞", "–")
    assert num(6.9254e-07) == "6.9e-07" and num(-0.1) == "−0.1" and num(0.12) == "0.12"


def test_html_escapes_token_text(hard):
    data = hard.to_dict()
    evil = "<script>alert(1)</script>"
    for tok in data["tokens"]:
        if tok["round"] == 0:
            tok["text"] = evil
    trace = Trace.from_dict(data)
    rep = replay_round(trace, 0, decode=lambda i: evil)
    out = replay_html(rep)
    assert "<script" not in out and "&lt;script&gt;" in out
    assert "<script" not in replay_html(replay_round(trace, 0), lang="zh")


def test_html_card_wraps_on_a_phone(hard):
    out = replay_html(replay_round(hard, DEFERRED_ROUND(hard)))
    assert out.startswith('<div class="sc-replay"') and "max-width:100%" in out
    assert "overflow-wrap:anywhere" in out
    # nothing wider than a 390 px screen is fixed: no pixel widths, no unbreakable lines
    assert not re.search(r"(?<![-\w])(?:min-)?width:\s*\d{3,}px", out)
    for span in re.findall(r'white-space:nowrap">(.*?)</span>', out):
        assert len(_plain(span)) <= 24, span
    rows = re.findall(r'class="sc-replay-draft" data-slot="(\d+)" data-status="(\w+)"', out)
    assert [s for _, s in rows] == [
        s.status for s in replay_round(hard, DEFERRED_ROUND(hard)).steps
    ]


def test_chinese_replay(hard):
    r = DEFERRED_ROUND(hard)
    rep = replay_round(hard, r)
    zh = replay_text(rep, "zh")
    assert zh.startswith(f"第 {r} 轮") and "规则：" in zh and "接受检验：" in zh and "推迟" in zh
    assert "KV 缓存回滚" in zh and "写出：" in zh
    boxes = r'<span class="sc-rtok"[^>]*>[^<]*</span>'  # token texts
    html_zh = _plain(re.sub(boxes, "", replay_html(rep, "zh")))
    for text in (zh, html_zh):
        prose = re.sub(r"'[^']*'", "", text.replace("\u00a0", " "))  # token texts
        for formula in (ACCEPT_TEXT, *RESIDUAL_TEXT.values()):
            prose = prose.replace(formula, "")
        assert not _english_words([prose]), _english_words([prose])
    keys = [k for k in STRINGS if k.startswith("fig.replay.")]
    assert len(keys) > 20
    for key in keys:
        en, zh_ = STRINGS[key]
        fields = lambda s: set(re.findall(r"\{(\w+)\}", s))  # noqa: E731
        assert fields(en) == fields(zh_) and re.search("[\u4e00-\u9fff]", zh_), key


def test_ended_round_says_why(hard):
    """The hard run ends with end of text inside its last round's kept drafts."""
    rep = replay_round(hard, len(hard.rounds) - 1)
    assert rep.stop_reason == hard.summary.stop_reason == "eos"
    text = replay_text(rep)
    assert t("fig.stop.eos", "en") in text
    unwritten = [s for s in rep.steps if s.kept and not s.written]
    if unwritten:
        assert t("fig.replay.badge.unwritten", "en") in text


# -- errors and old traces -------------------------------------------------------------------


@pytest.mark.parametrize("index", [-1, "n", 1000, True, 1.0, "0"])
def test_bad_index(hard, index):
    last = len(hard.rounds) - 1
    with pytest.raises(SettingsError, match=rf"round must be an integer in \[0, {last}\]"):
        replay_round(hard, last + 1 if index == "n" else index)


def test_non_speculative_trace(demo):
    trace = generate(demo, EASY, replace(APP_DEFAULTS, method="verifier", max_new_tokens=4))
    assert rounds_of(trace) == 0
    with pytest.raises(SettingsError, match="no speculative rounds"):
        replay_round(trace, 0)


def test_trace_without_draft_records(hard):
    data = hard.to_dict()
    for rnd in data["rounds"]:
        for key in ("window", "drafts", "residual_top", "drafter_rolled_back",
                    "verifier_rolled_back"):  # fmt: skip
            del rnd[key]
    old = Trace.from_dict(data)
    rep = replay_round(old, 3)
    assert not rep.recorded and rep.steps == [] and rep.draw is None
    assert rep.drafter_rolled_back is None and [t.token_id for t in rep.emitted] == [
        t.token_id for t in hard.tokens if t.round == 3
    ]
    for lang in ("en", "zh"):
        message = t("fig.replay.not_recorded", lang)
        assert message in replay_text(rep, lang) and message in _plain(replay_html(rep, lang))
    assert "re-run" in t("fig.replay.not_recorded", "en")


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_replays_one_round(hard, tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(hard.to_json())
    r = DEFERRED_ROUND(hard)
    rep = replay_round(hard, r)
    assert cli.main(["replay", str(path), "--round", str(r)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == replay_text(rep)
    last = len(hard.rounds) - 1
    steps = len(rep.steps)  # the rule's arithmetic for every draft of the window
    assert out.startswith(f"round {r} (rounds 0–{last})") and out.count("rule: p(x) = ") == steps

    def entries(n: int) -> str:
        return f"{n} entry" if n == 1 else f"{n} entries"

    rolled = (
        f"drafter {entries(rep.drafter_rolled_back)}, verifier {entries(rep.verifier_rolled_back)}"
    )
    assert "u = " in out and f"KV cache rolled back: {rolled}" in out
    assert cli.main(["replay", str(path), "--round", "2", "--lang", "zh"]) == 0
    assert capsys.readouterr().out.startswith("第 2 轮")
    assert cli.main(["replay", str(path)]) == 0
    assert len(re.findall(r"^round \d+ ", capsys.readouterr().out, re.M)) == len(hard.rounds)


def test_cli_errors(hard, demo, tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(hard.to_json())
    assert cli.main(["replay", str(path), "--round", "99"]) == 2
    last = len(hard.rounds) - 1
    assert f"round must be an integer in [0, {last}]" in capsys.readouterr().err
    verifier = generate(demo, EASY, replace(APP_DEFAULTS, method="verifier", max_new_tokens=3))
    path.write_text(verifier.to_json())
    assert cli.main(["replay", str(path)]) == 2
    assert "no speculative rounds" in capsys.readouterr().err
    path.write_text("{}")
    assert cli.main(["replay", str(path)]) == 2

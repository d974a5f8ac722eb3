"""Worked examples (speccascade.explain) and the Learn tab built from them (i18n.learn).

The rule's two sides reported for a draft must give the very decision `rules.decide` makes on
the recorded numbers, and the one the engine recorded (docs/method.md, §4 and §7.8)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from speccascade.analysis.explain import SIDES, compare, sides_of, token_step, worked_example
from speccascade.core.engine import APP_DEFAULTS, generate
from speccascade.core.rules import RULES, decide
from speccascade.i18n import STRINGS, t
from speccascade.models.presets import load_preset
from speccascade.views.learn import SIDES_TEX, learn_markdown, number

HARD, EASY = "Who is Michael Collins?", "Who is Buzz Aldrin?"
COMPARED = ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "bild")


@pytest.fixture(scope="module")
def demo():
    return load_preset("demo")


@pytest.fixture(scope="module")
def runs(demo):
    """The two story runs at the app's defaults (TokenV3, greedy)."""
    return {prompt: generate(demo, prompt, APP_DEFAULTS) for prompt in (HARD, EASY)}


def _decode(demo):
    return lambda i: demo.tokenizer.decode([i])


def _drafted(trace):
    return [r for r in trace.tokens if r.draft_id is not None]


def _english_runs(text: str) -> list[str]:
    """Runs of 3+ ASCII words outside $$…$$ formulas, `code` spans and HTML tags (the loop's
    picture: its words are checked in tests/test_loop_svg.py)."""
    prose = re.sub(r"<[^>]*>", " ", text)
    prose = re.sub(r"\$\$.*?\$\$", " ", prose, flags=re.S)
    prose = re.sub(r"(`+).*?\1", " ", prose, flags=re.S)
    return re.findall(r"[A-Za-z]+(?:[ \t,.;:'’\-]+[A-Za-z]+){2,}", prose)


# the {fields} learn_markdown fills into its strings
FIELDS = [
    "prompt",
    "setting",
    "rule",
    "alpha",
    "gamma",
    "position",
    "token",
    "q",
    "p",
    "max_p",
    "max_q",
    "dtv",
    "keep",
    "numbers",
    "verdict",
    "pi",
    "accept",
    "emitted",
    "temperature",
    "tokens",
    "calls",
    "accepted",
    "drafted",
    "fraction",
    "b",
    "c",
    "ideal",
    "per_call",
    "source",
]


def _says_pi(text: str) -> bool:
    """A standalone word 'pi' (LaTeX's \\pi, which renders as π, and a {pi} field do not
    count)."""
    return re.search(r"(?<![\\\w{])pi(?![\w}])", text, flags=re.I) is not None


def _agrees_with_decide(step, rule, alpha, record) -> None:
    want = decide(
        rule,
        alpha,
        [record.draft_q],
        [record.draft_p],
        [record.max_q],
        [record.max_p],
        [record.dtv],
    )[0]
    by_sides = step.lhs < step.rhs if step.relation == "<" else step.lhs > step.rhs
    assert step.defer == want == by_sides, (rule.name, alpha, record.position)


def test_hard_question_has_a_kept_and_a_deferred_content_word(demo, runs):
    trace = runs[HARD]
    ex = worked_example(trace, prompt=HARD, decode=_decode(demo))
    assert ex is not None and ex.rule == "token_v3" and ex.alpha == APP_DEFAULTS.alpha
    kept, deferred = ex.kept, ex.deferred
    assert kept is not None and kept.outcome == "kept" and kept.defer is False
    assert deferred is not None and deferred.outcome == "replaced" and deferred.defer is True
    for step in (kept, deferred):
        assert step.is_content and any(c.isalpha() for c in step.token)
        record = trace.tokens[step.position]
        assert step.token_id == record.draft_id and step.recorded_defer == record.defer
        assert step.defer == record.defer
        assert step.accept_prob == record.accept_prob
        _agrees_with_decide(step, RULES["token_v3"], ex.alpha, record)
        # TokenV3: p(x) against (1 - alpha) max p
        assert step.lhs == pytest.approx(step.p)
        assert step.rhs == pytest.approx((1 - ex.alpha) * step.max_p)
    # the replaced draft is the drafter's token, not the verifier's replacement
    assert deferred.token_id != deferred.emitted_id
    assert deferred.token == demo.tokenizer.decode([deferred.token_id])
    # greedy: pi(x) is exactly the acceptance probability, 1 when kept and 0 when replaced
    assert (kept.pi, kept.accept_prob) == (1.0, 1.0)
    assert (deferred.pi, deferred.accept_prob) == (0.0, 0.0)
    s = trace.summary
    assert (ex.tokens, ex.drafted, ex.accepted, ex.verifier_calls) == (
        s.new_tokens,
        s.drafted,
        s.accepted,
        s.verifier_calls,
    )
    assert ex.kept_fraction == pytest.approx(s.accepted / s.drafted)
    # the hard question: some drafts are handed over (where the drafter goes wrong)
    assert 0 < ex.kept_fraction < 1


def test_easy_question_keeps_a_content_word(demo, runs):
    trace = runs[EASY]
    ex = worked_example(trace, decode=_decode(demo))
    assert ex.kept is not None and ex.kept.outcome == "kept" and ex.kept.is_content
    assert ex.kept.defer is False
    assert ex.deferred is None or ex.deferred.defer or ex.deferred.outcome == "replaced"
    assert ex.kept_fraction == pytest.approx(trace.summary.accepted / trace.summary.drafted)
    assert ex.kept_fraction > 0.5


def test_without_a_decoder_the_replaced_draft_has_no_text(runs):
    ex = worked_example(runs[HARD])
    assert ex.deferred is not None and ex.deferred.token is None
    assert ex.kept.token == runs[HARD].tokens[ex.kept.position].text


def test_every_recorded_decision_is_reproduced_by_the_sides(runs):
    for trace in runs.values():
        for record in _drafted(trace):
            step = token_step(record, "token_v3", trace.summary.alpha, temperature=0.0)
            assert step.defer == record.defer
            _agrees_with_decide(step, RULES["token_v3"], trace.summary.alpha, record)


@pytest.mark.parametrize("name", COMPARED)
def test_sides_equal_decide_on_the_recorded_numbers(runs, name):
    rule = RULES[name]
    lo, hi = rule.slider
    alphas = {rule.alpha_sd, rule.alpha_drafter, rule.alpha_default, lo, hi, (lo + hi) / 2}
    for trace in runs.values():
        records = _drafted(trace)
        for alpha in sorted(alphas):
            want = decide(
                rule,
                alpha,
                [r.draft_q for r in records],
                [r.draft_p for r in records],
                [r.max_q for r in records],
                [r.max_p for r in records],
                [r.dtv for r in records],
            )
            for record, expected in zip(records, want, strict=True):
                step = token_step(record, rule, alpha)
                by_sides = step.lhs < step.rhs if step.relation == "<" else step.lhs > step.rhs
                assert step.defer == by_sides == expected, (name, alpha, record.position)


def test_ties_keep_the_draft_as_decide_does():
    # Diff with max q = max p - alpha exactly (docs/method.md, 7.5): no deferral
    stats = dict(q=0.5, p=0.75, max_q=0.5, max_p=0.75, dtv=0.25)
    cmp = compare("diff", 0.25, **stats)
    assert (cmp.lhs, cmp.rhs, cmp.defer) == (0.5, 0.5, False)
    assert decide(RULES["diff"], 0.25, [0.5], [0.75], [0.5], [0.75], [0.25]) == [False]
    assert compare("bild", 0.25, **stats).defer is False
    assert compare("opt", float("inf"), **stats).rhs == float("-inf")


def test_sd_and_lossy_have_no_comparison():
    stats = dict(q=0.5, p=0.2, max_q=0.5, max_p=0.7, dtv=0.4)
    assert compare("sd", 0.0, **stats).defer is True
    assert compare("lossy", 0.3, **stats).defer is None
    assert set(SIDES) == set(RULES)  # every registered rule has an entry (None or sides)


def test_unknown_rule_fails_loudly(runs):
    with pytest.raises(KeyError, match="nope"):
        sides_of("nope")
    fake = replace(RULES["chow"], name="nope")
    with pytest.raises(KeyError, match="nope"):
        worked_example(runs[HARD], fake, 0.3)


def test_runs_without_a_rule_have_no_example(demo):
    trace = generate(demo, EASY, replace(APP_DEFAULTS, method="verifier", max_new_tokens=4))
    assert worked_example(trace) is None


@pytest.mark.parametrize("method", ["speculative", "lossy_speculative", "bild"])
def test_other_speculative_methods_explain_and_render(demo, method):
    settings = replace(APP_DEFAULTS, method=method, alpha=None, max_new_tokens=12)
    trace = generate(demo, HARD, settings)
    ex = worked_example(trace, prompt=HARD, decode=_decode(demo))
    assert ex is not None and ex.rule == trace.summary.rule
    for step in (ex.kept, ex.deferred):
        if step is not None and step.relation is not None:
            _agrees_with_decide(step, RULES[ex.rule], ex.alpha, trace.tokens[step.position])
    for lang in ("en", "zh"):
        md = learn_markdown(lang, ex)
        assert f"{ex.kept_fraction:.0%}" in md and str(ex.verifier_calls) in md
        step = ex.kept or ex.deferred
        assert step is not None and number(step.accept_prob) in md
        if ex.kept is None:
            assert t("learn.example.none_kept", lang) in md
        if lang == "zh":
            assert _english_runs(md) == []


def test_learn_page_shows_the_worked_example_numbers(demo, runs):
    ex = worked_example(runs[HARD], prompt=HARD, decode=_decode(demo))
    for lang in ("en", "zh"):
        md = learn_markdown(lang, ex)
        for step in (ex.kept, ex.deferred):
            for value in (step.q, step.p, step.max_p, step.rhs, step.pi, step.accept_prob):
                assert number(value) in md
            assert ("位置 " if lang == "zh" else "position ") + f"{step.position}，" in md or (
                lang == "en" and f"position {step.position} the" in md
            )
            assert step.token.strip() in md
        assert number(ex.alpha) in md and str(ex.drafted) in md and str(ex.accepted) in md
        assert HARD in md  # the prompt, as a code span
        assert t("rule.token_v3", lang) in md and "BiLD\\*" in md and "BiLD* " not in md
        assert not [f for f in FIELDS if "{" + f + "}" in md]  # every field filled in
    zh = learn_markdown("zh", ex)
    assert _english_runs(zh) == [], _english_runs(zh)
    assert "规则推迟" in zh and "规则保留它" in zh


def test_the_loop_picture_counts_the_runs_own_tokens(demo, runs):
    """The worked example counts the verifier's replacements (red) and bonus tokens (blue),
    and the Learn tab's picture carries them with the drafted, kept and call counts."""
    from speccascade.views.loop_svg import loop_svg

    for prompt, trace in runs.items():
        ex = worked_example(trace, prompt=prompt)
        sources = [r.source for r in trace.tokens]
        assert ex.replaced == sources.count("resampled") and ex.bonus == sources.count("bonus")
        assert ex.accepted + ex.replaced + ex.bonus <= ex.tokens
        svg = loop_svg("en", ex)
        for text in (
            f"{ex.drafted} tokens drafted",
            f"{ex.verifier_calls} verifier calls",
            f"{ex.replaced} taken over",
            f"{ex.tokens} tokens written in all",
        ):
            assert text in svg, (prompt, text)
    assert worked_example(runs[HARD]).replaced > 0  # the hard question: the verifier takes over


def test_learn_page_without_a_run_says_the_example_comes_later():
    for lang in ("en", "zh"):
        md = learn_markdown(lang)
        assert t("learn.example.none", lang) in md
    assert _english_runs(learn_markdown("zh")) == []
    assert learn_markdown("zh-CN") == learn_markdown("zh")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_learn_page_uses_pi_alpha_gamma_never_the_word_pi(demo, runs, lang):
    ex = worked_example(runs[HARD], prompt=HARD, decode=_decode(demo))
    for md in (learn_markdown(lang), learn_markdown(lang, ex)):
        assert "π" in md and "α" in md and "γ" in md
        assert not _says_pi(md)
        assert r"\frac{1-b^{\gamma+1}}{(1-b)(1+\gamma c)}" in md
        assert "docs/" not in md and "fact 5" not in md  # no path a visitor cannot open


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_rule_table_reads_sensibly(lang):
    md = learn_markdown(lang)
    rows = {
        name: next(line for line in md.splitlines() if line.startswith("|") and f"`{name}`" in line)
        for name in RULES
    }
    for name, row in rows.items():
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 5, row
        assert t(f"rule.{name}.desc", lang) in row and t(f"learn.source.{name}", lang) in row
    sd = [c.strip() for c in rows["sd"].strip("|").split("|")]
    assert sd[1] == t("learn.rules.always", lang) and sd[2] == sd[3] == "—"
    assert "0/0" not in md and "r = 1" not in rows["sd"]
    opt = [c.strip() for c in rows["opt"].strip("|").split("|")]
    assert (opt[2], opt[3]) == ("−∞", "+∞")
    for line in md.splitlines():
        if line.startswith("|"):
            code = re.sub(r"\$\$.*?\$\$", "", line)
            # CJK text may break anywhere; an ASCII run only at spaces
            assert all(len(word) <= 30 for word in re.findall(r"[!-~]+", code)), line


def test_every_learn_string_has_both_languages():
    keys = [k for k in STRINGS if k.startswith("learn.")]
    assert keys
    for key in keys:
        en, zh = STRINGS[key]
        assert en.strip() and zh.strip(), key
        assert not _says_pi(en) and not _says_pi(zh), key
    for name in RULES:
        assert f"learn.source.{name}" in STRINGS
    assert set(SIDES_TEX) == {name for name, sides in SIDES.items() if sides is not None}

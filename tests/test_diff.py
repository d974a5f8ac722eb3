"""Token-aligned diff: alignment of id lists, the cascade's kept drafter text the verifier alone
would not write, key facts, and the HTML view."""

from __future__ import annotations

import dataclasses
import re

import pytest
from test_viz import _english_words, _plain

from speccascade import generate
from speccascade.analysis.diff import (
    DRAFTER_SOURCES,
    align,
    build_diff,
    first_divergence,
    key_facts,
    run_diff,
)
from speccascade.core.engine import APP_DEFAULTS
from speccascade.core.trace import TokenRecord, Trace, summarise
from speccascade.models.presets import load_preset
from speccascade.views.diff import diff_html

EASY = "Who is Buzz Aldrin?"

# -- alignment ---------------------------------------------------------------------------------


def test_align_identical_lists():
    a = align([5, 6, 7], [5, 6, 7])
    assert a.opcodes == (("equal", 0, 3, 0, 3),)
    assert a.first_divergence is None and not a.changed_a() and not a.changed_b()


def test_align_insertion_substitution_and_deletion():
    ins = align([1, 2, 3], [1, 2, 9, 3])
    assert ins.opcodes == (("equal", 0, 2, 0, 2), ("insert", 2, 2, 2, 3), ("equal", 2, 3, 3, 4))
    assert ins.first_divergence == 2 and ins.changed_a() == set() and ins.changed_b() == {2}
    sub = align([1, 2, 3], [1, 5, 3])
    assert sub.opcodes[1] == ("replace", 1, 2, 1, 2)
    assert sub.first_divergence == 1 and sub.changed_a() == {1} == sub.changed_b()
    dele = align([1, 2, 3, 4], [1, 4])
    assert dele.first_divergence == 1 and dele.changed_a() == {1, 2} and not dele.changed_b()


def test_align_empty_and_prefix():
    assert align([], []).opcodes == () and align([], []).first_divergence is None
    assert align([], [4]).opcodes == (("insert", 0, 0, 0, 1),)
    assert align([], [4]).first_divergence == 0
    assert align([4, 5], [4, 5, 6]).first_divergence == 2
    assert align([4, 5, 6], [4]).changed_a() == {1, 2}


def test_first_divergence_is_the_common_prefix_not_the_first_opcode():
    # the longest match ([1, 2, 3]) lies later in b, so difflib's first opcode is an insert at 0
    a, b = [1, 2, 3], [1, 2, 9, 1, 2, 3]
    assert align(a, b).opcodes[0][0] == "insert"
    assert first_divergence(a, b) == align(a, b).first_divergence == 2


def test_frequent_tokens_still_align_in_long_outputs():
    a = [7] * 300 + [1]
    b = [7] * 300 + [2]
    assert align(a, b).changed_a() == {300}  # difflib's autojunk would drop the 7s


# -- hand-made traces ------------------------------------------------------------------------


def _trace(ids: list[int], sources: list[str], texts: list[str] | None = None, method="x") -> Trace:
    texts = texts or [f" t{i}" for i in ids]
    toks = [
        TokenRecord(position=i, token_id=x, text=s, source=src, round=0)
        for i, (x, src, s) in enumerate(zip(ids, sources, texts))
    ]
    summary = summarise(
        method=method,
        rule="token_v3" if method == "spec_cascade" else None,
        alpha=0.5,
        gamma=4,
        temperature=0.0,
        prompt_tokens=1,
        new_tokens=len(ids),
        wall_s=1.0,
        rounds=[],
        stop_reason="eos",
        notes=[],
        speculative=method == "spec_cascade",
    )
    return Trace([1], list(ids), "".join(texts), toks, [], summary)


def _hand_diff(prompt="not a question in the eval set", texts=None) -> object:
    cascade = _trace(
        [10, 11, 12, 13, 14],
        ["accepted", "accepted", "resampled", "accepted", "bonus"],
        texts,
        "spec_cascade",
    )
    verifier = _trace([10, 20, 12, 13, 14], ["verifier"] * 5, method="verifier")
    drafter = _trace([10, 11, 30], ["drafter"] * 3, method="drafter")
    return build_diff(prompt, cascade, verifier, drafter)


def test_kept_drafter_text_is_drafter_sourced_and_unmatched():
    d = _hand_diff()
    assert d.vs_verifier.first_divergence == 1
    assert d.vs_verifier.kept_drafter == (1,)  # 11: drafted, kept, the verifier wrote 20
    assert d.vs_drafter.first_divergence == 2
    # 13 is drafter-sourced and the drafter alone did not write it; 12 and 14 are not drafts
    assert d.vs_drafter.kept_drafter == (3,)
    for cmp in (d.vs_verifier, d.vs_drafter):
        changed = cmp.alignment.changed_a()
        for i in cmp.kept_drafter:
            assert d.cascade.tokens[i].source in DRAFTER_SOURCES and i in changed


def test_key_facts_for_known_and_unknown_questions():
    facts = key_facts("Who is Sally Ride?", "Sally Ride was an American astronaut.")
    assert facts is not None and facts.total == 2 and facts.stated == 1 and not facts.correct
    assert key_facts(
        "Who is Sally Ride?", "an astronaut, the First American woman in space"
    ).correct
    assert key_facts("Who is nobody at all?", "astronaut") is None
    assert key_facts([1, 2, 3], "astronaut") is None
    assert _hand_diff().facts == {"cascade": None, "verifier": None, "drafter": None}


# -- the HTML view ---------------------------------------------------------------------------


def test_html_escapes_token_text():
    evil = ["<script>alert(1)</script>", " a&b", ' "q"', "<b>", " x"]
    page = diff_html(_hand_diff(texts=evil))
    assert "<script>" not in page and page.count("<b>") == 3  # only the three row names
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "a&amp;b" in page


def test_html_rows_marks_and_legend():
    d = _hand_diff()
    page = diff_html(d)
    rows = re.findall(r'class="sc-diff-row" data-role="(\w+)"', page)
    assert rows == ["cascade", "verifier", "drafter"]
    assert page.count("sc-kept-new") == len(d.vs_verifier.kept_drafter)
    assert re.search(r'sc-dtok sc-kept-new" data-pos="1"', page)
    assert page.count('class="sc-first" data-vs="verifier"') == 2  # cascade row and verifier row
    assert page.count('class="sc-first" data-vs="drafter"') == 2
    # the verifier row's token 20 and the drafter row's 30 differ from the cascade
    assert page.count("sc-dtok sc-differs") == len(d.vs_verifier.alignment.changed_b()) + len(
        d.vs_drafter.alignment.changed_b()
    )
    assert page.count("question not in the eval set") == 3
    zh = diff_html(d, lang="zh")
    assert not _english_words([_plain(re.sub(r'<span class="sc-dtok.*?</span>', "", zh))])


def test_html_wraps_on_a_phone():
    """Nothing in the view is wider than its container: tokens wrap in a flex row and a long
    token breaks anywhere (390 px phones)."""
    page = diff_html(_hand_diff(texts=["x" * 400, " a", " b", " c", " d"]))
    assert "white-space:nowrap" not in page and "overflow-x" not in page
    assert not re.search(r"(?<![-\w])width:\s*\d{3,}px", page)
    for style in re.findall(r'class="sc-diff-tokens" style="([^"]*)"', page):
        assert "flex-wrap:wrap" in style and "max-width:100%" in style
    for style in re.findall(r'class="sc-dtok[^"]*"[^>]*style="([^"]*)"', page):
        assert "overflow-wrap:anywhere" in style and "max-width:100%" in style


# -- the demo pair ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def easy():
    return run_diff(load_preset(None), EASY, APP_DEFAULTS)


def test_run_diff_runs_all_three_with_the_same_settings(easy):
    methods = [easy.trace(r).summary.method for r in ("cascade", "verifier", "drafter")]
    assert methods == ["spec_cascade", "verifier", "drafter"]
    for role in ("verifier", "drafter"):
        s = easy.trace(role).summary
        assert s.temperature == APP_DEFAULTS.temperature
        assert s.new_tokens <= APP_DEFAULTS.max_new_tokens
    assert easy.vs_verifier.alignment == align(
        easy.cascade.new_token_ids, easy.verifier.new_token_ids
    )


def test_easy_question_keeps_drafter_words_the_verifier_would_not_write(easy):
    """The story: the cascade keeps the drafter's short, correct answer; the verifier alone
    words it differently; every kept-drafter position is a drafted token off the alignment."""
    kept = easy.vs_verifier.kept_drafter
    assert kept and easy.vs_verifier.first_divergence is not None
    changed = easy.vs_verifier.alignment.changed_a()
    assert all(easy.cascade.tokens[i].source in DRAFTER_SOURCES and i in changed for i in kept)
    assert all(easy.facts[r] is not None and easy.facts[r].total for r in easy.facts)
    assert easy.facts["cascade"].correct
    page = diff_html(easy)
    assert page.count("sc-kept-new") == len(kept)
    assert re.search(r"key facts (\d)/\1\b", _plain(page))  # every fact, however many


def test_greedy_runs_are_reproducible(llama_pair):
    """Same prompt and settings: the verifier row is what generate() gives on its own."""
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    settings = dataclasses.replace(APP_DEFAULTS, max_new_tokens=6, gamma=2)
    d = run_diff(p, "hello", settings)
    alone = generate(p, "hello", settings, method="verifier")
    assert d.verifier.new_token_ids == alone.new_token_ids
    assert d.facts == {"cascade": None, "verifier": None, "drafter": None}

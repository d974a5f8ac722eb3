"""The decision plane: drafted positions on a rule's own axes. Decisions come from the rules'
predicates and must equal the run's; the drawn boundary must split the points the same way."""

from __future__ import annotations

import dataclasses
import html
import itertools
import math
import re

import pytest
from test_viz import _english_words, _visible_texts

from speccascade import generate
from speccascade.analysis.plane import PLANES, boundary, box, decisions_at, plane_points
from speccascade.core.engine import APP_DEFAULTS, SPEC_CASCADE_RULES
from speccascade.core.rules import RULES
from speccascade.core.trace import TokenRecord, Trace, summarise
from speccascade.models.presets import load_preset
from speccascade.views.plane import decision_plane_figure

# The hard question: the rule keeps some drafts and hands others to the verifier, so the plane
# has points on both sides (the easy one, Buzz Aldrin, keeps nearly all; see test_diff).
HARD = "Who is Michael Collins?"


@pytest.fixture(scope="module")
def demo():
    pair = load_preset(None)
    return pair, {HARD: generate(pair, HARD, APP_DEFAULTS)}


@pytest.fixture(scope="module")
def tiny_runs(llama_pair):
    """One short sampled run per speculative method and rule on the tiny pair."""
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    common = dict(gamma=3, temperature=1.0, max_new_tokens=12, seed=1)
    runs = {
        r: generate(p, "hello", method="spec_cascade", rule=r, **common) for r in SPEC_CASCADE_RULES
    }
    runs["sd"] = generate(p, "hello", method="speculative", **common)
    runs["bild"] = generate(p, "hello", method="bild", alpha=0.2, **common)
    runs["lossy"] = generate(p, "hello", method="lossy_speculative", alpha=0.4, **common)
    return runs


def _margin(rule: str, alpha: float, x: float, y: float) -> float:
    b = boundary(rule, alpha)
    return abs(b.a * x + b.b * y - b.c)


def test_decisions_at_the_run_alpha_equal_the_recorded_defer(demo, tiny_runs):
    _, traces = demo
    for name, tr in [*traces.items(), *tiny_runs.items()]:
        if tr.summary.rule == "lossy":
            continue  # no deferral rule to record
        plane = plane_points(tr)
        assert plane.rule == tr.summary.rule and plane.points, name
        recorded = [tr.tokens[p.index].defer for p in plane.points]
        assert decisions_at(plane, tr.summary.alpha or 0.0) == recorded, name
        assert [p.deferred for p in plane.points] == recorded, name
        assert [p.recorded_defer for p in plane.points] == recorded, name


def test_lossy_may_reject_exactly_where_acceptance_is_below_one(tiny_runs):
    """At T = 1 the plane's lossy test p(x) < (1 - alpha) q(x) is the engine's accept test."""
    tr = tiny_runs["lossy"]
    plane = plane_points(tr)
    checked = 0
    for p, d in zip(plane.points, decisions_at(plane, 0.4)):
        tok = tr.tokens[p.index]
        if abs(tok.draft_p - 0.6 * tok.draft_q) > 1e-6:
            assert d == (tok.accept_prob < 1), p.position
            checked += 1
    assert checked and plane.points[0].recorded_defer is None


def test_every_drafted_position_is_a_point_and_nothing_else(demo):
    pair, traces = demo
    tr = traces[HARD]
    plane = plane_points(tr, decode=pair.decode)
    drafted = [t for t in tr.tokens if t.draft_id is not None]
    assert [p.position for p in plane.points] == [t.position for t in drafted]
    assert {p.source for p in plane.points} <= {"accepted", "resampled"}
    bonus = [t.position for t in tr.tokens if t.source == "bonus"]
    assert not set(bonus) & {p.position for p in plane.points}
    verifier = generate(pair, HARD, APP_DEFAULTS, method="verifier", max_new_tokens=4)
    assert plane_points(verifier, "token_v3").points == ()


def test_points_carry_the_draft_its_context_and_the_verifier_choice(demo):
    pair, traces = demo
    tr = traces[HARD]
    named, bare = plane_points(tr, decode=pair.decode), plane_points(tr)
    rejected = [p for p in named.points if p.draft_id != p.emitted_id]
    assert rejected  # the hard question: the verifier replaces drafts
    for p, q in zip(named.points, bare.points):
        tok = tr.tokens[p.index]
        assert p.emitted_text == tok.text and p.emitted_id == tok.token_id
        assert p.context == "".join(t.text for t in tr.tokens[max(0, p.index - 4) : p.index])
        assert p.verifier_top == tok.top_p[0][0]
        assert p.differs_from_verifier == (tok.draft_id != tok.top_p[0][0])
        if p.draft_id == p.emitted_id:
            assert p.draft_text == q.draft_text == tok.text
        else:
            assert p.draft_text == pair.decode([p.draft_id]) and q.draft_text is None
    # greedy: a replaced draft is one the verifier did not rank first
    assert all(p.differs_from_verifier for p in rejected)
    no_top = dataclasses.replace(tr, tokens=[dataclasses.replace(t, top_p=[]) for t in tr.tokens])
    assert all(p.differs_from_verifier is None for p in plane_points(no_top).points)


def test_axes_are_the_rules_own_numbers(demo):
    _, traces = demo
    tr = traces[HARD]
    for rule in PLANES:
        plane = plane_points(tr, rule)
        for p in plane.points:
            tok = tr.tokens[p.index]
            values = {
                "max_q": tok.max_q,
                "max_p": tok.max_p,
                "draft_q": tok.draft_q,
                "draft_p": tok.draft_p,
                "dtv": tok.dtv,
                "gain": tok.max_p - tok.max_q,
                "sure_p": math.exp(-tok.ent_p),
                "jsd": tok.jsd,
                "kl": min(tok.kl, 3.0),
            }
            assert (p.x, p.y) == (values[plane.x], values[plane.y]), rule
    with pytest.raises(ValueError, match="no decision plane"):
        plane_points(tr, "nonsense")


# -- the boundary ----------------------------------------------------------------------------


def _record(i: int, max_q, max_p, draft_q, draft_p, dtv) -> TokenRecord:
    return TokenRecord(
        position=i,
        token_id=7,
        text="x",
        source="accepted",
        round=0,
        q=draft_q,
        p=draft_p,
        max_q=max_q,
        max_p=max_p,
        dtv=dtv,
        draft_id=7,
        draft_q=draft_q,
        draft_p=draft_p,
    )


def _trace(records: list[TokenRecord], rule: str = "diff", alpha: float = 0.1) -> Trace:
    summary = summarise(
        method="spec_cascade",
        rule=rule,
        alpha=alpha,
        gamma=4,
        temperature=1.0,
        prompt_tokens=1,
        new_tokens=len(records),
        wall_s=1.0,
        rounds=[],
        stop_reason="max_new_tokens",
        notes=[],
        speculative=True,
    )
    return Trace([1], [r.token_id for r in records], "", records, [], summary)


def _grid() -> Trace:
    """Statistics spread over every plane's box (consistent: draft_q <= max_q, ...)."""
    levels = (0.02, 0.15, 0.35, 0.55, 0.8, 0.97)
    records = []
    for mq, mp, fq, fp, dtv in itertools.product(levels, levels, (0.3, 0.9), (0.1, 0.7), levels):
        records.append(_record(len(records), mq, mp, fq * mq, fp * mp, dtv))
    return _trace(records)


def test_the_boundary_separates_deferred_from_kept():
    grid = _grid()
    for rule in PLANES:
        r = RULES[rule]
        alphas = sorted({r.alpha_default, *r.slider, 0.0, 0.45} if r.has_alpha else {0.0})
        for alpha in alphas:
            plane = plane_points(grid, rule, alpha)
            b = boundary(rule, alpha)
            sides = [b.defers(p.x, p.y) for p in plane.points]
            clear = [_margin(rule, alpha, p.x, p.y) > 1e-6 for p in plane.points]
            decided = decisions_at(plane, alpha)
            mismatches = [i for i, c in enumerate(clear) if c and sides[i] != decided[i]]
            assert not mismatches, (rule, alpha, mismatches[:3])
            if r.has_alpha and 0 < sum(decided) < len(decided):
                assert b.line(box(plane)), (rule, alpha)  # a split the figure can draw


def test_opt_at_infinite_alpha_is_sd_and_the_drafter_off_the_diagonal():
    grid = _grid()
    for alpha, expect in ((-math.inf, True), (math.inf, False)):
        plane = plane_points(grid, "opt", alpha)
        b = boundary("opt", alpha)
        for p, d in zip(plane.points, decisions_at(plane, alpha)):
            if p.x > 0:  # D_TV = 0: q = p, deferring changes nothing
                assert d is expect and b.defers(p.x, p.y) is expect


def _close(points, expected) -> bool:
    return len(points) == len(expected) and all(
        math.isclose(a, c, abs_tol=1e-9) and math.isclose(b, d, abs_tol=1e-9)
        for (a, b), (c, d) in zip(sorted(points), sorted(expected))
    )


def test_region_and_line_geometry():
    unit = (0.0, 1.0, 0.0, 1.0)
    diff = boundary("diff", 0.1)  # defer above y = x + 0.1
    assert _close(diff.region(unit), [(0.0, 0.1), (0.0, 1.0), (0.9, 1.0)])
    assert _close(diff.line(unit), [(0.0, 0.1), (0.9, 1.0)])
    chow = boundary("chow", 0.3)  # defer left of x = 0.7
    assert _close(chow.line(unit), [(0.7, 0.0), (0.7, 1.0)])
    assert all(x <= 0.7 for x, _ in chow.region(unit))
    sd = boundary("sd", 0.0)
    assert sd.line(unit) == [] and len(sd.region(unit)) == 4
    # the drafter ends: the defer region shrinks to an edge of the box, which is no region
    assert boundary("token_v3", 1.0).region(unit) == []
    assert boundary("token_v3", 1.0).line(unit) == [(0.0, 0.0), (0.0, 1.0)]
    assert boundary("lossy", 1.0).region(unit) == []
    for rule in PLANES:
        for alpha in (0.05, 0.5):
            b = boundary(rule, alpha)
            poly = b.region(unit)
            if len(poly) >= 3:
                cx = sum(x for x, _ in poly) / len(poly)
                cy = sum(y for _, y in poly) / len(poly)
                assert b.defers(cx, cy) or math.isclose(b.a * cx + b.b * cy, b.c), rule
            for x, y in b.line(unit):
                assert any(
                    math.isclose(a * x + bb * y, c, abs_tol=1e-12) for a, bb, c in b.halves
                ), rule


# -- the figure ------------------------------------------------------------------------------


def _markers(fig) -> dict[str, object]:
    return {d.name: d for d in fig.data if d.mode == "markers" and d.x and d.x[0] is not None}


def test_figure_colours_points_by_the_decision_at_the_slider_alpha(demo):
    pair, traces = demo
    plane = plane_points(traces[HARD], decode=pair.decode)
    for alpha in (-0.1, 0.3, 0.5, 1.0):
        fig = decision_plane_figure(plane, alpha)
        marks = _markers(fig)
        decided = decisions_at(plane, alpha)
        assert len(marks.get("deferred", {"x": ()})["x"] or ()) == sum(decided)
        assert len(marks.get("kept", {"x": ()})["x"] or ()) == len(decided) - sum(decided)
        assert f"α = {alpha:g}" in fig.layout.title.text
    # at the SD end every draft defers, at the drafter end none
    assert sum(decisions_at(plane, RULES["token_v3"].alpha_sd)) == len(plane.points)
    assert sum(decisions_at(plane, RULES["token_v3"].alpha_drafter)) == 0
    moved = decision_plane_figure(plane, 0.2)
    lines = {d.name: d for d in moved.data if d.mode == "lines" and not d.fill}
    assert {"boundary at α = 0.2", "the run's boundary (α = 0.5)"} <= set(lines)
    assert "lossless SD" in moved.layout.annotations[0].text


def test_figure_marks_drafts_the_verifier_would_not_pick(demo):
    pair, traces = demo
    plane = plane_points(traces[HARD], decode=pair.decode)
    fig = decision_plane_figure(plane)
    symbols = [s for d in _markers(fig).values() for s in d.marker.symbol]
    assert symbols.count("diamond") == sum(bool(p.differs_from_verifier) for p in plane.points) > 0
    hovers = " ".join(h for d in _markers(fig).values() for h in d.customdata)
    for p in plane.points:
        assert f"#{p.position} " in hovers
        assert html.escape(repr(p.draft_text), quote=False) in hovers  # named by the decoder


def test_figure_axis_titles_follow_the_rule_and_language(demo):
    _, traces = demo
    tr = traces[HARD]
    titles = {
        rule: decision_plane_figure(plane_points(tr, rule)).layout.xaxis.title.text
        for rule in PLANES
    }
    assert "max q" in titles["chow"] and "D_TV" in titles["opt"] and "p(v)" in titles["token_v3"]
    assert "q(v)" in titles["token_v1"] and "D_TV" in titles["bild"]
    for rule in PLANES:
        fig = decision_plane_figure(plane_points(tr, rule), lang="zh")
        texts = _visible_texts(fig)
        assert texts and not _english_words(texts), (rule, _english_words(texts))


def test_figure_escapes_token_text_and_handles_no_drafts():
    rec = _record(0, 0.5, 0.9, 0.5, 0.2, 0.4)
    rec.text = "<script>alert(1)</script>"
    fig = decision_plane_figure(plane_points(_trace([rec], "diff", 0.1)))
    hover = next(iter(_markers(fig).values())).customdata[0]
    assert "<script>" not in hover and "&lt;script&gt;" in hover
    empty = decision_plane_figure(plane_points(_trace([], "diff", 0.1)), lang="zh")
    assert any(re.search("[\u4e00-\u9fff]", a.text) for a in empty.layout.annotations)
    assert not _markers(empty)

"""Figures and HTML are pure functions of a trace: check them on fixed traces."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from speccascade import RULES, generate, viz
from speccascade.compare import Variant, compare, sweep


@pytest.fixture(scope="module")
def traces(llama_pair):
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    return {
        "sc": generate(
            p,
            "hello",
            method="spec_cascade",
            rule="token_v3",
            alpha=0.5,
            gamma=2,
            temperature=0,
            max_new_tokens=24,
        ),
        "verifier": generate(p, "hello", method="verifier", max_new_tokens=8),
        "token_cascade": generate(p, "hello", method="token_cascade", alpha=0.9, max_new_tokens=8),
    }


def test_token_html_colours_every_token_by_source(traces):
    tr = traces["sc"]
    html = viz.token_html(tr.tokens)
    assert html.count('class="sc-tok ') == len(tr.tokens)
    for source in {t.source for t in tr.tokens}:
        assert f"sc-{source}" in html and viz.COLORS[source] in html
    assert "q(x) = " in html and "acceptance probability" in html and "round 0" in html
    assert viz.token_html(None).count('class="sc-tok ') == 0
    assert "sc-verifier" in viz.token_html(traces["verifier"].tokens)


def test_token_html_escapes_markup(traces):
    t = dataclasses.replace(traces["sc"].tokens[0], text="<script>x</script>")
    html = viz.token_html([t])
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_whatif_matches_engine_decisions_at_the_run_alpha(traces):
    tr = traces["sc"]
    rule = RULES["token_v3"]
    same = viz.whatif_decisions(tr, rule, 0.5)
    for t, d in zip(tr.tokens, same):
        assert d == t.defer  # None for bonus tokens, the engine's own decision otherwise
    never = viz.whatif_decisions(tr, rule, 1.0)
    always = viz.whatif_decisions(tr, rule, -0.1)
    drafted = [i for i, t in enumerate(tr.tokens) if t.draft_id is not None]
    assert all(never[i] is False for i in drafted) and all(always[i] is True for i in drafted)
    html = viz.token_html(tr.tokens, always)
    assert html.count(viz.WHATIF_COLOR) == len(drafted)


def test_heatmap_rows_and_columns(traces):
    tr = traces["sc"]
    fig = viz.heatmap(tr)
    z = fig.data[0].z
    assert len(z) == 6 and all(len(row) == len(tr.tokens) for row in z)
    assert list(fig.data[0].y)[0].startswith("drafter confidence")
    assert z[1][0] == pytest.approx(tr.tokens[0].max_p)
    defer_row = z[5]
    for t, v in zip(tr.tokens, defer_row):
        assert (v != v) if t.defer is None else v == float(t.defer)  # NaN where unknown


def test_inspector_marks_the_rule_accepted_set(traces, llama_pair):
    tr = traces["sc"]
    pos = next(i for i, t in enumerate(tr.tokens) if t.source == "resampled")
    fig = viz.inspector(tr, pos, RULES["token_v3"], 0.5, llama_pair.tokenizer)
    names = [d.name for d in fig.data]
    assert names[:3] == ["drafter q", "verifier p", "target pi"]
    kept = fig.data[3]
    t = tr.tokens[pos]
    p = dict(t.top_p)
    expected = [i for i in p if p[i] >= 0.5 * t.max_p]
    assert len(kept.x) == len(expected) and "accepted set" in fig.layout.title.text


def test_timeline_and_stats(traces):
    tr = traces["sc"]
    fig = viz.timeline(tr)
    drafter, verifier = fig.data[0], fig.data[1]
    assert drafter.name == "drafter" and verifier.name == "verifier"
    assert len(verifier.x) == tr.summary.verifier_calls  # one verifier call per round
    assert sum(fig.data[3].y) == tr.summary.accepted
    frame = viz.stats_frame(tr, verifier_wall_s=2 * tr.summary.wall_s)
    values = dict(zip(frame.metric, frame.value))
    assert values["measured speed-up vs verifier"] == "2.00"
    assert values["acceptance rate"] == f"{tr.summary.acceptance_rate:.3f}"
    assert viz.timeline(traces["token_cascade"]).data  # single-token rounds render too


def test_compare_and_sweep_figures(llama_pair):
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    variants = [Variant("verifier"), Variant("speculative"), Variant("spec_cascade", "chow")]
    *_, (_, _, table) = compare(p, "hello", variants, max_new_tokens=6, temperature=0)
    assert list(table.method) == ["verifier", "speculative", "spec_cascade/chow"]
    assert table.loc[0, "speedup"] == 1.0 and table.loc[1, "quality_vs_verifier"] == 1.0
    bars = viz.latency_bars(table)
    assert list(bars.data[0].x) == list(table.method)
    points = sweep(
        p,
        [("hello", None)],
        [Variant("spec_cascade", "diff")],
        n_alpha=3,
        max_new_tokens=6,
        temperature=0,
    )
    assert list(points.method) == ["verifier"] + ["spec_cascade/diff"] * 3
    assert points.alpha.tolist()[1:] == [-1.0, 0.0, 1.0]
    assert points.quality.iloc[1] == 1.0  # alpha = -1 is SD: greedy equals the verifier
    fig = viz.quality_latency(
        points[points.method != "verifier"], current={"relative_latency": 1.0, "quality": 0.5}
    )
    assert fig.data[0].name == "spec_cascade/diff" and fig.data[-1].name == "current"
    assert isinstance(points, pd.DataFrame)

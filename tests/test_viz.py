"""Figures and HTML are pure functions of a trace: check them on fixed traces."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re

import pandas as pd
import pytest

from speccascade import RULES, generate
from speccascade.analysis.compare import Variant, compare, sweep
from speccascade.analysis.verdict import whatif_decisions
from speccascade.core.trace import SOURCES
from speccascade.i18n import figures
from speccascade.views.compare import quality_latency, speed_quality
from speccascade.views.heatmap import heatmap, inspector
from speccascade.views.style import COLORS, EMPTY_MARK, EOS_MARK, WHATIF_COLOR, WRONG_COLOUR
from speccascade.views.timeline import stats_frame, timeline
from speccascade.views.tokens import TOKEN_CSS, legend_html, token_html


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
    html = token_html(tr.tokens)
    assert html.count('class="sc-tok ') == len(tr.tokens)
    for source in {t.source for t in tr.tokens}:
        assert f"sc-{source}" in html and COLORS[source] in html
    assert "q(x) = " in html and "acceptance probability" in html and "round 0" in html
    assert "sc-verifier" in token_html(traces["verifier"].tokens)
    # a text cut short ends with a mark saying why; one that ended on its own does not
    assert "sc-cut" not in html and "sc-cut" not in token_html(tr.tokens, stop="eos")
    cut = token_html(tr.tokens, stop="max_new_tokens", lang="zh")
    assert cut.count("sc-cut") == 1 and "… 达到最大词元数" in cut


def test_token_html_popups_are_focusable_and_carry_positions(traces):
    tr = traces["sc"]
    html = token_html(tr.tokens, selected=tr.tokens[3].position)
    n = len(tr.tokens)
    assert html.count('tabindex="0"') == n and html.count('role="button"') == n
    assert html.count('class="sc-pop"') == n and " title=" not in html
    for t in tr.tokens:
        assert f'data-pos="{t.position}"' in html
    assert html.count("sc-selected") == 1 and html.count('aria-pressed="true"') == 1
    assert "<wbr>" in html  # long outputs wrap between tokens
    for css in (".sc-pop", ":hover", ":focus", "sc-selected", "position: absolute", "max-width"):
        assert css in TOKEN_CSS


def test_token_html_shows_end_of_text_as_a_mark(traces):
    base = traces["sc"].tokens[0]
    for eos in ("<|endoftext|>", "</s>", "<|im_end|>"):
        html = token_html([dataclasses.replace(base, text=eos)])
        assert eos not in html and "sc-eos" in html and EOS_MARK in html
        assert "end of text" in html  # the popup still names it
    plain = token_html([dataclasses.replace(base, text="s>")])
    assert "sc-eos" not in plain


def test_token_html_empty_state_and_legend_are_localized():
    en, zh = token_html(None), token_html([], lang="zh")
    assert "No tokens yet" in en and 'class="sc-tok ' not in en
    assert "运行" in zh and not re.search("[A-Za-z]{3,}", re.sub("<[^>]+>", "", zh))
    legend = legend_html("zh")
    assert (
        legend.count("white-space:nowrap") == len(SOURCES) + 4
    )  # what-if, end of text, part of a character, cut short
    assert "仅验证模型" in legend and EOS_MARK in legend and WHATIF_COLOR in legend
    assert f"{EMPTY_MARK} 字符的一部分" in legend and "… 被截断" in legend


def test_token_html_escapes_markup(traces):
    t = dataclasses.replace(traces["sc"].tokens[0], text="<script>x</script>")
    html = token_html([t])
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_whatif_matches_engine_decisions_at_the_run_alpha(traces):
    tr = traces["sc"]
    rule = RULES["token_v3"]
    same = whatif_decisions(tr, rule, 0.5)
    for t, d in zip(tr.tokens, same):
        assert d == t.defer  # None for bonus tokens, the engine's own decision otherwise
    never = whatif_decisions(tr, rule, 1.0)
    always = whatif_decisions(tr, rule, -0.1)
    drafted = [i for i, t in enumerate(tr.tokens) if t.draft_id is not None]
    assert all(never[i] is False for i in drafted) and all(always[i] is True for i in drafted)
    html = token_html(tr.tokens, always)
    assert html.count(WHATIF_COLOR) == len(drafted)


def _long(trace, n):
    """A trace with n tokens, cycling `trace`'s records."""
    toks = [dataclasses.replace(trace.tokens[i % len(trace.tokens)], position=i) for i in range(n)]
    return dataclasses.replace(trace, tokens=toks)


def test_heatmap_rows_and_columns(traces):
    tr = traces["sc"]
    fig = heatmap(tr)
    probs, dtv, defer = fig.data
    assert len(probs.z) == 4 and all(len(row) == len(tr.tokens) for row in probs.z)
    assert list(probs.y)[0].startswith("drafter") and probs.z[1][0] == pytest.approx(
        tr.tokens[0].max_p
    )
    assert dtv.z[0][0] == pytest.approx(tr.tokens[0].dtv)
    for t, v in zip(tr.tokens, defer.z[0]):
        assert (v != v) if t.defer is None else v == float(t.defer)  # NaN where unknown
    assert (probs.zmin, probs.zmax) == (0, 1) and probs.colorscale != dtv.colorscale


def test_heatmap_stays_readable_at_256_tokens(traces):
    fig = heatmap(_long(traces["sc"], 256))
    xaxis = fig.layout.xaxis3
    assert len(xaxis.ticktext) <= 40 and len(xaxis.ticktext) == len(xaxis.tickvals)
    assert len(fig.data[0].z[0]) == 256  # every token is still a cell (and hoverable)
    bars = [d.colorbar for d in fig.data]
    assert len(bars) == 3 and all(b.len for b in bars)
    spans = sorted((b.y - b.len / 2, b.y + b.len / 2) for b in bars)
    assert all(a[1] <= b[0] + 0.03 for a, b in zip(spans, spans[1:]))  # no overlap
    assert list(bars[2].ticktext) == ["kept", "deferred"]
    assert list(heatmap(_long(traces["sc"], 64)).layout.xaxis3.ticktext)


def test_inspector_marks_the_rule_accepted_set(traces, llama_pair):
    tr = traces["sc"]
    pos = next(i for i, t in enumerate(tr.tokens) if t.source == "resampled")
    fig = inspector(tr, pos, RULES["token_v3"], 0.5, llama_pair.tokenizer)
    names = [d.name for d in fig.data]
    assert names[:3] == ["drafter q", "verifier p", "target π"]
    kept = fig.data[3]
    t = tr.tokens[pos]
    p = dict(t.top_p)
    expected = [i for i in p if p[i] >= 0.5 * t.max_p]
    assert len(kept.x) == len(expected)
    first, _, second = fig.layout.title.text.partition("<br>")
    assert len(_plain(first)) <= 50 and "verifier took over" in first
    assert "accepted set" in second and second.startswith("<sup>") and "run's" not in second
    # at another alpha the set is a what-if: the subtitle says so beside the run's outcome
    other = inspector(tr, pos, RULES["token_v3"], -0.1, llama_pair.tokenizer)
    assert "at α = -0.1 (the run's: 0.5)" in other.layout.title.text
    assert fig.layout.legend.orientation == "h"
    long = dataclasses.replace(tr, tokens=[dataclasses.replace(t, text="x" * 200)])
    assert len(_plain(inspector(long, 0).layout.title.text)) <= 50


def test_timeline_and_stats(traces):
    tr = traces["sc"]
    fig = timeline(tr)
    drafter, verifier, drafted, kept = fig.data
    assert drafter.name == "drafter calls" and verifier.name == "verifier calls"
    assert len(verifier.x) == tr.summary.verifier_calls  # one verifier call per round
    assert sum(kept.y) == tr.summary.accepted
    colours = {d.marker.color for d in fig.data}
    assert len(colours) == 4  # drafter calls and kept tokens no longer share a colour
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.yref == "container"
    frame = stats_frame(tr, verifier_wall_s=2 * tr.summary.wall_s)
    assert list(frame.columns) == ["metric", "value"]
    values = dict(zip(frame.metric, frame.value))
    assert values["measured speed-up vs verifier"] == "2.00"
    assert values["acceptance rate"] == f"{tr.summary.acceptance_rate:.3f}"
    assert "ideal speed-up (see the Learn tab)" in values
    zh = stats_frame(tr, lang="zh")
    assert list(zh.columns) == ["指标", "数值"] and "接受率" in set(zh.iloc[:, 0])
    empty = stats_frame(None, lang="zh")  # the panel's headers before any run
    assert list(empty.columns) == ["指标", "数值"] and empty.empty
    assert timeline(traces["token_cascade"]).data  # single-token rounds render too


def _table(**columns) -> pd.DataFrame:
    base = {
        "method": ["verifier", "drafter", "speculative", "spec_cascade/token_v3"],
        "speedup": [1.0, 3.0, 1.5, 2.0],
        "quality_vs_verifier": [1.0, 0.9, 1.0, 0.95],
        "key_facts": [1.0, 0.5, 1.0, 1.0],
        "wall_s": [2.0, 0.67, 1.33, 1.0],
        "verifier_calls_per_token": [1.0, 0.0, 0.3, 0.25],
    }
    return pd.DataFrame({**base, **columns})


def test_speed_quality_marks_a_fast_wrong_answer():
    fig = speed_quality(_table())
    points = {d.meta["method"]: d for d in fig.data if d.meta}
    assert set(points) == {"verifier", "drafter", "speculative", "spec_cascade/token_v3"}
    fast_wrong, right = points["drafter"], points["spec_cascade/token_v3"]
    assert fast_wrong.meta["wrong"] and not right.meta["wrong"]
    assert fast_wrong.marker.symbol != right.marker.symbol
    assert fast_wrong.marker.color == WRONG_COLOUR != right.marker.color
    labels = [a.text for a in fig.layout.annotations]
    assert "drafter alone (wrong)" in labels and "speculative cascade · TokenV3" in labels
    assert "key facts" in fig.layout.yaxis.title.text and fig.layout.xaxis.type == "log"
    assert any(s.type == "rect" and s.x0 == 1 for s in fig.layout.shapes)  # the good corner
    assert any(s.type == "line" and s.x0 == s.x1 == 1 for s in fig.layout.shapes)  # 1x
    # without key facts the axis is agreement with the verifier, and nothing is called wrong
    agree = speed_quality(_table(key_facts=[None] * 4))
    assert "agreement" in agree.layout.yaxis.title.text
    assert not any(d.meta["wrong"] for d in agree.data if d.meta)
    for ann in fig.layout.annotations:  # every label stays inside the padded axis range
        if ann.xref in (None, "x") and ann.x is not None:
            assert fig.layout.xaxis.range[0] < ann.x <= fig.layout.xaxis.range[1]


def test_quality_latency_frontier_is_monotone():
    pts = pd.DataFrame(
        {
            "method": ["spec_cascade/diff"] * 5 + ["lossy_speculative"] * 3,
            "alpha": [-1.0, -0.5, 0.0, 0.5, 1.0, 0.0, 0.5, 1.0],
            "relative_latency": [1.0, 0.6, 0.9, 0.5, 0.7, 0.9, 0.8, 0.7],
            "quality": [1.0, 0.8, 0.7, 0.5, 0.9, 1.0, 0.9, 0.8],
        }
    )
    fig = quality_latency(pts, current={"relative_latency": 0.8, "quality": 0.6})
    lines = [d for d in fig.data if d.mode == "lines"]
    markers = [d for d in fig.data if d.mode in ("markers", "markers+text")]
    assert len(lines) == 2 and markers[-1].name == "current setting"
    assert "α=-0.5" in markers[0].text  # each point names its α
    for line in lines:
        assert list(line.x) == sorted(line.x) and list(line.y) == sorted(line.y)
    diff = next(d for d in lines if d.legendgroup == "spec_cascade/diff")
    assert list(diff.x) == [0.5, 0.6, 0.7, 1.0]  # (0.9, 0.7) is dominated by (0.6, 0.8)
    assert len(markers[0].x) == 5 and "α = -0.5" in "".join(markers[0].hovertext)
    assert markers[0].name == "speculative cascade · Diff"
    titled = quality_latency(pts, quality_label="key facts", lang="zh")
    assert titled.layout.yaxis.title.text == "key facts"


def _sweep_points(methods: int, alphas: int) -> pd.DataFrame:
    """A crowded sweep: every method's points at nearly the same costs and qualities."""
    rows = [{"method": "verifier", "alpha": None, "relative_latency": 1.0, "quality": 1.0}]
    names = ["spec_cascade/token_v3", "lossy_speculative", "bild", "spec_cascade/chow"]
    names += ["spec_cascade/diff", "spec_cascade/opt", "spec_cascade/token_v1"][: methods - 4]
    for k, method in enumerate(names[:methods]):
        for j in range(alphas):
            a = j / (alphas - 1)
            quality = 1.0 if a < 0.5 else 0.75 if a < 0.9 else 0.5
            rows.append(
                {
                    "method": method,
                    "alpha": round(a, 2),
                    "relative_latency": round(1.3 - a + 0.02 * k, 3),
                    "quality": quality,
                }
            )
    return pd.DataFrame(rows)  # fmt: skip


@pytest.mark.parametrize(("methods", "alphas"), [(1, 6), (4, 6), (7, 6), (7, 11)])
def test_the_sweeps_alpha_labels_never_overlap(methods, alphas):
    """Every method's α labels are placed together, for a phone's plot (its legend takes a
    row per method out of the height): none overlaps another or a marker; a label with no
    free place nearby is left out (the hover names every point's α). A lone method's labels
    all fit."""
    from speccascade.views.compare import QL_OFFSETS, QL_Y, _LabelPlacer

    fig = quality_latency(_sweep_points(methods, alphas), lang="en")
    notes = [a for a in fig.layout.annotations if a.name == "alpha"]
    assert all(a.text.startswith("α=") for a in notes)
    assert bool(notes) is (alphas <= 8)  # more points than that: the hover names them
    x0, x1 = fig.layout.xaxis.range
    rows = sum(1 for d in fig.data if d.showlegend is not False)
    height = min(240.0, 440 - 90 - 20 * rows)
    placer = _LabelPlacer(x0, x1, *QL_Y, [], size=(260.0, height), offsets=QL_OFFSETS)
    boxes = []
    for a in notes:
        px, py = placer._px(a.x, a.y)
        boxes.append(placer._box(px, py - a.ay, placer._width(a.text), 15, a.xanchor))
    markers = [placer._box(*placer._px(x, y), 16, 16, "center") for d in fig.data
               if d.mode == "markers" and d.x[0] is not None for x, y in zip(d.x, d.y)]  # fmt: skip
    for i, box in enumerate(boxes):
        assert not any(_LabelPlacer._overlap(box, other) for other in boxes[:i] + markers)
    if methods == 1:
        assert len(notes) == alphas  # nothing in the way
    zh = quality_latency(_sweep_points(methods, alphas), lang="zh")
    assert len([a for a in zh.layout.annotations if a.name == "alpha"]) == len(notes)


def test_compare_times_each_method_by_the_median_of_interleaved_rounds(llama_pair):
    """rounds=3: every method runs three times, interleaved (the verifier, the others, then
    again), each row's time is the median of its runs and its tokens are the first run's; a
    budget the first round already spends stops after it."""
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    variants = [Variant("verifier"), Variant("speculative"), Variant("spec_cascade", "chow")]
    seen = []
    for v, tr, table in compare(p, "hello", variants, rounds=3, max_new_tokens=6, temperature=0):
        seen.append((v.label, tr.summary.wall_s, table, tuple(tr.new_token_ids)))
    assert [label for label, *_ in seen] == [v.label for v in variants] * 3
    assert all(ids == seen[i % 3][3] for i, (*_, ids) in enumerate(seen))  # seeded: same tokens
    table = seen[-1][2]
    assert list(table.runs) == [3, 3, 3]
    for i, v in enumerate(variants):
        walls = sorted(w for label, w, *_ in seen if label == v.label)
        assert table.loc[i, "wall_s"] == pytest.approx(walls[1])  # the median of three
    assert table.loc[0, "speedup"] == 1.0
    assert table.loc[1, "speedup"] == pytest.approx(table.loc[0, "wall_s"] / table.loc[1, "wall_s"])
    once = list(compare(p, "hello", variants, rounds=3, budget_s=0.0, max_new_tokens=6))
    assert len(once) == 3 and set(once[-1][2].runs) == {1}


def test_compare_and_sweep_figures(llama_pair):
    p = dataclasses.replace(llama_pair, eos_ids=frozenset())
    variants = [Variant("verifier"), Variant("speculative"), Variant("spec_cascade", "chow")]
    *_, (_, _, table) = compare(p, "hello", variants, max_new_tokens=6, temperature=0)
    assert list(table.method) == ["verifier", "speculative", "spec_cascade/chow"]
    assert table.loc[0, "speedup"] == 1.0 and table.loc[1, "quality_vs_verifier"] == 1.0
    assert set(table.runs) == {1}
    fig = speed_quality(table)
    assert {d.meta["method"] for d in fig.data if d.meta} == set(table.method)
    assert "agreement" in fig.layout.yaxis.title.text  # no key facts for a free prompt
    calls = []
    points = sweep(
        p,
        [("hello", None)],
        [Variant("spec_cascade", "diff")],
        n_alpha=3,
        max_new_tokens=6,
        temperature=0,
        progress=lambda *args: calls.append(args),
    )
    # progress is data (the app words it): the job about to run, then the end
    assert calls == [
        (0.0, "spec_cascade/diff", -1.0),
        (1 / 3, "spec_cascade/diff", 0.0),
        (2 / 3, "spec_cascade/diff", 1.0),
        (1.0, None, None),
    ]
    assert list(points.method) == ["verifier"] + ["spec_cascade/diff"] * 3
    assert points.alpha.tolist()[1:] == [-1.0, 0.0, 1.0]
    assert points.quality.iloc[1] == 1.0  # alpha = -1 is SD: greedy equals the verifier
    fig = quality_latency(
        points[points.method != "verifier"], current={"relative_latency": 1.0, "quality": 0.5}
    )
    assert fig.data[-1].name == "current setting"
    assert isinstance(points, pd.DataFrame)


# -- localization ----------------------------------------------------------------------------

# Identifiers and formulas that stay as they are in Chinese text.
ALLOWED = re.compile(
    r"D_TV|max|ROUGE|BiLD|Chow|OPT|TokenV\d|Diff|JSD|KL|Jensen|Shannon|Medusa|SmolLM2|Qwen|"
    r"Gemma|GPU"  # model and hardware names
)


def _plain(text: str) -> str:
    return html_lib.unescape(re.sub(r"<[^>]+>", "", text or ""))


def _visible_texts(fig) -> list[str]:
    """Titles, axis titles, annotations, colour bars and legend names of a figure."""
    lay = fig.layout
    out = [lay.title.text]
    for name in dir(lay):
        if re.fullmatch(r"[xy]axis\d*", name) and lay[name] is not None:
            out.append(lay[name].title.text)
    out += [a.text for a in lay.annotations]
    for d in fig.data:
        if d.showlegend is not False:
            out.append(d.name)
        bar = getattr(d, "colorbar", None)
        if bar is not None:
            out += [bar.title.text, *(bar.ticktext or ())]
    return [_plain(x) for x in out if x]


def _english_words(texts) -> list[str]:
    return [w for x in texts for w in re.findall("[A-Za-z]{3,}", ALLOWED.sub("", x))]


def test_chinese_figures_have_no_english_words(traces):
    tr = traces["sc"]
    pos = next(i for i, t in enumerate(tr.tokens) if t.source == "resampled")
    pts = pd.DataFrame(
        {
            "method": ["spec_cascade/diff", "spec_cascade/diff", "bild"],
            "alpha": [0.0, 1.0, 0.5],
            "relative_latency": [0.9, 0.7, 0.8],
            "quality": [0.9, 0.8, 0.7],
        }
    )
    figs = {
        "heatmap": heatmap(tr, lang="zh"),
        "inspector": inspector(tr, pos, RULES["token_v3"], 0.5, lang="zh"),
        "timeline": timeline(tr, lang="zh"),
        "speed_quality": speed_quality(_table(), lang="zh"),
        "agreement": speed_quality(_table(key_facts=[None] * 4), lang="zh"),
        "sweep": quality_latency(pts, current={"relative_latency": 1, "quality": 1}, lang="zh"),
    }
    for name, fig in figs.items():
        texts = _visible_texts(fig)
        assert texts and not _english_words(texts), (name, _english_words(texts))
        assert any(re.search("[\u4e00-\u9fff]", x) for x in texts), name
    frame = stats_frame(tr, verifier_wall_s=1.0, lang="zh")
    assert not _english_words([*frame.columns, *frame.iloc[:, 0]])
    assert not _english_words([_plain(legend_html("zh"))])
    popups = re.findall(
        r'<span class="sc-pop"[^>]*>(.*?)</span>', token_html(tr.tokens, lang="zh"), re.S
    )
    assert popups and not _english_words(p.split("\n", 1)[1] for p in popups)


def test_every_figure_string_has_a_real_chinese_version():
    keys = [k for k in figures.STRINGS if k.startswith(("fig.", "source."))]
    assert {f"source.{s}" for s in SOURCES} <= set(keys)
    for key in keys:
        en, zh = figures.STRINGS[key]
        assert en.strip() and zh.strip(), key
        assert zh != en and re.search("[\u4e00-\u9fff]", zh), key
        field = r"\{(\w+)(?::[^}]*)?\}"  # {name} or {name:.0%}
        assert set(re.findall(field, en)) == set(re.findall(field, zh)), key
        assert not _english_words([re.sub(field, "", zh)]), (key, zh)
        assert not re.search(r"\b(alpha|pi)\b", re.sub(r"\{\w+\}", "", en)), key  # α, π


def test_no_user_facing_text_cites_a_repository_path():
    """A Space's visitor cannot open the repository's files: no string of the page (every
    i18n table, and the model pair's menu) names one (the stats cited docs/method.md)."""
    from speccascade.app.controls import pair_choices
    from speccascade.i18n import STRINGS

    path = re.compile(r"\b(docs|scripts|assets|tests|speccascade)/|\w\.(py|md)\b|BENCHMARKS|README")
    menus = [label for lang in ("en", "zh") for label, _ in pair_choices(lang)]
    shown = [s for pair in STRINGS.values() for s in pair] + menus
    assert [s for s in shown if path.search(s)] == []
    assert path.search("see docs/method.md") and path.search("scripts/train_demo_pair.py")


def test_bold_text_renders_bold_in_both_languages():
    """CommonMark reads "**" as bold only where it flanks: a closing "**" after a full-width
    colon and before a Chinese character stays two asterisks ("**这个回答在重复自己：**其中…"
    showed them on the page). Every string's pairs render, as the page's Markdown reads them."""
    # CommonMark in Python, as Gradio's front end reads Markdown: markdown-it-py comes with
    # gradio (typer -> rich -> markdown-it-py), so it is always here
    from markdown_it import MarkdownIt

    from speccascade.i18n import STRINGS

    render = MarkdownIt().render
    shown = [(key, s) for key, pair in STRINGS.items() for s in pair if s.count("**") >= 2]
    assert shown
    bad = [(k, s[:60]) for k, s in shown if render(s).count("<strong>") != s.count("**") // 2]
    assert bad == []
    assert "<strong>" not in render("**假设分析：**运行")  # what the test catches


def test_alpha_labels_merge_points_closer_than_a_label():
    from speccascade.views.compare import alpha_labels

    xs, ys = [2.6, 1.3, 0.19, 0.185, 0.195, 0.26], [1.0] * 6
    labels = alpha_labels(xs, ys, [-0.1, 0.12, 0.34, 0.56, 0.78, 1.0], x_span=2.415)
    assert sorted(x for x in labels if x) == ["α=-0.1", "α=0.12", "α=0.34…1"]
    # the same cost at different quality keeps both labels
    assert alpha_labels([1.0, 1.0], [0.2, 0.9], [0.1, 0.5], 1.0) == ["α=0.1", "α=0.5"]
    assert alpha_labels([1.0], [1.0], [None], 0.0) == [None]

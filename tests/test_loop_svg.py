"""The Learn tab's picture of the loop (views/loop_svg.py): well-formed SVG in both layouts and
both languages, the last run's numbers on it, text that fits its boxes, and the page's
Markdown carrying both layouts as images."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from speccascade.analysis.explain import WorkedExample
from speccascade.i18n import t
from speccascade.views.learn import learn_markdown
from speccascade.views.loop_svg import (
    BOXES,
    LAYOUTS,
    PAD,
    SIZES,
    layout,
    loop_alt,
    loop_html,
    loop_svg,
    text_width,
    wrap,
)

SVG = "{http://www.w3.org/2000/svg}"

RUN = WorkedExample(
    rule="token_v3",
    alpha=0.5,
    gamma=4,
    temperature=0.0,
    method="spec_cascade",
    prompt="Who is Buzz Aldrin?",
    kept=None,
    deferred=None,
    tokens=31,
    drafted=29,
    accepted=24,
    kept_fraction=24 / 29,
    verifier_calls=8,
    tokens_per_verifier_call=31 / 8,
    cost_ratio=0.15,
    ideal_speedup=2.0,
    replaced=4,
    bonus=3,
)

# What each language must show of RUN: drafted, kept, taken over, calls, rule and α, tokens.
NUMBERS = {
    "en": [
        "29 tokens drafted",
        "8 verifier calls",
        "24 of 29 kept (83%)",
        "+ 3 bonus tokens",
        "4 taken over",
        "TokenV3, α = 0.5",
        "31 tokens written in all",
    ],
    "zh": [
        "共起草 29 个词元",
        "验证模型调用 8 次",
        "保留 24/29（83%）",
        "另有 3 个奖励词元",
        "接手 4 次",
        "TokenV3，α = 0.5",
        "共写出 31 个词元",
    ],
}


def texts(svg: str) -> list[str]:
    """The SVG's text elements' contents, as drawn (one line each)."""
    return [e.text or "" for e in ET.fromstring(svg).iter(f"{SVG}text")]


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_picture_is_well_formed_svg_with_the_runs_numbers(lang, kind):
    svg = loop_svg(lang, RUN, kind)
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    _, _, w, h = map(float, root.get("viewBox").split())
    assert w > 0 and h > 0
    assert root.find(f"{SVG}title").text == loop_alt(lang, RUN)
    drawn = " ".join(texts(svg))
    joined = "".join(texts(svg))  # a number may wrap onto two lines
    for number in NUMBERS[lang]:
        assert number in drawn or number.replace(" ", "") in joined.replace(" ", ""), number
    for key in BOXES:
        assert t(f"learn.loop.{key}", lang) in drawn
    if lang == "zh":  # no English words but the rule's name
        assert not re.findall(r"[A-Za-z]{3,}", drawn.replace("TokenV3", "")), drawn


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_without_a_run_the_picture_has_generic_labels(lang, kind):
    svg = loop_svg(lang, None, kind)
    ET.fromstring(svg)
    drawn = " ".join(texts(svg))
    assert t("learn.loop.next", lang) in drawn
    assert not re.search(r"\d+ (tokens|verifier|taken)|共起草|接手 \d", drawn), drawn
    squeezed = "".join(texts(svg)).replace(" ", "")  # wrapped lines, run together
    for key in BOXES:
        assert t(f"learn.loop.{key}.text", lang).replace(" ", "") in squeezed, key


def test_the_rule_without_alpha_and_an_empty_run_read_sensibly():
    sd = replace(RUN, rule="sd", alpha=None, accepted=0, drafted=0, kept_fraction=None, bonus=0)
    drawn = " ".join(texts(loop_svg("en", sd)))
    assert t("rule.sd", "en") in drawn and "α =" not in drawn
    assert "0 of 0 kept (—)" in drawn and "bonus" not in drawn
    huge = replace(RUN, alpha=float("inf"), rule="opt")
    assert "α = +∞" in " ".join(texts(loop_svg("en", huge)))


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("run", [None, RUN])
def test_text_fits_its_boxes_and_boxes_do_not_overlap(lang, kind, run):
    lay = layout(lang, run, kind)
    for key, box in lay.boxes.items():
        assert box.x >= 0 and box.y >= 0 and box.right <= lay.width and box.bottom <= lay.height
        lines = lay.lines[key]
        needed = sum(SIZES[k] * 1.3 for _, k in lines) + 2 * PAD
        assert needed <= box.h + 1e-6, (key, lines)
        for text, k in lines:
            one_unit = " " not in text and len(text) <= 12
            fits = text_width(text, SIZES[k], bold=k != "body") <= box.w - 2 * PAD + 1e-6
            assert fits or one_unit, (key, text)
    boxes = list(lay.boxes.values())
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a.right <= b.x or b.right <= a.x or a.bottom <= b.y or b.bottom <= a.y
            assert apart, (a, b)


def test_wrap_keeps_words_and_chinese_punctuation_whole():
    lines = wrap("The verifier p scores all of them in one pass", 120, 14)
    assert len(lines) > 1 and " ".join(lines) == "The verifier p scores all of them in one pass"
    assert all(text_width(x, 14) <= 120 for x in lines)
    # even lines: the last is not one word alone when an even split exists
    assert len(lines[-1].split()) > 1
    zh = wrap("验证模型接手：用它的词元替换草稿，之后的草稿作废", 110, 14)
    assert "".join(zh) == "验证模型接手：用它的词元替换草稿，之后的草稿作废"
    assert not any(x[0] in "，。、；：）" for x in zh), zh
    assert not any(x.endswith("（") for x in wrap("保留 24/29（83%）", 90, 15, True))
    assert wrap("", 100, 14) == [] and wrap("short", 500, 14) == ["short"]


def _images(md: str) -> dict[str, str]:
    found = re.findall(r'<img class="sc-loop-(\w+)" src="data:image/svg\+xml;base64,([^"]+)"', md)
    return {kind: base64.b64decode(data).decode("utf-8") for kind, data in found}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_learn_tab_opens_with_the_picture_in_both_layouts(lang):
    md = learn_markdown(lang, RUN)
    assert md.startswith(t("learn.loop.title", lang))
    assert md.index("sc-loop") < md.index(t("learn.story.title", lang))
    images = _images(md)
    assert set(images) == set(LAYOUTS)
    for kind, svg in images.items():
        assert svg == loop_svg(lang, RUN, kind)
    # the HTML block is one line (a blank line would end it) and its alt text is escaped
    html = loop_html(lang, RUN)
    assert "\n" not in html and html in md and html.count('alt="') == len(LAYOUTS)
    assert "Who is Buzz Aldrin?" in md  # the caption names the run
    empty = learn_markdown(lang)
    assert t("learn.loop.caption_none", lang) in empty
    assert "29" not in " ".join(texts(_images(empty)["wide"]))

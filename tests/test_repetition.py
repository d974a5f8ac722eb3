"""An answer that repeats itself (analysis.verdict.repetition): a loop such as SmolLM2's "A
lone soul, a lone soul, …" is flagged with the phrase it loops on, in English or Chinese;
natural answers, the demo pair's decline and short answers are not."""

from __future__ import annotations

import pytest

from speccascade.analysis.verdict import (
    REPEAT_MIN_UNITS,
    REPEAT_SHARE,
    repeated_share,
    repetition,
    units,
)
from speccascade.models.presets import PRESETS

LOOP = "In the quiet night, a lone soul, a lone soul, a lone soul, a lone soul, a lone soul,"
NATURAL = [
    " Buzz Aldrin is an American astronaut; he was the second person to walk on the Moon, "
    "during Apollo 11 in 1969, after Neil Armstrong.",
    " United States astronaut; the second person to set foot on the Moon (1930-).",
    " Isaac Newton was an English mathematician and physicist (1642-1727).",
    " 布兹·奥尔德林是美国宇航员，1969 年随阿波罗 11 号登月，是第二个踏上月球的人。",
    " The capital of France is Paris. Paris is on the Seine and is the largest city of "
    "France; the city is known for the Eiffel Tower and the Louvre.",
]


def test_units_are_words_and_cjk_characters():
    assert units("A lone soul, a LONE soul!") == ["a", "lone", "soul", "a", "lone", "soul"]
    assert units("我是学生 ok") == ["我", "是", "学", "生", "ok"]
    assert units("1642-1727") == ["1642", "1727"]


def test_repeated_share_counts_the_words_inside_repeated_phrases():
    # every 4-word phrase of a two-word loop repeats: all covered
    assert repeated_share(["a", "b", "a", "b", "a", "b", "a", "b"]) == 1.0
    # one 4-word phrase said twice, apart: its 8 words of 12
    words = ["w", "x", "y", "z", "q", "r", "w", "x", "y", "z", "s", "t"]
    assert repeated_share(words) == pytest.approx(8 / 12)
    assert repeated_share(["a", "b", "c", "d", "e", "f", "g", "h"]) == 0.0
    assert repeated_share(["a", "a"]) == 0.0  # shorter than a phrase


def test_a_loop_is_flagged_with_the_phrase_it_repeats():
    loop = repetition(LOOP)
    assert loop is not None and loop.share >= REPEAT_SHARE
    assert loop.phrase == "a lone soul" and loop.times == 5
    zh = repetition("我是一个学生，我是一个学生，我是一个学生，我是一个学生。")
    assert zh is not None and zh.phrase == "我是一个学生" and zh.times == 4
    twice = repetition(NATURAL[2] + NATURAL[2])  # a whole answer said again
    assert twice is not None and twice.times == 2


def test_the_phrase_starts_where_a_line_of_the_loop_starts():
    """SmolLM2-135M's haiku (the offline pair, greedy, 96 tokens): the loop's phrase reads
    from the start of its line, not from wherever the repeat was first noticed."""
    haiku = "In the silence of the night, a lonely soul,\nA lone wolf, lost in the night,\n"
    haiku += "A lonely soul, lost in the night,\n" * 6 + "A lonely soul, lost "
    loop = repetition(haiku)
    assert loop is not None and loop.phrase == "a lonely soul lost in the night"
    assert loop.times == 6 and loop.share > 0.8


@pytest.mark.parametrize("text", NATURAL)
def test_natural_answers_are_not_flagged(text):
    assert repetition(text) is None, repeated_share(units(text))


def test_the_demo_pairs_decline_and_short_answers_are_not_flagged():
    for line in PRESETS["demo"].declines:
        assert repetition(line) is None
    short = " ".join(["a lone soul"] * 3)  # 9 words: too few to call a loop
    assert len(units(short)) < REPEAT_MIN_UNITS and repetition(short) is None
    assert repetition("") is None

"""The race's data: each lane's token times are its run's round ends, the order of finish is
the measured one, the speed-up is speed.speedup's; and its page and GIF."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace

import pytest
from PIL import Image

from speccascade.analysis.race import LANES, lane_tokens, median_run, round_ends, run_race
from speccascade.analysis.speed import speedup
from speccascade.core.engine import APP_DEFAULTS, generate
from speccascade.views.race import race_document
from speccascade.views.race_gif import race_gif

SETTINGS = replace(APP_DEFAULTS, max_new_tokens=12)


@pytest.fixture(scope="module")
def race(llama_pair):
    return run_race(llama_pair, "ab", SETTINGS, rounds=3, facts=(r"\bzz\b",))


def test_each_token_appears_when_its_round_ends(llama_pair):
    for method in ("speculative", "verifier"):
        settings = replace(SETTINGS, method=method, rule=None, alpha=None)
        trace = generate(llama_pair, "ab", settings)
        tokens, wasted = lane_tokens(trace)
        starts = [r.start_s for r in trace.rounds]
        ends = starts[1:] + [trace.summary.wall_s]  # computed here, not by round_ends
        assert round_ends(trace) == ends
        assert [tok.at_s for tok in tokens] == [ends[t.round] for t in trace.tokens]
        assert wasted is None
        assert all(a <= b for a, b in zip(ends, ends[1:]))


def test_a_deferred_sequence_cascade_shows_its_draft_then_strikes_it(llama_pair):
    settings = replace(SETTINGS, method="seq_cascade", rule=None, alpha=0.0)  # defers if unsure
    trace = generate(llama_pair, "ab", settings)
    assert trace.extra["deferred"]
    tokens, wasted_until = lane_tokens(trace)
    drafted = [x for x in tokens if x.kind == "wasted"]
    n = len(trace.extra["draft_token_ids"]) - bool(trace.extra["draft_eos"])
    assert len(drafted) == n > 0
    # the draft is written before the verifier starts over, and struck when it does
    assert (
        max(x.at_s for x in drafted)
        <= wasted_until
        <= min(x.at_s for x in tokens if x.kind != "wasted")
    )
    assert wasted_until == round_ends(trace)[0]


def test_lanes_finish_in_the_measured_order_with_the_one_speedup(race):
    assert [x.method for x in race.lanes] == list(LANES)
    verifier = next(x for x in race.lanes if x.method == "verifier")
    for lane in race.lanes:
        assert len(lane.walls) == 3
        assert lane.finish_s == sorted(lane.walls)[1]  # the median run is the one replayed
        assert lane.speedup == pytest.approx(speedup(verifier.walls, lane.walls))
        assert lane.tokens and lane.tokens[-1].at_s == pytest.approx(lane.finish_s)
        calls = [n for _, n in lane.calls]
        assert calls == sorted(calls)
    finishes = {x.method: x.finish_s for x in race.lanes}
    assert race.order == sorted(finishes, key=finishes.get)


def test_median_run_is_the_middle_one(llama_pair):
    traces = [generate(llama_pair, "ab", replace(SETTINGS, method="verifier")) for _ in range(3)]
    walls = sorted(tr.summary.wall_s for tr in traces)
    assert median_run(traces).summary.wall_s == walls[1]


def test_a_sampled_race_needs_a_seed(llama_pair):
    with pytest.raises(ValueError, match="seed"):
        run_race(llama_pair, "ab", replace(SETTINGS, temperature=1.0, seed=None), rounds=1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_carries_every_lane_and_plays_offline(race, lang):
    doc = race_document([race], lang)
    assert "http://" not in doc and "https://" not in doc  # nothing to fetch
    payload = re.search(r'id="race-data">(.*?)</script>', doc, re.S).group(1)
    data = json.loads(payload.replace("<\\/", "</"))
    lanes = data["races"][0]["lanes"]
    assert [x["method"] for x in lanes] == list(LANES)
    for lane, got in zip(race.lanes, lanes):
        assert [t[2] for t in got["tokens"]] == [round(t.at_s, 5) for t in lane.tokens]
        assert got["finish"] == round(lane.finish_s, 5)
    assert ("仅验证模型" in doc) == (lang == "zh")
    assert ("Verifier alone" in doc) == (lang == "en")


def test_the_gif_animates_the_race(race):
    data = race_gif([race], "en")
    assert data[:6] == b"GIF89a"
    img = Image.open(io.BytesIO(data))
    assert img.n_frames > 20
    first, last = img.copy().convert("L"), None
    img.seek(img.n_frames - 1)
    last = img.convert("L")
    # the finished race has drawn tokens the first frame has not
    assert sum(last.histogram()[:128]) > sum(first.histogram()[:128])

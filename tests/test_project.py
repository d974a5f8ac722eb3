"""The cost projector: pricing arithmetic, the roofline, gamma re-simulation against real runs,
break-even acceptance, labels, the honesty check on this machine, views and the CLI."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
import statistics
from collections import Counter

import needs
import pytest
import torch

from speccascade import generate
from speccascade.analysis.project import (
    GPUS,
    PROFILES,
    ForwardCost,
    best_gamma,
    best_gammas,
    breakeven_acceptance,
    build_profile,
    custom_profile,
    expected_workload,
    gamma_curve,
    honesty_check,
    measure_profile,
    position_outcomes,
    project,
    project_gamma,
    project_methods,
    resimulate,
    roofline_profile,
    speedup,
    steady_speedup,
    verifier_alone,
    workload_of_rounds,
)
from speccascade.cli import main
from speccascade.core import engine
from speccascade.core.engine import APP_DEFAULTS, METHOD_REGISTRY, METHODS
from speccascade.core.errors import SettingsError
from speccascade.core.trace import (
    RoundRecord,
    Summary,
    TokenRecord,
    Trace,
    expected_tokens_per_call,
)
from speccascade.models.presets import load_preset
from speccascade.views.project import (
    assumption_lines,
    assumptions_html,
    best_gamma_table,
    gamma_figure,
    projection_figure,
    projection_table,
)

PROMPT = "Who is Buzz Aldrin?"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread for this module: on a 2-core machine shared with other jobs, two
    threads wait on each other whenever one is descheduled and timings swing tenfold. The
    honesty check's profile and the runs it prices share this setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def demo():
    return load_preset(None)


def _summary(method="spec_cascade", rule="token_v3", gamma=3, prompt=10, new=8, **kw) -> Summary:
    fields = dict(
        method=method,
        rule=rule,
        alpha=0.5 if rule else None,
        gamma=gamma,
        temperature=0.0,
        prompt_tokens=prompt,
        new_tokens=new,
        wall_s=0.1,
        tokens_per_s=new / 0.1,
        drafter_calls=0,
        verifier_calls=0,
        drafter_s=0.0,
        verifier_s=0.0,
        drafted=0,
        accepted=0,
        acceptance_rate=None,
        mean_accepted_length=None,
        tokens_per_verifier_call=None,
        verifier_calls_per_token=0.0,
        cost_ratio=None,
        ideal_speedup=None,
        stop_reason="max_new_tokens",
    )
    return Summary(**{**fields, **kw})


def _round(i, drafted, accepted, emitted, d_calls, v_calls=1) -> RoundRecord:
    return RoundRecord(i, 0.0, 0.0, 0.0, drafted, accepted, emitted, d_calls, v_calls)


def _tokens(sources: str) -> list[TokenRecord]:
    names = {"a": "accepted", "r": "resampled", "b": "bonus", "v": "verifier", "d": "drafter"}
    return [TokenRecord(i, 0, "", names[c], 0) for i, c in enumerate(sources)]


COST = custom_profile(
    drafter_ms=2.0,
    verifier_fixed_ms=10.0,
    verifier_per_token_ms=1.0,
    round_overhead_ms=0.5,
    draft_overhead_ms=0.2,
    drafter_per_token_ms=0.1,
)


# -- pricing ---------------------------------------------------------------------------------


def test_pricing_arithmetic_on_a_hand_made_trace():
    """Three cascade rounds after a 10-token prompt, gamma 3: rejected at 1; all kept + bonus
    (with the drafter's bonus forward); rejected at 0. Each call priced by its token count."""
    rounds = [_round(0, 3, 1, 2, 3), _round(1, 3, 3, 4, 4), _round(2, 3, 0, 1, 3)]
    tr = Trace([0] * 10, [0] * 7, "", _tokens("araaabr"), rounds, _summary(new=7))
    work = workload_of_rounds(rounds, 10)
    # verifier: prompt + 3 drafts, then 1 pending + 3 drafts twice
    assert dict(work.verifier) == {13: 1, 4: 2}
    # drafter: the prompt, then one token a call (9 more calls)
    assert dict(work.drafter) == {10: 1, 1: 9}
    proj = project(tr, COST)
    assert proj.verifier_ms == pytest.approx((10 + 13) + 2 * (10 + 4))
    assert proj.drafter_ms == pytest.approx((1.9 + 0.1 * 10) + 9 * 2.0)
    assert proj.overhead_ms == pytest.approx(3 * 0.5 + 9 * 0.2)
    assert proj.total_ms == pytest.approx(51 + 20.9 + 3.3)
    assert proj.kind == "projection" and proj.basis == "recorded"
    assert proj.measured_s == 0.1 and proj.error == pytest.approx((0.0752 - 0.1) / 0.1)
    base = verifier_alone(10, 7, COST)  # prefill, then 6 one-token steps, 7 rounds
    assert base.total_ms == pytest.approx(20 + 6 * 11 + 7 * 0.5)
    assert speedup(proj, COST) == pytest.approx(base.total_ms / proj.total_ms)


def test_sd_bonus_and_token_cascade_bookkeeping():
    # SD: a fully kept window's bonus token comes without a drafter forward, so the next
    # round's first drafter forward reads two tokens (the last draft and the bonus)
    sd = [_round(0, 2, 2, 3, 2), _round(1, 2, 0, 1, 2)]
    work = workload_of_rounds(sd, 5)
    assert dict(work.drafter) == {5: 1, 1: 2, 2: 1} and dict(work.verifier) == {7: 1, 3: 1}
    # token cascade: the verifier catches up on every drafter token since its last call
    tc = [_round(i, 0, 0, 1, 1, v) for i, v in enumerate([0, 0, 1, 0, 1, 1])]
    work = workload_of_rounds(tc, 4)
    assert dict(work.verifier) == {6: 1, 2: 1, 1: 1} and dict(work.drafter) == {4: 1, 1: 5}


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_bookkeeping_matches_the_engines_forwards(llama_pair, monkeypatch, temperature):
    """Oracle: wrap the engine's forward and record how many tokens each call really fed."""
    seen: dict[str, Counter] = {}
    forward = engine._LM.forward

    def spy(self, ids, keep=1):
        seen.setdefault(self.role, Counter())[int(ids.shape[0])] += 1
        return forward(self, ids, keep)

    monkeypatch.setattr(engine._LM, "forward", spy)
    for method in METHODS:
        for rule in METHOD_REGISTRY[method].rules[-1:] or (None,):
            seen.clear()
            tr = generate(
                llama_pair,
                "hello there",
                method=method,
                rule=rule,
                gamma=3,
                temperature=temperature,
                max_new_tokens=14,
                seed=1,
            )
            work = workload_of_rounds(tr.rounds, tr.summary.prompt_tokens)
            assert dict(work.drafter) == dict(seen.get("drafter", {})), method
            assert dict(work.verifier) == dict(seen.get("verifier", {})), method


def test_forward_cost_line_and_table():
    line = ForwardCost(2.0, 0.5)
    assert line.ms(1) == 2.5 and line.ms(10) == 7.0
    table = ForwardCost.from_table([(1, 10.0), (3, 14.0), (11, 18.0)])
    assert table.ms(1) == 10.0 and table.ms(2) == 12.0 and table.ms(7) == 16.0
    # beyond the ends: the least-squares slope from the end point
    assert table.per_token_ms == pytest.approx(40 / 56)  # sum dn dm / sum dn^2
    assert table.ms(21) == pytest.approx(18.0 + 10 * table.per_token_ms)
    # a noisy table whose fit slope would be negative extrapolates flat
    assert ForwardCost.from_table([(1, 5.0), (2, 4.0)]).per_token_ms == 0.0
    with pytest.raises(SettingsError):
        ForwardCost.from_table([])


# -- profiles --------------------------------------------------------------------------------


def test_roofline_numbers_from_first_principles():
    """1.7B bfloat16 parameters on an H100 SXM: 3.4 GB read at 3.35 TB/s = 1.015 ms, plus the
    launch; each extra token verified adds 2 x 1.7e9 FLOPs at 989 TFLOP/s = 3.4 us."""
    cost = roofline_profile(135e6, 1.7e9, gpu="h100-sxm", dtype="bfloat16", launch_ms=0.5)
    assert cost.verifier.fixed_ms == pytest.approx(0.5 + 3.4e9 / 3.35e12 * 1e3)
    assert cost.verifier.per_token_ms == pytest.approx(3.4e9 / 989e12 * 1e3)
    assert cost.drafter.fixed_ms == pytest.approx(0.5 + 270e6 / 3.35e12 * 1e3)
    assert cost.verifier.ms(6) - cost.verifier.ms(1) == pytest.approx(5 * 3.4e9 / 989e12 * 1e3)
    assert cost.profile == "roofline" and cost.round_overhead_ms == 0.0
    # H200 reads the same weights 4.8 / 3.35 times faster; int4 reads a quarter of bf16
    h200 = roofline_profile(135e6, 1.7e9, gpu="h200", launch_ms=0.0)
    assert h200.verifier.fixed_ms == pytest.approx(3.4e9 / 4.8e12 * 1e3)
    int4 = roofline_profile(135e6, 1.7e9, gpu="h200", dtype="int4", launch_ms=0.0)
    assert int4.verifier.fixed_ms == pytest.approx(h200.verifier.fixed_ms / 4)
    fp32 = roofline_profile(1e9, 1e9, gpu="a100-80gb", dtype="float32", launch_ms=0.0)
    assert fp32.verifier.per_token_ms == pytest.approx(2e9 / 156e12 * 1e3)  # TF32: half rate
    own = roofline_profile(1e8, 1e9, gpu="mine", bandwidth_tbs=1.0, tflops=100.0, launch_ms=0)
    assert own.verifier.fixed_ms == pytest.approx(2.0)
    keys = {a.key for a in cost.assumptions}
    assert {"fig.proj.assume.memory_bound", "fig.proj.assume.compute"} <= keys
    assert {"h100-sxm", "h200", "a100-80gb", "l4"} <= set(GPUS)
    for bad in (dict(gpu="tpu"), dict(dtype="fp4"), dict(bandwidth_tbs=-1.0)):
        with pytest.raises(SettingsError):
            roofline_profile(1e8, 1e9, **bad)


def test_profile_registry_and_custom_numbers():
    assert set(PROFILES) == {"measured", "roofline", "custom"}
    assert PROFILES["measured"].needs_pair and not PROFILES["custom"].needs_pair
    cost = build_profile("custom", 3.0, 20.0, 0.5, round_overhead_ms=1.0)
    assert cost.drafter_ms == 3.0 and cost.verifier.ms(5) == 22.5
    assert cost.cost_ratio == pytest.approx(3.0 / 20.5)
    table = custom_profile(1.0, 0.0, verifier_table={1: 10.0, 6: 15.0})
    assert table.verifier.ms(3) == 12.0
    with pytest.raises(SettingsError):
        build_profile("psychic")
    with pytest.raises(SettingsError):
        custom_profile(-1.0, 10.0)


# -- gamma re-simulation ---------------------------------------------------------------------


def _counts(trace: Trace):
    work = workload_of_rounds(trace.rounds, trace.summary.prompt_tokens)
    return dict(work.verifier), work.drafter_calls


def test_replay_at_the_runs_own_gamma_reproduces_it(llama_pair, demo):
    for method, rule in (("spec_cascade", "token_v3"), ("speculative", None), ("bild", None)):
        tr = generate(
            llama_pair, "abc", method=method, rule=rule, gamma=3, temperature=0, max_new_tokens=20
        )
        r = resimulate(tr, 3, max_new_tokens=20)
        assert r.basis == "exact", (method, r.reason)
        assert (dict(r.work.verifier), r.work.drafter_calls) == _counts(tr)
    # runs that end on EOS inside a window: the drafts after it were tested, then cut, and
    # the last round's `accepted` says how they fared
    for prompt in (PROMPT, "Who wrote Hamlet?"):
        for method, rule in (("spec_cascade", "token_v3"), ("speculative", None)):
            s = dataclasses.replace(APP_DEFAULTS, method=method, rule=rule)
            tr = generate(demo, prompt, s)
            assert tr.summary.stop_reason == "eos"
            r = resimulate(tr, s.gamma, max_new_tokens=s.max_new_tokens)
            assert r.basis == "exact", (prompt, method, r.reason)
            assert (dict(r.work.verifier), r.work.drafter_calls) == _counts(tr)


def test_exact_resimulation_equals_real_runs_without_eos(small_vocab_pair):
    """With no EOS every run ends on its budget, so every window of every gamma is known: the
    re-simulation from a gamma = 2 run must equal real runs at gamma = 1..6, call for call."""
    for rule, alpha in (("token_v3", 0.5), ("chow", 0.0), ("diff", 0.0)):
        base = dict(method="spec_cascade", rule=rule, alpha=alpha, temperature=0)
        base["max_new_tokens"] = 24
        tr = generate(small_vocab_pair, "ab", gamma=2, **base)
        assert any(t.source == "resampled" for t in tr.tokens)  # a run with rejections
        for g in range(1, 7):
            real = generate(small_vocab_pair, "ab", gamma=g, **base)
            assert real.new_token_ids == tr.new_token_ids  # T = 0: the text ignores gamma
            r = resimulate(tr, g)
            assert r.basis == "exact", (rule, g, r.reason)
            assert (dict(r.work.verifier), r.work.drafter_calls) == _counts(real), (rule, g)
            assert r.work.rounds == len(real.rounds)


def test_greedy_cascade_on_the_demo_pair_gamma_2_to_4(demo):
    """The brief's case: a greedy token_v3 run at gamma 2 re-simulated at gamma 4 against a real
    gamma-4 run. Verifier calls, and the tokens each one scored, are exact. The drafter calls
    are exact except in one case: when the last window drafts past the end of the text (EOS),
    whether the drafts beyond it were kept (never recorded) decides whether the rule's bonus
    forward ran. Then the result is an estimate, and the real count lies in its range."""
    exact = 0
    for prompt in (PROMPT, "What is the capital of France?", "Who wrote Hamlet?"):
        settings = dataclasses.replace(APP_DEFAULTS, gamma=2)
        tr = generate(demo, prompt, settings)
        real = generate(demo, prompt, dataclasses.replace(settings, gamma=4))
        r = resimulate(tr, 4, max_new_tokens=settings.max_new_tokens)
        assert dict(r.work.verifier) == _counts(real)[0], prompt
        assert r.work.verifier_calls == real.summary.verifier_calls
        lo, hi = r.drafter_calls_range
        assert lo <= real.summary.drafter_calls <= hi and hi - lo <= 1, prompt
        if r.basis == "exact":
            exact += 1
            assert r.work.drafter_calls == real.summary.drafter_calls
        else:
            assert r.reason == "final_round"
            assert lo <= r.work.drafter_calls <= hi
    assert exact >= 1  # the capital of France ends on a rejected window: fully exact


def test_estimates_are_labelled(llama_pair):
    sampled = generate(llama_pair, "abc", method="spec_cascade", gamma=3, max_new_tokens=16)
    r = resimulate(sampled, 5)
    assert (r.basis, r.reason) == ("estimate", "temperature")
    assert project_gamma(sampled, 5, COST).basis == "estimate"
    # SD's bonus positions were never drafted: a window that needs one is estimated
    tr = Trace(
        [0] * 4,
        [0] * 6,
        "",
        _tokens("aabaab"),
        [_round(0, 2, 2, 3, 2), _round(1, 2, 2, 3, 2)],
        _summary(method="speculative", rule="sd", gamma=2, prompt=4, new=6),
    )
    assert position_outcomes(tr) == [True, True, None, True, True, None]
    assert resimulate(tr, 2).basis == "exact"
    r = resimulate(tr, 3)
    assert (r.basis, r.reason) == ("estimate", "unrecorded")
    # the fact-5 estimate: b = 1 here, so windows of gamma + 1 tokens: 2 rounds for 6 tokens
    assert r.work.verifier_calls == pytest.approx(2)
    with pytest.raises(SettingsError):
        resimulate(generate(llama_pair, "abc", method="verifier", max_new_tokens=4), 2)


def test_estimate_follows_fact_5():
    """Each draft kept with probability b, independently (fact 5's model): the expected
    forwards for the run's token count, checked at b = 0 and 1 (certain) and against a seeded
    simulation of the loop in between."""
    never = expected_workload([0.0] * 12, 5, 4, True, 0.0)
    assert never.rounds == 12 and never.verifier == {9: 1, 5: 11}  # one token a round
    always = expected_workload([1.0] * 22, 5, 3, True, 1.0)
    assert always.rounds == 6 and always.drafter_calls == 6 * 4  # ceil(22 / 4), bonus each
    b, rng, sims = 2 / 3, random.Random(0), []
    for _ in range(20000):
        left, rounds, calls = 12, 0, 0
        while left > 0:
            kept = next((k for k in range(4) if rng.random() >= b), 4)
            rounds, calls, left = rounds + 1, calls + 4 + (kept == 4), left - kept - 1
        sims.append((rounds, calls))
    want = expected_workload([b] * 12, 5, 4, True, b)
    assert statistics.fmean(r for r, _ in sims) == pytest.approx(want.rounds, rel=0.01)
    assert statistics.fmean(c for _, c in sims) == pytest.approx(want.drafter_calls, rel=0.01)
    assert want.rounds > 12 / expected_tokens_per_call(b, 4)  # the last round's surplus
    # a sampled run is estimated with its own b = kept / (kept + rejected) = 8 / 12
    tokens = _tokens("aar" * 4)
    rounds = [_round(i, 3, 2, 3, 3) for i in range(4)]
    tr = Trace([0] * 5, [0] * 12, "", tokens, rounds, _summary(new=12, prompt=5, temperature=1.0))
    r = resimulate(tr, 4)
    assert (r.basis, r.reason) == ("estimate", "temperature")
    assert r.work == want


def test_expected_workload_of_recorded_outcomes_is_the_exact_replay(small_vocab_pair):
    """With every outcome known (probabilities 0 and 1) the expectation is the replay."""
    tr = generate(small_vocab_pair, "ab", gamma=2, temperature=0, max_new_tokens=24)
    keep = [float(o) for o in position_outcomes(tr)]
    for g in range(1, 7):
        exact = resimulate(tr, g)
        assert exact.basis == "exact"
        got = expected_workload(keep, tr.summary.prompt_tokens, g, True, 0.0, budget=24)
        assert (got.drafter, got.verifier, got.rounds) == (
            exact.work.drafter,
            exact.work.verifier,
            exact.work.rounds,
        )


def test_best_gamma_and_its_curve(demo):
    tr = generate(demo, PROMPT, APP_DEFAULTS)
    free_drafts = custom_profile(0.0, 10.0)  # drafting costs nothing: longer windows win
    curve = gamma_curve(tr, free_drafts, max_gamma=6, max_new_tokens=64)
    assert [p.gamma for p in curve] == list(range(1, 7))
    best = best_gamma(tr, free_drafts, max_gamma=6, max_new_tokens=64)
    assert best.projection.total_ms == min(p.projection.total_ms for p in curve)
    fastest = [p.gamma for p in curve if p.projection.total_ms == best.projection.total_ms]
    assert best.gamma == min(fastest) >= 4  # ties go to the smaller window
    assert best.speedup > 4  # every draft is kept here (the drafter knows this answer)
    # a hard question where most drafts are rejected (61 of the drafter's 71 forwards are
    # wasted), and a drafter as slow as the verifier: every extra draft is wasted, gamma 1 is
    # the least bad (and still slower than the verifier)
    hard = generate(demo, "Who is John Ronald Reuel Tolkien?", APP_DEFAULTS)
    costly = best_gamma(hard, custom_profile(10.0, 10.0), max_gamma=6, max_new_tokens=64)
    assert (costly.gamma, costly.basis) == (1, "exact") and costly.speedup < 1
    rows = best_gammas({"sc": tr, "v": generate(demo, PROMPT, method="verifier", rule=None)}, COST)
    assert [r["label"] for r in rows] == ["sc"]  # the verifier alone has no window
    assert rows[0]["kind"] == "projection" and len(rows[0]["curve"]) == 8


# -- break-even acceptance -------------------------------------------------------------------


def test_breakeven_acceptance_closed_forms():
    """No overheads, SD, drafter/verifier cost c: speed-up = (1 - b^(g+1)) / (1 - b) / (1 + g c)
    (fact 5), which is 1 at b = c for g = 1 and b = (sqrt(1 + 8c) - 1) / 2 for g = 2."""
    cost = custom_profile(3.0, 10.0)
    assert breakeven_acceptance(cost, 1, "sd") == pytest.approx(0.3, abs=1e-5)
    assert breakeven_acceptance(cost, 2, "sd") == pytest.approx((math.sqrt(3.4) - 1) / 2, abs=1e-5)
    b = breakeven_acceptance(cost, 5, "token_v3")
    assert steady_speedup(b, 5, cost, "token_v3") == pytest.approx(1.0, abs=1e-4)
    # the cascade's bonus forward costs a little: it needs a higher acceptance than SD
    assert b > breakeven_acceptance(cost, 5, "sd")
    assert breakeven_acceptance(custom_profile(0.0, 10.0), 4) == 0.0  # free drafts always pay
    assert breakeven_acceptance(custom_profile(25.0, 10.0), 1, "sd") is None  # never pays


# -- records and views -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_traces(demo):
    out = {}
    for method in ("verifier", "drafter", "speculative", "spec_cascade"):
        rule = "token_v3" if method == "spec_cascade" else None
        s = dataclasses.replace(APP_DEFAULTS, method=method, rule=rule)
        out[f"{method}/{rule}" if rule else method] = generate(demo, PROMPT, s)
    return out


def test_project_methods_records(demo_traces):
    rows = project_methods(demo_traces, COST)
    assert [r["label"] for r in rows] == list(demo_traces)
    by = {r["label"]: r for r in rows}
    v = by["verifier"]
    assert v["projected_s"] == pytest.approx(v["verifier_alone_s"]) and v["speedup"] == 1.0
    assert v["measured_speedup"] == pytest.approx(1.0)
    for r in rows:
        assert r["kind"] == "projection" and r["basis"] == "recorded"
        assert r["profile_key"] == "fig.proj.profile.custom"
        assert r["speedup"] == pytest.approx(r["verifier_alone_s"] / r["projected_s"])
    assert by["drafter"]["speedup"] > 1


CJK = re.compile("[\u4e00-\u9fff]")


def _english_words(texts) -> list[str]:
    allowed = re.compile(r"TokenV\d|NVIDIA|SXM|bfloat16|float\d+|TB/s|cpu")
    return [w for x in texts for w in re.findall("[A-Za-z]{3,}", allowed.sub("", x or ""))]


def _figure_texts(fig) -> list[str]:
    out = [fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
    out += [d.name for d in fig.data if d.showlegend is not False and d.name]
    return [re.sub(r"<[^>]+>", " ", x) for x in out if x]


def test_views_say_projection_in_both_languages(demo_traces):
    cost = roofline_profile(135e6, 1.7e9, gpu="h100-sxm")
    rows = project_methods(demo_traces, cost)
    best = best_gammas(demo_traces, cost, max_gamma=5, max_new_tokens=64)
    for lang in ("en", "zh"):
        table = projection_table(rows, lang)
        assert len(table) == 4 and len(table.columns) == 8
        fig = projection_figure(rows, lang)
        gfig = gamma_figure(best, lang)
        btable = best_gamma_table(best, lang)
        lines = assumption_lines(cost, lang)
        texts = [*table.columns, *table.iloc[:, 0], *table.iloc[:, -1], *btable.columns]
        texts += _figure_texts(fig) + _figure_texts(gfig) + lines
        if lang == "en":
            assert "projection" in fig.layout.title.text and "H100" in fig.layout.title.text
            assert "not a measurement" in gfig.layout.title.text
            assert any("3.35 TB/s" in x for x in lines)
            assert any("135M" in x and "1.7B" in x for x in lines)
        else:
            assert not _english_words(texts), _english_words(texts)
            assert "预测" in fig.layout.title.text and CJK.search(btable.iloc[0, -1])
            assert any("亿" in x for x in lines)
    assert "<li>" in assumptions_html(cost, "zh")
    # estimates are hollow markers, exact ones filled
    markers = gamma_figure(best).data[0].marker.color
    assert set(markers) <= {"white", gamma_figure(best).data[0].line.color}
    empty = projection_figure([], "zh")
    assert CJK.search(empty.layout.title.text)


# -- this machine ----------------------------------------------------------------------------


def test_measured_profile_shape(llama_pair):
    cost = measure_profile(llama_pair, prompt="hello there", gamma=3, repeats=2, min_seconds=0)
    assert [n for n, _ in cost.verifier.table] == sorted(
        {1, 2, 3, 4, len(llama_pair.encode("hello there"))}
    )
    assert all(ms > 0 for _, ms in cost.verifier.table + cost.drafter.table)
    assert cost.round_overhead_ms >= 0 and cost.draft_overhead_ms >= 0
    assert cost.profile == "measured" and cost.title.key == "fig.proj.profile.measured"


MAX_DRIFT = 0.3  # the honesty test's bound on the machine's own speed change during an attempt


@pytest.mark.quiet
def test_honesty_check_measured_profile_predicts_wall_time(demo):
    """Re-pricing this machine's runs with this machine's measured profile predicts their wall
    time within 15%, per method: verifier alone, drafter alone, SD and the app's default
    cascade (token_v3, alpha 0.5, gamma 5, T = 0, 64 new tokens on the story question). After
    a warm-up the profile is measured, then again after each of 3 interleaved rounds of runs (a
    round's runs are priced under the two profiles around it); medians are compared.

    This 2-core machine is shared and noisy: a burst of someone else's load inside a 20 ms
    drafter run is not the projector's error, and one attempt had every method within 15%
    about 2 times in 3 here (a CI run failed on the drafter alone, +28% and then +4%). So each
    method must come within 15% in at least one of up to six attempts; a projector that
    misprices a method misprices it in every attempt and fails. An attempt during which the
    machine's own speed moved by more than MAX_DRIFT (the verifier's step between the check's
    profiles) says nothing about the projector; if every attempt was such, the test skips,
    saying so (a CI run saw the step move by 62% under all three attempts)."""
    reports, quiet, within = [], [], set()
    for _ in range(6):
        report = honesty_check(
            demo, repeats=3, min_seconds=0.3, profile_repeats=5, profile_seconds=0.3
        )
        reports.append(report)
        if report.drift <= MAX_DRIFT:
            quiet.append(report)
            within |= {r.label for r in report.rows if abs(r.error) <= 0.15}
            if within == {r.label for r in report.rows}:
                break
    detail = [
        {r.label: (round(r.measured_s, 4), round(r.projected_s, 4), f"{r.error:+.1%}")}
        for rep in reports
        for r in rep.rows
    ] + [{"drift": [round(rep.drift, 3) for rep in reports]}]
    if not quiet:  # skips, or fails under SPECCASCADE_REQUIRE_QUIET=1 (tests/needs.py)
        needs.missing("QUIET", f"the machine's speed drifted under every attempt: {detail}")
    assert within == {r.label for r in quiet[-1].rows}, detail
    reports = quiet
    rows = reports[-1].rows
    assert [r.label for r in rows] == [
        "verifier",
        "drafter",
        "speculative",
        "spec_cascade/token_v3",
    ]
    # T = 0: lossless SD writes the verifier's own answer, token for token
    assert rows[2].new_tokens == rows[0].new_tokens
    # the projections are not copies of the measurements: each run was priced, not timed
    assert all(len(set(r.projections)) <= 3 for r in rows)  # one price per round's profile


# -- CLI -------------------------------------------------------------------------------------


def test_cli_projects_trace_files_under_custom_numbers(tiny_dirs, tmp_path, capsys):
    d, v = tiny_dirs["llama"]
    files = []
    for method in ("verifier", "spec_cascade"):
        args = ["generate", "hi", "--drafter", d, "--verifier", v, "--json", "--method", method]
        assert main(args + ["--temperature", "0", "--max-new-tokens", "10", "--gamma", "3"]) == 0
        path = tmp_path / f"{method}.json"
        path.write_text(capsys.readouterr().out)
        files += ["--trace", str(path)]
    code = main(
        ["project", *files, "--profile", "custom", "--drafter-ms", "1", "--verifier-fixed-ms", "8"]
        + ["--verifier-per-token-ms", "0.5", "--round-overhead-ms", "0.2", "--max-gamma", "4"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "PROJECTION" in out and "not a measurement" in out
    assert "verifier alone" in out and "TokenV3" in out
    assert "best draft window per rule (gamma 1..4)" in out
    assert "break-even acceptance" in out and "gamma=3" in out
    assert main(["project", *files, "--profile", "custom", "--drafter-ms", "1"]) == 2
    assert "needs --drafter-ms and --verifier-fixed-ms" in capsys.readouterr().err


def test_cli_live_runs_under_a_roofline(tiny_dirs, capsys):
    d, v = tiny_dirs["gpt2"]
    code = main(
        ["project", "hello", "--drafter", d, "--verifier", v, "--profile", "roofline"]
        + ["--gpu", "l4", "--methods", "verifier,speculative", "--max-new-tokens", "8", "--json"]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in out["projections"]] == ["verifier", "speculative"]
    assert all(r["kind"] == "projection" for r in out["projections"])
    assert out["cost_model"]["profile"] == "roofline"
    mem = next(a for a in out["cost_model"]["assumptions"] if a["key"].endswith("memory_bound"))
    assert mem["values"]["bw"] == 0.3  # L4
    assert out["best_gamma"][0]["label"] == "speculative"
    assert main(["project"]) == 2
    assert "give --trace" in capsys.readouterr().err

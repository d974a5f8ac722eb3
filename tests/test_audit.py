"""The fidelity audit: it passes the engine's own loop for every kind of promised law, and it
catches the verification bugs serving engines shipped, injected into a copy of the loop."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from speccascade.analysis.audit import MAX_SAMPLES, MIN_SAMPLES, audit, promised_law
from speccascade.core import engine
from speccascade.core.engine import Settings
from speccascade.core.errors import SettingsError
from speccascade.core.sampling import Sampler
from speccascade.core.trace import Probs
from speccascade.views.zoo import audit_verdict

PROMPT = [1, 3, 4]


@pytest.mark.parametrize(
    "kw",
    [
        dict(method="speculative"),
        dict(method="spec_cascade", rule="token_v3", alpha=0.3),
        dict(method="block"),
        dict(method="ensemble", alpha=0.5),
        dict(method="verifier"),
    ],
)
def test_the_correct_loop_passes(small_vocab_pair, kw):
    a = audit(
        small_vocab_pair,
        PROMPT,
        Settings(gamma=2, temperature=0.8, **kw),
        positions=2,
        samples=1200,
    )
    assert a.consistent, [(c.position, c.p_value, c.tv, c.tv_null) for c in a.positions]
    assert a.samples == 1200 and [c.position for c in a.positions] == [1, 2]
    for c in a.positions:
        assert c.n == 1200 and c.impossible == 0
        assert c.tv_low <= c.tv <= c.tv_high + 1e-12 and 0 < c.tv_null < 0.2
        assert sum(x.promised for x in c.cells) <= 1 + 1e-6  # float32 laws


def _raw_q_drafts(original):
    """transformers #47932: drafts are drawn from the processed law (top-k applied), but the
    accept test and the residual get the raw law, which the drafts were not sampled from."""

    def draft(run, pending, g, stop_below):
        drafts, q = original(run, pending, g, stop_below)
        raw = Sampler(run.sampler.temperature, 0, 1.0, run.sampler.generator).probs(q.unit.log())
        return drafts, Probs(raw, q.unit)

    return draft


def _keep_everything(drafts, q, target, u):
    """llama.cpp PR #22506's symptom: every draft accepted, whatever the verifier says."""
    return drafts.shape[0], torch.ones(drafts.shape[0])


def test_the_audit_catches_a_q_that_was_not_sampled_from(small_vocab_pair, monkeypatch):
    s = Settings(method="speculative", gamma=2, temperature=1.0, top_k=2)
    assert audit(small_vocab_pair, PROMPT, s, positions=2, samples=1500).consistent
    monkeypatch.setattr(engine, "_draft", _raw_q_drafts(engine._draft))
    a = audit(small_vocab_pair, PROMPT, s, positions=2, samples=1500)
    assert not a.consistent
    worst = a.worst
    assert worst.p_value < 1e-6 and worst.tv > 3 * worst.tv_null


def test_the_audit_catches_full_acceptance(small_vocab_pair, monkeypatch):
    monkeypatch.setattr(engine, "first_rejection", _keep_everything)
    a = audit(small_vocab_pair, PROMPT, Settings(method="speculative", gamma=2), samples=800)
    assert not a.consistent and a.worst.position == 1


def test_sizing_laws_and_refusals(small_vocab_pair):
    # no sample count: sized from a few timed runs to the time budget (at least the minimum)
    a = audit(small_vocab_pair, PROMPT, Settings(method="speculative", gamma=2), seconds=1.0)
    assert MIN_SAMPLES <= a.samples <= MAX_SAMPLES and a.seconds < 30
    assert promised_law("speculative") == promised_law("block") == promised_law("verifier") == "p"
    assert promised_law("drafter") == "q" and promised_law("typical") == "pi"
    with pytest.raises(SettingsError, match="whole answers"):
        audit(small_vocab_pair, PROMPT, Settings(method="seq_cascade", rule=None))
    with pytest.raises(SettingsError, match="positions"):
        audit(small_vocab_pair, PROMPT, Settings(), positions=0)


def test_one_outcome_everywhere_is_reported_as_nothing_to_test(small_vocab_pair):
    """Where every position had one likely token (every cell but one pooled away: no degree
    of freedom), the audit agrees trivially: its verdict says there was nothing to test
    instead of "consistent"."""
    a = audit(small_vocab_pair, PROMPT, Settings(method="speculative", gamma=2, temperature=1.0),
              positions=2, samples=MIN_SAMPLES)  # fmt: skip
    assert a.consistent and audit_verdict(a).startswith("Consistent")
    one = replace(a, positions=[replace(c, dof=0) for c in a.positions])
    assert audit_verdict(one).startswith("Nothing to test")
    assert audit_verdict(one, "zh").startswith("无可检验")
    # one position with something to test is enough for a real verdict
    some = replace(a, positions=[replace(a.positions[0], dof=0), a.positions[1]])
    assert audit_verdict(some).startswith("Consistent")


@pytest.fixture(scope="module")
def demo():
    from speccascade.models.presets import load_preset

    return load_preset("demo")


def test_a_flat_law_on_a_large_vocabulary_is_not_a_false_alarm(demo):
    """T = 2 on the demo pair's 8,192 tokens: most runs write a token no other run wrote. The
    verifier alone follows its law by definition, so the audit must not flag it (it did while
    its cells were the tokens the runs wrote: every run then fell outside "the rest")."""
    a = audit(demo, "Who is Buzz Aldrin?",
              Settings(method="verifier", temperature=2.0, max_new_tokens=4),
              positions=2, samples=150)  # fmt: skip
    assert a.consistent, [(c.position, c.p_value, c.tv, c.tv_null) for c in a.positions]
    assert a.positions[0].dof >= 1


def test_the_seed_example_at_t2_follows_its_target(demo):
    """The app's cascade on its own example, sampled at T = 2 (the browser test's setting),
    over seeds 0..999: the audit's own defaults (first seed 0, level 0.01), fixed before any
    p-value was seen. The audit flags a position below 0.01 / 2 (Bonferroni over its two
    positions), so a correct sampler fails this test with probability at most 1% (chi-square
    asymptotics) for a given pair; the seeds being fixed, a pair passes or fails for good,
    and a retrained pair draws again. (The seeds were once moved to 10,000.. after seeds
    0..n-1 gave p-values that fell as n grew: that choice saw the p-values; this one does
    not.)"""
    from speccascade.core.engine import APP_DEFAULTS

    a = audit(demo, "Who is Buzz Aldrin?", replace(APP_DEFAULTS, temperature=2.0),
              positions=2, samples=1000)  # fmt: skip
    assert a.law == "pi" and a.samples == 1000 and a.level == 0.01
    assert a.consistent, [(c.position, c.p_value, c.tv, c.tv_null) for c in a.positions]
    assert all(c.dof >= 3 for c in a.positions)

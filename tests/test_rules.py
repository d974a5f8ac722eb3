"""The target laws of docs/method.md, checked on small hand-made and random distributions."""

from __future__ import annotations

import math
import zlib

import pytest
import torch

from speccascade.core.rules import (
    RULES,
    SPEC_CASCADE_RULES,
    Stats,
    acceptance_probability,
    build_target,
    decide,
    divergences,
    entropy,
    js_divergence,
    kl_divergence,
    tv_distance,
)
from speccascade.core.sampling import Sampler, first_rejection, residual_probs
from speccascade.core.trace import expected_tokens_per_call, ideal_speedup

ALL = [name for name in RULES]


def random_laws(n: int = 64, vocab: int = 7, seed: int = 0, peak: float = 3.0):
    g = torch.Generator().manual_seed(seed)
    q1 = torch.softmax(peak * torch.randn(n, vocab, generator=g), -1)
    p1 = torch.softmax(peak * torch.randn(n, vocab, generator=g), -1)
    return q1, p1


def scaled(x: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(x.argmax(-1), x.shape[-1]).float()
    return torch.softmax(x.log() / temperature, -1)


def emitted_law(q: torch.Tensor, target) -> torch.Tensor:
    """Exact law of the emitted token at each row, enumerating the draft x ~ q and using the
    engine's own accept probabilities and residual (no sampling)."""
    n, vocab = q.shape
    law = torch.zeros(n, vocab)
    for row in range(n):
        res = residual_probs(target, row)
        for x in range(vocab):
            if q[row, x] == 0:
                continue
            one = target.rows(slice(row, row + 1))
            _, a = first_rejection(torch.tensor([x]), q[row : row + 1], one, torch.zeros(1))
            law[row, x] += q[row, x] * a[0]
            law[row] += q[row, x] * (1 - a[0]) * res
    return law


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_target_is_a_law_and_emission_follows_it(name, temperature):
    """Fact 3 by exact enumeration: pi >= 0 sums to 1, and the accept test plus the residual
    emit exactly pi (lossy SD: its derived law)."""
    rule = RULES[name]
    # a stable seed per rule (str hash() is salted per process: PYTHONHASHSEED)
    q1, p1 = random_laws(seed=zlib.crc32(name.encode()) % 1000)
    q, p = scaled(q1, temperature), scaled(p1, temperature)
    lo, hi = max(rule.slider[0], -1e9), min(rule.slider[1], 1e9)
    for alpha in torch.linspace(lo, hi, 5).tolist():
        t = build_target(rule, alpha, q, p, q1, p1)
        assert (t.law >= 0).all()
        torch.testing.assert_close(t.law.sum(-1), torch.ones(len(q)), atol=1e-6, rtol=0)
        torch.testing.assert_close(emitted_law(q, t), t.law, atol=1e-6, rtol=0)
        # Fact 4: acceptance = sum min(q, pi) = 1 - D_TV(q, pi) for pi-targets.
        if rule.kind != "lenient":
            acc = acceptance_probability(q, t)
            torch.testing.assert_close(acc, 1 - tv_distance(t.law, q), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", [n for n in ALL if RULES[n].kind != "token"])
def test_acceptance_never_decreases_towards_drafter_only(name):
    """Fact 4 for whole-position rules, lossy SD and BiLD*: as alpha moves from the SD end to
    the drafter-only end, the acceptance probability at every position only grows."""
    rule = RULES[name]
    q1, p1 = random_laws(n=256, seed=7)
    lo, hi = rule.slider
    sd_end, drafter_end = (lo, hi) if rule.sd_at_low else (hi, lo)  # epsilon, w: reversed
    prev = None
    for alpha in torch.linspace(sd_end, drafter_end, 41).tolist():
        acc = acceptance_probability(q1, build_target(rule, alpha, q1, p1, q1, p1))
        if prev is not None:
            assert (acc >= prev - 1e-6).all(), (name, alpha)
        prev = acc


def test_token_rules_are_not_monotone_per_position():
    """Fact 4's monotonicity does not hold position by position for token-specific targets
    (Eq. 11). Here keeping token 1 (q = .675, p = .581) when TokenV1's alpha passes -0.05
    pushes pi(5) = p(5) * eta below q(5), and acceptance falls from 1 - D_TV(p, q) = .835 to
    .806, below lossless SD's. The app and the bench measure acceptance; they never assume it."""
    q = torch.tensor(
        [[2.6923e-04, 6.7518e-01, 1.2187e-04, 3.3351e-02, 1.8093e-03, 2.3937e-01, 4.9904e-02]]
    )
    p = torch.tensor(
        [[2.0497e-03, 5.8071e-01, 1.5858e-02, 8.4677e-03, 1.8298e-04, 3.8703e-01, 5.6954e-03]]
    )
    q, p = q / q.sum(), p / p.sum()
    rule = RULES["token_v1"]
    before = acceptance_probability(q, build_target(rule, -0.1, q, p, q, p)).item()
    after = acceptance_probability(q, build_target(rule, -0.05, q, p, q, p)).item()
    assert before == pytest.approx(1 - tv_distance(p, q).item(), abs=1e-6)
    assert after < before - 0.02


@pytest.mark.parametrize(
    "name", ["diff", "opt", "token_v1", "token_v2", "token_v3", "sd", "bild", "lossy"]
)
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sd_end_is_exactly_p(name, temperature):
    """Fact 1: the alpha that defers everywhere gives pi = p exactly (rejection rate D_TV)."""
    rule = RULES[name]
    q1, p1 = random_laws(seed=11)
    q, p = scaled(q1, temperature), scaled(p1, temperature)
    t = build_target(rule, rule.alpha_sd, q, p, q1, p1)
    assert torch.equal(t.law, p) if rule.kind != "lenient" else torch.allclose(t.law, p, atol=1e-6)
    torch.testing.assert_close(
        1 - acceptance_probability(q, t), tv_distance(p, q), atol=1e-6, rtol=0
    )


def test_chow_at_zero_defers_unless_drafter_is_certain():
    q1, p1 = random_laws(seed=5)
    t = build_target(RULES["chow"], 0.0, q1, p1, q1, p1)
    assert t.defer.all() and torch.equal(t.law, p1)


# the rules without a parameter (SD, block verification) have no drafter-only end
WITH_ALPHA = [name for name in ALL if RULES[name].has_alpha]


@pytest.mark.parametrize("name", WITH_ALPHA)
def test_drafter_end_is_exactly_q_with_zero_residual(name):
    """Fact 2: the drafter-only alpha gives pi = q, every draft accepted, residual all zero and
    never normalised (no NaN)."""
    rule = RULES[name]
    q1, p1 = random_laws(seed=13)
    t = build_target(rule, rule.alpha_drafter, q1, p1, q1, p1)
    torch.testing.assert_close(t.law, q1, atol=0, rtol=0)
    assert torch.equal(acceptance_probability(q1, t), q1.sum(-1))
    if rule.kind != "lenient":  # lossy SD keeps max(0, p - q), but never reaches it here
        assert (t.residual == 0).all()
    for row in range(len(q1)):
        assert torch.isfinite(residual_probs(t, row)).all()
    drafts = q1.argmax(-1)
    n_acc, a = first_rejection(drafts, q1, t, torch.full((len(q1),), 0.999999))
    assert n_acc == len(q1) and (a == 1).all()


def test_hand_computed_values():
    """Each rule on one 4-token example, against numbers worked out by hand."""
    q = torch.tensor([[0.5, 0.3, 0.2, 0.0]])
    p = torch.tensor([[0.1, 0.6, 0.2, 0.1]])
    # max q = 0.5, max p = 0.6, D_TV(p, q) = 0.3 + 0.1 = 0.4
    stats = Stats.of(q, p, q, p)
    assert stats.dtv.item() == pytest.approx(0.4)

    def law(name, alpha):
        return build_target(RULES[name], alpha, q, p, q, p).law[0].tolist()

    assert law("chow", 0.4) == pytest.approx(p[0].tolist())  # 0.5 < 0.6: defer
    assert law("chow", 0.6) == pytest.approx(q[0].tolist())  # 0.5 < 0.4 false: keep
    assert law("diff", 0.05) == pytest.approx(p[0].tolist())  # 0.5 < 0.55
    assert law("diff", 0.1) == pytest.approx(q[0].tolist())  # 0.5 < 0.5 false (strict)
    assert law("opt", 0.2) == pytest.approx(p[0].tolist())  # 0.5 < 0.6 - 0.08
    assert law("opt", 0.3) == pytest.approx(q[0].tolist())  # 0.5 < 0.6 - 0.12 false
    assert law("bild", 0.39) == pytest.approx(p[0].tolist())
    assert law("bild", 0.4) == pytest.approx(q[0].tolist())
    # TokenV3, alpha = 0.5: keep v iff p(v) >= 0.3 -> keep only token 1.
    # eta = q(0) + q(2) + q(3) = 0.7; pi = [0.07, 0.3 + 0.42, 0.14, 0.07]
    assert law("token_v3", 0.5) == pytest.approx([0.07, 0.72, 0.14, 0.07])
    # TokenV2, alpha = 0.45: keep v iff p(v) >= 0.15 -> tokens 1, 2; eta = 0.5
    assert law("token_v2", 0.45) == pytest.approx([0.05, 0.6, 0.3, 0.05])
    # TokenV1, alpha = 0.25: keep v iff q(v) >= 0.35 -> token 0; eta = 0.5
    assert law("token_v1", 0.25) == pytest.approx([0.55, 0.3, 0.1, 0.05])
    # Lossy SD, alpha = 0.5: accept x w.p. min(1, 2 p(x)/q(x)); residual max(0, p - q)
    t = build_target(RULES["lossy"], 0.5, q, p, q, p)
    kept = [0.2, 0.3, 0.2, 0.0]  # min(q, 2p)
    res = [0.0, 0.75, 0.0, 0.25]  # [0, .3, 0, .1] normalised
    expected = [k + 0.3 * r for k, r in zip(kept, res)]
    assert t.law[0].tolist() == pytest.approx(expected)


def test_token_v3_greedy_fact_6():
    """At T = 0, TokenV3 keeps argmax q iff p(argmax q) >= (1 - alpha) max p, else argmax p."""
    q1, p1 = random_laws(n=200, seed=17)
    q, p = scaled(q1, 0), scaled(p1, 0)
    alpha = 0.4
    t = build_target(RULES["token_v3"], alpha, q, p, q1, p1)
    xq = q1.argmax(-1)
    keep = p1[torch.arange(200), xq] >= (1 - alpha) * p1.amax(-1)
    n_acc_each = [
        first_rejection(xq[i : i + 1], q[i : i + 1], t.rows(slice(i, i + 1)), torch.zeros(1))[0]
        for i in range(200)
    ]
    assert [bool(a) for a in n_acc_each] == keep.tolist()
    for i in torch.nonzero(~keep).flatten().tolist():
        assert residual_probs(t, i).argmax().item() == p1[i].argmax().item()
    assert keep.any() and (~keep).any()


def test_opt_handles_infinite_alpha():
    q1, p1 = random_laws(seed=19)
    q1[0] = p1[0]  # a row with D_TV = 0
    lo = build_target(RULES["opt"], -math.inf, q1, p1, q1, p1)
    hi = build_target(RULES["opt"], math.inf, q1, p1, q1, p1)
    assert torch.isfinite(lo.law).all() and torch.isfinite(hi.law).all()
    torch.testing.assert_close(lo.law, p1, atol=1e-7, rtol=0)
    torch.testing.assert_close(hi.law, q1, atol=0, rtol=0)


@pytest.mark.parametrize(
    "name", [n for n in ALL if RULES[n].defer is not None and RULES[n].kind != "soft"]
)
def test_decide_matches_engine_predicate(name):
    """What-if re-colouring from recorded scalars agrees with the full-vocabulary predicate."""
    rule = RULES[name]
    q1, p1 = random_laws(n=100, seed=23)
    drafts = torch.multinomial(q1, 1, generator=torch.Generator().manual_seed(0)).squeeze(-1)
    rows = torch.arange(100)
    for alpha in torch.linspace(max(rule.slider[0], -3), min(rule.slider[1], 3), 7).tolist():
        full = build_target(rule, alpha, q1, p1, q1, p1).defer[rows, drafts]
        s = Stats.of(q1, p1, q1, p1, ("ent_p", "kl", "jsd"))
        got = decide(
            rule,
            alpha,
            q1[rows, drafts].tolist(),
            p1[rows, drafts].tolist(),
            s.max_q1.squeeze(-1).tolist(),
            s.max_p1.squeeze(-1).tolist(),
            s.dtv.squeeze(-1).tolist(),
            ent_p=s.ent_p.squeeze(-1).tolist(),
            kl=s.kl.squeeze(-1).tolist(),
            jsd=s.jsd.squeeze(-1).tolist(),
        )
        assert got == full.tolist()
    if rule.stats:  # a trace without the statistic the rule reads: a clear error
        with pytest.raises(ValueError, match=rule.stats[0]):
            decide(rule, rule.alpha_default, [0.5], [0.5], [0.5], [0.5], [0.1])


def test_a_soft_rule_has_no_decision_to_re_evaluate():
    with pytest.raises(ValueError, match="no deferral decision"):
        decide(RULES["ensemble"], 0.5, [0.5], [0.5], [0.5], [0.5], [0.1])


def test_registry_entries_are_complete():
    for name, rule in RULES.items():
        assert rule.name == name and rule.formula and rule.description and rule.source
        assert rule.param
        ends = sorted((rule.alpha_sd, rule.alpha_drafter))
        assert rule.alpha_min <= ends[0] <= ends[1] <= rule.alpha_max
        assert rule.alpha_min <= rule.alpha_default <= rule.alpha_max
        lo, hi = rule.slider
        assert rule.alpha_min <= lo <= hi <= rule.alpha_max
        if rule.has_alpha:
            assert lo <= rule.alpha_default <= hi
    for name in SPEC_CASCADE_RULES:
        assert RULES[name].kind in ("mixture", "token") and RULES[name].sd_at_low


def test_expected_tokens_and_ideal_speedup():
    """Fact 5 formulas, against a direct simulation of i.i.d. acceptances."""
    assert expected_tokens_per_call(0.0, 4) == 1.0
    assert expected_tokens_per_call(1.0, 4) == 5.0
    b, gamma = 0.7, 4
    g = torch.Generator().manual_seed(0)
    u = torch.rand(200_000, gamma, generator=g) < b
    lead = u.logical_not().cumsum(1).eq(0).sum(1)  # accepted before the first rejection
    simulated = (lead + 1).float().mean().item()  # +1: the replacement or bonus token
    assert simulated == pytest.approx(expected_tokens_per_call(b, gamma), rel=0.01)
    assert ideal_speedup(b, gamma, 0.1) == pytest.approx(expected_tokens_per_call(b, gamma) / 1.4)


def test_sampler_top_p_top_k_and_greedy():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
    gen = torch.Generator()
    greedy = Sampler(0.0, 0, 1.0, gen).probs(logits)
    assert greedy.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    full = torch.softmax(logits, -1)
    nucleus = Sampler(1.0, 0, 0.8, gen).probs(logits)
    # cumulative before each sorted token: 0, .63, .87 -> keep first two
    assert (nucleus[0, 2:] == 0).all() and nucleus[0, :2].sum().item() == pytest.approx(1.0)
    assert nucleus[0, 0].item() == pytest.approx(full[0, 0] / full[0, :2].sum())
    topk = Sampler(1.0, 3, 1.0, gen).probs(logits)
    assert topk[0, 3] == 0 and topk.dtype == torch.float32
    bf16 = Sampler(1.0, 0, 1.0, gen).probs(logits.bfloat16())
    assert bf16.dtype == torch.float32


@pytest.mark.parametrize("name", ["sd", "block"])
@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.5])
def test_the_lossless_rules_target_is_the_mixture_formula_bit_for_bit(name, temperature):
    """build_target skips the statistics for the rules that always defer: what it returns is
    what the mixture formula computes with r = 1 (q (1 - 1) + p 1), to the last bit."""
    q1, p1 = random_laws(n=12, vocab=9, seed=21)
    q1[:3, :2] = 0.0
    q, p = scaled(q1, temperature), scaled(p1, temperature)
    t = build_target(RULES[name], 0.3, q, p, q1, p1)
    rf = torch.ones_like(q)
    pi = q * (1 - rf) + p * rf
    assert torch.equal(t.law, pi) and torch.equal(t.accept, pi)
    assert torch.equal(t.residual, (pi - q).clamp_min(0))
    assert t.defer.shape == q.shape and bool(t.defer.all())


def test_the_fused_divergences_are_the_separate_ones():
    """The trace's one-pass H(p), KL(p||q), JSD(p, q) equal the definitions, zeros included
    (0 log 0 terms vanish; KL stays finite where q is 0)."""
    q1, p1 = random_laws(n=16, vocab=9, seed=4, peak=6.0)
    q1[:4, :3] = 0.0
    p1[4:8, 5:] = 0.0
    ent, kl, jsd = divergences(p1, q1)
    assert torch.equal(ent, entropy(p1))
    assert torch.equal(kl, kl_divergence(p1, q1))
    assert torch.equal(jsd, js_divergence(p1, q1))
    assert torch.isfinite(kl).all() and (kl[:4] > 0).all()

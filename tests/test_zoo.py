"""The rule zoo: block verification's exactness and its acceptance against SD, by exact
enumeration over every draft window and every outcome of the uniform draws (no sampling)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from speccascade.core.rules import RULES, Target
from speccascade.core.sampling import block_verify, first_rejection, residual_probs

V = 3  # vocabulary: small enough to enumerate every window


def tables(seed: int, gamma: int, peak: float = 2.0):
    """Random drafter and verifier laws for every prefix of length < gamma + 1 (one law per
    prefix, so the laws depend on what was drafted, as real models' do)."""
    g = torch.Generator().manual_seed(seed)
    laws = {}
    for n in range(gamma + 1):
        for prefix in itertools.product(range(V), repeat=n):
            q = torch.softmax(peak * torch.randn(V, generator=g).double(), -1)
            p = torch.softmax(peak * torch.randn(V, generator=g).double(), -1)
            laws[prefix] = (q, p)
    return laws


def window(laws, drafts: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """q at the g drafted positions, b (= p) at those and the bonus position."""
    q = torch.stack([laws[drafts[:i]][0] for i in range(len(drafts))])
    b = torch.stack([laws[drafts[:i]][1] for i in range(len(drafts) + 1)])
    return q, b


def forcing(g: int, tau: int) -> torch.Tensor:
    """Uniform draws that make block verification stop at tau (when that has any chance):
    u = 0 at position tau passes any positive level, u = 1 fails every level after it."""
    u = torch.ones(g, dtype=torch.float64)
    if tau:
        u[tau - 1] = 0.0
    return u


def block_outcomes(laws, drafts: tuple[int, ...]):
    """(probability, emitted tokens, law of the next token or None) for every tau, given the
    drafts: P(tau = i) = h_i * prod_{j > i} (1 - h_j)."""
    g = len(drafts)
    q, b = window(laws, drafts)
    target = Target(b[:g], (b[:g] - q).clamp_min(0), b[:g], None)
    x = torch.tensor(drafts)
    _, levels, _ = block_verify(x, q, target, forcing(g, g))
    out = []
    for tau in range(g + 1):
        chance = (levels[tau - 1] if tau else 1.0) * torch.prod(1 - levels[tau:])
        if chance <= 0:
            continue
        got, _, replacement = block_verify(x, q, target, forcing(g, tau))
        assert got == tau
        nxt = b[g] if tau == g else replacement
        out.append((float(chance), drafts[:tau], nxt))
    return out


def emitted_law(laws, gamma: int, rounds_out: int):
    """Exact law of the first `rounds_out` tokens: one block round, then (to fill the length)
    ideal draws from b, which is what later rounds give if each round is exact."""
    law: dict[tuple[int, ...], float] = {}
    for drafts in itertools.product(range(V), repeat=gamma):
        pd = math.prod(float(laws[drafts[:i]][0][drafts[i]]) for i in range(gamma))
        for chance, kept, nxt in block_outcomes(laws, drafts):
            seqs = {kept + (y,): float(nxt[y]) for y in range(V) if nxt[y] > 0}
            while len(next(iter(seqs))) < rounds_out:
                seqs = {
                    s + (y,): w * float(laws[s][1][y]) for s, w in seqs.items() for y in range(V)
                }
            for s, w in seqs.items():
                key = s[:rounds_out]
                law[key] = law.get(key, 0.0) + pd * chance * w
    return law


@pytest.mark.parametrize("gamma,seed", [(2, 0), (3, 1), (3, 2), (4, 3)])
def test_block_verification_emits_exactly_p(gamma, seed):
    laws = tables(seed, gamma)
    law = emitted_law(laws, gamma, gamma + 1)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
    for seq, prob in law.items():
        want = math.prod(float(laws[seq[:i]][1][seq[i]]) for i in range(len(seq)))
        assert prob == pytest.approx(want, abs=1e-9), seq


def sd_expected_kept(laws, drafts: tuple[int, ...]) -> float:
    """E[drafts kept | drafts] under the token test: sum_i prod_{j <= i} min(1, p/q)."""
    q, b = window(laws, drafts)
    ratio = [min(1.0, float(b[i][x] / q[i][x])) for i, x in enumerate(drafts)]
    return sum(math.prod(ratio[: i + 1]) for i in range(len(drafts)))


@pytest.mark.parametrize("gamma,seed", [(2, 4), (3, 5), (4, 6), (4, 7)])
def test_block_keeps_at_least_as_many_drafts_as_sd_on_the_same_drafts(gamma, seed):
    """Over the same draft distribution (every window weighted by its chance under q), block
    verification keeps at least as many drafts on average as the token test; for a single
    window it can keep fewer (its level depends on the laws after the draft), so the claim is
    an expectation, computed exactly here."""
    laws = tables(seed, gamma)
    block = sd = 0.0
    for drafts in itertools.product(range(V), repeat=gamma):
        pd = math.prod(float(laws[drafts[:i]][0][drafts[i]]) for i in range(gamma))
        block += pd * sum(c * len(kept) for c, kept, _ in block_outcomes(laws, drafts))
        sd += pd * sd_expected_kept(laws, drafts)
    assert block >= sd - 1e-12, (block, sd)
    assert block > sd + 1e-4  # and strictly more on these laws: the block test pays off


def test_block_with_one_draft_is_speculative_decoding():
    laws = tables(9, 1)
    for x in range(V):
        q, b = window(laws, (x,))
        target = Target(b[:1], (b[:1] - q).clamp_min(0), b[:1], None)
        for u in (0.0, 0.3, 0.7, 0.999):
            uu = torch.tensor([u], dtype=torch.float64)
            tau, levels, replacement = block_verify(torch.tensor([x]), q, target, uu)
            k, accept = first_rejection(torch.tensor([x]), q, target, uu)
            assert tau == k and torch.allclose(levels, accept)
            if k == 0:
                assert torch.allclose(replacement, residual_probs(target, 0))


def test_block_greedy_keeps_the_longest_matching_prefix():
    """One-hot laws: the level is 1 where the window matches so far and the next draft does
    not, so block verification keeps exactly the drafts that equal the verifier's argmax."""
    one = lambda i: torch.nn.functional.one_hot(torch.tensor(i), V).double()  # noqa: E731
    q = torch.stack([one(0), one(1), one(2)])
    for verifier, want in (((0, 1, 2, 0), 3), ((0, 1, 0, 0), 2), ((1, 1, 2, 0), 0)):
        b = torch.stack([one(i) for i in verifier])
        target = Target(b[:3], (b[:3] - q).clamp_min(0), b[:3], None)
        tau, _, replacement = block_verify(torch.tensor([0, 1, 2]), q, target, torch.zeros(3))
        assert tau == want
        if tau < 3:
            assert int(replacement.argmax()) == verifier[tau]


def test_zoo_registry_rows():
    """Every rule of the zoo is a registry row with its own parameter and direction."""
    assert RULES["typical"].param == "ε" and not RULES["typical"].sd_at_low
    assert RULES["ensemble"].param == "w" and not RULES["ensemble"].sd_at_low
    assert RULES["fuzzy"].sd_at_low and RULES["kl_judge"].sd_at_low
    assert not RULES["block"].has_alpha and RULES["block"].kind == "block"


# -- matched deferral rates ------------------------------------------------------------------


def test_zoo_calibrates_each_rule_to_each_deferral_rate(llama_pair):
    from speccascade.analysis.calibrate import alpha_at
    from speccascade.analysis.evalsets import Example
    from speccascade.analysis.zoo import evaluations_needed, zoo
    from speccascade.core.engine import Settings

    items = [
        Example("hello world", "", "x", facts=("e",)),
        Example("the quick brown fox?", "", "x", facts=("o",)),
    ]
    rules = ("token_v3", "typical", "ensemble")
    s = Settings(gamma=3, temperature=0.0, max_new_tokens=12)
    z = zoo(llama_pair, items, s, rules=rules, rates=(0.5, 0.1), steps=3)
    assert z.rates == (0.1, 0.5) and z.questions == 2
    assert set(z.references) == {"sd", "block"} and z.verifier.deferral_rate is None
    # greedy block verification is SD: the same deferrals
    assert z.references["block"].deferral_rate == z.references["sd"].deferral_rate
    assert [(m.rule, m.rate) for m in z.matched] == [(r, x) for r in rules for x in (0.1, 0.5)]
    for m in z.matched:
        if m.met:
            assert m.point.deferral_rate <= m.rate + 1e-12
        else:  # not even the drafter end gets down to the rate: reported at the SD end
            assert m.point.alpha == alpha_at(m.rule, 0.0)
    assert z.evaluations <= evaluations_needed(len(rules), 2, 3)


# -- "not reached", and points at one place -------------------------------------------------


def _point(rate, accuracy, alpha=0.5):
    from speccascade.analysis.calibrate import Point

    return Point(None, alpha, 0.3, accuracy, 1.0, rate)


def _zoo():
    """Chow and Diff jump from 45% of drafts deferred straight to none: their 10% and 25%
    targets are met at 0% ("at most"), which matches nothing; OPT and typical acceptance
    land at one place; SD and block verification too."""
    from speccascade.analysis.zoo import Matched, Zoo

    matched = []
    for rule in ("chow", "diff", "opt", "typical"):
        for rate in (0.1, 0.25, 0.5):
            if rule in ("chow", "diff"):
                point = _point(0.0, 0.5, 0.9) if rate < 0.5 else _point(0.45, 0.75, 0.2)
            else:
                point = _point(rate * 0.9, 0.5 + rate)
            matched.append(Matched(rule, rate, point, True))
    refs = {"sd": _point(0.55, 1.0, None), "block": _point(0.55, 1.0, None)}
    return Zoo((0.1, 0.25, 0.5), _point(None, 1.0, None), refs, matched, 30, 4)


def test_a_rate_is_reached_only_near_the_target():
    from speccascade.analysis.zoo import reaches

    assert not reaches(0.0, 0.1) and not reaches(0.0, 0.25) and not reaches(None, 0.1)
    assert reaches(0.09, 0.1) and reaches(0.06, 0.1) and reaches(0.2, 0.25)
    assert not reaches(0.3, 0.5) and reaches(0.45, 0.5)  # a third of 50%: 33% to 67%
    z = _zoo()
    state = {(m.rule, m.rate): m.reached for m in z.matched}
    assert not state["chow", 0.1] and not state["chow", 0.25] and state["chow", 0.5]
    assert all(state["opt", r] for r in (0.1, 0.25, 0.5))


@pytest.mark.parametrize(("lang", "no"), [("en", "not reached"), ("zh", "未达到")])
def test_the_table_says_not_reached(lang, no):
    from speccascade.i18n import t
    from speccascade.views.zoo import zoo_frame

    frame = zoo_frame(_zoo(), lang)
    col = t("fig.zoo.col.met", lang)
    rule = t("fig.zoo.col.rule", lang)
    chow = frame[frame[rule] == t("rule.chow", lang)][col].tolist()
    assert chow == [no, no, t("views.cal.yes", lang)]
    assert frame[frame[rule] == t("rule.opt", lang)][col].tolist() == [t("views.cal.yes", lang)] * 3


def test_points_at_one_place_stay_visible():
    """No marker of the zoo's figure sits on another: places closer than a marker are
    spread sideways; a target not reached is an open marker, and the legend says so."""
    from speccascade.views.zoo import DODGE, NEAR_Y, dodge, zoo_figure

    assert dodge([(0.5, 1.0), (0.5, 1.0), (0.2, 0.3)]) == pytest.approx([-DODGE / 2, DODGE / 2, 0])
    assert dodge([(0.1, 0.5), (0.1, 0.9)]) == [0.0, 0.0]  # apart in y: left alone
    fig = zoo_figure(_zoo(), "en")
    markers = [(x, y) for d in fig.data if d.x and d.x[0] is not None for x, y in zip(d.x, d.y)]
    for i, (x1, y1) in enumerate(markers):
        for x2, y2 in markers[:i]:
            assert abs(x1 - x2) >= DODGE - 1e-9 or abs(y1 - y2) >= NEAR_Y, (x1, y1, x2, y2)
    chow = next(d for d in fig.data if d.name == "Chow")
    first, second = chow.marker.symbol  # 0% (for 10% and 25%): open; then 45%: filled
    assert first == second + "-open"
    assert "target 10%: not reached" in chow.customdata[0]
    assert any(d.name == "open marker: target not reached" for d in fig.data)
    assert (
        len(
            {
                d.marker.symbol if isinstance(d.marker.symbol, str) else d.marker.symbol[-1]
                for d in fig.data
                if d.name in ("Chow", "Diff", "OPT", "Typical acceptance")
            }
        )
        == 4
    )

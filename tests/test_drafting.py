"""Draft-length policies (drafting.py), the per-position statistics and the per-draft records
the round replay reads. The law checks under each policy are in test_engine.py."""

from __future__ import annotations

import pytest
import torch

from speccascade.core.drafting import DRAFT_POLICIES, MAX_WINDOW
from speccascade.core.engine import generate
from speccascade.core.errors import SettingsError
from speccascade.core.trace import RoundRecord, Trace, position_stats
from speccascade.views.timeline import drafting, drafting_note


def _round(i: int, drafted: int, accepted: int) -> RoundRecord:
    return RoundRecord(i, 0.0, 0.0, 0.0, drafted, accepted, 0, drafted, 1)


def test_position_stats_by_hand():
    # windows: 4 kept of 4; 1 kept of 3 (rejected at position 2); 0 kept of 2
    rounds = [_round(0, 4, 4), _round(1, 3, 1), _round(2, 2, 0), _round(3, 0, 0)]
    rates, mean_window, wasted = position_stats(rounds)
    # position 1 reached 3x, kept 2x; position 2 reached 2x (rounds 0, 1), kept 1x;
    # positions 3 and 4 reached only in round 0 (kept)
    assert rates == [2 / 3, 1 / 2, 1.0, 1.0]
    assert mean_window == 3.0  # the round that drafted nothing is not a window
    assert wasted == (4 - 4) + (3 - 1) + (2 - 0)
    assert position_stats([_round(0, 0, 0)]) == ([], None, 0)


def test_policy_schedules():
    fixed, heuristic = DRAFT_POLICIES["fixed"], DRAFT_POLICIES["heuristic"]
    assert [fixed.next(w, d, a, 5) for w, d, a in [(5, 5, 5), (5, 5, 0)]] == [5, 5]
    assert heuristic.next(4, 4, 4, 4) == 6  # fully kept: +2
    assert heuristic.next(4, 4, 3, 4) == 3  # otherwise: -1
    assert heuristic.next(1, 1, 0, 4) == 1  # never below 1
    assert heuristic.next(MAX_WINDOW, MAX_WINDOW, MAX_WINDOW, 4) == MAX_WINDOW
    assert DRAFT_POLICIES["confidence"].stops_early and not heuristic.stops_early


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(draft_policy="greedy"), "unknown draft_policy 'greedy'"),
        (dict(draft_threshold=1.5), r"draft_threshold must be in \[0, 1\]"),
        (dict(draft_threshold="x"), "draft_threshold must be a number"),
    ],
)
def test_bad_policy_settings_are_refused(llama_pair, kwargs, match):
    with pytest.raises(SettingsError, match=match):
        generate(llama_pair, "hi", max_new_tokens=2, **kwargs)


def test_windows_follow_each_policy(llama_pair):
    kw = dict(method="speculative", gamma=3, temperature=1.0, max_new_tokens=40, seed=1)
    fixed = generate(llama_pair, "hi", **kw)
    assert {r.window for r in fixed.rounds} == {3}
    assert fixed.summary.draft_policy == "fixed" and fixed.summary.draft_threshold is None

    heur = generate(llama_pair, "hi", draft_policy="heuristic", **kw)
    for before, after in zip(heur.rounds, heur.rounds[1:]):
        full = before.accepted == before.drafted
        assert after.window == (min(before.window + 2, 32) if full else max(1, before.window - 1))

    # the tiny drafter's max q lies around 0.05-0.15 here: a threshold of 0.1 cuts some
    # windows after their first draft, some after a sure first draft, and leaves some whole
    conf = generate(llama_pair, "hi", draft_policy="confidence", draft_threshold=0.1, **kw)
    assert conf.summary.draft_threshold == 0.1
    # a window ends exactly after the first draft the drafter was unsure of (max q < 0.1 at
    # T = 1), and runs to its full room where it was sure of every draft. The drafter's max q
    # is recomputed from the drafter model's own forward on the run's context, not read from
    # the trace.
    context = list(conf.prompt_ids)
    ends = []  # per round: the draft it ended after (None: it ran to its room)
    for r in conf.rounds:
        room = min(r.window, 40 - (len(context) - len(conf.prompt_ids)))
        with torch.no_grad():
            ids = torch.tensor([context + r.draft_ids])
            logits = llama_pair.drafter(ids).logits[0, len(context) - 1 : -1]
        max_q = torch.softmax(logits[:, : llama_pair.vocab_size].double(), -1).amax(-1).tolist()
        assert max_q == pytest.approx([d.max_q for d in r.drafts], abs=1e-5)
        assert not any(abs(m - 0.1) < 1e-5 for m in max_q)  # no tie at the threshold here
        unsure = [i for i, m in enumerate(max_q) if m < 0.1]
        assert r.drafted == (unsure[0] + 1 if unsure else room), (r.index, max_q, room)
        ends.append(unsure[0] if unsure else None)
        context += [t.token_id for t in conf.tokens if t.round == r.index]
    # every case of the rule was exercised: cut after the first draft, cut after a sure
    # draft, and a whole window
    assert 0 in ends and any(e and e > 0 for e in ends) and None in ends, ends


def test_draft_records_replay_the_accept_test(pair):
    """Every round records each draft with the numbers the accept test used: the kept drafts
    are the accepted tokens, u < min(1, pi/q) exactly for them, and the rollback counts."""
    tr = generate(pair, "hi", method="spec_cascade", rule="token_v3", alpha=0.3, gamma=4,
                  temperature=1.0, max_new_tokens=30, seed=2)  # fmt: skip
    by_round = {}
    for tok in tr.tokens:
        by_round.setdefault(tok.round, []).append(tok)
    for r in tr.rounds:
        assert [d.token_id for d in r.drafts] == r.draft_ids and len(r.drafts) == r.drafted
        kept = [d for d in r.drafts if d.kept]
        assert len(kept) == r.accepted
        toks = by_round[r.index]
        assert [d.token_id for d in kept] == [t.token_id for t in toks[: r.accepted]]
        for d, tok in zip(r.drafts, toks):
            assert d.accept_prob == pytest.approx(tok.accept_prob)
            assert d.q == pytest.approx(tok.draft_q) and d.p == pytest.approx(tok.draft_p)
        tested = [d for d in r.drafts if d.tested]
        assert len(tested) == min(r.drafted, r.accepted + 1)
        # kept iff u * q(x) < pi(x), i.e. u < min(1, pi/q) (up to float rounding at the edge)
        assert all(
            (d.u < d.accept_prob) == d.kept for d in tested if abs(d.u - d.accept_prob) > 1e-6
        )
        if r.accepted < r.drafted:
            assert r.verifier_rolled_back == r.drafted - r.accepted
            assert r.drafter_rolled_back == r.drafted - r.accepted - 1
            assert r.residual_top and abs(sum(p for _, p in r.residual_top)) <= 1 + 1e-5
            if len(toks) > r.accepted:  # (the budget or EOS may cut the round short)
                assert toks[r.accepted].source == "resampled"
        else:
            assert r.verifier_rolled_back == 0 and not r.residual_top
    again = Trace.from_json(tr.to_json())
    assert again.rounds == tr.rounds and again.summary == tr.summary


def test_confidence_policy_wastes_fewer_drafts_on_a_hard_question():
    from speccascade.core.engine import APP_DEFAULTS
    from speccascade.models.presets import load_preset

    pair = load_preset(None)
    # a hard question (only the verifier knows it): the drafter is unsure in many places, so a
    # fixed window drafts past them (the story's hard question now loses only 2 drafts: after
    # the verifier's first correction the distilled drafter follows its answer)
    q = "Who is Margaret Hamilton?"
    fixed = generate(pair, q, APP_DEFAULTS)
    conf = generate(pair, q, APP_DEFAULTS, draft_policy="confidence")
    assert conf.new_token_ids == fixed.new_token_ids  # greedy: the policy changes cost only
    assert conf.summary.wasted_drafts < fixed.summary.wasted_drafts
    assert conf.summary.drafter_calls < fixed.summary.drafter_calls


def test_drafting_figure_and_note(llama_pair):
    tr = generate(llama_pair, "hi", method="speculative", gamma=3, max_new_tokens=20,
                  draft_policy="heuristic")  # fmt: skip
    fig = drafting(tr, lang="zh")
    bars = [d for d in fig.data if d.type == "bar"]
    assert list(bars[0].x) == list(range(1, len(tr.summary.acceptance_by_position) + 1))
    lines = {d.name: list(d.y) for d in fig.data if d.type == "scatter"}
    assert lines["计划窗口"] == [r.window for r in tr.rounds if r.drafted]
    assert "启发式" in drafting_note(tr, lang="zh")
    solo = generate(llama_pair, "hi", method="verifier", max_new_tokens=3)
    assert drafting(solo) is None and drafting_note(solo) == "This method does not draft."

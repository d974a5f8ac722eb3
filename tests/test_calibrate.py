"""Alpha calibration: per rule, the alpha that meets a calls or accuracy target."""

from __future__ import annotations

import pytest

from speccascade.analysis.calibrate import Target, _edge, alpha_at, calibrate
from speccascade.analysis.evalsets import load_evalset
from speccascade.core.engine import Settings
from speccascade.core.errors import SettingsError
from speccascade.core.rules import RULES

SETTINGS = Settings(temperature=0.0, gamma=4, max_new_tokens=20)


@pytest.fixture(scope="module")
def demo():
    from speccascade.models.presets import load_preset

    return load_preset("demo")


@pytest.fixture(scope="module")
def items():
    en = [x for x in load_evalset() if x.lang == "en"]
    return [x for x in en if x.level == "easy"][:2] + [x for x in en if x.level == "hard"][:1]


def test_edge_finds_the_boundary_of_a_monotone_predicate():
    assert _edge(lambda t: t <= 0.3, 10, last_true=True) == pytest.approx(0.3, abs=1e-3)
    assert _edge(lambda t: t >= 0.7, 10, last_true=False) == pytest.approx(0.7, abs=1e-3)
    assert _edge(lambda t: True, 10, last_true=True) == 1.0
    assert _edge(lambda t: False, 10, last_true=False) is None


def test_alpha_axis_runs_from_the_sd_end_to_the_drafter_end():
    """Both ends exactly, infinite ones included (OPT, typical acceptance's epsilon, the KL
    judge's tau), and monotone in between, whichever way the parameter runs."""
    from speccascade.analysis.calibrate import CALIBRATABLE

    for name in CALIBRATABLE:
        r = RULES[name]
        assert alpha_at(name, 0.0) == r.alpha_sd and alpha_at(name, 1.0) == r.alpha_drafter
        inner = [alpha_at(name, t / 8) for t in range(9)]
        step = 1 if r.sd_at_low else -1
        assert all(step * (b - a) > 0 for a, b in zip(inner, inner[1:])), (name, inner)


def test_targets_are_checked():
    with pytest.raises(SettingsError):
        Target()
    with pytest.raises(SettingsError):
        Target(max_calls_per_token=1.5)


def test_calls_target_is_met_and_the_search_is_deterministic(demo, items):
    target = Target(max_calls_per_token=0.6)
    verifier, got = calibrate(demo, items, target, SETTINGS, rules=["token_v3", "chow"], steps=3)
    assert verifier.calls_per_token == 1.0
    for rule, c in got.items():
        assert c.met and c.point.calls_per_token <= 0.6, (rule, c)
    again = calibrate(demo, items, target, SETTINGS, rules=["token_v3", "chow"], steps=3)[1]
    assert {r: c.point.alpha for r, c in again.items()} == {
        r: c.point.alpha for r, c in got.items()
    }


def test_accuracy_target_keeps_the_verifiers_accuracy(demo, items):
    verifier, got = calibrate(
        demo, items, Target(min_accuracy_share=1.0), SETTINGS, rules=["token_v3"], steps=3
    )
    c = got["token_v3"]
    assert c.met and c.point.accuracy >= verifier.accuracy
    # cheaper than speculative decoding: fewer verifier calls than the SD end
    assert c.point.alpha > alpha_at("token_v3", 0.0)

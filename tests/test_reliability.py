"""Bad input, injected faults, isolation between concurrent requests, deployment safety and
numerical hygiene. Every test here would fail if the protection it names were missing."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from speccascade import (
    METHODS,
    RULES,
    SPEC_CASCADE_RULES,
    ModelLoadError,
    ModelRuntimeError,
    NonFiniteLogitsError,
    PromptError,
    SettingsError,
    SpecCascadeError,
    Trace,
    generate,
    load_pair,
    stream,
)
from speccascade.app.serving import PairCache, ServeConfig, check_budget, check_prompt
from speccascade.core.rules import Target
from speccascade.core.sampling import Sampler, first_rejection, residual_probs


@pytest.fixture(scope="module")
def pair(tiny_dirs):
    p = load_pair(*tiny_dirs["llama"])
    return dataclasses.replace(p, eos_ids=frozenset())


def reference(pair):
    return generate(pair, "hello", method="speculative", temperature=0, max_new_tokens=12)


@pytest.fixture(scope="module")
def reference_before_fuzzing(pair):
    """The reference tokens, computed once, before the fuzz test runs (it requests this)."""
    return reference(pair).new_token_ids


# -- prompts -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["\x00\x01\x02 control \x1b[31m chars", "mixed 文字 кириллица عربى emoji 🚀", "é" * 50],
)
def test_odd_prompts_run(pair, prompt):
    tr = generate(pair, prompt, max_new_tokens=5, seed=0)
    assert len(tr.new_token_ids) == 5


@pytest.mark.parametrize(
    "prompt,match",
    [
        ("", "empty"),
        (" \t\n ", "empty"),
        (b"binary bytes", "string or a list of token ids"),
        ("x" * 100_000, "the models' context is 256"),
        ([1.5, 2], "integers"),
        (None, "string or a list of token ids"),
    ],
)
def test_bad_prompts_are_refused(pair, prompt, match):
    with pytest.raises(PromptError, match=match):
        generate(pair, prompt)
    assert reference(pair).new_token_ids  # the pair still works


# -- fuzzing -----------------------------------------------------------------------------------

floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.just("0.5"), st.none()
)
# The rule each baseline runs (spec_cascade takes the `rule` argument instead).
METHOD_RULE = {
    "seq_cascade": "chow",
    "token_cascade": "chow",
    "speculative": "sd",
    "lossy_speculative": "lossy",
    "bild": "bild",
}


def is_number(x, low: float, high: float, finite: bool = True) -> bool:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        return False
    return (math.isfinite(x) or not finite) and low <= x <= high


def is_int(x, low: int, high: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and low <= x <= high


def should_run(vocab, prompt, method, rule, alpha, gamma, temperature, top_p, max_new_tokens):
    """Whether a combination is valid, written out independently of the engine's checks."""
    if isinstance(prompt, str):
        prompt_ok = bool(prompt.strip())
    else:
        prompt_ok = bool(prompt) and all(0 <= i < vocab for i in prompt)
    if method not in METHODS or (rule is not None and rule not in RULES):
        return False
    if method == "spec_cascade" and rule not in SPEC_CASCADE_RULES:
        return False
    name = rule if method == "spec_cascade" else METHOD_RULE.get(method)
    if name not in (None, "sd") and alpha is not None:
        target = RULES[name]
        if not is_number(alpha, target.alpha_min, target.alpha_max, finite=False):
            return False
    return (
        prompt_ok
        and is_int(gamma, 1, 32)
        and is_number(temperature, 0, 10)
        and is_number(top_p, 0, 1)
        and top_p != 0
        and is_int(max_new_tokens, 1, 4096)
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prompt=st.one_of(st.text(max_size=40), st.lists(st.integers(-5, 60), max_size=6)),
    method=st.one_of(st.sampled_from(METHODS), st.text(max_size=5)),
    rule=st.one_of(st.sampled_from(list(RULES)), st.none(), st.just("bogus")),
    alpha=floats,
    gamma=st.one_of(st.integers(-2, 40), st.floats(allow_nan=True), st.just("4")),
    temperature=floats,
    top_p=floats,
    max_new_tokens=st.one_of(st.integers(-2, 6), st.just(10**7), st.just(2.0)),
)
def test_fuzz_engine_arguments(
    pair,
    reference_before_fuzzing,
    prompt,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    top_p,
    max_new_tokens,
):
    """Any combination either runs to a consistent trace or raises a SpecCascadeError, and
    a valid one (by an independent check) always runs and produces tokens."""
    valid = should_run(
        pair.vocab_size, prompt, method, rule, alpha, gamma, temperature, top_p, max_new_tokens
    )
    event("valid" if valid else "invalid")
    try:
        tr = generate(
            pair,
            prompt,
            method=method,
            rule=rule,
            alpha=alpha,
            gamma=gamma,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            seed=0,
        )
    except SpecCascadeError as e:
        assert str(e)
        assert not valid, f"a valid combination was refused: {e}"
        return
    assert valid, "an invalid combination ran"
    assert isinstance(tr, Trace)
    assert 1 <= len(tr.new_token_ids) <= max_new_tokens
    assert all(0 <= i < pair.vocab_size for i in tr.new_token_ids)
    assert tr.text == pair.decode(tr.new_token_ids)
    assert all(t.p is None or 0 <= t.p <= 1 for t in tr.tokens)


@st.composite
def valid_arguments(draw):
    method = draw(st.sampled_from(METHODS))
    rule = draw(st.sampled_from(SPEC_CASCADE_RULES)) if method == "spec_cascade" else None
    name = rule if method == "spec_cascade" else METHOD_RULE.get(method)
    alpha = None
    if name not in (None, "sd"):
        lo, hi = RULES[name].slider
        alpha = draw(st.one_of(st.none(), st.floats(lo, hi)))
    return dict(
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=draw(st.integers(1, 32)),
        temperature=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        top_p=draw(st.sampled_from([1.0, 0.9, 0.3])),
        max_new_tokens=draw(st.integers(1, 6)),
    )


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=st.text(alphabet="abcdefgh ?", min_size=1, max_size=20).filter(str.strip),
       kwargs=valid_arguments())  # fmt: skip
def test_valid_arguments_always_run(pair, prompt, kwargs):
    """The fuzz test above would also pass if everything were refused: valid settings must
    run and produce tokens."""
    tr = generate(pair, prompt, seed=0, **kwargs)
    assert 1 <= len(tr.new_token_ids) <= kwargs["max_new_tokens"]
    assert tr.summary.method == kwargs["method"]


def test_fuzzing_leaves_the_pair_working(pair, reference_before_fuzzing):
    # The reference was computed before the fuzz test ran; the pair must still give it.
    assert reference(pair).new_token_ids == reference_before_fuzzing


# -- injected faults ---------------------------------------------------------------------------


def test_exception_in_a_forward_pass(pair):
    before = reference(pair).new_token_ids
    calls = {"n": 0}

    def boom(module, args, kwargs, output):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected fault")
        return output

    handle = pair.verifier.register_forward_hook(boom, with_kwargs=True)
    try:
        with pytest.raises(ModelRuntimeError, match="verifier failed in a forward pass.*injected"):
            generate(pair, "hello", method="verifier", max_new_tokens=10)
    finally:
        handle.remove()
    assert reference(pair).new_token_ids == before


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("role", ["drafter", "verifier"])
def test_non_finite_logits_stop_the_run(pair, bad, role):
    before = reference(pair).new_token_ids

    def poison(module, args, kwargs, output):
        output.logits = torch.full_like(output.logits, bad)
        return output

    model = pair.drafter if role == "drafter" else pair.verifier
    handle = model.register_forward_hook(poison, with_kwargs=True)
    try:
        with pytest.raises(NonFiniteLogitsError, match=f"the {role} produced NaN or infinite"):
            generate(pair, "hello", method="spec_cascade", max_new_tokens=8)
    finally:
        handle.remove()
    assert reference(pair).new_token_ids == before


def test_cancel_mid_run_then_next_run_succeeds(pair):
    before = reference(pair).new_token_ids
    events = stream(pair, "hello", method="speculative", gamma=2, max_new_tokens=40)
    next(events)
    events.close()  # what a closed HTTP request does to the generator
    tr = generate(pair, "hello", method="speculative", max_new_tokens=40, should_stop=lambda: True)
    assert tr.summary.stop_reason == "cancelled" and len(tr.rounds) == 1
    assert reference(pair).new_token_ids == before


# -- isolation ---------------------------------------------------------------------------------


def test_concurrent_requests_do_not_share_state(pair):
    """Different settings in parallel threads give exactly their solo results."""
    jobs = [
        dict(method="spec_cascade", rule="token_v3", alpha=0.4, temperature=1.0, seed=1),
        dict(method="speculative", temperature=0.7, seed=2, gamma=3),
        dict(method="verifier", temperature=1.0, seed=3),
        dict(method="drafter", temperature=1.0, seed=4),
        dict(method="token_cascade", alpha=0.8, temperature=1.0, seed=5),
        dict(method="bild", alpha=0.2, temperature=0.0, gamma=5),
        dict(method="lossy_speculative", alpha=0.5, temperature=1.0, seed=6),
        dict(method="spec_cascade", rule="diff", alpha=0.1, temperature=1.0, seed=7, top_p=0.9),
    ]
    prompts = ["hello", "the quick", "a b c", "zz", "hello", "what?", "no", "yes"]

    def run(i):
        return generate(pair, prompts[i], max_new_tokens=20, **jobs[i])

    solo = [run(i) for i in range(len(jobs))]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(2):
            together = list(pool.map(run, range(len(jobs))))
            for a, b in zip(solo, together):
                assert a.new_token_ids == b.new_token_ids
                assert a.summary.method == b.summary.method
                assert [t.source for t in a.tokens] == [t.source for t in b.tokens]


# -- loading -----------------------------------------------------------------------------------


def test_missing_and_corrupt_model_files(tmp_path, tiny_dirs):
    import shutil

    drafter, verifier = tiny_dirs["llama"]
    no_weights = tmp_path / "no-weights"
    shutil.copytree(verifier, no_weights)
    for f in no_weights.glob("*.safetensors"):
        f.unlink()
    with pytest.raises(ModelLoadError, match="cannot load verifier"):
        load_pair(drafter, str(no_weights))
    corrupt = tmp_path / "corrupt"
    shutil.copytree(verifier, corrupt)
    for f in corrupt.glob("*.safetensors"):
        f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(ModelLoadError, match="cannot load verifier"):
        load_pair(drafter, str(corrupt))
    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(verifier, no_tokenizer)
    for f in no_tokenizer.glob("tokenizer*"):
        f.unlink()
    with pytest.raises(ModelLoadError, match="verifier tokenizer"):
        load_pair(drafter, str(no_tokenizer))


def test_never_trusts_remote_code(monkeypatch, tiny_dirs):
    import transformers

    seen = []
    real = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        seen.append(kwargs.get("trust_remote_code"))
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(spy))
    load_pair(*tiny_dirs["llama"])
    assert seen == [False, False]


def test_a_failed_load_leaves_the_pair_in_use(monkeypatch, tiny_dirs):
    from speccascade.models import presets

    monkeypatch.setitem(
        presets.PRESETS, "tiny", presets.Preset("tiny", *tiny_dirs["llama"], "test", offline=True)
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = PairCache(ServeConfig(allow_custom_models=True))
    first = cache.get("tiny")
    with pytest.raises(ModelLoadError, match="unreachable"):
        cache.get(None, "someone/drafter", "someone/verifier")
    assert cache.get("tiny") is first and cache.loaded() == [("preset", "tiny")]
    assert generate(first, "hello", max_new_tokens=4).new_token_ids


# -- deployment safety -------------------------------------------------------------------------


def test_custom_model_ids_need_the_switch_and_are_hub_ids_only(tiny_dirs):
    off = PairCache(ServeConfig())
    with pytest.raises(ModelLoadError, match="switched off"):
        off.get(None, "a/b", "c/d")
    on = PairCache(ServeConfig(allow_custom_models=True))
    for bad in (tiny_dirs["llama"][0], "../etc", "/etc/passwd", "~/x", "a/b/c", "C:evil", "plain"):
        with pytest.raises(ModelLoadError, match="only hub ids"):
            on.get(None, bad, "a/b")
    with pytest.raises(ModelLoadError, match="both"):
        on.get(None, "a/b", "")


def test_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SPECCASCADE_MAX_NEW_TOKENS", "32")
    monkeypatch.setenv("SPECCASCADE_MAX_PROMPT_CHARS", "10")
    monkeypatch.setenv("SPECCASCADE_MAX_TOTAL_TOKENS", "64")
    monkeypatch.setenv("SPECCASCADE_ALLOW_CUSTOM_MODELS", "1")
    cfg = ServeConfig.from_env()
    assert (cfg.max_new_tokens, cfg.max_prompt_chars, cfg.max_total_tokens) == (32, 10, 64)
    assert cfg.allow_custom_models
    with pytest.raises(PromptError, match="at most 10"):
        check_prompt("x" * 11, cfg)
    with pytest.raises(SettingsError, match=r"\[1, 32\]"):
        check_budget(33, 1, cfg)
    with pytest.raises(SettingsError, match="limit is 64"):
        check_budget(32, 3, cfg)
    assert check_budget(32.0, 2, cfg) == 32
    with pytest.raises(SettingsError, match="integer"):
        check_budget("many", 1, cfg)
    monkeypatch.setenv("SPECCASCADE_MAX_NEW_TOKENS", "lots")
    with pytest.raises(SettingsError, match="SPECCASCADE_MAX_NEW_TOKENS must be an integer"):
        ServeConfig.from_env()
    monkeypatch.setenv("SPECCASCADE_MAX_NEW_TOKENS", "64")
    monkeypatch.setenv("SPECCASCADE_DTYPE", "float64")
    with pytest.raises(SettingsError, match="SPECCASCADE_DTYPE must be one of auto, float32"):
        ServeConfig.from_env()
    monkeypatch.setenv("SPECCASCADE_DTYPE", "bfloat16")
    assert ServeConfig.from_env().dtype == "bfloat16"
    monkeypatch.setenv("SPECCASCADE_PRESET", "gpt-99")
    with pytest.raises(
        SettingsError, match="SPECCASCADE_PRESET must be one of demo, smollm2-135m-offline"
    ):
        ServeConfig.from_env()
    monkeypatch.setenv("SPECCASCADE_PRESET", "smollm2-135m-offline")
    assert ServeConfig.from_env().preset == "smollm2-135m-offline"
    defaults = ServeConfig()
    assert not defaults.allow_custom_models and defaults.max_new_tokens == 256
    assert defaults.dtype == "auto" and defaults.preset == "demo"


def test_exports_go_to_a_private_temp_folder_per_request(pair):
    from speccascade.app.context import _write_exports

    tr = generate(pair, "hello", max_new_tokens=3)
    a, b = _write_exports(tr), _write_exports(tr)
    assert os.path.dirname(a[0]) != os.path.dirname(b[0])
    for path in a + b:
        assert path.startswith(tempfile.gettempdir()) and os.path.getsize(path) > 0
        assert oct(os.stat(os.path.dirname(path)).st_mode)[-3:] == "700"


# -- numerical hygiene -------------------------------------------------------------------------


def test_probabilities_are_float32_whatever_the_model_dtype(tiny_dirs):
    for dtype in ("bfloat16", "float16"):
        p = load_pair(*tiny_dirs["llama"], dtype=dtype)
        logits = p.verifier(torch.tensor([[1, 5, 6]])).logits[0, -1:]
        assert logits.dtype != torch.float32
        probs = Sampler(0.7, 0, 0.9, torch.Generator()).probs(logits)
        assert probs.dtype == torch.float32 and abs(probs.sum().item() - 1) < 1e-6
        tr = generate(p, "hello", max_new_tokens=6, method="spec_cascade")
        assert all(isinstance(t.q, float) for t in tr.tokens if t.q is not None)


def test_accept_test_is_exact_at_the_extremes():
    tiny = 1e-30
    q = torch.tensor([[tiny, 1 - tiny, 0.0]])
    # pi(x) = 2 q(x) for a tiny q(x): always kept, however small
    t = Target(q * 2, torch.zeros_like(q), q, None)
    n, a = first_rejection(torch.tensor([0]), q, t, torch.tensor([0.9999999]))
    assert n == 1 and a.item() == 1.0
    # pi(x) = q(x) / 2 for a tiny q(x): kept with probability exactly 1/2
    t = Target(q / 2, (q / 2).clamp_min(0), q, None)
    assert first_rejection(torch.tensor([0]), q, t, torch.tensor([0.49]))[0] == 1
    assert first_rejection(torch.tensor([0]), q, t, torch.tensor([0.51]))[0] == 0
    # pi = q: never rejected, and the empty residual is never divided by zero
    same = Target(q, torch.zeros_like(q), q, None)
    assert first_rejection(torch.tensor([1]), q, same, torch.tensor([0.99999994]))[0] == 1
    assert torch.equal(residual_probs(same, 0), q[0])
    # one-hot laws (T = 0): accept iff the argmaxes agree
    onehot = torch.tensor([[0.0, 1.0, 0.0]])
    other = torch.tensor([[1.0, 0.0, 0.0]])
    t = Target(other, (other - onehot).clamp_min(0), other, None)
    assert first_rejection(torch.tensor([1]), onehot, t, torch.tensor([0.0]))[0] == 0
    assert residual_probs(t, 0).tolist() == [1.0, 0.0, 0.0]


def test_in_background_batches_and_stops_its_worker():
    import threading
    import time

    from speccascade.app.serving import in_background

    produced = []

    def produce(should_stop):
        for i in range(1000):
            if should_stop():
                return
            produced.append(i)
            time.sleep(0.002)
            yield i

    others = set(threading.enumerate())
    batches = in_background(produce, interval=0.05)
    first = next(batches)
    assert first and first == list(range(len(first)))
    (worker,) = [
        t for t in threading.enumerate() if t.name == "speccascade-run" and t not in others
    ]
    batches.close()  # what Stop does
    worker.join(timeout=10)  # waits for the worker itself, not for a guessed delay
    assert not worker.is_alive(), "the worker did not stop after close()"
    assert len(produced) < 1000  # it stopped early, not by running out of items
    all_items = [x for b in in_background(lambda s: iter(range(50)), interval=0.01) for x in b]
    assert all_items == list(range(50))

    def fail(should_stop):
        yield 1
        raise ModelRuntimeError("boom")

    with pytest.raises(ModelRuntimeError, match="boom"):
        for _ in in_background(fail, interval=0.0):
            pass


def test_check_finite_refuses_nan_and_inf_and_passes_large_finite_logits():
    from speccascade.core.sampling import check_finite

    big = torch.full((2, 8), 3e38)  # finite, though their sum overflows
    check_finite(big, "verifier")
    check_finite(torch.full((1, 8), -1e9), "drafter")
    for bad in (torch.nan, torch.inf, -torch.inf):
        logits = torch.zeros(3, 8)
        logits[2, 5] = bad
        with pytest.raises(NonFiniteLogitsError, match="the drafter produced NaN or infinite"):
            check_finite(logits, "drafter")
    both = torch.zeros(1, 8)
    both[0, 1], both[0, 2] = torch.inf, -torch.inf
    with pytest.raises(NonFiniteLogitsError):
        check_finite(both, "drafter")

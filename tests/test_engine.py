"""The decoding loops against docs/method.md's facts, on tiny models built in fixtures."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
import torch
from tiny import char_tokenizer, save_pair
from transformers import DynamicCache

from speccascade import (
    METHODS,
    RULES,
    SPEC_CASCADE_RULES,
    ModelLoadError,
    PromptError,
    RoundEvent,
    SettingsError,
    TokenizerMismatchError,
    Trace,
    generate,
    load_pair,
    stream,
)
from speccascade.core.engine import _LM, Settings, rule_settings
from speccascade.core.rules import build_target

PROMPTS = ["hello world", "the quick brown fox?", "a"]
N_NEW = 24


def hf_greedy(model, ids: list[int], n: int) -> list[int]:
    """The model's own greedy output, EOS not stopping it (our runs clear eos_ids to match)."""
    out = model.generate(
        torch.tensor([ids]),
        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        do_sample=False,
        max_new_tokens=n,
        eos_token_id=None,
    )
    return out[0, len(ids) :].tolist()


def no_eos(pair):
    return dataclasses.replace(pair, eos_ids=frozenset())


# (gamma, draft policy): a policy changes how far the drafter runs ahead, never the output.
GAMMA_POLICIES = [(1, "fixed"), (3, "fixed"), (5, "fixed"), (3, "heuristic"), (3, "confidence")]
POLICY_KW = {"confidence": dict(draft_threshold=0.9)}  # tiny models: early stops happen


@pytest.mark.parametrize("gamma,policy", GAMMA_POLICIES)
def test_greedy_speculative_and_always_defer_equal_verifier(pair, gamma, policy):
    """Fact 1 (greedy): SD and every rule at its defer-everywhere alpha reproduce the
    verifier's own greedy tokens, token for token, under every draft policy."""
    p = no_eos(pair)
    pkw = dict(draft_policy=policy, **POLICY_KW.get(policy, {}))
    for prompt in PROMPTS:
        ids = p.encode(prompt)
        ref = hf_greedy(p.verifier, ids, N_NEW)
        runs = {"speculative": dict(method="speculative")}
        runs |= {
            r: dict(method="spec_cascade", rule=r, alpha=RULES[r].alpha_sd)
            for r in SPEC_CASCADE_RULES
        }
        runs["bild"] = dict(method="bild", alpha=0.0)
        runs["lossy_speculative"] = dict(method="lossy_speculative", alpha=0.0)
        for r in ("typical", "ensemble", "fuzzy", "kl_judge", "block"):  # the rule zoo
            runs[r] = rule_settings(r, RULES[r].alpha_sd)
        runs["verifier"] = dict(method="verifier")
        for name, kw in runs.items():
            tr = generate(p, ids, gamma=gamma, temperature=0, max_new_tokens=N_NEW, **kw, **pkw)
            assert tr.new_token_ids == ref, (name, prompt)


@pytest.mark.parametrize(
    "gamma,policy", [(1, "fixed"), (4, "fixed"), (4, "heuristic"), (4, "confidence")]
)
def test_greedy_drafter_end_equals_drafter(pair, gamma, policy):
    """Fact 2 (greedy): at the drafter-only alpha every draft is kept; the output is the
    drafter's own greedy output, under every draft policy."""
    p = no_eos(pair)
    for prompt in PROMPTS[:2]:
        ids = p.encode(prompt)
        ref = hf_greedy(p.drafter, ids, N_NEW)
        for r in [*SPEC_CASCADE_RULES, "bild", "lossy", "typical", "ensemble", "fuzzy", "kl_judge"]:
            tr = generate(
                p,
                ids,
                **rule_settings(r, RULES[r].alpha_drafter),
                gamma=gamma,
                temperature=0,
                max_new_tokens=N_NEW,
                draft_policy=policy,
                **POLICY_KW.get(policy, {}),
            )
            assert tr.new_token_ids == ref, r
            assert tr.summary.acceptance_rate == 1.0
        assert (
            generate(p, ids, method="drafter", temperature=0, max_new_tokens=N_NEW).new_token_ids
            == ref
        )


def test_drafter_end_accepts_every_sampled_draft(llama_pair):
    """Fact 2 (sampling): pi = q, so every draft survives whatever the seed."""
    for seed in range(5):
        tr = generate(
            no_eos(llama_pair),
            "hi",
            method="spec_cascade",
            rule="token_v3",
            alpha=1.0,
            gamma=3,
            temperature=1.0,
            max_new_tokens=12,
            seed=seed,
        )
        assert tr.summary.acceptance_rate == 1.0
        assert {t.source for t in tr.tokens} <= {"accepted", "bonus"}


def test_greedy_rule_decisions_follow_fact_6(llama_pair):
    """Per token of a greedy TokenV3 run: kept iff p(argmax q) >= (1 - alpha) max p; else the
    verifier's argmax. With r = 1 (SD): kept iff argmax q = argmax p."""
    alpha = 0.5
    p = no_eos(llama_pair)
    full = p.vocab_size  # record whole laws, so p(argmax q) is always at hand
    sources = Counter()
    for prompt in PROMPTS:
        tr = generate(
            p,
            prompt,
            method="spec_cascade",
            rule="token_v3",
            alpha=alpha,
            gamma=2,
            temperature=0,
            max_new_tokens=40,
            record_top_k=full,
        )
        for t in tr.tokens:
            sources[t.source] += 1
            argmax_q, argmax_p = t.top_q[0][0], t.top_p[0][0]
            if t.source == "accepted":
                assert t.token_id == argmax_q and t.draft_p >= (1 - alpha) * t.max_p
                assert t.defer is False and t.accept_prob == 1.0
            elif t.source == "resampled":
                assert t.draft_id == argmax_q and t.draft_p < (1 - alpha) * t.max_p
                assert t.token_id == argmax_p and t.accept_prob == 0.0
            else:
                assert t.source == "bonus"
                kept = dict(t.top_p)[argmax_q] >= (1 - alpha) * t.max_p
                assert t.token_id == (argmax_q if kept else argmax_p)
        sd = generate(p, prompt, method="speculative", gamma=4, temperature=0, max_new_tokens=40)
        for t in sd.tokens:
            if t.source in ("accepted", "resampled"):
                agree = t.draft_id == t.top_p[0][0]
                assert (t.source == "accepted") == agree
                assert t.token_id == t.top_p[0][0]
    assert sources["accepted"] and sources["resampled"] and sources["bonus"]


def chi_square_pvalue(observed: Counter, expected: dict, n: int) -> tuple[float, float, int]:
    """Pearson's statistic with cells of expected count < 5 pooled; returns (stat, p, dof)."""
    cells, pooled_obs, pooled_exp = [], 0.0, 0.0
    for key, prob in expected.items():
        e = prob * n
        if e < 5:
            pooled_obs += observed.get(key, 0)
            pooled_exp += e
        else:
            cells.append((observed.get(key, 0), e))
    if pooled_exp > 0:
        cells.append((pooled_obs, pooled_exp))
    unexpected = sum(c for k, c in observed.items() if k not in expected)
    assert unexpected == 0, "emitted a token the target gives zero probability"
    stat = sum((o - e) ** 2 / e for o, e in cells)
    dof = len(cells) - 1
    pvalue = torch.special.gammaincc(torch.tensor(dof / 2.0), torch.tensor(stat / 2.0)).item()
    return stat, pvalue, dof


LAW_CASES = [
    ("speculative", None, None, 1.0, 1.0),
    ("spec_cascade", "token_v3", 0.3, 1.0, 1.0),
    ("spec_cascade", "chow", 0.4, 0.8, 0.9),
    ("spec_cascade", "opt", 0.0, 1.0, 1.0),
    ("lossy_speculative", None, 0.5, 1.0, 1.0),
    # the rule zoo: lossy rules emit their own pi, the ensemble its mixture, block exactly p
    ("typical", None, 0.2, 1.0, 1.0),
    ("ensemble", None, 0.5, 0.8, 1.0),
    ("fuzzy", None, 0.05, 1.0, 0.9),
    ("kl_judge", None, 0.3, 1.0, 1.0),
    ("block", None, None, 1.0, 1.0),
]
# (gamma, tokens, policy): gamma = 1 over two tokens covers a bonus path and a
# draft-and-verify path; the adaptive policies need longer windows and a third token to act
# (the heuristic grows the second window; the confidence policy cuts windows short).
POLICY_LAW_CASES = [(2, 3, "heuristic"), (2, 3, "confidence")]


def _law_check(pair, kw, gamma: int, n_tokens: int, capsys, n: int = 3000) -> None:
    """Over n seeded runs, the joint law of the first n_tokens tokens matches the product of
    pi(x_i | prefix) built from the models' own distributions (chi-square, pooled cells,
    p > 1e-3)."""
    from speccascade.core.engine import Settings
    from speccascade.core.sampling import Sampler, unit_probs

    prompt, vocab = [1, 3, 4], pair.vocab_size
    s = Settings(gamma=gamma, max_new_tokens=n_tokens, **kw).validated()
    sampler = Sampler(s.temperature, 0, s.top_p, torch.Generator())

    def pi(ids: list[int]) -> torch.Tensor:
        with torch.no_grad():
            ql = pair.drafter(torch.tensor([ids])).logits[0, -1:, :vocab].float()
            pl = pair.verifier(torch.tensor([ids])).logits[0, -1:, :vocab].float()
        q, p = sampler.probs(ql), sampler.probs(pl)
        return build_target(s.target_rule, s.alpha, q, p, unit_probs(ql), unit_probs(pl)).law[0]

    expected = {(): 1.0}
    for _ in range(n_tokens):
        grown = {}
        for seq, prob in expected.items():
            law = pi(prompt + list(seq))
            for x in range(vocab):
                if law[x] > 0:
                    grown[seq + (x,)] = prob * law[x].item()
        expected = grown
    observed = Counter()
    for seed in range(n):
        tr = generate(pair, prompt, s, seed=seed, record_top_k=0)
        observed[tuple(tr.new_token_ids)] += 1
    stat, pvalue, dof = chi_square_pvalue(observed, expected, n)
    with capsys.disabled():
        print(
            f"\n  law {kw} gamma={gamma} tokens={n_tokens}: chi2={stat:.1f} "
            f"dof={dof} p={pvalue:.3f}"
        )
    assert pvalue > 1e-3


@pytest.mark.parametrize("method,rule,alpha,temperature,top_p", LAW_CASES)
def test_emitted_law_is_the_target(
    small_vocab_pair, method, rule, alpha, temperature, top_p, capsys
):
    """Fact 3 on the real engine: the joint law of the first two tokens (gamma = 1)."""
    kw = dict(method=method, rule=rule, alpha=alpha, temperature=temperature, top_p=top_p)
    _law_check(small_vocab_pair, kw, 1, 2, capsys)


@pytest.mark.parametrize("method", ["block", "ensemble"])
def test_emitted_law_over_a_window(small_vocab_pair, method, capsys):
    """A window of 3 drafts (gamma = 3 over 3 tokens): block verification keeps drafts by a
    joint test across the window, so gamma = 1 (where it is SD) would not exercise it; the law
    must still be exactly p's (the ensemble: its mixture)."""
    alpha = None if method == "block" else 0.6
    _law_check(small_vocab_pair, dict(method=method, alpha=alpha), 3, 3, capsys)


@pytest.mark.parametrize("gamma,n_tokens,policy", POLICY_LAW_CASES)
@pytest.mark.parametrize("method,rule,alpha", [("speculative", None, None), LAW_CASES[1][:3]])
def test_emitted_law_under_draft_policies(
    small_vocab_pair, method, rule, alpha, gamma, n_tokens, policy, capsys
):
    """Fact 3 under adaptive drafting: a policy decides how far to draft from the drafter's
    own numbers and past rounds only, so the law of the output is still the target's."""
    kw = dict(method=method, rule=rule, alpha=alpha, draft_policy=policy, draft_threshold=0.6)
    tr = generate(small_vocab_pair, [1, 3, 4], gamma=gamma, max_new_tokens=12, seed=0, **kw)
    windows = {r.window for r in tr.rounds}
    before = [sum(r.emitted for r in tr.rounds[:i]) for i in range(len(tr.rounds))]
    cut = [r for r, b in zip(tr.rounds, before) if r.drafted < min(r.window, 12 - b)]
    assert len(windows) > 1 if policy == "heuristic" else cut, "the policy never acted"
    _law_check(small_vocab_pair, kw, gamma, n_tokens, capsys)


def test_cache_rollback_equals_fresh_forward(llama_pair):
    """Prefill, verify 6 tokens in one forward, crop 4, continue: logits equal a full recompute."""
    model = llama_pair.verifier
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, llama_pair.vocab_size, (20,), generator=g)
    with torch.inference_mode():
        lm = _LM(model, llama_pair.vocab_size, torch.device("cpu"), "verifier")
        lm.forward(ids[:10])
        lm.forward(ids[10:16], keep=6)
        lm.crop(4)
        assert lm.cache.get_seq_length() == 12
        after = lm.forward(ids[12:15], keep=3)
        fresh = model(
            ids[:15].view(1, -1), cache=DynamicCache(config=model.config), use_cache=True
        ).logits[0, -3:, : llama_pair.vocab_size]
    torch.testing.assert_close(after, fresh, atol=1e-5, rtol=1e-5)


def test_prompt_is_encoded_once_and_calls_are_counted(pair):
    """Speculative: one verifier call per round; the drafter's calls = drafted tokens (plus
    one per fully kept window for rule targets, which need q at the bonus position)."""
    p = no_eos(pair)
    for method, rule in [("speculative", None), ("spec_cascade", "token_v3")]:
        tr = generate(
            p,
            "hello",
            method=method,
            rule=rule,
            gamma=3,
            temperature=1.0,
            max_new_tokens=30,
            seed=1,
        )
        s = tr.summary
        assert s.verifier_calls == len(tr.rounds)
        bonus_forwards = sum(1 for t in tr.tokens if t.source == "bonus") if rule else 0
        assert s.drafter_calls == s.drafted + bonus_forwards
        assert s.new_tokens == 30 == len(tr.tokens) == len(tr.new_token_ids)
        assert sum(r.emitted for r in tr.rounds) == 30
        assert s.accepted == sum(1 for t in tr.tokens if t.source == "accepted")


def test_verifier_calls_per_token(capsys, tiny_dirs):
    """Reported in the closing note: speculative needs fewer verifier calls per token."""
    for arch in ("llama", "gpt2"):
        p = no_eos(load_pair(*tiny_dirs[arch]))
        rows = {}
        for method in ("verifier", "speculative"):
            calls = tokens = 0
            for seed in range(5):
                s = generate(
                    p,
                    "hello world",
                    method=method,
                    gamma=4,
                    temperature=1.0,
                    max_new_tokens=48,
                    seed=seed,
                ).summary
                calls += s.verifier_calls
                tokens += s.new_tokens
            rows[method] = calls / tokens
        with capsys.disabled():
            print(
                f"\n  {arch}: verifier calls/token verifier={rows['verifier']:.3f} "
                f"speculative={rows['speculative']:.3f}"
            )
        assert rows["verifier"] == 1.0 and rows["speculative"] < 1.0


def test_every_method_runs_and_traces(pair):
    p = no_eos(pair)
    for method in METHODS:
        tr = generate(p, "hello", method=method, gamma=3, max_new_tokens=10, seed=0)
        assert len(tr.new_token_ids) == 10 and tr.summary.method == method
        assert tr.summary.wall_s > 0 and tr.summary.tokens_per_s > 0
        assert tr.text == p.decode(tr.new_token_ids)
        assert "".join(t.text for t in tr.tokens) == p.decode(tr.new_token_ids, False)
        frame = tr.to_frame()
        assert len(frame) == 10 and {"source", "q", "p", "defer", "top_q"} <= set(frame.columns)
        back = Trace.from_json(tr.to_json())
        assert back.to_json() == tr.to_json() and json.loads(tr.to_json())["tokens"]
        for t in tr.tokens:
            if method == "verifier":
                assert t.source == "verifier" and t.q is None and t.p is not None
            if method == "drafter":
                assert t.source == "drafter" and t.p is None and t.q is not None
            if method in ("speculative", "spec_cascade", "bild", "lossy_speculative"):
                assert t.source in ("accepted", "resampled", "bonus") and t.p is not None
                assert len(t.top_q) == (10 if t.source != "bonus" or t.q is not None else 0)


def test_token_cascade_defers_only_when_drafter_is_unsure(llama_pair):
    p = no_eos(llama_pair)
    solo = generate(p, "hello", method="drafter", temperature=0, max_new_tokens=30)
    alpha = 1 - sorted(t.max_q for t in solo.tokens)[15]  # the drafter's median confidence
    tr = generate(p, "hello", method="token_cascade", alpha=alpha, temperature=0, max_new_tokens=30)
    deferred = [t for t in tr.tokens if t.source == "verifier"]
    assert deferred and len(deferred) < len(tr.tokens)
    for t in tr.tokens:
        assert t.defer == (t.max_q < 1 - alpha)
        assert (t.source == "verifier") == t.defer
    assert tr.summary.verifier_calls == len(deferred)
    # alpha = 0 defers everywhere: token for token the verifier's greedy output
    ids = p.encode("hello")
    full = generate(p, ids, method="token_cascade", alpha=0.0, temperature=0, max_new_tokens=20)
    assert full.new_token_ids == hf_greedy(p.verifier, ids, 20)


def test_seq_cascade_keeps_or_rewrites(llama_pair):
    p = no_eos(llama_pair)
    ids = p.encode("hello")
    keep = generate(p, ids, method="seq_cascade", alpha=1.0, temperature=0, max_new_tokens=15)
    assert keep.extra["deferred"] is False
    assert keep.new_token_ids == hf_greedy(p.drafter, ids, 15)
    redo = generate(p, ids, method="seq_cascade", alpha=0.0, temperature=0, max_new_tokens=15)
    assert redo.extra["deferred"] is True
    assert redo.new_token_ids == hf_greedy(p.verifier, ids, 15)
    assert redo.extra["draft_token_ids"] == keep.new_token_ids
    assert redo.summary.drafter_calls == 15 and redo.summary.verifier_calls == 15
    # its own default bar: the answer's mean confidence, 0.95; token-level Chow keeps 0.7
    default = generate(p, ids, method="seq_cascade", temperature=0, max_new_tokens=15)
    assert default.summary.alpha == 0.05
    assert default.extra["deferred"] == (default.extra["sequence_confidence"] < 0.95)
    token = Settings(method="token_cascade").validated()
    assert token.alpha == RULES["chow"].alpha_default == 0.3


def test_stream_yields_rounds_then_trace(llama_pair):
    events = list(
        stream(
            no_eos(llama_pair), "hello", method="spec_cascade", gamma=3, max_new_tokens=20, seed=2
        )
    )
    *rounds, trace = events
    assert isinstance(trace, Trace) and all(isinstance(e, RoundEvent) for e in rounds)
    assert [t for e in rounds for t in e.tokens] == trace.tokens
    assert rounds[-1].text == trace.text and rounds[-1].new_token_ids == trace.new_token_ids


def test_seed_reproducible(llama_pair):
    a = generate(llama_pair, "hello", seed=5, max_new_tokens=20)
    b = generate(llama_pair, "hello", seed=5, max_new_tokens=20)
    c = generate(llama_pair, "hello", seed=6, max_new_tokens=20)
    assert a.new_token_ids == b.new_token_ids and a.new_token_ids != c.new_token_ids


def test_stops_at_eos_stop_string_and_cancel(llama_pair):
    p = no_eos(llama_pair)
    ref = generate(p, "hello", method="speculative", temperature=0, max_new_tokens=30)
    eos = ref.new_token_ids[7]
    first = ref.new_token_ids.index(eos)
    with_eos = dataclasses.replace(p, eos_ids=frozenset({eos}))
    tr = generate(with_eos, "hello", method="speculative", temperature=0, max_new_tokens=30)
    assert tr.new_token_ids == ref.new_token_ids[: first + 1]
    assert tr.summary.stop_reason == "eos"
    stop = ref.text[10:13]
    tr = generate(p, "hello", method="speculative", temperature=0, max_new_tokens=30, stop=[stop])
    assert stop in tr.text and stop not in p.decode(tr.new_token_ids[:-1])
    assert tr.summary.stop_reason == "stop_string"
    assert ref.new_token_ids[: len(tr.new_token_ids)] == tr.new_token_ids
    rounds = []
    tr = generate(
        p,
        "hello",
        method="speculative",
        gamma=2,
        max_new_tokens=30,
        should_stop=lambda: len(rounds.append(1) or rounds) >= 3,
    )
    assert tr.summary.stop_reason == "cancelled" and len(tr.rounds) == 3


def test_padded_vocabulary_is_sliced(tmp_path):
    """Qwen-style: the models have more output rows than the tokenizer has tokens."""
    tok = char_tokenizer()
    pair = load_pair(*save_pair(tmp_path, "llama", tok, pad_vocab=13))
    assert pair.drafter.get_output_embeddings().weight.shape[0] == len(tok) + 13
    assert pair.vocab_size == len(tok)
    p = no_eos(pair)
    tr = generate(p, "hello", method="spec_cascade", temperature=1.0, max_new_tokens=40, seed=0)
    assert max(tr.new_token_ids) < len(tok)
    ref = generate(p, "hello", method="verifier", temperature=0, max_new_tokens=20)
    sd = generate(p, "hello", method="speculative", temperature=0, max_new_tokens=20)
    assert sd.new_token_ids == ref.new_token_ids


def test_mixed_architectures_share_a_tokenizer(tiny_dirs):
    pair = no_eos(load_pair(tiny_dirs["llama"][0], tiny_dirs["gpt2"][1]))
    ids = pair.encode("hello")
    tr = generate(pair, ids, method="speculative", temperature=0, gamma=3, max_new_tokens=20)
    assert tr.new_token_ids == hf_greedy(pair.verifier, ids, 20)


def test_bfloat16_models_float32_probabilities(tiny_dirs):
    pair = load_pair(*tiny_dirs["llama"], dtype="bfloat16")
    assert pair.verifier.dtype == torch.bfloat16
    tr = generate(pair, "hello", method="spec_cascade", max_new_tokens=12, seed=0)
    assert tr.tokens and all(isinstance(t.p, float) for t in tr.tokens)
    # The record holds the verifier's top-10 (id, T = 1 probability): distinct ids, sorted,
    # headed by max p, at most all the mass, and the mass a fresh forward puts on those ids.
    with torch.no_grad():
        ids = torch.tensor([tr.prompt_ids + tr.new_token_ids])
        fresh = torch.softmax(pair.verifier(ids).logits[0, :, : pair.vocab_size].float(), -1)
    start = len(tr.prompt_ids) - 1  # row start + i predicts new token i
    for t in tr.tokens:
        top_ids, mass = [i for i, _ in t.top_p], [x for _, x in t.top_p]
        assert len(top_ids) == 10 == len(set(top_ids)) and mass == sorted(mass, reverse=True)
        assert mass[0] == t.max_p and dict(t.top_p).get(t.token_id, t.p) == t.p
        assert 0 < sum(mass) <= 1 + 1e-5
        # bf16 forward with a KV cache vs. one full bf16 forward: equal up to bf16 rounding
        # (seen: < 6e-4; the drafter's top-10 mass differs from the verifier's by ~0.01-0.1)
        expected = fresh[start + t.position, top_ids].sum().item()
        assert sum(mass) == pytest.approx(expected, abs=5e-3)


def test_auto_dtype_is_float32_on_cpu(llama_pair):
    assert llama_pair.dtype == torch.float32 and llama_pair.device.type == "cpu"


# -- bad input -------------------------------------------------------------------------------


def test_tokenizer_mismatch_names_both_models(tmp_path, tiny_dirs):
    other = save_pair(tmp_path, "llama", char_tokenizer("zyxwvutsrqponmlkjihgfedcba .?!,"))
    with pytest.raises(TokenizerMismatchError) as err:
        load_pair(tiny_dirs["llama"][0], other[1])
    assert tiny_dirs["llama"][0] in str(err.value) and other[1] in str(err.value)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(method="nope"), "unknown method 'nope'"),
        (dict(method="spec_cascade", rule="nope"), "unknown rule 'nope'"),
        (dict(method="spec_cascade", rule="lossy"), "spec_cascade needs a rule"),
        (dict(max_new_tokens=0), r"max_new_tokens must be in \[1, 4096\]"),
        (dict(max_new_tokens=10**6), r"max_new_tokens must be in \[1, 4096\]"),
        (dict(max_new_tokens="10"), "max_new_tokens must be an integer"),
        (dict(gamma=0), r"gamma must be in \[1, 32\]"),
        (dict(alpha=2.0), r"alpha for token_v3 must be in \[-0.1, 1\]"),
        (dict(rule="chow", alpha=float("nan")), "alpha for chow must be a number"),
        (dict(temperature=-1.0), r"temperature must be in \[0, 10\]"),
        (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
        (dict(top_k=-1), "top_k must be in >= 0"),
        (dict(seed=-3), "seed must be in"),
        (dict(stop=[""]), "stop strings must be non-empty"),
    ],
)
def test_bad_settings_are_refused_before_any_model_runs(llama_pair, kwargs, match):
    calls = []
    hooks = [
        m.register_forward_pre_hook(lambda module, args: calls.append(module))
        for m in (llama_pair.drafter, llama_pair.verifier)
    ]
    try:
        with pytest.raises(SettingsError, match=match):
            generate(llama_pair, "hello", **kwargs)
        assert calls == []  # neither model ran a forward pass
        generate(llama_pair, "hello", max_new_tokens=2)
        assert calls  # the hooks do see forwards: the check above is not vacuous
    finally:
        for h in hooks:
            h.remove()


@pytest.mark.parametrize("prompt", ["", "   \n\t", []])
def test_empty_prompts(llama_pair, prompt):
    with pytest.raises(PromptError, match="empty|no tokens"):
        generate(llama_pair, prompt)


def test_prompt_ids_out_of_vocab_and_too_long(llama_pair):
    with pytest.raises(PromptError, match="outside the shared vocabulary"):
        generate(llama_pair, [1, 2, 10_000])
    with pytest.raises(PromptError, match="context is 256"):
        generate(llama_pair, [5] * 300)
    tr = generate(no_eos(llama_pair), [5] * 250, max_new_tokens=20, temperature=0)
    assert len(tr.new_token_ids) == 6 and tr.summary.stop_reason == "context"
    assert "capped" in tr.summary.notes[0]


def test_model_load_errors(tmp_path, tiny_dirs, monkeypatch):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_pair("./no/such/folder", tiny_dirs["llama"][1])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    with pytest.raises(ModelLoadError, match="cannot load"):
        load_pair(str(broken), tiny_dirs["llama"][1])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="unreachable"):
        load_pair("someone/not-cached-model", tiny_dirs["llama"][1])


def test_a_character_split_over_byte_tokens_is_shown_once_on_the_token_that_completes_it():
    """SmolLM2's byte-level tokenizer writes many Chinese characters as 2-3 tokens: every
    token's text is what it adds to the answer, never a U+FFFD, and the pieces join to the
    answer's text."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from speccascade.core.engine import _Output
    from speccascade.core.trace import TokenRecord
    from speccascade.models.assets import MODELS

    tok = AutoTokenizer.from_pretrained(MODELS / "smollm2-drafter")
    decode = lambda ids, skip_special_tokens=True: tok.decode(  # noqa: E731
        ids, skip_special_tokens=skip_special_tokens
    )
    pair = SimpleNamespace(decode=decode, eos_ids=frozenset({2}))
    text = "法国的首都是巴黎。 Paris, café — 日本"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > len(text.replace(" ", "")) // 2 and "\ufffd" in tok.decode(ids[:2])
    out = _Output(pair, budget=100, capped=False, stop=())
    pieces = []
    for start in range(0, len(ids), 3):  # rounds of three tokens, as a speculative run admits
        records = [
            TokenRecord(position=start + j, token_id=x, text="", source="accepted", round=0)
            for j, x in enumerate(ids[start : start + 3])
        ]
        pieces += [r.text for r in out.admit(records)]
    assert "".join(pieces) == text == out.text
    assert not any("\ufffd" in piece for piece in pieces)
    assert "" in pieces  # the first tokens of a split character add no text yet


def test_the_kept_share_counts_the_drafts_up_to_the_end_of_the_text():
    """Where an end of text falls inside a window's kept drafts, the drafts after it were
    verified too (the round's counts keep them for the projector) but never shown: the
    summary's kept drafts are the answer's own accepted tokens, and its drafted ones end there
    too. "who is buzz aldrin?" at the app's defaults ended a window with [EOS, x, y, ...] kept
    up to y, and the page said 23 of 25 kept with every shown draft kept. Every panel counts
    the same way: "Who is Buzz Aldrin?" said 21 of 21 kept while its drafting chart's last
    window kept 3 of 5 and its stats said 2 drafts not kept."""
    from speccascade.core.engine import APP_DEFAULTS
    from speccascade.core.trace import RoundRecord, drafts_in_text
    from speccascade.models.presets import load_preset
    from speccascade.views.timeline import drafting, timeline

    def rnd(drafted, accepted, emitted):
        return RoundRecord(0, 0.0, 0.0, 0.0, drafted, accepted, emitted, drafted, 1)

    assert drafts_in_text([rnd(5, 1, 2), rnd(5, 3, 1)]) == (6, 2)  # cut inside kept drafts
    assert drafts_in_text([rnd(5, 1, 2), rnd(5, 5, 6)]) == (10, 6)  # a bonus: nothing cut
    assert drafts_in_text([rnd(5, 1, 2), rnd(4, 4, 4)]) == (9, 5)  # the budget ended it
    assert drafts_in_text([rnd(5, 2, 3)]) == (5, 2)  # rejected: untested drafts still count
    demo = load_preset(None)
    cut = 0
    for prompt in ("who is buzz aldrin?", "Who is Buzz Aldrin?", "Who wrote Hamlet?"):
        for gamma in (4, 5):
            tr = generate(demo, prompt, APP_DEFAULTS, gamma=gamma)
            shown = sum(t.source == "accepted" for t in tr.tokens)
            assert tr.summary.accepted == shown, (prompt, gamma)
            assert tr.summary.drafted <= sum(r.drafted for r in tr.rounds)
            cut += tr.summary.drafted < sum(r.drafted for r in tr.rounds)
            # the stats: every drafter forward on a draft the answer does not show
            made = sum(r.drafted for r in tr.rounds)
            assert tr.summary.wasted_drafts == made - shown, (prompt, gamma)
            # the drafting chart: its kept line and its per-position counts
            fig = drafting(tr)
            kept_line = next(d for d in fig.data if d.name == "kept")
            assert sum(kept_line.y) == shown, (prompt, gamma)
            bars = fig.data[0]
            assert sum(int(x.split("/")[0]) for x in bars.text) == shown, (prompt, gamma)
            kept_bars = next(d for d in timeline(tr).data if d.name == "kept")
            assert sum(kept_bars.y) == shown, (prompt, gamma)
            if tr.summary.acceptance_rate == 1.0:
                assert set(tr.summary.acceptance_by_position) <= {1.0, None}, (prompt, gamma)
    assert cut, "the test needs a run whose text ends inside kept drafts"

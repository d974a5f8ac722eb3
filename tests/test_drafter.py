"""The drafter class (models.drafter): a frequency-ranked draft vocabulary (an output layer
over some tokens, every other token probability 0 in q) and a lookup mixture (weight w_n on
the token that followed the context's last n tokens before). The method stays exact: METHOD.md's
facts hold for any q the drafts are drawn from, including these."""

from __future__ import annotations

import pytest
import torch
from test_engine import _law_check
from tiny import build_model, char_tokenizer, save_pair
from transformers import AutoModelForCausalLM

from speccascade.core.engine import generate
from speccascade.core.sampling import Sampler, check_finite
from speccascade.models.drafter import (
    DrafterConfig,
    DrafterLlamaForCausalLM,
    DraftVocabHead,
    fill_value,
    head_rows,
    lookup,
    make_drafter,
    mix_lookup,
)
from speccascade.models.loading import load_pair

# char_tokenizer("abcde"): <pad> 0, <s> 1, </s> 2, a..e 3..7. The drafter never drafts c or e.
KEPT = [0, 1, 2, 3, 4, 6]


def test_the_trimmed_head_keeps_its_rows_and_gives_the_rest_probability_zero():
    model = build_model("llama", 8, 16, 1, seed=3, scale=3.0)
    trimmed = make_drafter(model, draft_vocab=KEPT)
    ids = torch.tensor([[1, 3, 4, 6, 5]])
    with torch.no_grad():
        full, cut = model(ids).logits, trimmed(ids).logits
    assert cut.shape == full.shape and head_rows(trimmed) == 8
    assert torch.allclose(cut[..., KEPT], full[..., KEPT], atol=1e-6)
    dropped = [i for i in range(8) if i not in KEPT]
    assert (cut[..., dropped] == fill_value(cut.dtype)).all()
    for temperature in (1.0, 0.05):  # finite (the engine refuses inf) and exactly 0
        check_finite(cut / temperature, "drafter")
        probs = Sampler(temperature, 0, 1.0, torch.Generator()).probs(cut[0])
        assert (probs[:, dropped] == 0).all() and torch.allclose(probs.sum(-1), torch.ones(5))
    # the argmax over the kept rows is the full model's argmax among them
    assert (cut.argmax(-1) == torch.tensor(KEPT)[full[..., KEPT].argmax(-1)]).all()


def test_a_draft_vocabulary_must_be_distinct_ids_inside_the_vocabulary():
    for ids in ([], [0, 0], [-1, 2], [3, 8]):
        with pytest.raises(ValueError, match="draft vocabulary"):
            DraftVocabHead(16, ids, 8)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):  # finite, and far below logits
        assert -torch.finfo(dtype).max < fill_value(dtype) <= -1e4


@pytest.fixture(scope="module")
def trimmed_pair(tmp_path_factory):
    """The small-vocabulary pair of test_engine, its drafter trimmed to KEPT, both saved and
    loaded back through load_pair (no remote code: importing speccascade registers the class)."""
    root = tmp_path_factory.mktemp("trimmed")
    drafter, verifier = save_pair(root, "llama", char_tokenizer("abcde"), seed=3, scale=3.0)
    folder = root / "trimmed-drafter"
    model = AutoModelForCausalLM.from_pretrained(drafter)
    make_drafter(model, draft_vocab=KEPT).save_pretrained(folder)
    char_tokenizer("abcde").save_pretrained(folder)
    pair = load_pair(str(folder), verifier)
    pair.eos_ids = frozenset()
    return pair


def test_a_trimmed_drafter_loads_as_its_own_class(trimmed_pair):
    import copy
    import pickle

    assert isinstance(trimmed_pair.drafter, DrafterLlamaForCausalLM)
    for clone in (
        copy.deepcopy(trimmed_pair.drafter),
        pickle.loads(pickle.dumps(trimmed_pair.drafter)),
    ):
        assert isinstance(clone, DrafterLlamaForCausalLM) and len(clone._contexts) == 0
    assert trimmed_pair.drafter.config.draft_vocab == KEPT
    assert trimmed_pair.vocab_size == 8  # the full vocabulary, not the head's 6 rows


@pytest.mark.parametrize(
    "kw,gamma,tokens",
    [
        (dict(method="speculative", temperature=1.0), 1, 2),
        (dict(method="spec_cascade", rule="token_v3", alpha=0.3, temperature=1.0), 1, 2),
        (dict(method="block", temperature=1.0), 3, 3),  # a joint test across a window of 3
    ],
)
def test_the_law_with_a_trimmed_drafter_is_the_target(trimmed_pair, kw, gamma, tokens, capsys):
    """Fact 3 where q gives 0 to c and e: SD and block verification still emit exactly p
    (the residual writes c and e), the cascade exactly its pi."""
    _law_check(trimmed_pair, kw, gamma, tokens, capsys)


def test_greedy_sd_with_a_trimmed_drafter_is_the_verifiers_greedy_output(trimmed_pair):
    """Fact 1 (greedy SD = the verifier alone) with drafts that can never be c or e, while the
    verifier's own output uses them."""
    verifier_ids, drafted = [], set()
    for prompt in ([1, 3, 4], [1, 5, 7, 3], [1, 6]):
        alone = generate(trimmed_pair, prompt, method="verifier", temperature=0, max_new_tokens=24)
        for gamma in (1, 3, 5):
            sd = generate(
                trimmed_pair, prompt, method="speculative", gamma=gamma, temperature=0,
                max_new_tokens=24,
            )  # fmt: skip
            assert sd.new_token_ids == alone.new_token_ids
            drafted |= {i for r in sd.rounds for i in r.draft_ids}
        verifier_ids += alone.new_token_ids
    assert drafted <= set(KEPT)
    assert {5, 7} & set(verifier_ids), "the test needs the verifier to write a dropped token"


# --- the lookup mixture ---------------------------------------------------------------------

WEIGHTS = [0.3, 0.6, 0.8]  # high, so that the tiny vocabulary's many repeats move q often


def brute_lookup(ctx: list[int], longest: int, skip: frozenset[int] = frozenset()):
    """The definition: the longest suffix first, its latest earlier occurrence whose next
    token neither is a control token nor comes right before one."""
    for n in range(min(longest, len(ctx) - 1), 0, -1):
        for i in range(len(ctx) - n - 1, -1, -1):
            after = i + n
            ends_turn = ctx[after] in skip or (after + 1 < len(ctx) and ctx[after + 1] in skip)
            if ctx[i:after] == ctx[len(ctx) - n :] and not ends_turn:
                return ctx[after], n
    return None


def test_lookup_finds_the_latest_occurrence_of_the_longest_recurring_suffix():
    rng = torch.Generator().manual_seed(0)
    for skip in (frozenset(), frozenset({0})):
        for _ in range(3000):
            size = int(torch.randint(1, 30, (1,), generator=rng))
            ctx = torch.randint(0, 4, (size,), generator=rng)
            assert lookup(ctx, 4, skip) == brute_lookup(ctx.tolist(), 4, skip)
    assert lookup(torch.tensor([5, 6, 7, 5, 6]), 4) == (7, 2)
    assert lookup(torch.tensor([5, 6, 7]), 4) is None
    assert lookup(torch.tensor([-1, 6, -1]), 4) is None  # unknown positions never match
    # the end of a turn is not copied: "?" then <|im_end|> (2) after an echoed question
    assert lookup(torch.tensor([5, 6, 9, 2, 5, 6]), 4, frozenset({2})) is None
    assert lookup(torch.tensor([5, 6, 9, 7, 2, 5, 6]), 4, frozenset({2})) == (9, 2)


def test_the_mixture_is_the_promised_law_and_keeps_zeros():
    logits = torch.randn(8, generator=torch.Generator().manual_seed(1))
    logits[[5, 7]] = fill_value(torch.float32)  # outside a draft vocabulary
    p = torch.softmax(logits, -1)
    for ctx, token, n in (([1, 3, 2, 1, 3], 2, 2), ([4, 7, 4], 7, 1)):  # 7: outside, copied
        mixed = mix_lookup(logits.clone(), torch.tensor(ctx), WEIGHTS)
        w = WEIGHTS[n - 1]
        want = (1 - w) * p
        want[token] += w
        assert torch.allclose(torch.softmax(mixed, -1), want, atol=1e-6)
        assert torch.softmax(mixed, -1)[5] == 0  # a zero stays exactly zero
    assert torch.equal(mix_lookup(logits.clone(), torch.tensor([1, 2, 3]), WEIGHTS), logits)
    with pytest.raises(ValueError, match="lookup weights"):
        DrafterConfig(lookup_weights=[0.5, 1.0])


@pytest.fixture(scope="module")
def lookup_pair(tmp_path_factory):
    """The small-vocabulary pair with its drafter trimmed to KEPT and mixing in the lookup
    (never of <pad>, <s>, </s>)."""
    root = tmp_path_factory.mktemp("lookup")
    drafter, verifier = save_pair(root, "llama", char_tokenizer("abcde"), seed=3, scale=3.0)
    folder = root / "lookup-drafter"
    model = AutoModelForCausalLM.from_pretrained(drafter)
    make_drafter(model, KEPT, WEIGHTS, lookup_skip=[0, 1, 2]).save_pretrained(folder)
    char_tokenizer("abcde").save_pretrained(folder)
    pair = load_pair(str(folder), verifier)
    pair.eos_ids = frozenset()
    return pair


def test_the_cached_drafter_sees_the_whole_context_after_crops(lookup_pair):
    """The mixture reads the context kept beside each KV cache: step by step, after a crop
    (a rejection) and beside a second cache, its logits equal one uncached forward of the
    whole sequence."""
    from speccascade.core.engine import _LM

    model = lookup_pair.drafter
    seq = torch.tensor([1, 3, 4, 3, 4, 6, 3, 4, 3, 6, 4, 3, 4, 3])

    def whole(ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids=ids.view(1, -1)).logits[0, -1]

    with torch.no_grad():
        lm, other = (_LM(model, 8, torch.device("cpu"), "drafter") for _ in range(2))
        other.forward(torch.tensor([1, 6, 6, 6]))  # a second run's cache, interleaved
        got = lm.forward(seq[:4])
        assert torch.allclose(got[0], whole(seq[:4]), atol=1e-5)
        for end in range(5, 12):
            got = lm.forward(seq[end - 1 : end])
            other.forward(torch.tensor([6]))
            assert torch.allclose(got[0], whole(seq[:end]), atol=1e-5)
        lm.crop(4)  # back to seq[:7], then a different token
        got = lm.forward(torch.tensor([4]))
        assert torch.allclose(got[0], whole(torch.cat([seq[:7], torch.tensor([4])])), atol=1e-5)
        several = lm.forward(seq[8:12], keep=3)  # a window, as in verification
        for j, end in enumerate((10, 11, 12)):
            want = whole(torch.cat([seq[:7], torch.tensor([4]), seq[8:end]]))
            assert torch.allclose(several[j], want, atol=1e-5)
    # the mixture acted on these very rows (else this test could not see a wrong context)
    plain = make_drafter(model, lookup_weights=[])
    with torch.no_grad():
        mixed = [whole(seq[:end]) for end in range(5, 12)]
        unmixed = [plain(input_ids=seq[:end].view(1, -1)).logits[0, -1] for end in range(5, 12)]
    assert sum(not torch.allclose(a, b) for a, b in zip(mixed, unmixed)) >= 3


@pytest.mark.parametrize(
    "kw,gamma,tokens",
    [
        (dict(method="speculative", temperature=1.0), 2, 3),
        (dict(method="spec_cascade", rule="token_v3", alpha=0.3, temperature=1.0), 2, 3),
    ],
)
def test_the_law_with_a_lookup_drafter_is_the_target(lookup_pair, kw, gamma, tokens, capsys):
    """Fact 3 with q the mixture, over three tokens (so the cached context matters): SD emits
    exactly p, the cascade exactly its pi."""
    _law_check(lookup_pair, kw, gamma, tokens, capsys)


def test_greedy_sd_with_a_lookup_drafter_is_the_verifiers_greedy_output(lookup_pair):
    for prompt in ([1, 3, 4, 3, 4], [1, 5, 7, 3], [1, 6, 6]):
        alone = generate(lookup_pair, prompt, method="verifier", temperature=0, max_new_tokens=24)
        for gamma in (1, 4):
            sd = generate(
                lookup_pair, prompt, method="speculative", gamma=gamma, temperature=0,
                max_new_tokens=24,
            )  # fmt: skip
            assert sd.new_token_ids == alone.new_token_ids


# --- the lean decode step -------------------------------------------------------------------


def _steps(model, lean: bool) -> list[torch.Tensor]:
    """Logits of a cached run as the engine drives a drafter: a prompt, single tokens, a
    window of two after a bonus token, a crop (a rejection), with and without logits_to_keep."""
    from transformers import DynamicCache

    model.lean_decode = lean
    cache, out = DynamicCache(config=model.config), []
    try:
        with torch.no_grad():
            out.append(model(input_ids=torch.tensor([[1, 3, 4, 3, 6]]), cache=cache).logits)
            for j, ids in enumerate(([4], [3], [6, 4], [3], [4, 4, 6], [3])):
                keep = 0 if j % 2 else 1
                if j == 4:
                    cache.crop(-2)
                out.append(
                    model(input_ids=torch.tensor([ids]), cache=cache, logits_to_keep=keep).logits
                )
    finally:
        model.lean_decode = True
    return out


@pytest.mark.parametrize("heads,kv_heads", [(2, 2), (4, 2), (3, 1)])
def test_the_lean_decode_step_gives_transformers_logits(heads, kv_heads):
    """decode_step runs the same products as LlamaForCausalLM's forward (prefill, single
    tokens, windows after a cache, crops; grouped-query heads too) and the drafter's mixture
    on top of it, so the logits agree with transformers' own forward."""
    from transformers import DynamicCache

    from speccascade.models.drafter import lean_decode_ok

    base = build_model("llama", 8, 24, 2, seed=5, scale=3.0, heads=heads, kv_heads=kv_heads)
    for drafter in (make_drafter(base, KEPT), make_drafter(base, KEPT, WEIGHTS, [0, 1, 2])):
        assert lean_decode_ok(drafter, torch.tensor([[1]]), DynamicCache(config=drafter.config))
        lean, plain = _steps(drafter, True), _steps(drafter, False)
        assert [a.shape for a in lean] == [b.shape for b in plain]
        for a, b in zip(lean, plain):
            assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()


def test_the_lean_decode_step_leaves_what_it_cannot_run_to_transformers(monkeypatch):
    """Training, a mask, an embedding input, no cache or half precision: transformers' forward
    runs them (decode_step is never called)."""
    from transformers import DynamicCache

    import speccascade.models.drafter as drafter_module

    model = make_drafter(build_model("llama", 8, 16, 1, seed=3, scale=3.0), KEPT)
    ids = torch.tensor([[1, 3, 4]])

    def refuse(*args, **kwargs):
        raise AssertionError("decode_step ran")

    monkeypatch.setattr(drafter_module, "decode_step", refuse)
    with torch.no_grad():
        model(input_ids=ids)  # no cache
        model(input_ids=ids, attention_mask=torch.ones_like(ids), cache=DynamicCache())
        model(inputs_embeds=model.model.embed_tokens(ids), cache=DynamicCache())
        model.half()(input_ids=ids, cache=DynamicCache(config=model.config))
    model.float().train()
    model(input_ids=ids, cache=DynamicCache(config=model.config))


def test_a_trimmed_head_trains_after_an_inference_mode_pass():
    """Distillation measures agreement under inference_mode between training steps: the head's
    index tensor made then must not poison the next backward pass."""
    trimmed = make_drafter(build_model("llama", 8, 16, 1, seed=3, scale=3.0), draft_vocab=KEPT)
    ids = torch.tensor([[1, 3, 4, 6, 5]])
    with torch.inference_mode():
        trimmed(ids)
    trimmed.train()
    trimmed(ids).logits[..., KEPT].logsumexp(-1).sum().backward()
    assert trimmed.get_output_embeddings().weight.grad is not None

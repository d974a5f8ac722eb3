"""Blocked weights (models.blocked, blocked.c) and attention without grouped-query copies
(models.attention): rows bit for bit the same whatever the row count, the same numbers as
PyTorch's kernels within float32 rounding, greedy SD token-identical to `generate()`, all or
nothing changed where the kernel cannot run. Speed is BENCHMARKS.md's, not asserted here."""

from __future__ import annotations

import copy

import pytest
import torch
from tiny import build_model, char_tokenizer
from transformers import DynamicCache

from speccascade import generate, load_pair
from speccascade.core.errors import ModelLoadError
from speccascade.models import attention, blocked, kernels
from speccascade.models.blocked import (
    BLOCKED_MAX_ROWS,
    BlockedLinear,
    block_linears,
    blocked_library,
)

# CI sets SPECCASCADE_REQUIRE_KERNEL=1: there a kernel that does not build fails these tests
# instead of skipping them (tests/needs.py)
needs_kernel = pytest.mark.needs("KERNEL")


def _gqa_model(vocab: int, seed: int, scale: float = 1.0, kv_heads: int = 2):
    """Llama, hidden 128 (its attention and MLP layers are large enough to block), 4 query
    heads sharing `kv_heads` key/value heads."""
    return build_model("llama", vocab, 128, 2, seed, scale, heads=4, kv_heads=kv_heads)


@pytest.fixture(scope="module")
def gqa_dirs(tmp_path_factory) -> tuple[str, str]:
    """A Llama pair with grouped-query attention (4 query heads, 2 key/value heads), wide
    enough (hidden 128) that its attention and MLP layers are blocked."""
    root = tmp_path_factory.mktemp("gqa")
    tok = char_tokenizer()
    out = []
    for role, seed in (("drafter", 5), ("verifier", 6)):
        model = _gqa_model(len(tok), seed, scale=8.0)  # sharper laws: greedy has clear choices
        model.save_pretrained(root / role)
        tok.save_pretrained(root / role)
        out.append(str(root / role))
    return out[0], out[1]


def _blocked(model) -> int:
    return sum(isinstance(m, BlockedLinear) and m.active for m in model.modules())


@needs_kernel
@pytest.mark.parametrize(
    "in_features,out_features,bias", [(128, 256, False), (129, 100, True), (128, 160, True)]
)
def test_a_blocked_row_is_the_same_whatever_rows_are_beside_it(in_features, out_features, bias):
    """Each output is summed in one order whatever the row count (blocked.c), so a
    verification's rows equal one-token steps bit for bit; odd widths and biases included."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(in_features, out_features, bias=bias)
    layer = BlockedLinear(linear)
    with torch.inference_mode():
        x = torch.randn(BLOCKED_MAX_ROWS, in_features)
        one = torch.cat([layer(x[i : i + 1]) for i in range(len(x))])
        torch.testing.assert_close(one, linear(x), rtol=1e-5, atol=1e-5)
        for rows in (2, 3, 5, 8, 9, BLOCKED_MAX_ROWS):
            assert torch.equal(layer(x[:rows]), one[:rows]), rows
        batch = x[:6].view(2, 3, in_features)  # [batch, positions, features]
        assert torch.equal(layer(batch), one[:6].view(2, 3, -1))
        strided = torch.randn(in_features, 4).t()  # not contiguous
        assert torch.equal(layer(strided), torch.cat([layer(r[None]) for r in strided]))
        big = torch.randn(1, BLOCKED_MAX_ROWS + 1, in_features)  # a prefill: PyTorch's kernel
        assert torch.equal(layer(big), linear(big))
    assert layer(torch.randn(2, in_features, requires_grad=True)).requires_grad  # autograd


@needs_kernel
def test_a_weight_changed_in_place_is_not_read_from_stale_blocks():
    torch.manual_seed(0)
    linear = torch.nn.Linear(128, 128, bias=False)
    layer = BlockedLinear(linear)
    assert layer.active
    with torch.no_grad():
        linear.weight.mul_(2.0)  # e.g. load_state_dict or a merged adapter
    assert not layer.active
    with torch.inference_mode():
        x = torch.randn(3, 128)
        assert torch.equal(layer(x), linear(x))
    copy.deepcopy(layer)  # the kernel is looked up per call: the module copies and pickles


@needs_kernel
def test_blocked_pair_matches_the_default_kernels_and_sd_is_exact(gqa_dirs):
    fast = load_pair(*gqa_dirs, kernels="blocked")
    plain = load_pair(*gqa_dirs, kernels="default")
    # per layer q, o, gate, up, down (k and v, 128 x 64, are below MIN_WEIGHTS)
    assert _blocked(fast.verifier) == 2 * 5 and _blocked(plain.verifier) == 0
    assert fast.verifier.config._attn_implementation == attention.SDPA_GQA
    assert plain.verifier.config._attn_implementation == "sdpa"
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(fast.verifier) == count(plain.verifier)
    assert fast.verifier.state_dict().keys() == plain.verifier.state_dict().keys()
    ids = torch.tensor([fast.encode("the quick brown fox?")])
    with torch.inference_mode():
        for n in (1, 3, 8):
            a = fast.verifier(input_ids=ids[:, : 10 + n]).logits
            b = plain.verifier(input_ids=ids[:, : 10 + n]).logits
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    for prompt in ("the quick brown fox?", "hello there. ", "a b c d e"):
        alone = generate(fast, prompt, method="verifier", temperature=0, max_new_tokens=24)
        ref = generate(plain, prompt, method="verifier", temperature=0, max_new_tokens=24)
        assert alone.new_token_ids == ref.new_token_ids
        for gamma in (2, 4, 7):
            sd = generate(fast, prompt, method="speculative", temperature=0, gamma=gamma,
                          max_new_tokens=24)  # fmt: skip
            assert sd.new_token_ids == alone.new_token_ids, (prompt, gamma)


@needs_kernel
def test_auto_blocks_only_models_larger_than_the_caches(gqa_dirs, tiny_dirs, monkeypatch):
    assert _blocked(load_pair(*gqa_dirs, kernels="auto").verifier) == 0  # 0.2M weights
    assert _blocked(load_pair(*tiny_dirs["llama"], kernels="auto").verifier) == 0
    monkeypatch.setattr(kernels, "AUTO_MIN_WEIGHTS", 1 << 16)  # as if it were SmolLM2's size
    pair = load_pair(*gqa_dirs, kernels="auto")
    assert _blocked(pair.verifier) == 2 * 5 and _blocked(pair.drafter) == 2 * 5
    monkeypatch.setattr(kernels, "AUTO_MAX_MEMORY_SHARE", 1e-9)  # the copy would not fit
    assert _blocked(load_pair(*gqa_dirs, kernels="auto").verifier) == 0


@needs_kernel
def test_a_layer_the_kernel_gets_wrong_leaves_the_whole_model_as_it_was(gqa_dirs, monkeypatch):
    calls = []

    def second_fails(layer, linear):
        calls.append(1)
        return len(calls) != 2

    monkeypatch.setattr(blocked, "_agrees", second_fails)
    model = build_model("llama", 40, 128, 2, 0, 1.0)
    assert block_linears(model) == (0, "the compiled kernel disagrees with PyTorch's product")
    assert not any(isinstance(m, BlockedLinear) for m in model.modules())
    calls.clear()
    with pytest.raises(ModelLoadError, match="disagrees"):
        load_pair(*gqa_dirs, kernels="blocked")


def test_without_a_compiler_blocked_is_a_clear_error_and_auto_changes_nothing(
    gqa_dirs, tmp_path, monkeypatch
):
    plain = load_pair(*gqa_dirs, kernels="default")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("SPECCASCADE_CACHE", str(tmp_path))
    monkeypatch.setattr(kernels, "AUTO_MIN_WEIGHTS", 1 << 16)
    blocked_library.cache_clear()
    try:
        with pytest.raises(ModelLoadError, match="kernels='blocked' cannot run here: no C"):
            load_pair(*gqa_dirs, kernels="blocked")
        pair = load_pair(*gqa_dirs, kernels="auto")
        assert _blocked(pair.verifier) == 0
        assert pair.verifier.config._attn_implementation == "sdpa"
        want = generate(plain, "hello", temperature=0, max_new_tokens=8).new_token_ids
        assert generate(pair, "hello", temperature=0, max_new_tokens=8).new_token_ids == want
    finally:
        blocked_library.cache_clear()
    half = build_model("llama", 40, 128, 1, 0, 1.0).to(torch.float16)
    assert block_linears(half)[0] == 0  # float16 layers are not candidates
    lib, why = blocked_library()  # the reason given: no candidate layer, or no kernel at all
    assert ("no float32 CPU nn.Linear" if lib is not None else why) in block_linears(half)[1]


def test_grouped_query_attention_without_copies_is_bit_identical(monkeypatch):
    """sdpa_gqa (grouped heads left to SDPA) gives transformers' sdpa logits bit for bit: the
    prefill, one token and 2-8 tokens after a cache, and a left-padded batch of two."""
    plain = _gqa_model(64, 0)
    cfg = plain.config
    gqa = copy.deepcopy(plain)
    assert attention.use_sdpa_gqa(gqa) and gqa.config._attn_implementation == "sdpa_gqa"
    assert not attention.use_sdpa_gqa(gqa)  # once
    assert not attention.use_sdpa_gqa(_gqa_model(64, 0, kv_heads=4))  # no groups: as is
    calls = []
    real = attention.sdpa_gqa
    monkeypatch.setitem(
        attention.AttentionInterface._global_mapping, "sdpa_gqa",
        lambda *a, **k: calls.append(a[4] is not None) or real(*a, **k),
    )  # fmt: skip
    ids = torch.randint(3, 64, (1, 30))
    with torch.inference_mode():
        assert torch.equal(gqa(input_ids=ids).logits, plain(input_ids=ids).logits)
        for n in range(1, 9):
            out = []
            for model in (gqa, plain):
                cache = DynamicCache(config=cfg)
                model(input_ids=ids[:, :-n], cache=cache, use_cache=True)
                out.append(model(input_ids=ids[:, -n:], cache=cache, use_cache=True).logits)
            assert torch.equal(*out), n
        mask = torch.ones(2, 30, dtype=torch.long)
        mask[1, :7] = 0  # the second row is left-padded
        batch = torch.cat([ids, ids.roll(3, 1)])
        a = gqa(input_ids=batch, attention_mask=mask).logits
        b = plain(input_ids=batch, attention_mask=mask).logits
        assert torch.equal(a[:, 7:], b[:, 7:])
    assert len(calls) == 2 * (1 + 2 * 8 + 1) and any(calls)  # it ran, masked calls included

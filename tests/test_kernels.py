"""Blocked weights (models.BlockedLinear) and oneDNN-packed ones (models.PackedLinear): the
same numbers as PyTorch's own kernels within float32 rounding (blocked: rows bit for bit the
same whatever the row count), the same greedy tokens, and nothing changed where they cannot
run; grouped-query attention without copies. Speed is measured in BENCHMARKS.md
(scripts/bench_smollm2.py), not asserted here."""

from __future__ import annotations

import pytest
import torch
from tiny import build_model, char_tokenizer
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from speccascade import generate, load_pair
from speccascade.core.errors import ModelLoadError
from speccascade.models import kernels
from speccascade.models.kernels import (
    BLOCKED_MAX_ROWS,
    ONE_ROW_PACKED_MIN_WEIGHTS,
    PACK_MIN_WEIGHTS,
    BlockedLinear,
    PackedLinear,
    block_linears,
    blocked_library,
    pack_linears,
)

needs_onednn = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="this PyTorch has no oneDNN"
)


@pytest.fixture(scope="module")
def wide_dirs(tmp_path_factory) -> tuple[str, str]:
    """A Llama pair wide enough (hidden 128) that its attention and MLP layers get packed."""
    root = tmp_path_factory.mktemp("wide")
    tok = char_tokenizer()
    out = []
    for role, layers, seed in (("drafter", 1, 5), ("verifier", 2, 6)):
        model = build_model("llama", len(tok), 128, layers, seed, scale=8.0)
        model.generation_config.eos_token_id = 2
        model.save_pretrained(root / role)
        tok.save_pretrained(root / role)
        out.append(str(root / role))
    return out[0], out[1]


def _packed(model) -> int:
    return sum(isinstance(m, PackedLinear) for m in model.modules())


@needs_onednn
def test_packed_pair_matches_the_default_kernels(wide_dirs):
    fast = load_pair(*wide_dirs, kernels="packed")
    plain = load_pair(*wide_dirs, kernels="default")
    assert _packed(fast.verifier) == 2 * 7 and _packed(plain.verifier) == 0
    # parameters are the same tensors (counts, tied weights, the roofline's sizes)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(fast.verifier) == count(plain.verifier)
    ids = torch.tensor([fast.encode("the quick brown fox?")])
    for n in (1, 3, 8):  # the verification widths the engine uses
        a = fast.verifier(input_ids=ids[:, : 10 + n]).logits
        b = plain.verifier(input_ids=ids[:, : 10 + n]).logits
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    # greedy: SD gives the verifier's own tokens, and the same tokens as the default kernels
    for prompt in ("the quick brown fox?", "hello there. ", "a b c d e"):
        sd = generate(fast, prompt, method="speculative", temperature=0, gamma=4, max_new_tokens=24)
        alone = generate(fast, prompt, method="verifier", temperature=0, max_new_tokens=24)
        ref = generate(plain, prompt, method="verifier", temperature=0, max_new_tokens=24)
        assert sd.new_token_ids == alone.new_token_ids == ref.new_token_ids


@needs_onednn
def test_small_layers_and_other_dtypes_stay_as_they_are(wide_dirs, tiny_dirs):
    tiny = load_pair(*tiny_dirs["llama"], kernels="auto")
    assert _packed(tiny.verifier) == 0  # the golden traces' pair keeps PyTorch's kernels
    assert all(
        m.weight.numel() < PACK_MIN_WEIGHTS
        for m in tiny.verifier.modules()
        if isinstance(m, torch.nn.Linear)
    )
    half = build_model("llama", 40, 128, 1, 0, 1.0).to(torch.float16)
    assert pack_linears(half) == 0  # float16 is never packed (oneDNN needs avx512_fp16)
    with pytest.raises(ModelLoadError, match="kernels='packed'"):
        pack_linears(half, required=True)


def test_unknown_kernels_is_a_clear_error(tiny_dirs):
    with pytest.raises(ModelLoadError, match="unknown kernels 'fast'"):
        load_pair(*tiny_dirs["llama"], kernels="fast")


@needs_onednn
def test_one_row_takes_pytorchs_kernel_on_small_layers_and_oneDNN_on_large_ones():
    torch.manual_seed(0)
    for out_features, plain_one_row in ((256, True), (ONE_ROW_PACKED_MIN_WEIGHTS // 128, False)):
        linear = torch.nn.Linear(128, out_features, bias=False)
        packed = PackedLinear(linear, torch.ops.mkldnn._reorder_linear_weight(linear.weight, 8))
        assert packed.one_row_plain is plain_one_row
        with torch.inference_mode():
            for shape in ((1, 1, 128), (1, 5, 128)):  # a one-token step, a verification
                x = torch.randn(shape)
                got, want = packed(x), linear(x)
                assert got.shape == want.shape
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
                if shape[1] == 1 and plain_one_row:
                    assert torch.equal(got, want)  # the very same kernel


# -- blocked weights (models.BlockedLinear, blocked.c) -----------------------------------------

needs_kernel = pytest.mark.skipif(
    blocked_library()[0] is None, reason=f"the blocked kernel cannot build: {blocked_library()[1]}"
)


def _blocked(model) -> int:
    return sum(isinstance(m, BlockedLinear) for m in model.modules())


@needs_kernel
@pytest.mark.parametrize("in_features,out_features,bias", [(128, 256, False), (129, 100, True)])
def test_a_blocked_row_is_the_same_whatever_rows_are_beside_it(in_features, out_features, bias):
    """Each output is summed in one order whatever the row count (blocked.c), so a
    verification's rows equal one-token steps bit for bit; odd widths and a bias included."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(in_features, out_features, bias=bias)
    layer = BlockedLinear(linear, blocked_library()[0])
    with torch.inference_mode():
        x = torch.randn(BLOCKED_MAX_ROWS, in_features)
        one = torch.cat([layer(x[i : i + 1]) for i in range(len(x))])
        torch.testing.assert_close(one, linear(x), rtol=1e-5, atol=1e-5)
        for rows in (2, 3, 5, 8, 9, BLOCKED_MAX_ROWS):
            assert torch.equal(layer(x[:rows]), one[:rows]), rows
        big = torch.randn(1, BLOCKED_MAX_ROWS + 1, in_features)  # a prefill: PyTorch's kernel
        assert torch.equal(layer(big), linear(big))
    grad = layer(torch.randn(2, in_features, requires_grad=True))  # autograd: PyTorch's kernel
    assert grad.requires_grad


@needs_kernel
def test_blocked_pair_matches_the_default_kernels(wide_dirs):
    fast = load_pair(*wide_dirs, kernels="blocked")
    plain = load_pair(*wide_dirs, kernels="default")
    assert _blocked(fast.verifier) == 2 * 7 and _blocked(plain.verifier) == 0
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
def test_auto_blocks_only_models_larger_than_the_caches(wide_dirs, tiny_dirs, monkeypatch):
    assert _blocked(load_pair(*wide_dirs, kernels="auto").verifier) == 0  # 0.3M weights
    assert _blocked(load_pair(*tiny_dirs["llama"], kernels="auto").verifier) == 0
    monkeypatch.setattr(kernels, "AUTO_MIN_WEIGHTS", 1 << 16)  # as if it were SmolLM2's size
    pair = load_pair(*wide_dirs, kernels="auto")
    assert _blocked(pair.verifier) == 2 * 7 and _blocked(pair.drafter) == 7


def test_without_a_compiler_blocked_is_a_clear_error_and_auto_changes_nothing(
    wide_dirs, tmp_path, monkeypatch
):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("SPECCASCADE_CACHE", str(tmp_path))
    monkeypatch.setattr(kernels, "AUTO_MIN_WEIGHTS", 1 << 16)
    kernels.blocked_library.cache_clear()
    try:
        with pytest.raises(ModelLoadError, match="kernels='blocked' cannot run here: no C"):
            load_pair(*wide_dirs, kernels="blocked")
        pair = load_pair(*wide_dirs, kernels="auto")
        assert _blocked(pair.verifier) == 0
        assert pair.verifier.config._attn_implementation == "sdpa"
        assert generate(pair, "hello", temperature=0, max_new_tokens=4).new_token_ids
    finally:
        kernels.blocked_library.cache_clear()
    half = build_model("llama", 40, 128, 1, 0, 1.0).to(torch.float16)
    with pytest.raises(ModelLoadError, match="needs a CPU float32 model"):
        block_linears(half, required=True)


def test_grouped_query_attention_without_copies_is_bit_identical():
    """sdpa_gqa leaves grouped heads to SDPA (no repeat_kv): the same logits as transformers'
    sdpa, for the prefill, a one-token step and a verification of 8 tokens after a cache."""
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128)  # fmt: skip
    plain = LlamaForCausalLM(cfg).eval()
    gqa = LlamaForCausalLM(cfg).eval()
    gqa.load_state_dict(plain.state_dict())
    assert kernels.use_sdpa_gqa(gqa) and gqa.config._attn_implementation == kernels.SDPA_GQA
    assert not kernels.use_sdpa_gqa(gqa)  # once
    ids = torch.randint(3, 64, (1, 30))
    with torch.inference_mode():
        assert torch.equal(gqa(input_ids=ids).logits, plain(input_ids=ids).logits)
        for n in (1, 8):
            caches = [DynamicCache(config=cfg), DynamicCache(config=cfg)]
            out = []
            for model, cache in zip((gqa, plain), caches):
                model(input_ids=ids[:, :-n], cache=cache, use_cache=True)
                out.append(model(input_ids=ids[:, -n:], cache=cache, use_cache=True).logits)
            assert torch.equal(*out), n


def test_the_cli_offers_every_kernel_choice():
    import argparse

    from speccascade.cli import _add_model_args

    parser = argparse.ArgumentParser()
    _add_model_args(parser)
    action = next(a for a in parser._actions if a.dest == "kernels")
    assert tuple(action.choices) == kernels.KERNELS

"""oneDNN-packed linear layers (models.PackedLinear): the same numbers as PyTorch's own
kernels within float32 rounding, the same greedy tokens, and nothing changed where they cannot
run; the kernel choices (blocked weights: tests/test_blocked.py). Speed is measured in
BENCHMARKS.md (scripts/bench_smollm2.py), not asserted here."""

from __future__ import annotations

import pytest
import torch
from tiny import build_model, char_tokenizer

from speccascade import generate, load_pair
from speccascade.core.errors import ModelLoadError
from speccascade.models import kernels
from speccascade.models.kernels import (
    ONE_ROW_PACKED_MIN_WEIGHTS,
    PACK_MIN_WEIGHTS,
    PackedLinear,
    pack_linears,
)

needs_onednn = pytest.mark.needs("ONEDNN")  # tests/needs.py; CI requires it


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


@needs_onednn
def test_a_layer_oneDNN_cannot_pack_leaves_the_whole_model_as_it_was(monkeypatch):
    real, calls = kernels._pack, []

    def second_fails(linear):
        calls.append(1)
        return None if len(calls) == 2 else real(linear)

    monkeypatch.setattr(kernels, "_pack", second_fails)
    model = build_model("llama", 40, 128, 2, 0, 1.0)
    assert pack_linears(model) == 0 and _packed(model) == 0


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


def test_the_cli_offers_every_kernel_choice():
    import argparse

    from speccascade.cli import _add_model_args

    parser = argparse.ArgumentParser()
    _add_model_args(parser)
    action = next(a for a in parser._actions if a.dest == "kernels")
    assert tuple(action.choices) == kernels.KERNELS

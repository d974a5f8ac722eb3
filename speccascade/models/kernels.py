"""How the CPU runs a model's linear layers, chosen at load (KERNELS): PyTorch's own kernels,
blocked weights (models.blocked: a small C kernel compiled on first use, with attention
without grouped-query copies, models.attention) that make a verification of up to 8 tokens
cost about one step, or oneDNN-packed weights (PackedLinear, here)."""

from __future__ import annotations

import os

import torch

from speccascade.core.errors import ModelLoadError
from speccascade.models.attention import use_sdpa_gqa
from speccascade.models.blocked import MIN_WEIGHTS, block_linears, large_linears

# How the CPU runs the models' linear layers (load_pair's `kernels`, SPECCASCADE_KERNELS):
# "auto" blocks a float32 CPU model whose linear weights do not fit in cache (AUTO_MIN_WEIGHTS)
# where the C kernel builds, and keeps PyTorch's own elsewhere; "blocked" and "packed" ask for
# BlockedLinear and PackedLinear; "default" is PyTorch's own.
KERNELS = ("auto", "blocked", "packed", "default")

# "auto" blocks models with at least this many linear weights (128 MiB in float32): there a
# step streams its weights from memory and MKL's few-row product is the verification's cost
# (SmolLM2-135M: 134M). The embedded demo pair (1.5M and 9.5M) stays on PyTorch's kernels:
# its weights stay in cache and its steps are a few milliseconds of calls.
AUTO_MIN_WEIGHTS = 1 << 25
# ... and while the blocked copy of those weights takes at most this share of the memory.
AUTO_MAX_MEMORY_SHARE = 0.25


# Weights are packed for this many rows: a verification of gamma + 1 <= 8 positions (tested:
# 1 to 8 rows all run near the one-row cost with it; a 1-row packing is slow for 4 to 8).
PACK_ROWS = 8


# Layers smaller than this stay as they are: their cost is the call, not the weights.
PACK_MIN_WEIGHTS = MIN_WEIGHTS  # blocked weights' rule too

# A single row through a packed layer smaller than this runs PyTorch's own kernel instead:
# there oneDNN's call costs more than the product (SmolLM2's 576 x 576: 0.046 against
# 0.024 ms; ~6 ms over a forward's 210 such layers), while a head this size (49,152 x 576)
# runs one row faster packed (5.9 against 9.5 ms).
ONE_ROW_PACKED_MIN_WEIGHTS = 1 << 22


class PackedLinear(torch.nn.Module):
    """A linear layer whose weight oneDNN has reordered once for small row counts.

    Why: on CPU, PyTorch's default float32 product of a few rows with a large weight (MKL's
    small-M path) costs 1.5-2x the one-row product, so a speculative verification of 2-8
    tokens costs 1.4-1.7x a one-token step and eats the drafts' savings. oneDNN's packed
    weights run 2 to 8 rows at near the cost of one packed row. One row through a small layer
    takes PyTorch's kernel (ONE_ROW_PACKED_MIN_WEIGHTS), so a one-token step (the drafter's,
    the verifier alone's) is never slower than with PyTorch's kernels. Neither route gives
    bit-identical rows across row counts (MKL's one-row and several-row products round
    differently, and so do oneDNN's for some shapes): greedy SD equals `generate()` to
    float32 rounding, which the tests check on real prompts. The original `weight` stays a
    parameter (shared storage, tied embeddings keep working, parameter counts stay right);
    the packed copy is an extra buffer."""

    def __init__(self, linear: torch.nn.Linear, packed: torch.Tensor):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.packed = packed
        self.one_row_plain = linear.weight.numel() < ONE_ROW_PACKED_MIN_WEIGHTS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.one_row_plain and x.numel() == self.in_features:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        rows = x.reshape(-1, self.in_features)
        y = torch.ops.mkldnn._linear_pointwise(rows, self.packed, self.bias, "none", [], "")
        return y.view(*x.shape[:-1], self.out_features)


def _pack(linear: torch.nn.Linear) -> torch.Tensor | None:
    """The oneDNN-packed weight, or None where this build or CPU cannot run it (checked on a
    real product against the plain one)."""
    w = linear.weight.detach()
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(w, PACK_ROWS)
        x = torch.ones(2, linear.in_features, dtype=w.dtype)
        got = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
    except (RuntimeError, AttributeError):
        return None
    tol = 1e-3 if w.dtype == torch.float32 else 5e-2
    want = x @ w.t()
    return packed if torch.allclose(got, want, rtol=tol, atol=tol * want.abs().max()) else None


def pack_linears(model: torch.nn.Module, required: bool = False) -> int:
    """Swap every large enough nn.Linear of a CPU float32/bfloat16 model for a PackedLinear,
    all or none; returns how many. Where oneDNN cannot run them, nothing changes (or,
    `required`, a ModelLoadError)."""
    weights = next(model.parameters(), None)
    usable = (
        weights is not None
        and weights.device.type == "cpu"
        and weights.dtype in (torch.float32, torch.bfloat16)
        and torch.backends.mkldnn.is_available()
    )
    found = large_linears(model) if usable else []
    packed = [_pack(child) for _, _, child in found]
    count = 0
    if found and all(p is not None for p in packed):  # all or none
        for (parent, name, child), p in zip(found, packed):
            setattr(parent, name, PackedLinear(child, p))
        count = len(found)
    if required and count == 0:
        raise ModelLoadError(
            "kernels='packed' needs a CPU model in float32 or bfloat16 and a PyTorch with "
            "oneDNN (torch.backends.mkldnn); use kernels='default'"
        )
    return count


# -- choosing ------------------------------------------------------------------------------


def linear_weights(model: torch.nn.Module) -> int:
    """How many weights the model's nn.Linear layers hold (tied ones once)."""
    seen = {id(m.weight): m.weight.numel() for m in model.modules() if type(m) is torch.nn.Linear}
    return sum(seen.values())


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _auto_blocks(model: torch.nn.Module) -> bool:
    """`auto` blocks a single-device CPU float32 model from AUTO_MIN_WEIGHTS linear weights
    on, while the blocks' copy (4 bytes a weight) stays under AUTO_MAX_MEMORY_SHARE of the
    machine's memory."""
    weights = next(model.parameters(), None)
    if weights is None or weights.device.type != "cpu" or weights.dtype != torch.float32:
        return False
    if len(set(getattr(model, "hf_device_map", {}).values())) > 1:
        return False
    n, memory = linear_weights(model), _memory_bytes()
    return n >= AUTO_MIN_WEIGHTS and (memory is None or 4 * n <= AUTO_MAX_MEMORY_SHARE * memory)


def set_kernels(model: torch.nn.Module, kernels: str) -> None:
    """Apply a KERNELS choice to a loaded model (load_pair's `kernels`). Blocked weights come
    with sdpa_gqa: together they make a verification of a few tokens cost about one step."""
    if kernels == "packed":
        pack_linears(model, required=True)
        return
    if kernels == "blocked" or (kernels == "auto" and _auto_blocks(model)):
        count, why = block_linears(model)
        if count:
            use_sdpa_gqa(model)
        elif kernels == "blocked":
            raise ModelLoadError(f"kernels='blocked' cannot run here: {why}; use kernels='default'")

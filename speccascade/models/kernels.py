"""How the CPU runs a model's linear layers: PyTorch's own kernels, weights in column blocks
(BlockedLinear, a small C kernel compiled on first use) that make a verification of up to 8
tokens cost about one step, or oneDNN-packed weights (PackedLinear)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from speccascade.core.errors import ModelLoadError

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


# Weights are packed for this many rows: a verification of gamma + 1 <= 8 positions (tested:
# 1 to 8 rows all run near the one-row cost with it; a 1-row packing is slow for 4 to 8).
PACK_ROWS = 8


# Layers smaller than this stay as they are: their cost is the call, not the weights.
PACK_MIN_WEIGHTS = 1 << 14

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
    """Swap every large enough nn.Linear of a CPU float32/bfloat16 model for a PackedLinear;
    returns how many. Where oneDNN cannot run them, nothing changes (or, `required`, a
    ModelLoadError)."""
    weights = next(model.parameters(), None)
    usable = (
        weights is not None
        and weights.device.type == "cpu"
        and weights.dtype in (torch.float32, torch.bfloat16)
        and torch.backends.mkldnn.is_available()
    )
    count = 0
    for parent in list(model.modules()) if usable else []:
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.numel() >= PACK_MIN_WEIGHTS:
                packed = _pack(child)
                if packed is None:
                    break
                setattr(parent, name, PackedLinear(child, packed))
                count += 1
    if required and count == 0:
        raise ModelLoadError(
            "kernels='packed' needs a CPU model in float32 or bfloat16 and a PyTorch with "
            "oneDNN (torch.backends.mkldnn); use kernels='default'"
        )
    return count


# -- blocked weights and the C kernel ---------------------------------------------------------

LANES = 16  # blocked.c: columns per block
BLOCKED_MAX_ROWS = 16  # more rows (a prompt's prefill) take PyTorch's kernel, made for them
_SOURCE = Path(__file__).with_name("blocked.c")
_BUILD_LOCK = threading.Lock()


def _cache_root() -> Path:
    env = os.environ.get("SPECCASCADE_CACHE", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "speccascade"


def _cpu_flags() -> str:
    """The CPU's feature flags (Linux), part of the build's cache key: -march=native builds for
    this CPU, and a cache folder can be shared by machines."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


@cache
def blocked_library() -> tuple[ctypes.CDLL | None, str]:
    """The compiled kernel and "", or None and why not ($CC, else cc or gcc, must build C
    with OpenMP). Built once per source, compiler and
    CPU into the cache folder ($SPECCASCADE_CACHE, else ~/.cache/speccascade/kernels), written
    to a temporary name and renamed, so concurrent processes never load half a file."""
    chosen = os.environ.get("CC", "").strip()
    compiler = shutil.which(chosen) if chosen else shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, f"no C compiler {chosen!r}" if chosen else "no C compiler (cc, gcc; set CC)"
    source = _SOURCE.read_bytes()
    flags = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
    key = hashlib.sha256(
        b"\0".join([source, compiler.encode(), " ".join(flags).encode(), _cpu_flags().encode()])
    ).hexdigest()[:16]
    target = _cache_root() / "kernels" / f"blocked-{key}.so"
    with _BUILD_LOCK:
        if not target.exists():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
                os.close(fd)
                done = subprocess.run(
                    [compiler, *flags, str(_SOURCE), "-o", tmp], capture_output=True, text=True
                )
                if done.returncode != 0:
                    os.unlink(tmp)
                    return None, f"{Path(compiler).name} failed: {done.stderr.strip()[-300:]}"
                os.replace(tmp, target)
            except OSError as e:
                return None, f"cannot build the kernel in {target.parent}: {e}"
    try:
        lib = ctypes.CDLL(str(target))  # after torch: its OpenMP runtime is the one used
    except OSError as e:
        return None, f"cannot load {target}: {e}"
    fn = lib.speccascade_blocked_linear
    ptr, num = ctypes.c_void_p, ctypes.c_int
    fn.argtypes = [ptr, num, num, ptr, num, ptr, ptr, num]
    fn.restype = None
    return lib, ""


def to_blocks(weight: torch.Tensor) -> torch.Tensor:
    """[out, in] to blocked.c's layout [ceil(out / 16), in, 16], zero rows padding the last."""
    n, k = weight.shape
    padded = torch.zeros(-(-n // LANES) * LANES, k, dtype=torch.float32)
    padded[:n] = weight.detach()
    return padded.view(-1, LANES, k).transpose(1, 2).contiguous()


class BlockedLinear(torch.nn.Module):
    """A linear layer whose weight is also kept in column blocks for blocked.c's kernel.

    Why: see blocked.c: on CPU a verification of 2-8 tokens through PyTorch's float32 kernels
    costs up to twice a one-token step, through these about one step. Each output row is
    computed the same way whatever the rows beside it, so a verification's logits equal the
    one-token steps' bit for bit in every linear layer (greedy SD then matches `generate()`
    up to attention's own rounding). More than BLOCKED_MAX_ROWS rows, autograd, or a layout
    the kernel does not take run PyTorch's kernel. The original `weight` stays the parameter
    (tied embeddings, parameter counts, state dicts unchanged); the blocks are an extra copy,
    made at load: weights changed later are not seen (these models are for inference)."""

    def __init__(self, linear: torch.nn.Linear, lib: ctypes.CDLL):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.blocks = to_blocks(linear.weight)
        self.kernel = lib.speccascade_blocked_linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if (
            rows.shape[0] > BLOCKED_MAX_ROWS
            or x.dtype != torch.float32
            or x.device.type != "cpu"
            or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))
        ):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        rows = rows.contiguous()
        y = torch.empty(rows.shape[0], self.out_features, dtype=torch.float32)
        bias = self.bias.data_ptr() if self.bias is not None else None
        self.kernel(
            rows.data_ptr(), rows.shape[0], self.in_features, self.blocks.data_ptr(),
            self.out_features, y.data_ptr(), bias, torch.get_num_threads(),
        )  # fmt: skip
        return y.view(*x.shape[:-1], self.out_features)


def _blockable(model: torch.nn.Module) -> bool:
    weights = next(model.parameters(), None)
    return weights is not None and weights.device.type == "cpu" and weights.dtype == torch.float32


def linear_weights(model: torch.nn.Module) -> int:
    """How many weights the model's nn.Linear layers hold (tied ones once)."""
    seen = {id(m.weight): m.weight.numel() for m in model.modules() if type(m) is torch.nn.Linear}
    return sum(seen.values())


def block_linears(model: torch.nn.Module, required: bool = False) -> int:
    """Swap every large enough nn.Linear of a CPU float32 model for a BlockedLinear; returns
    how many. Where the kernel cannot be built or disagrees with PyTorch's product on a real
    check, nothing changes (or, `required`, a ModelLoadError saying why)."""
    lib, why = blocked_library() if _blockable(model) else (None, "needs a CPU float32 model")
    count = 0
    for parent in list(model.modules()) if lib is not None else []:
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.numel() >= PACK_MIN_WEIGHTS:
                layer = BlockedLinear(child, lib)
                if not _agrees(layer, child):
                    why = "the compiled kernel disagrees with PyTorch's product"
                    lib = None
                    break
                setattr(parent, name, layer)
                count += 1
    if required and count == 0:
        raise ModelLoadError(f"kernels='blocked' cannot run here: {why}; use kernels='default'")
    return count


def _agrees(layer: BlockedLinear, linear: torch.nn.Linear) -> bool:
    with torch.inference_mode():
        x = torch.linspace(-1, 1, 3 * linear.in_features).view(3, -1)
        got, want = layer(x), linear(x)
    return torch.allclose(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()) + 1e-6)


# -- attention: grouped-query heads without copies -----------------------------------------

SDPA_GQA = "sdpa_gqa"


def sdpa_gqa(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
             is_causal=None, **kwargs):  # fmt: skip
    """transformers' "sdpa" attention, with grouped-query heads always left to PyTorch's SDPA
    (enable_gqa). Why: with a mask, which every verification of 2+ tokens after a cache has,
    transformers copies each key/value head to every query head of its group first
    (repeat_kv): SmolLM2's 3 heads to 9, ~2 ms of an 8-token verification here. The output is
    the same bit for bit (tests/test_kernels.py). Arguments it does not handle go to
    transformers' own function."""
    q_len, kv_len = query.shape[2], key.shape[2]
    if kwargs.get("position_bias") is not None or (attention_mask is None and 1 < q_len != kv_len):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=bool(q_len > 1 and attention_mask is None and causal),
        enable_gqa=query.shape[1] != key.shape[1],
    )  # fmt: skip
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(SDPA_GQA, sdpa_gqa)
AttentionMaskInterface.register(SDPA_GQA, sdpa_mask)


def use_sdpa_gqa(model: torch.nn.Module) -> bool:
    """Switch a CPU model on transformers' "sdpa" attention with grouped-query heads to
    sdpa_gqa; True if it switched."""
    config = getattr(model, "config", None)
    if (
        config is None
        or getattr(config, "_attn_implementation", None) != "sdpa"
        or getattr(config, "num_key_value_heads", None) in (None, config.num_attention_heads)
        or next(model.parameters()).device.type != "cpu"
    ):
        return False
    model.set_attn_implementation(SDPA_GQA)
    return True


def set_kernels(model: torch.nn.Module, kernels: str) -> None:
    """Apply a KERNELS choice to a loaded model (load_pair's `kernels`). Blocked weights come
    with sdpa_gqa: both make a verification of a few tokens cost about one step."""
    if kernels == "packed":
        pack_linears(model, required=True)
    elif kernels == "blocked":
        block_linears(model, required=True)
        use_sdpa_gqa(model)
    elif (
        kernels == "auto"
        and _blockable(model)
        and linear_weights(model) >= AUTO_MIN_WEIGHTS
        and block_linears(model)
    ):
        use_sdpa_gqa(model)

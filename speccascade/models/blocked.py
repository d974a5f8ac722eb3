"""Blocked weights for few-row CPU products: BlockedLinear and its C kernel (blocked.c).

Why: on CPU, PyTorch's float32 product of 2-8 rows with a large weight (MKL's small-M path)
costs up to twice the one-row product, so a speculative verification of a few tokens cost up
to twice a one-token step though both are bound by reading the weights once. blocked.c reads
each weight once per 8 rows: 1-8 rows cost about one row (BENCHMARKS.md, "The verification
step"). The kernel is plain C compiled on first use with the machine's C compiler; where it
cannot build, callers keep PyTorch's kernels (models.kernels).
"""

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

from speccascade.models.gguf_cache import cache_root

LANES = 16  # blocked.c: columns per block
PREFETCH_PAD = 64 * LANES  # floats after the last block: blocked.c prefetches 48 steps ahead
BLOCKED_MAX_ROWS = 16  # more rows (a prompt's prefill) take PyTorch's kernel, made for them
MIN_WEIGHTS = 1 << 14  # smaller layers stay as they are: their cost is the call
SOURCE = Path(__file__).with_name("blocked.c")
# -ffp-contract=fast: every compiler then fuses each multiply-add, so a row's sums are the same
# whatever the rows beside it (the bit-identical rows the tests check)
FLAGS = ("-O3", "-march=native", "-ffp-contract=fast", "-fopenmp", "-shared", "-fPIC")
_BUILD_LOCK = threading.Lock()


def _compiler() -> tuple[str | None, str]:
    """($CC, else cc or gcc) and its version line, or None and why not."""
    chosen = os.environ.get("CC", "").strip()
    path = shutil.which(chosen) if chosen else (shutil.which("cc") or shutil.which("gcc"))
    if path is None:
        return None, f"no C compiler {chosen!r}" if chosen else "no C compiler (cc, gcc; set CC)"
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              errors="replace", timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"{path} --version failed: {e}"
    return path, (done.stdout.splitlines() or [""])[0]


def _cpu() -> str:
    """This CPU's feature flags (Linux) or its name: part of the build's key, since
    -march=native builds for this CPU and a cache folder can be shared."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()} {platform.node()}"


def _build(compiler: str, source: bytes, target: Path) -> str:
    """Compile `source` (the bytes the key was made from) to `target`; "" or why not. Written
    to a temporary name and renamed, so a concurrent process never loads half a file."""
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run([compiler, *FLAGS, "-x", "c", "-", "-o", tmp], input=source,
                              capture_output=True, timeout=300)  # fmt: skip
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip()[-300:]
            return f"{Path(compiler).name} failed: {err}"
        os.replace(tmp, target)
        return ""
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot build the kernel in {target.parent}: {e}"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@cache
def blocked_library() -> tuple[ctypes.CDLL | None, str]:
    """The compiled kernel and "", or None and why not. Built once per source, compiler,
    flags and CPU into the cache folder's kernels/ ($SPECCASCADE_CACHE, else
    ~/.cache/speccascade); a library someone else owns there is not loaded."""
    compiler, version = _compiler()
    if compiler is None:
        return None, version
    try:
        source = SOURCE.read_bytes()
    except OSError as e:
        return None, f"the kernel's source is missing: {e}"
    key = hashlib.sha256(
        b"\0".join(s.encode() if isinstance(s, str) else s
                   for s in (source, compiler, version, " ".join(FLAGS), _cpu()))
    ).hexdigest()[:16]  # fmt: skip
    target = cache_root() / "kernels" / f"blocked-{key}.so"
    with _BUILD_LOCK:
        if not target.exists() and (why := _build(compiler, source, target)):
            return None, why
    if hasattr(os, "getuid") and target.stat().st_uid != os.getuid():
        return None, f"{target} belongs to another user; not loaded"
    try:
        lib = ctypes.CDLL(str(target))  # after torch: its OpenMP runtime (libgomp) is the one used
    except OSError as e:
        return None, f"cannot load {target}: {e}"
    ptr, num = ctypes.c_void_p, ctypes.c_int
    lib.speccascade_blocked_linear.argtypes = [ptr, num, num, ptr, num, ptr, ptr, num]
    lib.speccascade_blocked_linear.restype = None
    return lib, ""


def to_blocks(weight: torch.Tensor) -> torch.Tensor:
    """[out, in] to blocked.c's layout [ceil(out / 16), in, 16] (zero rows pad the last block),
    on the CPU in float32, with PREFETCH_PAD floats of storage after it for the prefetch."""
    n, k = weight.shape
    blocks = -(-n // LANES)
    flat = torch.zeros(blocks * LANES * k + PREFETCH_PAD, dtype=torch.float32, device="cpu")
    view = flat[: blocks * LANES * k].view(blocks, k, LANES)
    padded = torch.zeros(blocks * LANES, k, dtype=torch.float32, device="cpu")
    padded[:n] = weight.detach().to("cpu", torch.float32)
    view.copy_(padded.view(blocks, LANES, k).transpose(1, 2))
    return view


class BlockedLinear(torch.nn.Module):
    """A linear layer whose weight is also kept in column blocks for blocked.c.

    Each output row is computed the same way whatever the rows beside it, so a verification's
    rows equal the one-token steps' bit for bit in every linear layer (greedy SD then matches
    `generate()` up to attention's own rounding). Anything the kernel is not for runs PyTorch's
    kernel: more than BLOCKED_MAX_ROWS rows, autograd, another dtype or device, or a weight
    changed in place since the blocks were made (its version counter moved; the blocks are a
    copy). The original `weight` stays the parameter (tied embeddings, parameter counts and
    state dicts unchanged); the blocks are a non-persistent buffer."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.register_buffer("blocks", to_blocks(linear.weight), persistent=False)
        self.version = linear.weight._version

    @property
    def active(self) -> bool:
        """Whether few-row products run on the blocks (not PyTorch's kernel)."""
        bias = self.bias
        return (
            self.weight._version == self.version
            and self.weight.device.type == "cpu"
            and self.blocks.device.type == "cpu"
            and self.blocks.dtype == torch.float32
            and (bias is None or (bias.device.type == "cpu" and bias.dtype == torch.float32
                                  and bias.is_contiguous()))
        )  # fmt: skip

    @torch.compiler.disable
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        lib = blocked_library()[0]
        if (
            lib is None
            or rows.shape[0] > BLOCKED_MAX_ROWS
            or x.dtype != torch.float32
            or x.device.type != "cpu"
            or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))
            or not self.active
        ):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        rows = rows.contiguous()
        y = torch.empty(rows.shape[0], self.out_features, dtype=torch.float32, device="cpu")
        bias = self.bias.data_ptr() if self.bias is not None else None
        lib.speccascade_blocked_linear(
            rows.data_ptr(), rows.shape[0], self.in_features, self.blocks.data_ptr(),
            self.out_features, y.data_ptr(), bias, torch.get_num_threads(),
        )  # fmt: skip
        return y.view(*x.shape[:-1], self.out_features)


def large_linears(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Linear]]:
    """The (parent, name, layer) of every plain nn.Linear with at least MIN_WEIGHTS weights:
    the layers a CPU kernel choice may swap (blocked here, packed in models.kernels)."""
    return [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is torch.nn.Linear and child.weight.numel() >= MIN_WEIGHTS
    ]


def _candidates(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Linear]]:
    """The large linears worth blocking: float32, on the CPU, and not managed by accelerate
    (a hook that offloads or moves it)."""
    return [
        (parent, name, child)
        for parent, name, child in large_linears(model)
        if child.weight.device.type == "cpu"
        and child.weight.dtype == torch.float32
        and not hasattr(child, "_hf_hook")
    ]


def _agrees(layer: BlockedLinear, linear: torch.nn.Linear) -> bool:
    """The kernel's product on 3 rows against PyTorch's (a miscompiled kernel must not run)."""
    with torch.inference_mode():
        x = torch.linspace(-1, 1, 3 * linear.in_features, dtype=torch.float32).view(3, -1)
        got, want = layer(x), linear(x)
    return torch.allclose(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()) + 1e-6)


def block_linears(model: torch.nn.Module) -> tuple[int, str]:
    """Swap every nn.Linear worth blocking for a BlockedLinear, all or none: returns how many
    and, when none, why. Nothing changes where the kernel cannot build or disagrees with
    PyTorch's product on any layer."""
    lib, why = blocked_library()
    if lib is None:
        return 0, why
    found = _candidates(model)
    if not found:
        return 0, f"no float32 CPU nn.Linear with at least {MIN_WEIGHTS} weights"
    layers = [BlockedLinear(child) for _, _, child in found]
    if not all(_agrees(layer, child) for layer, (_, _, child) in zip(layers, found)):
        return 0, "the compiled kernel disagrees with PyTorch's product"
    for layer, (parent, name, _) in zip(layers, found):
        setattr(parent, name, layer)
    return len(layers), ""


__all__ = [
    "BLOCKED_MAX_ROWS",
    "BlockedLinear",
    "block_linears",
    "blocked_library",
    "large_linears",
    "to_blocks",
]

"""Loading a drafter/verifier pair: one `from_pretrained` path for local folders and hub ids.

Two models can only be mixed token by token if they index the same vocabulary, so the pair
checks the tokenizers' token->id maps (not `vocab_size`, which counts padding rows) and slices
both models' logits to the shared vocabulary."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from speccascade.core.errors import ModelLoadError, TokenizerMismatchError
from speccascade.core.pair import ModelPair
from speccascade.models.assets import DEMO_DRAFTER, DEMO_VERIFIER
from speccascade.models.drafter import head_rows  # registers DrafterLlama with Auto*
from speccascade.models.kernels import KERNELS, set_kernels
from speccascade.models.lean import engine_step  # noqa: F401 - registers the Llama step


def resolve_device(device: str | torch.device) -> torch.device:
    if str(device) == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ModelLoadError(f"unknown device {device!r}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device 'cuda' was asked for but no CUDA GPU is available")
    return dev


# The dtype names a pair loads in, besides "auto" (resolve_dtype; SPECCASCADE_DTYPE).
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    """'auto' is float32 on CPU (fast and exact there) and bfloat16 on CUDA."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def _is_local(model_id: str) -> bool:
    return Path(model_id).expanduser().is_dir()


def _looks_like_path(model_id: str) -> bool:
    return model_id.startswith((".", "/", "~")) or os.sep + os.sep in model_id or "\\" in model_id


def hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP check, so an offline hub id fails in seconds, not after minutes of retries."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((url.hostname, url.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


def _load(role: str, model_id: str, loader, **kwargs):
    """Run a transformers loader, turning its many failure modes into one clear error."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise ModelLoadError(f"no {role} model given")
    local = _is_local(model_id)
    if not local and _looks_like_path(model_id):
        raise ModelLoadError(f"{role} folder {model_id!r} does not exist")
    if local:
        path = Path(model_id).expanduser()
        source = str(path)
    else:
        source = model_id
        try:  # already in the local cache?
            return loader(source, local_files_only=True, trust_remote_code=False, **kwargs)
        except Exception:  # noqa: BLE001 - anything here means "not cached"; fall through
            pass
        if not hub_reachable():
            raise ModelLoadError(
                f"cannot load {role} {model_id!r}: it is not a local folder, not in the local "
                "cache, and the Hugging Face Hub is unreachable (offline?)"
            )
    try:
        return loader(source, trust_remote_code=False, local_files_only=local, **kwargs)
    except Exception as e:  # noqa: BLE001 - corrupt files, unknown architectures, auth, ...
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"cannot load {role} {model_id!r}: {reason}") from e


def check_tokenizers(
    drafter_tok: PreTrainedTokenizerBase,
    verifier_tok: PreTrainedTokenizerBase,
    drafter_id: str,
    verifier_id: str,
) -> None:
    """Same token -> id map or a clear error naming both models."""
    d, v = drafter_tok.get_vocab(), verifier_tok.get_vocab()
    if d == v:
        return
    only_d = len(d.keys() - v.keys())
    only_v = len(v.keys() - d.keys())
    moved = sum(1 for t in d.keys() & v.keys() if d[t] != v[t])
    raise TokenizerMismatchError(
        f"the tokenizers of drafter {drafter_id!r} ({len(d)} tokens) and verifier "
        f"{verifier_id!r} ({len(v)} tokens) differ: {only_d} tokens only in the drafter's, "
        f"{only_v} only in the verifier's, {moved} with different ids. A speculative cascade "
        "needs both models to share one tokenizer."
    )


def _context_length(model: PreTrainedModel) -> int | None:
    cfg = model.config.get_text_config()
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    ids: set[int] = set()
    for source in (model.generation_config.eos_token_id, tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source is not None:
            ids.update(int(i) for i in source)
    return frozenset(ids)


def load_pair(
    drafter: str | None = None,
    verifier: str | None = None,
    *,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "auto",
    device_map: str | dict | None = None,
    kernels: str = "auto",
) -> ModelPair:
    """Load a drafter and a verifier (local folders or hub ids) that share a tokenizer.

    With neither given, loads the embedded demo pair. `device_map` is passed to the verifier's
    `from_pretrained` for models too big for one device. `kernels` (KERNELS): "auto" runs the
    linear layers of a CPU float32 model too large for the caches (SmolLM2-135M, not the demo
    pair) on blocked weights (BlockedLinear, a C kernel compiled on first use; PyTorch's own
    where it cannot build), so that a verification of 2-8 tokens costs about one step
    (BENCHMARKS.md, "The verification step"); "blocked" asks for them on every large enough
    layer, "packed" for oneDNN-packed weights, "default" for PyTorch's own.
    """
    if kernels not in KERNELS:
        raise ModelLoadError(f"unknown kernels {kernels!r}; use {', '.join(KERNELS)}")
    if drafter is None and verifier is None:
        drafter, verifier = DEMO_DRAFTER, DEMO_VERIFIER
    if drafter is None or verifier is None:
        raise ModelLoadError("give both a drafter and a verifier (or neither, for the demo pair)")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    d_tok = _load("drafter tokenizer", drafter, AutoTokenizer.from_pretrained)
    v_tok = _load("verifier tokenizer", verifier, AutoTokenizer.from_pretrained)
    check_tokenizers(d_tok, v_tok, drafter, verifier)
    d_model = _load("drafter", drafter, AutoModelForCausalLM.from_pretrained, dtype=dt)
    v_kwargs = {"device_map": device_map} if device_map is not None else {}
    v_model = _load(
        "verifier", verifier, AutoModelForCausalLM.from_pretrained, dtype=dt, **v_kwargs
    )
    d_model.to(dev).eval()
    if device_map is None:
        v_model.to(dev)
    v_model.eval()
    sizes = [len(v_tok)]
    for model in (d_model, v_model):
        sizes.append(head_rows(model))
        set_kernels(model, kernels)
    contexts = [c for c in (_context_length(d_model), _context_length(v_model)) if c]
    return ModelPair(
        drafter=d_model,
        verifier=v_model,
        tokenizer=v_tok,
        drafter_id=drafter,
        verifier_id=verifier,
        vocab_size=min(sizes),
        device=dev,
        dtype=dt,
        eos_ids=_eos_ids(v_model, v_tok),
        max_context=min(contexts) if contexts else None,
    )

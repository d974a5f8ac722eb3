"""Attention on the CPU without grouped-query copies: `sdpa_gqa`, registered with transformers.

Why: with a mask, which every verification of 2+ tokens after a KV cache has, transformers'
"sdpa" attention copies each key/value head to every query head of its group first
(repeat_kv): SmolLM2's 3 heads to 9, about 2 ms of an 8-token verification on a 2-core CPU.
PyTorch's SDPA does the grouping itself (`enable_gqa`), with the same numbers bit for bit.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, PretrainedConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

SDPA_GQA = "sdpa_gqa"
_HANDED_ON = ("position_bias", "softcap", "s_aux")  # what only transformers' function handles


def sdpa_gqa(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' "sdpa" attention with grouped heads left to SDPA on the CPU. Everything
    else (another device, position bias, softcap, sinks, a prefill into an empty static cache)
    goes to transformers' own function."""
    q_len, kv_len = query.shape[2], key.shape[2]
    if (
        query.device.type != "cpu"
        or any(kwargs.get(k) is not None for k in _HANDED_ON)
        or (attention_mask is None and 1 < q_len != kv_len)
    ):
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


def _grouped(config: PretrainedConfig) -> bool:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    kv, heads = (getattr(text, k, None) for k in ("num_key_value_heads", "num_attention_heads"))
    return kv is not None and heads is not None and kv != heads


def use_sdpa_gqa(model: torch.nn.Module) -> bool:
    """Switch a CPU model on transformers' "sdpa" attention with grouped-query heads to
    sdpa_gqa; True if it switched."""
    config = getattr(model, "config", None)
    weights = next(model.parameters(), None)
    if (
        config is None
        or weights is None
        or weights.device.type != "cpu"
        or getattr(config, "_attn_implementation", None) != "sdpa"
        or not _grouped(config)
    ):
        return False
    model.set_attn_implementation(SDPA_GQA)
    return True


__all__ = ["SDPA_GQA", "sdpa_gqa", "use_sdpa_gqa"]

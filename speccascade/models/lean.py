"""A lean decode step for Llama models: the products of transformers' forward without its
per-module Python, for the cached calls the engine makes.

Why: a small model on a CPU spends a large share of each step in transformers' Python, not in
its products. The embedded verifier (18 layers of 192 units) takes about 9.6 ms a token
through `LlamaForCausalLM.forward` and 8.1 ms through `decode_step`, of which about 5 ms are
the products themselves; its 2-layer drafter 1.4 and 0.8 ms (one thread, 2026-12-07). The
engine runs one such forward per draft and one per verification, so this is the largest
share of its time that is not arithmetic.

`decode_step` computes the same products in the same order as the forward it replaces, so
the logits are the same bit for bit (tests/test_lean.py and tests/test_drafter.py compare
them: prefill, single tokens, windows after a cache, crops, grouped-query heads) and a greedy
run emits the same tokens as `generate()`. It runs only where that holds (`lean_decode_ok`):
a float32 Llama on the CPU with the plain SiLU MLP, unbiased projections and SDPA attention.

Importing this module registers `engine_step` for `LlamaForCausalLM` with the engine
(`core.pair.LEAN_STEPS`): the engine's `_LM` takes it for a plain Llama, and transformers'
own `generate()` keeps the model's forward. The drafter class (models.drafter) runs
`decode_step` inside its own forward."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import torch
import torch.nn.functional as F
from transformers import LlamaForCausalLM
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from speccascade.core.pair import LEAN_STEPS


def lean_model_ok(model: LlamaForCausalLM) -> bool:
    """Whether `decode_step` computes what `model`'s own forward would, for any cached call:
    a float32 Llama on the CPU with the plain SiLU MLP, unbiased projections and SDPA
    attention."""
    config = model.config
    return (
        model.dtype == torch.float32
        and model.device.type == "cpu"
        and config.hidden_act == "silu"
        and not config.attention_bias
        and not getattr(config, "mlp_bias", False)
        and getattr(config, "pretraining_tp", 1) == 1
        and config._attn_implementation in ("sdpa", "sdpa_gqa")
    )


def lean_decode_ok(model: LlamaForCausalLM, input_ids, cache) -> bool:
    """`lean_model_ok`, for one sequence of token ids and a KV cache to extend."""
    return (
        input_ids is not None
        and input_ids.dim() == 2
        and input_ids.shape[0] == 1
        and cache is not None
        and hasattr(cache, "update")
        and lean_model_ok(model)
    )


def _linear(layer: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A projection: the product itself for a plain nn.Linear, the module for any other
    kernel (models.kernels' packed or blocked layers)."""
    if type(layer) is torch.nn.Linear:
        return F.linear(x, layer.weight)
    return layer(x)


class _Layer(NamedTuple):
    """One decoder layer's weights and projections, read once per run."""

    in_norm: torch.Tensor
    q: torch.nn.Module
    k: torch.nn.Module
    v: torch.nn.Module
    o: torch.nn.Module
    post_norm: torch.Tensor
    gate: torch.nn.Module
    up: torch.nn.Module
    down: torch.nn.Module
    scaling: float


class Plan(NamedTuple):
    """What decode_step reads from a model, gathered once: the engine takes thousands of
    steps per run, and each attribute read through nn.Module and the config costs Python
    time comparable to a small layer's products. Tuples: decode_step builds one per call
    (the drafter's forward), which must cost no more than the reads themselves."""

    model: LlamaForCausalLM
    heads: int
    kv_heads: int
    head_dim: int
    eps: float
    embed: torch.nn.Module
    rotary: torch.nn.Module
    layers: tuple[_Layer, ...]
    norm: torch.Tensor
    lm_head: torch.nn.Module


def plan(model: LlamaForCausalLM) -> Plan:
    """The weights and shapes decode_step needs from `model` (a Llama, see lean_model_ok)."""
    config, body = model.config, model.model
    heads = config.num_attention_heads
    layers = tuple(
        _Layer(
            layer.input_layernorm.weight,
            layer.self_attn.q_proj,
            layer.self_attn.k_proj,
            layer.self_attn.v_proj,
            layer.self_attn.o_proj,
            layer.post_attention_layernorm.weight,
            layer.mlp.gate_proj,
            layer.mlp.up_proj,
            layer.mlp.down_proj,
            layer.self_attn.scaling,
        )  # fmt: skip
        for layer in body.layers[: config.num_hidden_layers]
    )
    return Plan(
        model=model,
        heads=heads,
        kv_heads=config.num_key_value_heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        eps=config.rms_norm_eps,
        embed=body.embed_tokens,
        rotary=body.rotary_emb,
        layers=layers,
        norm=body.norm.weight,
        lm_head=model.lm_head,
    )


def decode_step(
    model: LlamaForCausalLM, input_ids: torch.Tensor, cache, logits_to_keep: int = 0
) -> torch.Tensor:
    """Logits of `model` (a Llama, see lean_decode_ok) for `input_ids` [1, n] after the
    tokens in `cache`, which it extends: the same products in the same order as
    transformers' forward, without its per-module Python."""
    return planned_step(plan(model), input_ids, cache, logits_to_keep)


def planned_step(
    plan: Plan, input_ids: torch.Tensor, cache, logits_to_keep: int = 0
) -> torch.Tensor:
    """decode_step with the model's weights and shapes already gathered (`plan`)."""
    heads, kv_heads, head_dim, eps = plan.heads, plan.kv_heads, plan.head_dim, plan.eps
    n, start = input_ids.shape[1], cache.get_seq_length()
    hidden = plan.embed(input_ids)
    width = (hidden.shape[-1],)
    positions = torch.arange(start, start + n, device=hidden.device).unsqueeze(0)
    cos, sin = plan.rotary(hidden, positions)
    mask = None  # one new token sees the whole cache; several see a causal band of it
    if n > 1 and start:
        mask = torch.ones(n, start + n, dtype=torch.bool, device=hidden.device).tril(start)
    causal, gqa = mask is None and n > 1, heads != kv_heads

    for i, layer in enumerate(plan.layers):
        x = F.rms_norm(hidden, width, layer.in_norm, eps)
        q = _linear(layer.q, x).view(1, n, heads, head_dim).transpose(1, 2)
        k = _linear(layer.k, x).view(1, n, kv_heads, head_dim).transpose(1, 2)
        v = _linear(layer.v, x).view(1, n, kv_heads, head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k, v = cache.update(k, v, i)
        o = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=layer.scaling, is_causal=causal, enable_gqa=gqa
        )
        hidden = hidden + _linear(layer.o, o.transpose(1, 2).reshape(1, n, -1))
        x = F.rms_norm(hidden, width, layer.post_norm, eps)
        gated = F.silu(_linear(layer.gate, x)) * _linear(layer.up, x)
        hidden = hidden + _linear(layer.down, gated)
    hidden = hidden[:, -logits_to_keep:] if logits_to_keep else hidden
    hidden = F.rms_norm(hidden, width, plan.norm, eps)
    return plan.lm_head(hidden)


def hooked(model: torch.nn.Module) -> bool:
    """Whether a forward hook watches or changes a call of `model` or of any of its modules
    (a test injecting a fault, a user's probe): decode_step would skip it."""
    from torch.nn.modules import module as nn_module

    names = ("_global_forward_hooks", "_global_forward_pre_hooks")
    if any(getattr(nn_module, name, None) for name in names):
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def engine_step(model: LlamaForCausalLM) -> Callable | None:
    """The engine's step for `model`: decode_step where it computes what the forward would
    and no hook is registered (checked once per run: a run's model does not change), else
    None."""
    replaced = "forward" in vars(model)  # an instance's own forward (a wrapper, a probe)
    ok = lean_model_ok(model) and not replaced and not hooked(model)
    return partial(planned_step, plan(model)) if ok else None


# exactly this class: a subclass (the drafter class) may compute something else in its forward
LEAN_STEPS[LlamaForCausalLM] = engine_step

__all__ = [
    "Plan",
    "decode_step",
    "engine_step",
    "hooked",
    "lean_decode_ok",
    "lean_model_ok",
    "plan",
    "planned_step",
]

"""Tiny random model pairs built locally (from_config -> save_pretrained), so tests exercise the
same from_pretrained path as hub models without any network."""

from __future__ import annotations

import string
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

CHARS = string.ascii_lowercase + " .?!,"


def char_tokenizer(chars: str = CHARS, extra: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """One token per character: small vocabularies keep exact-law tests cheap."""
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2}
    for c in list(chars) + list(extra):
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def _scale_head(model: torch.nn.Module, scale: float) -> None:
    """Random heads give near-uniform laws; scaling the output layer makes them peaky, so the
    rules have real decisions to make."""
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(scale)


def build_model(
    arch: str,
    vocab: int,
    hidden: int,
    layers: int,
    seed: int,
    scale: float,
    pad_vocab: int = 0,
    heads: int = 2,
    kv_heads: int | None = None,
):
    """A random model; Llama's `kv_heads` below `heads` groups its queries (GQA)."""
    torch.manual_seed(seed)
    n = vocab + pad_vocab
    if arch == "llama":
        cfg = LlamaConfig(
            vocab_size=n,
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads or heads,
            max_position_embeddings=256,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            tie_word_embeddings=False,
        )
        model = LlamaForCausalLM(cfg)
    elif arch == "gpt2":
        cfg = GPT2Config(
            vocab_size=n,
            n_embd=hidden,
            n_layer=layers,
            n_head=2,
            n_positions=256,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            tie_word_embeddings=False,
        )
        model = GPT2LMHeadModel(cfg)
    else:
        raise ValueError(arch)
    _scale_head(model, scale)
    return model.eval()


def save_pair(
    root: Path, arch: str, tokenizer=None, seed: int = 0, scale: float = 8.0, pad_vocab: int = 0
) -> tuple[str, str]:
    """Write a drafter and a verifier of one architecture; returns their folders."""
    tokenizer = tokenizer or char_tokenizer()
    vocab = len(tokenizer)
    out = []
    for role, hidden, layers, s in (("drafter", 16, 1, seed), ("verifier", 32, 2, seed + 1)):
        path = root / f"{arch}-{role}"
        model = build_model(arch, vocab, hidden, layers, s, scale, pad_vocab)
        model.generation_config.eos_token_id = 2
        model.generation_config.pad_token_id = 0
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        out.append(str(path))
    return out[0], out[1]

"""The pair of models the engine runs: a drafter and a verifier that index one shared vocabulary,
and how a prompt becomes token ids (the chat template where the tokenizer has one). Loading
lives in speccascade.models; this is only what a loaded pair is, and where models/ registers a
faster step for a model class (`LEAN_STEPS`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from speccascade.core.errors import PromptError

# A step computes a model's logits [1, keep, V] for input ids [1, n] after the tokens in a KV
# cache, which it extends: `step(input_ids, cache, keep)`. LEAN_STEPS maps a model class to a
# function that makes one for a model, or returns None where it would not compute what the
# model's forward does; the engine then calls the forward. models.lean registers transformers'
# Llama (the same products without its per-module Python). Keyed by exact class: a subclass
# may compute something else.
Step = Callable[[torch.Tensor, object, int], torch.Tensor]
LEAN_STEPS: dict[type, Callable[[PreTrainedModel], Step | None]] = {}


def lean_step(model: PreTrainedModel) -> Step | None:
    """The registered step for `model`, if its class has one that runs it."""
    make = LEAN_STEPS.get(type(model))
    return make(model) if make is not None else None


@dataclass
class ModelPair:
    drafter: PreTrainedModel
    verifier: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    drafter_id: str
    verifier_id: str
    vocab_size: int  # shared vocabulary; logits are sliced to it
    device: torch.device  # where probabilities live (the drafter's device)
    dtype: torch.dtype
    eos_ids: frozenset[int]
    max_context: int | None

    @property
    def name(self) -> str:
        return f"{self.drafter_id} -> {self.verifier_id}"

    def encode(self, prompt: str | list[int], chat: bool | None = None) -> list[int]:
        """Token ids for a prompt. Strings get the chat template when the tokenizer has one
        (unless chat is False); id lists are used as they are."""
        if isinstance(prompt, str):
            if not prompt.strip():
                raise PromptError("the prompt is empty; type a question or some text")
            tok = self.tokenizer
            if chat is True and not tok.chat_template:
                raise PromptError(f"{self.verifier_id}'s tokenizer has no chat template")
            if chat is not False and tok.chat_template:
                text = tok.apply_chat_template(
                    [{"role": "user", "content": prompt}],
                    tokenize=False,
                    add_generation_prompt=True,
                )
                ids = tok(text, add_special_tokens=False)["input_ids"]
            else:
                ids = tok(prompt)["input_ids"]
        elif isinstance(prompt, (list, tuple)):
            ids = list(prompt)
            bad = [i for i in ids if not isinstance(i, int) or isinstance(i, bool)]
            if bad:
                raise PromptError(f"token ids must be integers; got {bad[0]!r}")
            out = [i for i in ids if not 0 <= i < self.vocab_size]
            if out:
                raise PromptError(
                    f"token id {out[0]} is outside the shared vocabulary [0, {self.vocab_size})"
                )
        else:
            raise PromptError(
                f"the prompt must be a string or a list of token ids; got {type(prompt).__name__}"
            )
        if not ids:
            raise PromptError("the prompt has no tokens")
        return ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

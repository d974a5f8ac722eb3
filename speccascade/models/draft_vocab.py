"""A drafter whose output layer covers only the tokens it is likely to draft.

A small drafter for a 49k-token vocabulary spends most of each step in its output layer
(SmolLM2's distilled drafter: 9.4M of its 11.3M weights). Frequency-ranked draft vocabularies
(FR-Spec, Zhao et al. 2025) keep the rows of the tokens the verifier's answers use most and
give every other token probability 0. The drafter still returns logits over the whole
vocabulary, so the engine, the rules and the exactness of speculative sampling are untouched:
q is a law with a smaller support, and a token outside it is never drafted (the verifier
still writes it).

`SubVocabLlamaForCausalLM` is a Llama with such a head; importing this module registers it
with transformers' Auto classes, so `from_pretrained` loads it without remote code."""

from __future__ import annotations

import torch
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM


def fill_value(dtype: torch.dtype) -> float:
    """The logit of a token outside the draft vocabulary: finite (the engine refuses inf
    logits) and far enough below any real logit that its probability is exactly 0, also after
    a temperature divides it (float32 keeps -1e9 / 0.01 finite)."""
    return max(torch.finfo(dtype).min / 2, -1e9)


class DraftVocabHead(torch.nn.Module):
    """Logits for `ids` (a linear layer of len(ids) rows), scattered into `vocab_size` columns
    filled with fill_value. `out_features` is the full vocabulary, as for an nn.Linear head."""

    def __init__(self, hidden: int, ids: list[int], vocab_size: int):
        super().__init__()
        if not ids or len(set(ids)) != len(ids) or min(ids) < 0 or max(ids) >= vocab_size:
            raise ValueError(
                f"a draft vocabulary must be distinct token ids in [0, {vocab_size}), "
                f"got {len(ids)} ids"
            )
        self.in_features, self.out_features = hidden, vocab_size
        self.weight = torch.nn.Parameter(torch.empty(len(ids), hidden))
        torch.nn.init.normal_(self.weight, std=0.02)
        self.vocab_ids = list(ids)
        # The ids as a tensor, made on first use on the weight's device (not a buffer:
        # transformers builds models on the meta device, where a buffer's values are lost).
        self._ids: torch.Tensor | None = None

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        rows = torch.nn.functional.linear(hidden, self.weight)
        if self._ids is None or self._ids.device != rows.device:
            self._ids = torch.tensor(self.vocab_ids, dtype=torch.long, device=rows.device)
        out = rows.new_full((*rows.shape[:-1], self.out_features), fill_value(rows.dtype))
        return out.index_copy_(-1, self._ids, rows)


class SubVocabLlamaConfig(LlamaConfig):
    """A LlamaConfig with `draft_vocab`: the token ids the output layer covers."""

    model_type = "speccascade_subvocab_llama"

    def __init__(self, draft_vocab: list[int] | None = None, **kwargs):
        self.draft_vocab = [int(i) for i in draft_vocab or []]
        kwargs["tie_word_embeddings"] = False  # the head has its own (fewer) rows
        super().__init__(**kwargs)


class SubVocabLlamaForCausalLM(LlamaForCausalLM):
    """Llama whose lm_head is a DraftVocabHead over config.draft_vocab."""

    config_class = SubVocabLlamaConfig
    _tied_weights_keys: dict[str, str] = {}

    def __init__(self, config: SubVocabLlamaConfig):
        super().__init__(config)
        self.lm_head = DraftVocabHead(config.hidden_size, config.draft_vocab, config.vocab_size)
        self.post_init()


def trim_vocab(model: LlamaForCausalLM, ids: list[int]) -> SubVocabLlamaForCausalLM:
    """`model` with an output layer of only the rows of `ids` (same weights otherwise): its
    argmax over `ids` is unchanged, and q is its softmax renormalised over them."""
    config = SubVocabLlamaConfig(draft_vocab=ids, **model.config.to_diff_dict())
    config.architectures = [SubVocabLlamaForCausalLM.__name__]
    trimmed = SubVocabLlamaForCausalLM(config).to(model.dtype)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("lm_head.")}
    missing, unexpected = trimmed.load_state_dict(state, strict=False)
    if unexpected or set(missing) != {"lm_head.weight"}:
        raise ValueError(f"cannot trim: missing {missing}, unexpected {unexpected}")
    head = model.get_output_embeddings().weight.detach()
    trimmed.lm_head.weight.data.copy_(head[torch.tensor(ids, dtype=torch.long)])
    return trimmed.eval()


def head_rows(model: torch.nn.Module) -> int:
    """How many vocabulary columns a model's logits have (a DraftVocabHead's full vocabulary,
    not its rows)."""
    head = model.get_output_embeddings()
    return int(getattr(head, "out_features", None) or head.weight.shape[0])


AutoConfig.register(SubVocabLlamaConfig.model_type, SubVocabLlamaConfig, exist_ok=True)
AutoModelForCausalLM.register(SubVocabLlamaConfig, SubVocabLlamaForCausalLM, exist_ok=True)

__all__ = [
    "DraftVocabHead",
    "SubVocabLlamaConfig",
    "SubVocabLlamaForCausalLM",
    "fill_value",
    "head_rows",
    "trim_vocab",
]

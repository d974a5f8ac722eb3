"""A small drafter made for speculative decoding: a draft vocabulary and a lookup mixture.

Draft vocabulary. A small drafter for a 49k-token vocabulary spends most of each step in its
output layer (SmolLM2's distilled drafter: 9.4M of its 11.3M weights). Frequency-ranked draft
vocabularies (FR-Spec, Zhao et al. 2025) keep the rows of the tokens the verifier's answers
use most and give every other token probability 0.

Lookup mixture. Answers repeat their question's words ("Who wrote Romeo and Juliet?" ->
"Romeo and Juliet was written by ..."), which a small model misses as often as not. Where the
last n tokens occurred earlier in the context, the token that followed them then is a guess
(prompt lookup decoding, Saxena 2023) whose precision was measured on the teacher's answers,
by n. The drafter's law is the mixture q = (1 - w_n) q_model + w_n [x = that token], with w_n
that precision: a law like any other, so speculative sampling stays exact, and a copied token
may lie outside the draft vocabulary.

Either way the drafter returns logits over the whole vocabulary, so the engine and the rules
see an ordinary q.

Lean decode step. A drafter this small (4 layers of 192 units) spends most of a step in
transformers' per-module Python, and it runs once per draft: its forward takes models.lean's
`decode_step` (the same products in the same order, the logits bit for bit) for the cached
float32 CPU calls the engine makes, and transformers' forward runs everything else. The
engine goes one step further (`engine_step`, registered in core.pair.LEAN_STEPS): the same
path with its checks made once per run instead of once per draft.

`DrafterLlamaForCausalLM` is a Llama with all three (the first two optional); importing this
module registers it with transformers' Auto classes, so `from_pretrained` loads it without
remote code."""

from __future__ import annotations

import math
import weakref

import torch
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from transformers.modeling_outputs import CausalLMOutputWithPast

from speccascade.core.pair import LEAN_STEPS, Step
from speccascade.models.lean import (
    decode_step,
    hooked,
    lean_decode_ok,
    lean_model_ok,
    plan,
    planned_step,
)


def fill_value(dtype: torch.dtype) -> float:
    """The logit of a token the drafter gives probability 0: finite (the engine refuses inf
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
        stale = self._ids is None or self._ids.device != rows.device
        if stale or (self._ids.is_inference() and not torch.is_inference_mode_enabled()):
            # (ids made under inference_mode cannot be saved for a later backward pass)
            self._ids = torch.tensor(self.vocab_ids, dtype=torch.long, device=rows.device)
        out = rows.new_full((*rows.shape[:-1], self.out_features), fill_value(rows.dtype))
        return out.index_copy_(-1, self._ids, rows)


def lookup(
    context: torch.Tensor, longest: int, skip: frozenset[int] = frozenset()
) -> tuple[int, int] | None:
    """(the token that followed the latest earlier occurrence of the context's longest
    suffix of at most `longest` tokens, that suffix's length), or None where no suffix recurs.
    An occurrence does not count where the token after it is in `skip` (control tokens) or
    is followed by one: the end of a turn is not copied. An answer that starts by echoing its
    question ("The capital of Japan") must not go on with the question's "?<|im_end|>"
    (measured: lenient cascades then kept echoed questions as answers). `context` is 1-D;
    ids below 0 (unknown positions) never match. Only the positions that hold the last token
    are candidates, so this costs one comparison pass and a few steps."""
    size = context.shape[0]
    if size < 2 or int(context[-1]) < 0:
        return None
    ends = (context[: size - 1] == context[-1]).nonzero().flatten().tolist()
    if not ends:
        return None
    ids, best = context.tolist(), None
    for i in reversed(ends):  # latest first: a longer match replaces, an equal one does not
        n = 1
        while n < longest and i - n >= 0 and ids[i - n] == ids[size - 1 - n] >= 0:
            n += 1
        ends_turn = ids[i + 1] in skip or (i + 2 < size and ids[i + 2] in skip)
        if ids[i + 1] >= 0 and not ends_turn and (best is None or n > best[1]):
            best = (ids[i + 1], n)
            if n == longest:
                break
    return best


def mix_lookup(
    logits: torch.Tensor,
    context: torch.Tensor,
    weights: list[float],
    skip: frozenset[int] = frozenset(),
) -> torch.Tensor:
    """Logits [vocab] of the law (1 - w) softmax(logits) + w [x = c], with c the lookup token
    and w = weights[n - 1] for its suffix of n tokens (`logits` itself where no suffix recurs).
    Only c's logit moves: to logsumexp(l) + log(p_c + w / (1 - w)), which gives c
    (1 - w) p_c + w and every other token (1 - w) p_x, so zeros stay exactly zero. In place.
    logsumexp(l) is max(l) - log(max p), from a softmax: torch's exp and logsumexp are ten
    times slower on the fill logits of a trimmed head (0.6 ms against 0.05 here)."""
    found = lookup(context, len(weights), skip)
    if found is None or not 0 < weights[found[1] - 1] < 1:
        return logits
    token, n = found
    w = weights[n - 1]
    probs = torch.softmax(logits.float(), -1)
    total = logits.max().item() - math.log(probs.max().item())
    logits[token] = total + math.log(probs[token].item() + w / (1 - w))
    return logits


class DrafterConfig(LlamaConfig):
    """A LlamaConfig with `draft_vocab` (the token ids the output layer covers; [] for all),
    `lookup_weights` (w_n for suffixes of n = 1, 2, ... tokens; [] for no lookup) and
    `lookup_skip` (tokens the lookup never proposes: the tokenizer's control tokens)."""

    model_type = "speccascade_drafter"

    def __init__(
        self,
        draft_vocab: list[int] | None = None,
        lookup_weights: list[float] | None = None,
        lookup_skip: list[int] | None = None,
        **kwargs,
    ):
        self.draft_vocab = [int(i) for i in draft_vocab or []]
        self.lookup_skip = sorted({int(i) for i in lookup_skip or []})
        self.lookup_weights = [float(w) for w in lookup_weights or []]
        if not all(0 <= w < 1 for w in self.lookup_weights):
            raise ValueError(f"lookup weights must lie in [0, 1); got {self.lookup_weights}")
        if self.draft_vocab:
            kwargs["tie_word_embeddings"] = False  # the head has its own (fewer) rows
        super().__init__(**kwargs)


class DrafterLlamaForCausalLM(LlamaForCausalLM):
    """Llama with an optional DraftVocabHead over config.draft_vocab and an optional lookup
    mixture (config.lookup_weights). The lookup needs the whole context: with a KV cache, each
    cache's tokens are kept beside it (by the cache object, so concurrent runs with their own
    caches do not mix) and cut back when the cache is cropped."""

    config_class = DrafterConfig
    lean_decode = True  # decode_step where it applies (False: always transformers' forward)

    def __init__(self, config: DrafterConfig):
        super().__init__(config)
        if config.draft_vocab:
            self.lm_head = DraftVocabHead(config.hidden_size, config.draft_vocab, config.vocab_size)
        self._contexts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._skip = frozenset(config.lookup_skip)
        self.post_init()

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        position_ids=None,
        cache=None,
        inputs_embeds=None,
        labels=None,
        use_cache=None,
        logits_to_keep=0,
        **kwargs,
    ):
        """LlamaForCausalLM's forward; with lookup weights (in eval mode) the logits are the
        mixture's, in float32. The mixture needs the ids and a dict output."""
        cache = cache if cache is not None else kwargs.pop("past_key_values", None)
        weights = self.config.lookup_weights if not self.training else []
        before = cache.get_seq_length() if (weights and cache is not None) else 0
        lean = (
            self.lean_decode
            and not self.training
            and not kwargs
            and labels is None
            and attention_mask is None
            and position_ids is None
            and inputs_embeds is None
            and use_cache is not False
            and isinstance(logits_to_keep, int)
            and lean_decode_ok(self, input_ids, cache)
            and not hooked(self)  # decode_step would skip a hook on any of its modules
        )
        if lean:
            logits = decode_step(self, input_ids, cache, logits_to_keep)
            out = CausalLMOutputWithPast(logits=logits, cache=cache)
        else:
            out = super().forward(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                cache=cache, inputs_embeds=inputs_embeds, labels=labels, use_cache=use_cache,
                logits_to_keep=logits_to_keep, **kwargs,
            )  # fmt: skip
        if not weights or input_ids is None:
            return out
        if isinstance(out, tuple):
            raise ValueError("the lookup mixture needs return_dict=True")
        if isinstance(logits_to_keep, torch.Tensor) and (
            logits_to_keep.dim() != 1 or logits_to_keep.dtype == torch.bool
        ):
            raise NotImplementedError("the lookup mixture takes logits_to_keep as int or 1-D ids")
        context = self._context(input_ids, cache, before, attention_mask)
        if cache is None and getattr(out, "cache", None) is not None:
            self._contexts[out.cache] = context  # a cache transformers made for this call
        out.logits = self._mix(out.logits, input_ids, context, logits_to_keep)
        return out

    def _mix(self, logits: torch.Tensor, input_ids, context: torch.Tensor, logits_to_keep):
        """The lookup mixture of the model's logits for the chunk `input_ids`, whose tokens
        end `context`."""
        weights = self.config.lookup_weights
        mixed = logits.float()  # the mixture's weights need float32 steps
        mixed = mixed.clone() if mixed is logits and mixed.requires_grad else mixed
        n, start = input_ids.shape[1], context.shape[1] - input_ids.shape[1]
        kept = (
            logits_to_keep.tolist()
            if isinstance(logits_to_keep, torch.Tensor)
            else range(n - mixed.shape[1], n)
        )  # the chunk positions the logits are for
        for b in range(mixed.shape[0]):
            for j, pos in enumerate(kept):
                end = start + (pos % n) + 1
                mixed[b, j] = mix_lookup(mixed[b, j], context[b, :end], weights, self._skip)
        return mixed

    def __getstate__(self) -> dict:  # the per-cache contexts hold weak references
        state = self.__dict__.copy()
        state["_contexts"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._contexts = weakref.WeakKeyDictionary()

    def _context(self, input_ids, cache, before: int, mask) -> torch.Tensor:
        """Every token up to the last of `input_ids` ([batch, n]; masked ones as -1): the
        tokens kept for this cache, cut to its length before this call, then these."""
        ids = input_ids.detach()
        if mask is not None and mask.shape == ids.shape:
            ids = ids.masked_fill(mask == 0, -1)
        if cache is None:
            return ids
        kept = self._contexts.get(cache)
        if kept is None or kept.shape[0] != ids.shape[0]:
            kept = ids.new_full((ids.shape[0], 0), -1)
        kept = kept[:, :before]
        if kept.shape[1] < before:  # a cache filled elsewhere: those tokens are unknown
            kept = torch.cat([ids.new_full((ids.shape[0], before - kept.shape[1]), -1), kept], 1)
        context = torch.cat([kept, ids], 1)
        self._contexts[cache] = context
        return context


def engine_step(model: DrafterLlamaForCausalLM) -> Step | None:
    """The engine's step for a drafter: its forward's lean path (decode_step, then the lookup
    mixture) without the per-call checks and module dispatch, where that path would run for
    every call of the run (eval mode, a float32 CPU Llama, no hook, no replaced forward);
    else None, and the engine calls the forward."""
    if not model.lean_decode or model.training or "forward" in vars(model):
        return None
    if not lean_model_ok(model) or hooked(model):
        return None
    gathered, weights = plan(model), model.config.lookup_weights

    def step(input_ids: torch.Tensor, cache, keep: int) -> torch.Tensor:
        before = cache.get_seq_length() if weights else 0
        logits = planned_step(gathered, input_ids, cache, keep)
        if not weights:
            return logits
        context = model._context(input_ids, cache, before, None)
        return model._mix(logits, input_ids, context, keep)

    return step


def make_drafter(
    model: LlamaForCausalLM,
    draft_vocab: list[int] | None = None,
    lookup_weights: list[float] | None = None,
    lookup_skip: list[int] | None = None,
) -> DrafterLlamaForCausalLM:
    """`model`'s weights in a DrafterLlama with this draft vocabulary (its output rows for
    those ids: the argmax over them is unchanged, q is renormalised over them) and these
    lookup weights and skipped tokens; None keeps what `model` has (a plain Llama: all tokens,
    no lookup)."""
    old = list(getattr(model.config, "draft_vocab", []) or [])
    vocab = old if draft_vocab is None else list(draft_vocab)
    if old and vocab != old:
        raise ValueError("this drafter is trimmed already: trim the full model instead")
    weights = (
        getattr(model.config, "lookup_weights", []) if lookup_weights is None else lookup_weights
    )
    skip = getattr(model.config, "lookup_skip", []) if lookup_skip is None else lookup_skip
    base = {
        k: v
        for k, v in model.config.to_diff_dict().items()
        if k not in ("draft_vocab", "lookup_weights", "lookup_skip", "model_type", "architectures")
    }
    config = DrafterConfig(
        draft_vocab=vocab, lookup_weights=list(weights), lookup_skip=list(skip), **base
    )
    config.architectures = [DrafterLlamaForCausalLM.__name__]
    drafter = DrafterLlamaForCausalLM(config).to(model.device, model.dtype)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("lm_head.")}
    missing, unexpected = drafter.load_state_dict(state, strict=False)
    if unexpected or not set(missing) <= {"lm_head.weight"}:
        raise ValueError(f"cannot make a drafter: missing {missing}, unexpected {unexpected}")
    head = model.get_output_embeddings().weight.detach()
    rows = head if vocab == old else head[torch.tensor(vocab, dtype=torch.long)]
    drafter.get_output_embeddings().weight.data.copy_(rows)
    return drafter.eval()


def head_rows(model: torch.nn.Module) -> int:
    """How many vocabulary columns a model's logits have (a DraftVocabHead's full vocabulary,
    not its rows)."""
    head = model.get_output_embeddings()
    return int(getattr(head, "out_features", None) or head.weight.shape[0])


AutoConfig.register(DrafterConfig.model_type, DrafterConfig, exist_ok=True)
AutoModelForCausalLM.register(DrafterConfig, DrafterLlamaForCausalLM, exist_ok=True)
LEAN_STEPS[DrafterLlamaForCausalLM] = engine_step

__all__ = [
    "DraftVocabHead",
    "decode_step",
    "DrafterConfig",
    "DrafterLlamaForCausalLM",
    "fill_value",
    "head_rows",
    "lean_decode_ok",
    "lookup",
    "make_drafter",
    "mix_lookup",
]

"""The engine's lean step for a plain Llama (models.lean): the logits of transformers' own
forward, bit for bit, on every kind of cached call the engine makes; and transformers' forward
wherever the step would not compute the same thing."""

from __future__ import annotations

import pytest
import torch
from tiny import build_model
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

from speccascade import generate
from speccascade.core import pair as pair_module
from speccascade.core.pair import lean_step
from speccascade.models.drafter import make_drafter
from speccascade.models.lean import decode_step, engine_step

# the calls of one run: a prompt, single tokens, a window after a bonus token, a rejection's
# crop, with and without logits_to_keep (the engine keeps the window's last positions)
CALLS = ([4], [3], [6, 4], [3], [4, 4, 6], [3])


def _run(model, step) -> list[torch.Tensor]:
    cache, out = DynamicCache(config=model.config), []
    with torch.no_grad():
        out.append(step(torch.tensor([[1, 3, 4, 3, 6]]), cache, 1))
        for j, ids in enumerate(CALLS):
            if j == 4:
                cache.crop(-2)
            out.append(step(torch.tensor([ids]), cache, len(ids) if j % 2 else 1))
    return out


def _forward(model):
    return lambda ids, cache, keep: (
        model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep).logits
    )


@pytest.mark.parametrize("heads,kv_heads", [(2, 2), (4, 2), (3, 1)])
def test_the_lean_step_gives_the_forward_s_logits_bit_for_bit(heads, kv_heads):
    model = build_model("llama", 11, 24, 3, seed=7, scale=3.0, heads=heads, kv_heads=kv_heads)
    step = lean_step(model)
    assert step is not None
    lean, plain = _run(model, step), _run(model, _forward(model))
    assert [a.shape for a in lean] == [b.shape for b in plain]
    for a, b in zip(lean, plain):
        assert torch.equal(a, b), (a - b).abs().max()


@pytest.mark.parametrize("lookup", [[], [0.3, 0.6]])
def test_the_drafter_s_engine_step_gives_its_forward_s_logits_bit_for_bit(lookup):
    """The drafter's step (a draft vocabulary, with and without the lookup mixture, whose
    context follows the cache through a crop) is its forward on transformers' products, logit
    for logit."""
    base = build_model("llama", 11, 24, 2, seed=9, scale=3.0, heads=4, kv_heads=2)
    drafter = make_drafter(base, [0, 1, 3, 4, 6, 9], lookup_weights=lookup)
    step = lean_step(drafter)
    assert step is not None
    lean = _run(drafter, step)
    drafter.lean_decode = False  # its forward now runs transformers' products, then the mixture
    plain = _run(drafter, _forward(drafter))
    for a, b in zip(lean, plain):
        assert torch.equal(a, b), (a - b).abs().max()
    if lookup:  # the mixture moved some logits: the test compares what the lookup adds too
        bare = make_drafter(base, [0, 1, 3, 4, 6, 9], lookup_weights=[])
        assert not all(torch.equal(a, b) for a, b in zip(lean, _run(bare, lean_step(bare))))


def test_what_the_lean_step_cannot_run_goes_through_the_forward():
    """Other architectures, other dtypes, a drafter in training or with its lean path turned
    off, and a model a forward hook watches (a test's fault, a user's probe) get no step."""
    llama = build_model("llama", 11, 16, 1, seed=3, scale=3.0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=11, n_embd=16, n_layer=1, n_head=2))
    assert lean_step(gpt2) is None
    drafter = make_drafter(llama, list(range(11)))
    assert lean_step(drafter) is not None
    assert lean_step(drafter.train()) is None
    drafter.eval().lean_decode = False
    assert lean_step(drafter) is None
    drafter.lean_decode = True
    seen = []
    hook = drafter.model.layers[0].register_forward_pre_hook(lambda *a: seen.append(1))
    assert lean_step(drafter) is None
    with torch.no_grad():  # and its own forward honours the hook too
        drafter(input_ids=torch.tensor([[1, 2]]), cache=DynamicCache(config=drafter.config))
    assert seen
    hook.remove()
    hook = llama.model.layers[0].mlp.register_forward_hook(lambda *a: None)
    assert lean_step(llama) is None
    hook.remove()
    assert lean_step(llama) is not None
    llama.forward = llama.forward  # an instance's own forward is the user's: it runs
    assert lean_step(llama) is None
    assert engine_step(build_model("llama", 11, 16, 1, seed=3, scale=3.0).half()) is None


def test_a_run_with_the_lean_step_is_the_run_without_it(llama_pair, monkeypatch):
    """Greedy and sampled runs of every kind of method write the same tokens with the same
    probabilities whether the engine takes the lean step or the forward."""
    pair = llama_pair
    assert lean_step(pair.verifier) is not None  # the tiny pair's Llamas do take it
    runs = [
        dict(method="verifier"),
        dict(method="speculative", gamma=4),
        dict(method="spec_cascade", rule="token_v3", alpha=0.3, gamma=3),
        dict(method="spec_cascade", rule="opt", alpha=0.2, gamma=3, temperature=1.0, seed=5),
    ]

    def traces():
        return [generate(pair, "who is ada?", max_new_tokens=16, **r) for r in runs]

    lean = traces()
    monkeypatch.setattr(pair_module, "LEAN_STEPS", {})
    plain = traces()
    for a, b in zip(lean, plain):
        assert a.new_token_ids == b.new_token_ids
        assert [(t.p, t.q) for t in a.tokens] == [(t.p, t.q) for t in b.tokens]


def test_decode_step_is_the_step_the_engine_takes():
    model = build_model("llama", 11, 16, 2, seed=4, scale=3.0)
    ids = torch.tensor([[1, 2, 3]])
    a = decode_step(model, ids, DynamicCache(config=model.config), 1)
    b = lean_step(model)(ids, DynamicCache(config=model.config), 1)
    assert torch.equal(a, b)

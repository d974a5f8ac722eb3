"""A drafter with a frequency-ranked draft vocabulary (models.draft_vocab): its output layer
covers only some tokens, every other token gets probability 0 in q, and the method stays
exact (METHOD.md's facts hold for any q, including one with a smaller support)."""

from __future__ import annotations

import pytest
import torch
from test_engine import _law_check
from tiny import build_model, char_tokenizer, save_pair
from transformers import AutoModelForCausalLM

from speccascade.core.engine import generate
from speccascade.core.sampling import Sampler, check_finite
from speccascade.models.draft_vocab import (
    DraftVocabHead,
    SubVocabLlamaForCausalLM,
    fill_value,
    head_rows,
    trim_vocab,
)
from speccascade.models.loading import load_pair

# char_tokenizer("abcde"): <pad> 0, <s> 1, </s> 2, a..e 3..7. The drafter never drafts c or e.
KEPT = [0, 1, 2, 3, 4, 6]


def test_the_trimmed_head_keeps_its_rows_and_gives_the_rest_probability_zero():
    model = build_model("llama", 8, 16, 1, seed=3, scale=3.0)
    trimmed = trim_vocab(model, KEPT)
    ids = torch.tensor([[1, 3, 4, 6, 5]])
    with torch.no_grad():
        full, cut = model(ids).logits, trimmed(ids).logits
    assert cut.shape == full.shape and head_rows(trimmed) == 8
    assert torch.allclose(cut[..., KEPT], full[..., KEPT], atol=1e-6)
    dropped = [i for i in range(8) if i not in KEPT]
    assert (cut[..., dropped] == fill_value(cut.dtype)).all()
    for temperature in (1.0, 0.05):  # finite (the engine refuses inf) and exactly 0
        check_finite(cut / temperature, "drafter")
        probs = Sampler(temperature, 0, 1.0, torch.Generator()).probs(cut[0])
        assert (probs[:, dropped] == 0).all() and torch.allclose(probs.sum(-1), torch.ones(5))
    # the argmax over the kept rows is the full model's argmax among them
    assert (cut.argmax(-1) == torch.tensor(KEPT)[full[..., KEPT].argmax(-1)]).all()


def test_a_draft_vocabulary_must_be_distinct_ids_inside_the_vocabulary():
    for ids in ([], [0, 0], [-1, 2], [3, 8]):
        with pytest.raises(ValueError, match="draft vocabulary"):
            DraftVocabHead(16, ids, 8)
    assert fill_value(torch.float16) > -torch.finfo(torch.float16).max  # finite in float16


@pytest.fixture(scope="module")
def trimmed_pair(tmp_path_factory):
    """The small-vocabulary pair of test_engine, its drafter trimmed to KEPT, both saved and
    loaded back through load_pair (no remote code: importing speccascade registers the class)."""
    root = tmp_path_factory.mktemp("trimmed")
    drafter, verifier = save_pair(root, "llama", char_tokenizer("abcde"), seed=3, scale=3.0)
    folder = root / "trimmed-drafter"
    trim_vocab(AutoModelForCausalLM.from_pretrained(drafter), KEPT).save_pretrained(folder)
    char_tokenizer("abcde").save_pretrained(folder)
    pair = load_pair(str(folder), verifier)
    pair.eos_ids = frozenset()
    return pair


def test_a_trimmed_drafter_loads_as_its_own_class(trimmed_pair):
    assert isinstance(trimmed_pair.drafter, SubVocabLlamaForCausalLM)
    assert trimmed_pair.drafter.config.draft_vocab == KEPT
    assert trimmed_pair.vocab_size == 8  # the full vocabulary, not the head's 6 rows


@pytest.mark.parametrize(
    "kw,gamma,tokens",
    [
        (dict(method="speculative", temperature=1.0), 1, 2),
        (dict(method="spec_cascade", rule="token_v3", alpha=0.3, temperature=1.0), 1, 2),
        (dict(method="block", temperature=1.0), 3, 3),  # a joint test across a window of 3
    ],
)
def test_the_law_with_a_trimmed_drafter_is_the_target(trimmed_pair, kw, gamma, tokens, capsys):
    """Fact 3 where q gives 0 to c and e: SD and block verification still emit exactly p
    (the residual writes c and e), the cascade exactly its pi."""
    _law_check(trimmed_pair, kw, gamma, tokens, capsys)


def test_greedy_sd_with_a_trimmed_drafter_is_the_verifiers_greedy_output(trimmed_pair):
    """Fact 1 (greedy SD = the verifier alone) with drafts that can never be c or e, while the
    verifier's own output uses them."""
    verifier_ids, drafted = [], set()
    for prompt in ([1, 3, 4], [1, 5, 7, 3], [1, 6]):
        alone = generate(trimmed_pair, prompt, method="verifier", temperature=0, max_new_tokens=24)
        for gamma in (1, 3, 5):
            sd = generate(
                trimmed_pair, prompt, method="speculative", gamma=gamma, temperature=0,
                max_new_tokens=24,
            )  # fmt: skip
            assert sd.new_token_ids == alone.new_token_ids
            drafted |= {i for r in sd.rounds for i in r.draft_ids}
        verifier_ids += alone.new_token_ids
    assert drafted <= set(KEPT)
    assert {5, 7} & set(verifier_ids), "the test needs the verifier to write a dropped token"

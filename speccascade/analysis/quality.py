"""Answer quality: key-fact accuracy, ROUGE-L, first-clause match, agreement, verifier NLL.

Key facts are the primary measure: an answer is correct when it states every fact of its eval
item (short regex patterns such as "astronaut", "Apollo 11", "second (person|man)"), whatever
its wording. A cascade that keeps the drafter's short, correct answer scores as correct; ROUGE-L
against the reference is reported beside it and does punish other wording.
"""

from __future__ import annotations

import re

import torch

from speccascade.core.pair import ModelPair

# CJK ideographs, kana and hangul: written without spaces, so each character is a token (the
# usual unit of Chinese ROUGE); `\w+` made a whole Chinese answer one "word", and two answers
# sharing most of their characters scored 0
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased word tokens; one token per CJK character."""
    return _WORD.findall(text.lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    """Longest common subsequence, O(len(a) * len(b)) with one row of memory."""
    if not a or not b:
        return 0
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, 1):
            prev_diag, row[j] = row[j], prev_diag + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over lower-cased word tokens (Lin 2004, beta = 1)."""
    c, r = words(candidate), words(reference)
    lcs = lcs_length(c, r)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(c), lcs / len(r)
    return 2 * precision * recall / (precision + recall)


def fact_hits(answer: str, facts: tuple[str, ...] | list[str]) -> list[bool]:
    """Which key facts (case-insensitive regex patterns) the answer states."""
    return [re.search(f, answer, re.IGNORECASE) is not None for f in facts]


def states_facts(answer: str, facts: tuple[str, ...] | list[str]) -> bool:
    """Correct when every key fact is stated (an item without facts is never correct)."""
    return bool(facts) and all(fact_hits(answer, facts))


def fact_token_mask(token_texts: list[str], facts: tuple[str, ...] | list[str]) -> list[bool]:
    """For each token of an answer, whether it overlaps where the answer states a key fact."""
    text = "".join(token_texts)
    spans = [m.span() for f in facts for m in re.finditer(f, text, re.IGNORECASE)]
    mask, at = [], 0
    for t in token_texts:
        lo, hi = at, at + len(t)
        mask.append(any(a < hi and lo < b for a, b in spans) and hi > lo)
        at = hi
    return mask


def first_clause(text: str) -> str:
    return " ".join(words(re.split(r"[;\n]", text.strip(), maxsplit=1)[0]))


def first_clause_match(candidate: str, reference: str) -> bool:
    """Exact match of the text before the first ';' (the head of a WordNet-style answer)."""
    return bool(first_clause(reference)) and first_clause(candidate) == first_clause(reference)


def verifier_nll(pair: ModelPair, prompt_ids: list[int], answer_ids: list[int]) -> float | None:
    """Mean negative log-likelihood per answer token under the verifier (teacher forced)."""
    if not answer_ids:
        return None
    ids = torch.tensor([prompt_ids + answer_ids], device=pair.device)
    with torch.inference_mode():
        logits = pair.verifier(ids).logits[0, len(prompt_ids) - 1 : -1, : pair.vocab_size]
    logp = torch.log_softmax(logits.float(), -1)
    target = torch.tensor(answer_ids, device=logp.device)
    return float(-logp[torch.arange(len(answer_ids)), target].mean())

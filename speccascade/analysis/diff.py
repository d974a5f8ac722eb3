"""Token-aligned diff: the cascade's output beside the verifier alone and the drafter alone,
run with the same prompt and settings (seed, temperature, token budget).

The question it answers: where did the cascade keep the drafter's words the verifier would not
have written (the method's saving, or its risk), and did that cost any key facts? Numbers and
positions only; views.diff draws them.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from speccascade.analysis.evalsets import find_item
from speccascade.analysis.quality import fact_hits
from speccascade.core.engine import Settings, generate
from speccascade.core.pair import ModelPair
from speccascade.core.trace import Trace

Opcode = tuple[str, int, int, int, int]  # difflib's (tag, a_lo, a_hi, b_lo, b_hi)

# Sources of tokens the drafter wrote and the cascade kept.
DRAFTER_SOURCES = frozenset({"accepted", "drafter"})
ROLES = ("cascade", "verifier", "drafter")


@dataclass(frozen=True)
class Alignment:
    """Two token-id lists aligned: difflib's opcodes and where they first differ."""

    opcodes: tuple[Opcode, ...]
    first_divergence: (
        int | None
    )  # first index where a[i] != b[i] (or the shorter ends); None: equal

    def changed_a(self) -> set[int]:
        """Indices of `a` inside a non-equal opcode (no counterpart in `b`)."""
        return {i for tag, i0, i1, _, _ in self.opcodes if tag != "equal" for i in range(i0, i1)}

    def changed_b(self) -> set[int]:
        return {j for tag, _, _, j0, j1 in self.opcodes if tag != "equal" for j in range(j0, j1)}


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """Length of the common prefix, or None when the lists are equal. Computed directly: the
    opcodes may align a shared prefix elsewhere when a longer match comes later."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def align(a_ids: list[int], b_ids: list[int]) -> Alignment:
    """Token-by-token alignment (no autojunk: frequent tokens such as ' the' must still match
    in long outputs)."""
    matcher = SequenceMatcher(a=list(a_ids), b=list(b_ids), autojunk=False)
    return Alignment(tuple(matcher.get_opcodes()), first_divergence(list(a_ids), list(b_ids)))


@dataclass(frozen=True)
class Comparison:
    """The cascade's output against one single-model output."""

    other: str  # "verifier" or "drafter"
    alignment: Alignment
    # cascade positions written by the drafter that the other output has no counterpart for
    kept_drafter: tuple[int, ...]

    @property
    def first_divergence(self) -> int | None:
        return self.alignment.first_divergence


def contrast(cascade: Trace, other: Trace, name: str) -> Comparison:
    alignment = align(cascade.new_token_ids, other.new_token_ids)
    changed = alignment.changed_a()
    kept = tuple(
        i for i, tok in enumerate(cascade.tokens) if tok.source in DRAFTER_SOURCES and i in changed
    )
    return Comparison(name, alignment, kept)


@dataclass(frozen=True)
class KeyFacts:
    """Which of the eval item's key facts an output states (quality.fact_hits)."""

    hits: tuple[bool, ...]

    @property
    def stated(self) -> int:
        return sum(self.hits)

    @property
    def total(self) -> int:
        return len(self.hits)

    @property
    def share(self) -> float:
        return self.stated / self.total if self.total else 0.0

    @property
    def correct(self) -> bool:
        return bool(self.hits) and all(self.hits)


def key_facts(prompt: str | list[int], text: str) -> KeyFacts | None:
    """The output's key facts where the eval set knows the question; None where it does not."""
    item = find_item(prompt) if isinstance(prompt, str) else None
    if item is None or not item.facts:
        return None
    return KeyFacts(tuple(fact_hits(text, item.facts)))


@dataclass(frozen=True)
class Diff:
    prompt: str | list[int]
    cascade: Trace
    verifier: Trace
    drafter: Trace
    vs_verifier: Comparison
    vs_drafter: Comparison
    facts: dict[str, KeyFacts | None]  # by role (ROLES)

    def trace(self, role: str) -> Trace:
        return {"cascade": self.cascade, "verifier": self.verifier, "drafter": self.drafter}[role]


def build_diff(prompt: str | list[int], cascade: Trace, verifier: Trace, drafter: Trace) -> Diff:
    """The diff of three finished runs (no model call)."""
    traces = {"cascade": cascade, "verifier": verifier, "drafter": drafter}
    return Diff(
        prompt=prompt,
        cascade=cascade,
        verifier=verifier,
        drafter=drafter,
        vs_verifier=contrast(cascade, verifier, "verifier"),
        vs_drafter=contrast(cascade, drafter, "drafter"),
        facts={role: key_facts(prompt, tr.text) for role, tr in traces.items()},
    )


def run_diff(pair: ModelPair, prompt: str | list[int], settings: Settings) -> Diff:
    """Run `settings` (the cascade), then the verifier alone and the drafter alone with the same
    prompt, seed, temperature and token budget, and align the three outputs."""
    cascade = generate(pair, prompt, settings)
    verifier = generate(pair, prompt, settings, method="verifier")
    drafter = generate(pair, prompt, settings, method="drafter")
    return build_diff(prompt, cascade, verifier, drafter)

"""Logits to probabilities, seeded draws, and the speculative accept test.

Everything here works in float32 whatever the model dtype: the accept test compares
probabilities that can be tiny, and bf16 has three significant digits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from speccascade.core.errors import NonFiniteLogitsError
from speccascade.core.rules import Target, normalise


def unit_probs(logits: Tensor) -> Tensor:
    """The T = 1 softmax that deferral rules read (docs/method.md, section 7.4)."""
    return torch.softmax(logits.float(), dim=-1)


@dataclass
class Sampler:
    """Temperature / top-k / top-p and one seeded generator for a single request."""

    temperature: float
    top_k: int
    top_p: float
    generator: torch.Generator

    @classmethod
    def create(
        cls, temperature: float, top_k: int, top_p: float, seed: int | None, device: torch.device
    ) -> Sampler:
        generator = torch.Generator(device=device)
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        return cls(temperature, top_k, top_p, generator)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: Tensor) -> Tensor:
        """The law tokens are drawn from; one-hot at the argmax when greedy."""
        logits = logits.float()
        if self.greedy:  # written in place: no int64 one-hot of the vocabulary per row
            return torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
        logits = logits / self.temperature
        if 0 < self.top_k < logits.shape[-1]:
            kth = torch.topk(logits, self.top_k, dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, -torch.inf)
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1:
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            # Drop a token when the mass before it already reaches top_p (always keeps one).
            drop = sorted_probs.cumsum(-1) - sorted_probs >= self.top_p
            probs = normalise(probs.scatter(-1, order, sorted_probs.masked_fill(drop, 0.0)))
        return probs

    def draw(self, probs: Tensor) -> Tensor:
        """One token id per row of `probs`."""
        if self.greedy:
            return probs.argmax(-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1)

    def uniform(self, n: int, device: torch.device) -> Tensor:
        return torch.rand(n, generator=self.generator, device=device)


def check_finite(logits: Tensor, who: str) -> None:
    """Refuse to sample from garbage: NaN or inf logits stop the run with a clear error.
    A finite sum means every logit is finite (NaN and inf propagate), so the element-wise
    test runs only where the sum is not (an overflow of large finite logits passes it)."""
    if not torch.isfinite(logits.sum()) and not torch.isfinite(logits).all():
        raise NonFiniteLogitsError(f"the {who} produced NaN or infinite logits; stopping the run")


def first_rejection(drafts: Tensor, q: Tensor, target: Target, u: Tensor) -> tuple[int, Tensor]:
    """Speculative accept test over a window.

    A draft x at row i is kept iff u_i * q_i(x) < accept_i(x), i.e. with probability
    min(1, accept/q) for u ~ U[0, 1). Returns the number of leading accepted drafts and the
    per-row acceptance probabilities (for the trace).
    """
    rows = torch.arange(drafts.shape[0], device=drafts.device)
    q_x = q[rows, drafts]
    a_x = target.accept[rows, drafts]
    kept = u * q_x < a_x
    n_accepted = int(kept.logical_not().cumsum(0).eq(0).sum())
    accept_prob = torch.where(q_x > 0, (a_x / q_x).clamp(max=1.0), 1.0)
    return n_accepted, accept_prob


def block_verify(
    drafts: Tensor, q: Tensor, target: Target, u: Tensor
) -> tuple[int, Tensor, Tensor | None]:
    """Block verification (Sun et al. 2024, "Block verification accelerates speculative
    decoding", Algorithm 2) of a window against the law b = target.law (p: lossless).

    With p_0 = 1 and p_i = min(1, p_{i-1} b_i(x_i) / q_i(x_i)), the level of position i < g is
    h_i = S_i / (S_i + 1 - p_i), S_i = sum_v max(0, p_i b_{i+1}(v) - q_{i+1}(v)), and h_g = p_g.
    The window keeps tau = max{i : u_i < h_i} drafts (0 if none): unlike the token test, a
    failed draft does not end the window if a later level passes. After tau < g the next token
    comes from max(0, p_tau b_{tau+1} - q_{tau+1}), normalised. Returns tau, the levels h (the
    trace's accept probabilities) and that replacement law (None when all are kept).

    Every emitted token is distributed as b, and on average the window keeps at least as
    many drafts as the token test (tests/test_zoo.py checks both by exact enumeration)."""
    g = drafts.shape[0]
    rows = torch.arange(g, device=drafts.device)
    b = target.law[:g]
    q_x = q[rows, drafts]
    ratio = torch.where(q_x > 0, b[rows, drafts] / q_x.clamp_min(torch.finfo(q.dtype).tiny), 1.0)
    weights = []  # p_0 .. p_g
    w = torch.ones((), dtype=q.dtype, device=drafts.device)
    weights.append(w)
    for i in range(g):
        w = torch.clamp(w * ratio[i], max=1.0)
        weights.append(w)
    levels = torch.empty(g, dtype=q.dtype, device=drafts.device)
    for i in range(1, g):
        mass = (weights[i] * b[i] - q[i]).clamp_min(0).sum()
        denom = mass + 1 - weights[i]
        # 0/0 happens only where p_i = 1 and the next law is q's: then the window surely
        # goes on (p_{i+1} = 1), so any level is exact; 1 reads best in the replay
        level = torch.where(denom > 0, mass / denom.clamp_min(1e-30), 1.0)
        levels[i - 1] = level.clamp(0.0, 1.0)  # rounding can put it a hair above 1
    levels[g - 1] = weights[g]
    passed = (u[:g] < levels).nonzero()
    tau = int(passed[-1]) + 1 if passed.numel() else 0
    if tau == g:
        return tau, levels, None
    replacement = (weights[tau] * b[tau] - q[tau]).clamp_min(0)
    total = replacement.sum()
    return tau, levels, replacement / total if total > 0 else b[tau]


def residual_probs(target: Target, row: int) -> Tensor:
    """Law of the replacement token after a rejection at `row`.

    When the residual has no mass (pi = q up to rounding) a rejection is a rounding artefact;
    drawing from the target law keeps the output law exact instead of dividing 0 by 0."""
    residual = target.residual[row]
    return residual / residual.sum() if residual.sum() > 0 else target.law[row]

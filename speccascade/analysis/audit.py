"""Fidelity audit: does a decoding's output follow the law it promises?

Speculative decoding is lossless only if the accept test, the residual and the caches are
all right; serving engines have shipped bugs that broke it unnoticed (a q that was not the
one drafts were sampled from; 100% acceptance). This audit checks a configuration end to
end, from the outside: it draws N seeded runs of the first k tokens and compares, position by
position, the tokens that came out with the law the method promises there:

* lossless SD and block verification: the verifier's law p;
* a speculative cascade, lossy SD, BiLD* and the rule zoo: their target pi (docs/method.md,
  step 6: every emitted token is distributed as pi, the bonus token too);
* the static ensemble: w p + (1 - w) q; the drafter or the verifier alone: q or p; the token
  cascade: its Chow mixture. (The sequence cascade promises a law over whole answers, not per
  position, and is not audited.)

The promised law at position j depends on the prefix the run wrote, so each sample is
checked against its own conditional law, computed from both models' forwards on that prefix
(one batched forward per model over the distinct sampled sequences). Pooling the samples, the
observed counts of each token O(v) are compared with E(v) = sum_i pi_i(v): a Pearson
chi-square with cells of expected count < 5 pooled (p-value), and the total-variation gap
sum |O - E| / 2N with a bootstrap interval and the 95% quantile a correct sampler shows at
this N (simulated from the promised laws). The verdict flags a position whose p-value is
below `level / k` (Bonferroni over the k positions).

Numbers only; the figure, table and sentences for people are in viz (`audit_figure`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from speccascade.core.engine import METHOD_REGISTRY, Settings, generate
from speccascade.core.errors import SettingsError
from speccascade.core.pair import ModelPair
from speccascade.core.rules import RULES, build_target
from speccascade.core.sampling import Sampler, unit_probs

MAX_POSITIONS = 8
MIN_SAMPLES, MAX_SAMPLES = 50, 5000
BOOTSTRAP = 200
TOP = 512  # each promised law is kept as its top tokens and the mass of the rest
NOT_AUDITED = ("seq_cascade",)  # promises a law over whole answers, not per position


@dataclass(frozen=True)
class Cell:
    """One token at one position: how often it came out, and how often the law promised."""

    token_id: int
    observed: float  # share of the samples
    promised: float  # mean promised probability


@dataclass(frozen=True)
class PositionCheck:
    position: int  # 1-based: the first emitted token is 1
    n: int  # samples that reached this position (a run may end earlier, at end of text)
    tv: float  # sum_c |O(c) - E(c)| / 2n over the cells c: each law's ranks, then the rest
    tv_low: float  # bootstrap 95% interval of tv
    tv_high: float
    tv_null: float  # 95% quantile of tv for a sampler that follows the promised law exactly
    chi2: float
    dof: int
    p_value: float
    impossible: int  # samples whose token the promised law gives probability 0
    cells: list[Cell]  # the most frequent tokens, observed and promised

    def flagged(self, threshold: float) -> bool:
        return self.impossible > 0 or self.p_value < threshold


@dataclass(frozen=True)
class Audit:
    method: str
    rule: str | None
    alpha: float | None
    gamma: int
    temperature: float
    draft_policy: str
    law: str  # which law was promised: "p", "q", "pi"
    samples: int
    positions: list[PositionCheck]
    level: float  # family-wise significance level
    seconds: float
    sampling_seconds: float

    @property
    def threshold(self) -> float:
        return self.level / max(1, len(self.positions))

    @property
    def worst(self) -> PositionCheck | None:
        """The flagged position with the smallest p-value, or None when none is flagged."""
        flagged = [c for c in self.positions if c.flagged(self.threshold)]
        return min(flagged, key=lambda c: (c.impossible == 0, c.p_value)) if flagged else None

    @property
    def consistent(self) -> bool:
        return self.worst is None


def promised_law(method: str) -> str:
    """Which law a method promises per position: 'p' (lossless), 'q' (drafter alone) or
    'pi' (a target law)."""
    row = METHOD_REGISTRY[method]
    if method == "drafter":
        return "q"
    if method == "verifier" or (row.rule and not RULES[row.rule].has_alpha):
        return "p"
    return "pi"


def audit(
    pair: ModelPair,
    prompt: str | list[int],
    settings: Settings,
    *,
    positions: int = 2,
    samples: int | None = None,
    seconds: float = 60.0,
    level: float = 0.01,
    first_seed: int = 0,
    cells: int = 8,
    run: Callable[..., object] = generate,
) -> Audit:
    """Audit `settings` on `prompt` over the first `positions` tokens.

    `samples` seeded runs (seeds first_seed, first_seed + 1, ...); None sizes it to spend
    about `seconds` in all on this machine (timed on a few runs first, a quarter of the time
    kept for the promised laws and the statistics). `run` is how a run is made (the engine's
    `generate`; a test passes a broken copy to see the audit catch it)."""
    start = time.perf_counter()
    if settings.method in NOT_AUDITED:
        raise SettingsError(
            f"{settings.method} promises a law over whole answers, not per position; "
            "audit another method"
        )
    if not 1 <= positions <= MAX_POSITIONS:
        raise SettingsError(f"positions must be in [1, {MAX_POSITIONS}]; got {positions}")
    if not 0 < level < 1:
        raise SettingsError(f"level must be in (0, 1); got {level}")
    if samples is not None and not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise SettingsError(f"samples must be in [{MIN_SAMPLES}, {MAX_SAMPLES}]; got {samples}")
    s = replace(settings, max_new_tokens=positions, record_top_k=0).validated()
    if s.temperature == 0:
        raise SettingsError(
            "the audit compares laws, so it needs sampling: set a temperature above 0 "
            "(greedy runs are one sequence, checked against the verifier by the tests)"
        )
    ids = pair.encode(prompt, s.chat)

    def one(seed: int) -> tuple[int, ...]:
        return tuple(run(pair, ids, s, seed=seed).new_token_ids)

    outputs: list[tuple[int, ...]] = []
    if samples is None:
        t0 = time.perf_counter()
        outputs = [one(first_seed + i) for i in range(5)]
        per_run = (time.perf_counter() - t0) / 5
        samples = max(MIN_SAMPLES, min(MAX_SAMPLES, int(0.75 * seconds / max(per_run, 1e-4))))
    outputs += [one(first_seed + i) for i in range(len(outputs), samples)]
    sampling = time.perf_counter() - start
    laws = _promised(pair, ids, s, outputs, positions)
    checks = [
        _check([o for o in outputs if len(o) > j], j, laws, cells, first_seed + j)
        for j in range(positions)
    ]
    checks = [c for c in checks if c is not None]
    rule = s.target_rule
    return Audit(
        method=s.method,
        rule=rule.name if rule is not None else None,
        alpha=s.alpha if rule is not None and rule.has_alpha else None,
        gamma=s.gamma,
        temperature=s.temperature,
        draft_policy=s.draft_policy,
        law=promised_law(s.method),
        samples=len(outputs),
        positions=checks,
        level=level,
        seconds=time.perf_counter() - start,
        sampling_seconds=sampling,
    )


@dataclass
class _Law:
    """A promised law after one prefix, kept small: its top tokens, the mass of the rest, and
    the exact probability of every token the runs wrote after that prefix."""

    ids: torch.Tensor
    probs: torch.Tensor
    rest: float
    seen: dict[int, float]


@torch.inference_mode()
def _promised(
    pair: ModelPair, ids: list[int], s: Settings, outputs: list[tuple[int, ...]], k: int
) -> dict[tuple[int, ...], _Law]:
    """The promised law after each distinct sampled prefix (of length < k), keyed by prefix:
    both models run once over every distinct sampled sequence (batched, no cache, logits only
    for the positions read), and every prefix of a sequence reads its law off that one
    forward."""
    sampler = Sampler(s.temperature, s.top_k, s.top_p, torch.Generator())
    law = promised_law(s.method)
    rule = s.target_rule
    seen: dict[tuple[int, ...], set[int]] = {}
    for o in outputs:
        for j in range(min(len(o), k)):
            seen.setdefault(o[:j], set()).add(o[j])
    sequences = sorted({o[: k - 1] for o in outputs})
    roles = {"q": pair.drafter, "p": pair.verifier}
    if law != "pi":
        roles = {law: roles[law]}
    out: dict[tuple[int, ...], _Law] = {}
    for start in range(0, len(sequences), 32):
        batch = sequences[start : start + 32]
        width = len(ids) + max(map(len, batch))
        keep = width - len(ids) + 1  # the prompt's last position onwards
        x = torch.full((len(batch), width), ids[-1], dtype=torch.long)  # right padding: unseen
        for b, seq in enumerate(batch):
            x[b, : len(ids) + len(seq)] = torch.tensor(ids + list(seq))
        logits = {
            r: m(input_ids=x.to(m.get_input_embeddings().weight.device), use_cache=False,
                 logits_to_keep=keep).logits[..., : pair.vocab_size].to(pair.device, torch.float32)
            for r, m in roles.items()
        }  # fmt: skip
        for b, seq in enumerate(batch):
            for j in range(len(seq) + 1):
                key = seq[:j]
                if key in out or key not in seen:
                    continue
                view = {r: v[b, j : j + 1] for r, v in logits.items()}
                full = _law(law, rule, s.alpha, sampler, view.get("q"), view.get("p")).cpu()
                top = torch.topk(full, min(TOP, full.shape[0]))
                out[key] = _Law(
                    top.indices,
                    top.values.double(),
                    max(0.0, 1.0 - float(top.values.double().sum())),
                    {t: float(full[t]) for t in seen[key]},
                )
    return out


def _law(law: str, rule, alpha, sampler: Sampler, ql, pl) -> torch.Tensor:
    if law == "q":
        return sampler.probs(ql)[0]
    if law == "p":
        return sampler.probs(pl)[0]
    q, p = sampler.probs(ql), sampler.probs(pl)
    return build_target(rule, alpha, q, p, unit_probs(ql), unit_probs(pl)).law[0]


def _check(
    outputs: list[tuple[int, ...]], j: int, laws: dict, shown: int, seed: int
) -> PositionCheck | None:
    """Position j + 1: the samples' tokens there against their own promised laws, over each
    law's ranks (its top tokens, then the rest); the listed cells are the tokens written most
    with their mean promised probability."""
    n = len(outputs)
    if n == 0:
        return None
    groups = Counter(o[:j] for o in outputs)  # samples sharing a prefix share a law
    keys = list(groups)
    slot = {key: g for g, key in enumerate(keys)}
    tokens = [o[j] for o in outputs]
    columns = sorted(
        {int(t) for key in keys for t in laws[key].ids.tolist()} | set(tokens)
    )  # fmt: skip
    col = {t: c for c, t in enumerate(columns)}
    rows = torch.zeros(len(keys), len(columns) + 1, dtype=torch.float64)  # last: the rest
    for g, key in enumerate(keys):
        law = laws[key]
        listed = law.ids.tolist()
        rows[g, [col[int(t)] for t in listed]] = law.probs
        for t in law.seen.keys() - set(listed):
            rows[g, col[t]] = law.seen[t]
        rows[g, -1] = max(0.0, 1.0 - float(rows[g, :-1].sum()))
    index = torch.tensor([slot[o[:j]] for o in outputs])
    counts = torch.tensor([groups[key] for key in keys], dtype=torch.float64)
    # The test's cells are each law's own ranks (its first choice, its second, ... its TOP-th,
    # then the rest), fixed before any run: a token its law does not rank falls in the rest
    # on both sides. (Cells made of the tokens the runs wrote never see a run in the rest, so
    # a flat law, T = 2 on an 8,192-token vocabulary, made the verifier alone look broken.)
    width = max(len(laws[key].ids) for key in keys)
    ranked = torch.zeros(len(keys), width + 1, dtype=torch.float64)
    ranks = {}
    for g, key in enumerate(keys):
        law = laws[key]
        ranked[g, : len(law.ids)] = law.probs
        ranked[g, -1] = max(0.0, 1.0 - float(law.probs.sum()))
        ranks[key] = {int(t): r for r, t in enumerate(law.ids.tolist())}
    rank_col = torch.tensor([ranks[o[:j]].get(int(o[j]), width) for o in outputs])
    expected = counts @ ranked
    observed = torch.bincount(rank_col, minlength=width + 1).double()
    impossible = sum(laws[o[:j]].seen[o[j]] <= 0 for o in outputs)
    tv = float((observed - expected).abs().sum() / (2 * n))
    chi2, dof = _pearson(observed, expected)
    p_value = float(torch.special.gammaincc(torch.tensor(dof / 2.0), torch.tensor(chi2 / 2.0)))
    gen = torch.Generator().manual_seed(seed)
    low, high = _bootstrap(rank_col, index, ranked, gen)
    null = _null_quantile(index, ranked, expected, gen)
    # what the view lists: the tokens written most, with their mean promised probability
    token_observed = torch.bincount(
        torch.tensor([col[t] for t in tokens]), minlength=len(columns) + 1
    )
    token_expected = counts @ rows
    both = (token_observed.double() + token_expected)[:-1]
    top = torch.topk(both, min(shown, len(columns))).indices.tolist()
    cells = [
        Cell(columns[c], float(token_observed[c] / n), float(token_expected[c] / n)) for c in top
    ]
    return PositionCheck(
        j + 1, n, tv, low, high, null, chi2, dof, p_value if dof > 0 else 1.0, impossible, cells
    )


def _pearson(observed: torch.Tensor, expected: torch.Tensor) -> tuple[float, int]:
    """Pearson's statistic over the cells, Cochran's way: cells expected fewer than 5 times
    are pooled, and while the pool itself is expected fewer than 5 times it absorbs the
    smallest remaining cell (a near-empty pool would otherwise make one stray token look
    like a strong signal). Returns (statistic, degrees of freedom)."""
    order = torch.argsort(expected).tolist()
    pool_o = pool_e = 0.0
    cells = []
    for c in order:
        o, e = float(observed[c]), float(expected[c])
        if e < 5:
            pool_o, pool_e = pool_o + o, pool_e + e
        else:
            cells.append((o, e))
    while pool_e < 5 and pool_e > 0 and cells:
        o, e = cells.pop(0)  # the smallest cell left (cells are in ascending order)
        pool_o, pool_e = pool_o + o, pool_e + e
    if pool_e > 0:
        cells.append((pool_o, pool_e))
    stat = sum((o - e) ** 2 / e for o, e in cells if e > 0)
    return stat, max(0, len(cells) - 1)


def _bootstrap(token_col, index, rows, gen, draws: int = BOOTSTRAP) -> tuple[float, float]:
    """The spread of the TV gap over resampled runs (95% percentile band): how much the
    measured gap moves with the sample, not a confidence interval for the true gap."""
    n = len(token_col)
    pick = torch.randint(0, n, (draws, n), generator=gen)
    tv = []
    for row in pick:
        obs = torch.bincount(token_col[row], minlength=rows.shape[1]).double()
        exp = torch.bincount(index[row], minlength=rows.shape[0]).double() @ rows
        tv.append(float((obs - exp).abs().sum() / (2 * n)))
    tv.sort()
    return tv[int(0.025 * draws)], tv[min(draws - 1, int(math.ceil(0.975 * draws)) - 1)]


def _null_quantile(index, rows, expected, gen, draws: int = BOOTSTRAP) -> float:
    """The 95% quantile of the TV gap for samples drawn from the promised laws themselves:
    the gap sampling noise alone gives at this n."""
    n = len(index)
    drawn = torch.multinomial(rows[index].float(), draws, replacement=True, generator=gen)
    tv = []
    for d in range(draws):
        obs = torch.bincount(drawn[:, d], minlength=rows.shape[1]).double()
        tv.append(float((obs - expected).abs().sum() / (2 * n)))
    tv.sort()
    return tv[min(draws - 1, int(math.ceil(0.95 * draws)) - 1)]


__all__ = ["Audit", "Cell", "PositionCheck", "audit", "promised_law"]

"""Re-price a recorded run under a cost model, without running the models again.

A trace records what a run *did*: how many forwards each model made, how many tokens each
verifier call scored, how many rounds it took. A cost model says what a forward *costs* on some
hardware. Multiplying the two projects the run's latency there: on this machine (a profile
measured from the pair's own forwards), on a GPU from first principles (a memory-bound
roofline), or under numbers the user enters. Every result is a projection, never a
measurement, and says so (`Projection.kind`).

The same pricing also answers what-ifs the trace can support: the run's latency at another
draft window gamma (exactly re-simulated at T = 0 where every needed position was recorded,
else estimated from the per-position acceptance rate, and labelled which), and the acceptance
rate at which speculation stops paying (`breakeven_acceptance`).

Rounds are read through RoundRecord's fields only (drafted, accepted, emitted, drafter_calls,
verifier_calls), so a round that drafts fewer than gamma tokens is priced as it happened.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Literal

import torch
from transformers import DynamicCache

from .engine import APP_DEFAULTS, METHOD_REGISTRY, Settings, generate
from .errors import SettingsError
from .models import ModelPair
from .rules import RULES
from .sampling import check_finite
from .trace import RoundRecord, Trace, expected_tokens_per_call

Basis = Literal["recorded", "exact", "estimate"]

# -- cost models -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ForwardCost:
    """Milliseconds of one forward over `n` new tokens (KV cache holding the rest).

    Either a line, `fixed_ms + per_token_ms * n`, or a measured table of (n, ms) points,
    linear between them; beyond the table's ends it continues from the end point with the
    slope `per_token_ms` (a least-squares fit over the table, see `from_table`), which is
    steadier than the slope of two noisy end points."""

    fixed_ms: float
    per_token_ms: float = 0.0
    table: tuple[tuple[int, float], ...] = ()

    @classmethod
    def from_table(cls, points: Iterable[tuple[int, float]]) -> ForwardCost:
        """A measured table, with its least-squares line as the summary and extrapolation."""
        pts = tuple(sorted((int(n), float(ms)) for n, ms in points))
        if not pts:
            raise SettingsError("a forward-cost table needs at least one (n, ms) point")
        fixed, slope = fit_line(pts)
        return cls(fixed, slope, pts)

    def ms(self, n: float) -> float:
        """Cost of one forward over n new tokens (n >= 1)."""
        if not self.table:
            return self.fixed_ms + self.per_token_ms * n
        pts = self.table
        if n <= pts[0][0]:
            return max(0.0, pts[0][1] - self.per_token_ms * (pts[0][0] - n))
        if n >= pts[-1][0]:
            return pts[-1][1] + self.per_token_ms * (n - pts[-1][0])
        for (n0, m0), (n1, m1) in zip(pts, pts[1:]):
            if n0 <= n <= n1:
                return m0 + (m1 - m0) * (n - n0) / (n1 - n0)
        raise AssertionError("unreachable: n lies between the table's ends")


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of ms over n; slope clamped at >= 0 (more tokens never
    cost less; a negative slope is timing noise) with the intercept refitted to the mean."""
    if len(points) == 1 or len({n for n, _ in points}) == 1:
        return statistics.fmean(m for _, m in points), 0.0
    n_mean = statistics.fmean(n for n, _ in points)
    m_mean = statistics.fmean(m for _, m in points)
    sxx = sum((n - n_mean) ** 2 for n, _ in points)
    sxy = sum((n - n_mean) * (m - m_mean) for n, m in points)
    slope = max(0.0, sxy / sxx)
    return m_mean - slope * n_mean, slope


@dataclass(frozen=True)
class Assumption:
    """One thing a cost model assumes: an i18n key (`fig.proj.assume.*`) and the numbers the
    viz layer fills into it. Plain data, so a profile never formats text for humans."""

    key: str
    values: Mapping[str, float | int | str] = field(default_factory=dict)


@dataclass(frozen=True)
class CostModel:
    """What each step of a run costs, in milliseconds.

    `round_overhead_ms` is host work per round outside the forwards (sampling, bookkeeping,
    decoding the text); `draft_overhead_ms` is the same per drafted token (a speculative round
    builds a target and records statistics for every draft, which a plain decoding step does
    not). On a GPU both are small; on a CPU running a tiny pair they are not."""

    name: str
    drafter: ForwardCost
    verifier: ForwardCost
    round_overhead_ms: float = 0.0
    draft_overhead_ms: float = 0.0
    profile: str = "custom"  # the PROFILES row that built it
    assumptions: tuple[Assumption, ...] = ()
    title: Assumption = Assumption("fig.proj.profile.custom")  # what a figure calls it

    @property
    def drafter_ms(self) -> float:
        """A drafter forward over one new token: the usual drafting step."""
        return self.drafter.ms(1)

    @property
    def cost_ratio(self) -> float:
        """c of docs/method.md fact 5: drafter / verifier cost of a one-token forward."""
        v = self.verifier.ms(1)
        return self.drafter.ms(1) / v if v > 0 else math.inf


# -- profiles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    """Datasheet numbers a roofline needs: HBM bandwidth and dense 16-bit tensor throughput."""

    name: str
    label: str
    bandwidth_tbs: float
    tflops_16bit: float


# fmt: off
GPUS: dict[str, Gpu] = {g.name: g for g in [
    Gpu("h100-sxm", "NVIDIA H100 SXM 80GB", 3.35, 989.0),
    Gpu("h100-pcie", "NVIDIA H100 PCIe 80GB", 2.0, 756.0),
    Gpu("h200", "NVIDIA H200 141GB", 4.8, 989.0),
    Gpu("a100-80gb", "NVIDIA A100 80GB SXM", 2.039, 312.0),
    Gpu("a100-40gb", "NVIDIA A100 40GB", 1.555, 312.0),
    Gpu("l4", "NVIDIA L4 24GB", 0.3, 121.0),
]}
# fmt: on

DTYPE_BYTES: dict[str, float] = {
    "float32": 4.0,
    "bfloat16": 2.0,
    "float16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}
# float32 matmuls run as TF32 at half the 16-bit rate; 8- and 4-bit weights are assumed
# de-quantised to 16 bits for the matmul (weight-only quantisation), so the 16-bit rate.
_COMPUTE_SCALE = {"float32": 0.5}


def roofline_profile(
    drafter_params: float,
    verifier_params: float,
    *,
    gpu: str = "h100-sxm",
    dtype: str = "bfloat16",
    bandwidth_tbs: float | None = None,
    tflops: float | None = None,
    launch_ms: float = 1.0,
    round_overhead_ms: float = 0.0,
    draft_overhead_ms: float = 0.0,
) -> CostModel:
    """A GPU cost model from first principles.

    Decoding a few tokens is memory-bound: a forward reads every weight once, so it costs
    parameter bytes / bandwidth, plus a fixed `launch_ms` (kernel launches, framework). Scoring
    n tokens in one pass reads the weights once too and adds 2 * params FLOPs per token at the
    GPU's peak; the two are added (no overlap), an upper bound on the roofline that stays
    linear in n. KV cache and activation traffic are ignored (short contexts, batch 1)."""
    if dtype not in DTYPE_BYTES:
        raise SettingsError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}")
    if gpu not in GPUS and (bandwidth_tbs is None or tflops is None):
        raise SettingsError(f"unknown gpu {gpu!r}; choose one of {', '.join(GPUS)}")
    spec = GPUS.get(gpu)
    bw = bandwidth_tbs if bandwidth_tbs is not None else spec.bandwidth_tbs
    peak = tflops if tflops is not None else spec.tflops_16bit * _COMPUTE_SCALE.get(dtype, 1.0)
    for name, value in (("bandwidth_tbs", bw), ("tflops", peak)):
        if not value > 0:
            raise SettingsError(f"{name} must be positive; got {value}")
    for name, value in (("drafter_params", drafter_params), ("verifier_params", verifier_params)):
        if not value > 0:
            raise SettingsError(f"{name} must be positive; got {value}")
    nbytes = DTYPE_BYTES[dtype]

    def forward(params: float) -> ForwardCost:
        read_ms = params * nbytes / (bw * 1e12) * 1e3
        per_token_ms = 2.0 * params / (peak * 1e12) * 1e3
        return ForwardCost(launch_ms + read_ms, per_token_ms)

    label = spec.label if spec and bandwidth_tbs is None and tflops is None else gpu
    return CostModel(
        name=f"roofline {label} {dtype}",
        drafter=forward(drafter_params),
        verifier=forward(verifier_params),
        round_overhead_ms=round_overhead_ms,
        draft_overhead_ms=draft_overhead_ms,
        profile="roofline",
        title=Assumption("fig.proj.profile.roofline", {"gpu": label, "dtype": dtype}),
        assumptions=(
            Assumption(
                "fig.proj.assume.memory_bound",
                {"gpu": label, "bw": bw, "bytes": nbytes, "dtype": dtype},
            ),
            Assumption("fig.proj.assume.params", {"d": drafter_params, "v": verifier_params}),
            Assumption("fig.proj.assume.compute", {"tflops": peak}),
            Assumption("fig.proj.assume.launch", {"ms": launch_ms}),
            Assumption("fig.proj.assume.ignored"),
            Assumption(
                "fig.proj.assume.overhead",
                {"round_ms": round_overhead_ms, "draft_ms": draft_overhead_ms},
            ),
        ),
    )


def custom_profile(
    drafter_ms: float,
    verifier_fixed_ms: float,
    verifier_per_token_ms: float = 0.0,
    *,
    round_overhead_ms: float = 0.0,
    draft_overhead_ms: float = 0.0,
    drafter_per_token_ms: float = 0.0,
    verifier_table: Mapping[int, float] | None = None,
    name: str = "custom",
) -> CostModel:
    """Numbers the user enters: a drafter forward, a verifier forward as fixed + per-token
    (or a measured table n -> ms), and the overheads."""
    for key, value in (
        ("drafter_ms", drafter_ms),
        ("verifier_fixed_ms", verifier_fixed_ms),
        ("verifier_per_token_ms", verifier_per_token_ms),
        ("round_overhead_ms", round_overhead_ms),
        ("draft_overhead_ms", draft_overhead_ms),
        ("drafter_per_token_ms", drafter_per_token_ms),
    ):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise SettingsError(f"{key} must be a number >= 0; got {value!r}")
    verifier = (
        ForwardCost.from_table(verifier_table.items())
        if verifier_table
        else ForwardCost(verifier_fixed_ms, verifier_per_token_ms)
    )
    # drafter_ms is what a one-token drafting step costs, whatever the per-token part
    drafter = ForwardCost(drafter_ms - drafter_per_token_ms, drafter_per_token_ms)
    return CostModel(
        name=name,
        drafter=drafter,
        verifier=verifier,
        round_overhead_ms=round_overhead_ms,
        draft_overhead_ms=draft_overhead_ms,
        profile="custom",
        assumptions=(
            Assumption("fig.proj.assume.custom"),
            Assumption(
                "fig.proj.assume.overhead",
                {"round_ms": round_overhead_ms, "draft_ms": draft_overhead_ms},
            ),
        ),
    )


# How repeated timings are summarised. The median by default (steady on a quiet machine). On
# a machine shared with other jobs, short timed steps mostly dodge their bursts while a whole
# run does not: the mean then prices the load a run meets on average, and the minimum what a
# step costs without any (their load only ever adds).
STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median,
    "mean": statistics.fmean,
    "min": min,
}

# The realistic prompt a measured profile is timed after (the app's story question).
CALIBRATION_PROMPT = "Who is Buzz Aldrin?"


def measure_profile(
    pair: ModelPair,
    *,
    prompt: str | list[int] = CALIBRATION_PROMPT,
    gamma: int = APP_DEFAULTS.gamma,
    repeats: int = 5,
    overhead_tokens: int = APP_DEFAULTS.max_new_tokens,
    measure_overhead: bool = True,
    statistic: str = "median",
    min_seconds: float = 0.25,
    name: str = "this machine",
) -> CostModel:
    """This machine's cost model, fitted from the pair's own forwards.

    Each model is timed as the engine times it (engine._LM.forward: a DynamicCache, logits
    for the kept positions sliced to the shared vocabulary in float32, the finiteness check)
    over n = 1 .. gamma + 1 new tokens after the prompt, and over the prompt itself (the
    prefill): at least `repeats` timings per n and more until `min_seconds` per model are
    spent, summarised by `statistic` (STATISTICS), the n interleaved so that a burst of load
    on a shared machine spreads over all of them. The host overhead outside forwards comes
    from real runs (drafter alone: per round; the speculative cascade: per drafted token), as
    their wall time minus their summed forward seconds (`measure_overheads`); without them
    (`measure_overhead` False) it is a stated 0."""
    if repeats < 1 or gamma < 1:
        raise SettingsError("repeats and gamma must be >= 1")
    ids = pair.encode(prompt)
    ns = list(range(1, gamma + 2))
    with torch.inference_mode():
        drafter, verifier = _forward_tables(
            pair, ids, ns, repeats, STATISTICS[statistic], min_seconds
        )
    round_ms = draft_ms = 0.0
    if measure_overhead:
        round_ms, draft_ms = measure_overheads(pair, prompt, gamma, overhead_tokens)
    device = str(pair.device)
    return CostModel(
        name=name,
        drafter=ForwardCost.from_table(drafter.items()),
        verifier=ForwardCost.from_table(verifier.items()),
        round_overhead_ms=round_ms,
        draft_overhead_ms=draft_ms,
        profile="measured",
        title=Assumption("fig.proj.profile.measured"),
        assumptions=(
            Assumption(
                "fig.proj.assume.measured",
                {
                    "pair": pair_label(pair),
                    "device": device,
                    "threads": torch.get_num_threads(),
                    "repeats": repeats,
                    "prompt": len(ids),
                },
            ),
            Assumption("fig.proj.assume.table", {"n": gamma + 1}),
            Assumption(
                "fig.proj.assume.overhead_measured"
                if measure_overhead
                else "fig.proj.assume.overhead",
                {"round_ms": round_ms, "draft_ms": draft_ms},
            ),
        ),
    )


def _timed_forward(pair: ModelPair, model, ids: torch.Tensor, cache, keep: int) -> float:
    """Seconds of one forward, done as engine._LM.forward does it; then, untimed, the work a
    decoding step does with the logits before the next forward (the T = 1 softmax, the top-k
    the trace records, the greedy pick), so that the next forward finds the caches as it
    would in a run rather than warm from a tight loop (on a CPU that is worth tens of %)."""
    start = time.perf_counter()
    out = model(
        input_ids=ids.to(model.get_input_embeddings().weight.device).view(1, -1),
        cache=cache,
        use_cache=True,
        logits_to_keep=keep,
    )
    logits = out.logits[0, :, : pair.vocab_size].to(pair.device, torch.float32)
    check_finite(logits, "model")
    if logits.device.type == "cuda":
        torch.cuda.synchronize(logits.device)
    seconds = time.perf_counter() - start
    probs = torch.softmax(logits, dim=-1)
    torch.topk(probs, min(10, probs.shape[-1]), dim=-1)
    probs.argmax(-1).tolist()
    return seconds


def _forward_tables(
    pair: ModelPair,
    prompt_ids: list[int],
    ns: list[int],
    repeats: int,
    statistic: Callable[[list[float]], float] = statistics.median,
    min_seconds: float = 0.0,
) -> tuple[dict[int, float], dict[int, float]]:
    """ms of a drafter and a verifier forward over n new tokens after the prompt
    (`statistic` of the timings), for each n, plus the prefill (n = prompt length, one kept
    position, as a single-model run's first step). Each cache is cropped back after each
    step, so every step sees the prompt. (Timing the models in turns, as a speculative round
    runs them, prices the drafter as if the verifier had just flushed the CPU caches, which
    it has in a cascade but not in a drafter-alone run: one table per model, with each
    step's own bookkeeping in between, matches both within the noise.)"""
    prompt = torch.tensor(prompt_ids, dtype=torch.long)
    models = (pair.drafter, pair.verifier)
    caches = [DynamicCache(config=m.config) for m in models]
    for m, c in zip(models, caches):
        _timed_forward(pair, m, prompt, c, 1)  # the cache the timed steps extend
    # realistic token ids, repeated when gamma + 1 exceeds the prompt
    new = prompt.repeat(max(ns) // len(prompt_ids) + 1)
    samples: list[dict[int, list[float]]] = [
        {n: [] for n in [*ns, len(prompt_ids)]} for _ in models
    ]
    # per model: the first pass warms up and is dropped; then at least `repeats` passes, and
    # more until `min_seconds` have been spent (a fast model gets many samples for little time)
    for m, c, got in zip(models, caches, samples):
        step, start = 0, time.perf_counter()
        while step <= repeats or time.perf_counter() - start < min_seconds:
            for n in ns:
                s = _timed_forward(pair, m, new[:n], c, n)
                c.crop(-n)
                if step:
                    got[n].append(s)
            s = _timed_forward(pair, m, prompt, DynamicCache(config=m.config), 1)
            if step:
                got[len(prompt_ids)].append(s)
            step += 1
    drafter, verifier = ({n: 1e3 * statistic(v) for n, v in got.items()} for got in samples)
    return drafter, verifier


def measure_overheads(
    pair: ModelPair, prompt: str | list[int], gamma: int, tokens: int, repeats: int = 3
) -> tuple[float, float]:
    """(ms per round, ms per drafted token) the engine spends outside forwards: a run's wall
    time minus its summed forward seconds. The drafter alone gives the per-round part (one
    token per round); the default speculative cascade's rounds then give the per-draft part
    on top of it. Medians over `repeats` runs of each, after one warm-up run."""
    base = replace(APP_DEFAULTS, gamma=gamma, max_new_tokens=tokens, temperature=0.0)

    def runs(method: str) -> list[Trace]:
        settings = replace(base, method=method)
        generate(pair, prompt, settings)
        return [generate(pair, prompt, settings) for _ in range(repeats)]

    round_s = statistics.median(
        max(0.0, _gap(tr.summary)) / max(1, len(tr.rounds)) for tr in runs("drafter")
    )
    draft_s = statistics.median(
        max(0.0, _gap(tr.summary) - len(tr.rounds) * round_s) / max(1, tr.summary.drafted)
        for tr in runs(APP_DEFAULTS.method)
    )
    return 1e3 * round_s, 1e3 * draft_s


def _gap(summary) -> float:
    return summary.wall_s - summary.drafter_s - summary.verifier_s


@dataclass(frozen=True)
class Profile:
    """A registry row: how one kind of cost model is built, and what it needs."""

    name: str
    label: str
    build: Callable[..., CostModel]
    needs_pair: bool  # measured on the loaded pair
    description: str


# fmt: off
PROFILES: dict[str, Profile] = {p.name: p for p in [
    Profile("measured", "this machine (measured)", measure_profile, True,
            "the pair's own forwards timed here, plus the overhead of real runs"),
    Profile("roofline", "GPU roofline (first principles)", roofline_profile, False,
            "memory-bound decoding: weight bytes / bandwidth + launch overhead"),
    Profile("custom", "custom numbers", custom_profile, False,
            "drafter ms, verifier fixed + per-token ms, round overhead, as entered"),
]}
# fmt: on


def build_profile(name: str, *args, **options) -> CostModel:
    """The cost model of profile `name` (measured: pass the pair first)."""
    if name not in PROFILES:
        raise SettingsError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[name].build(*args, **options)


def pair_label(pair: ModelPair) -> str:
    """'drafter -> verifier' by folder or hub name, without the paths."""
    return " → ".join(Path(i).name or i for i in (pair.drafter_id, pair.verifier_id))


def count_params(pair: ModelPair) -> tuple[int, int]:
    """(drafter, verifier) parameter counts, tied embeddings counted once (what a forward
    reads)."""
    return tuple(sum(p.numel() for p in m.parameters()) for m in (pair.drafter, pair.verifier))


# -- what a run did --------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """The forwards a run makes, grouped by how many new tokens each one processes, plus its
    rounds and drafted tokens. Counts may be fractional when estimated."""

    drafter: Mapping[int, float]
    verifier: Mapping[int, float]
    rounds: float
    drafted: float

    @property
    def drafter_calls(self) -> float:
        return sum(self.drafter.values())

    @property
    def verifier_calls(self) -> float:
        return sum(self.verifier.values())

    @property
    def verifier_tokens(self) -> float:
        """Tokens the verifier processed in all (prompt included)."""
        return sum(n * c for n, c in self.verifier.items())


def workload_of_rounds(rounds: Sequence[RoundRecord], prompt_tokens: int) -> Workload:
    """Replay each model's KV-cache bookkeeping over recorded rounds to find how many new
    tokens each forward processed. A model's first call in a round takes every token it has
    not seen (the prompt once, then the tokens emitted since its last call), its later calls
    one token each (the previous draft); after the round its cache keeps what survived:

    * the verifier scores its pending tokens plus the round's drafts in one call, and keeps
      the accepted drafts (rejected ones are cropped; the round's last token stays pending);
    * the drafter keeps its drafts up to the accepted ones (min(calls - 1, accepted): its last
      draft is never fed back unless a bonus forward needed its q).

    This reproduces every loop in engine.py (autoregressive, speculative with or without the
    bonus forward, token cascade, sequence cascade) from the RoundRecord fields alone."""
    drafter: Counter[int] = Counter()
    verifier: Counter[int] = Counter()
    emitted = seen_d = seen_v = 0
    for r in rounds:
        before = prompt_tokens + emitted
        if r.drafter_calls:
            drafter[max(1, before - seen_d)] += 1
            drafter[1] += r.drafter_calls - 1
            seen_d = before + min(r.drafter_calls - 1, r.accepted)
        if r.verifier_calls:
            verifier[max(1, before - seen_v + r.drafted)] += 1
            verifier[1] += r.verifier_calls - 1  # never happens today: one token each
            seen_v = before + r.accepted
        emitted += r.emitted
    return Workload(
        drafter={n: c for n, c in drafter.items() if c},
        verifier={n: c for n, c in verifier.items() if c},
        rounds=len(rounds),
        drafted=sum(r.drafted for r in rounds),
    )


def verifier_alone_workload(prompt_tokens: int, new_tokens: int) -> Workload:
    """Decoding `new_tokens` with the verifier alone: a prefill, then one token per forward."""
    calls = {prompt_tokens: 1.0}
    if new_tokens > 1:
        calls[1] = calls.get(1, 0.0) + new_tokens - 1
    return Workload(drafter={}, verifier=calls, rounds=max(1, new_tokens), drafted=0)


# -- pricing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """A run's latency under a cost model: a projection, never a measurement (`kind`)."""

    method: str
    rule: str | None
    gamma: int
    prompt_tokens: int
    new_tokens: int
    rounds: float
    drafter_calls: float
    verifier_calls: float
    verifier_tokens: float
    drafter_ms: float
    verifier_ms: float
    overhead_ms: float
    profile: str  # the cost model's name
    basis: Basis  # recorded rounds, or re-simulated exactly, or estimated
    measured_s: float | None = None  # the trace's own wall time, where there is one
    reason: str | None = None  # why an estimate is not exact (see Replay.reason)
    kind: Literal["projection"] = "projection"

    @property
    def total_ms(self) -> float:
        return self.drafter_ms + self.verifier_ms + self.overhead_ms

    @property
    def total_s(self) -> float:
        return self.total_ms / 1e3

    @property
    def error(self) -> float | None:
        """(projected - measured) / measured, where the run was timed."""
        if not self.measured_s:
            return None
        return (self.total_s - self.measured_s) / self.measured_s


def price(
    work: Workload,
    cost: CostModel,
    *,
    method: str,
    rule: str | None,
    gamma: int,
    prompt_tokens: int,
    new_tokens: int,
    basis: Basis,
    measured_s: float | None = None,
    reason: str | None = None,
) -> Projection:
    """Each forward at its model's cost for its token count, plus the overheads."""
    return Projection(
        method=method,
        rule=rule,
        gamma=gamma,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        rounds=work.rounds,
        drafter_calls=work.drafter_calls,
        verifier_calls=work.verifier_calls,
        verifier_tokens=work.verifier_tokens,
        drafter_ms=sum(cost.drafter.ms(n) * c for n, c in work.drafter.items()),
        verifier_ms=sum(cost.verifier.ms(n) * c for n, c in work.verifier.items()),
        overhead_ms=work.rounds * cost.round_overhead_ms + work.drafted * cost.draft_overhead_ms,
        profile=cost.name,
        basis=basis,
        measured_s=measured_s,
        reason=reason,
    )


def project(trace: Trace, cost: CostModel) -> Projection:
    """The trace's own rounds priced under `cost`. The verifier's first call also reads the
    prompt (prefill): it is priced as one forward over prompt + drafted tokens, from the
    model's line or table, like every other call."""
    s = trace.summary
    return price(
        workload_of_rounds(trace.rounds, s.prompt_tokens),
        cost,
        method=s.method,
        rule=s.rule,
        gamma=s.gamma,
        prompt_tokens=s.prompt_tokens,
        new_tokens=s.new_tokens,
        basis="recorded",
        measured_s=s.wall_s,
    )


def verifier_alone(prompt_tokens: int, new_tokens: int, cost: CostModel) -> Projection:
    """The yardstick: the same number of tokens decoded by the verifier alone."""
    return price(
        verifier_alone_workload(prompt_tokens, new_tokens),
        cost,
        method="verifier",
        rule=None,
        gamma=1,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        basis="exact",
    )


def speedup(proj: Projection, cost: CostModel) -> float:
    """Projected speed-up over the verifier alone writing as many tokens after the same
    prompt (> 1: faster)."""
    base = verifier_alone(proj.prompt_tokens, proj.new_tokens, cost).total_ms
    return base / proj.total_ms if proj.total_ms > 0 else math.inf


def project_methods(traces: Mapping[str, Trace], cost: CostModel) -> list[dict]:
    """One record per trace (keyed by its label): projected seconds, the verifier alone's
    projected seconds for the same tokens, the projected speed-up, the measured wall time and
    the measured speed-up where a verifier-alone trace is among them. DataFrame-able."""
    measured_base = next(
        (tr.summary.wall_s / tr.summary.new_tokens for tr in traces.values() if _is_verifier(tr)),
        None,
    )
    rows = []
    for label, tr in traces.items():
        proj = project(tr, cost)
        base = verifier_alone(proj.prompt_tokens, proj.new_tokens, cost)
        measured_speedup = None
        if measured_base and tr.summary.wall_s > 0:
            measured_speedup = measured_base * tr.summary.new_tokens / tr.summary.wall_s
        rows.append(
            {
                "label": label,
                "method": proj.method,
                "rule": proj.rule,
                "gamma": proj.gamma,
                "new_tokens": proj.new_tokens,
                "drafter_calls": proj.drafter_calls,
                "verifier_calls": proj.verifier_calls,
                "projected_s": proj.total_s,
                "verifier_alone_s": base.total_s,
                "speedup": base.total_ms / proj.total_ms if proj.total_ms else math.inf,
                "measured_s": proj.measured_s,
                "measured_speedup": measured_speedup,
                "error": proj.error,
                "basis": proj.basis,
                **profile_fields(cost),
                "kind": proj.kind,
            }
        )
    return rows


def profile_fields(cost: CostModel) -> dict:
    """What a record says about the cost model it was priced with: its name, and the i18n
    key and values a figure titles it with."""
    return {
        "profile": cost.name,
        "profile_key": cost.title.key,
        "profile_values": dict(cost.title.values),
    }


def _is_verifier(trace: Trace) -> bool:
    return trace.summary.method == "verifier" and trace.summary.new_tokens > 0


# -- re-simulating another draft window ------------------------------------------------------


def position_outcomes(trace: Trace) -> list[bool | None]:
    """Per emitted position: would a greedy draft there be kept (True) or replaced (False)?
    None where the trace does not say.

    Drafted positions say it directly (accepted / resampled). A bonus position had no draft,
    but where the bonus forward recorded the drafter's q there (every rule except SD), the
    greedy draft would have been the drafter's argmax and it is kept iff that is the token the
    run emitted, i.e. q(token) = max q. SD's bonus positions, and single-model runs, say
    nothing."""
    out: list[bool | None] = []
    for t in trace.tokens:
        if t.source == "accepted":
            out.append(True)
        elif t.source == "resampled":
            out.append(False)
        elif t.source == "bonus" and t.q is not None and t.max_q is not None:
            out.append(t.q >= t.max_q)
        else:
            out.append(None)
    return out


def outcomes_past_end(trace: Trace) -> list[bool]:
    """Outcomes of drafts beyond the end of the text, from the last round. When EOS or a stop
    string ends the text inside a window, the drafts after it were still tested (the round's
    `accepted` counts them) and only then cut: they were kept up to `accepted` and the next
    one rejected. At T = 0 they are as gamma-independent as the rest (each is a function of
    the prefix, here the text plus the kept drafts)."""
    if not trace.rounds:
        return []
    last = trace.rounds[-1]
    start = trace.summary.new_tokens - last.emitted
    kept = start + last.accepted - trace.summary.new_tokens
    if last.drafted == 0 or kept < 0:
        return []
    return [True] * kept + ([False] if last.accepted < last.drafted else [])


def acceptance_per_position(trace: Trace) -> float | None:
    """b of docs/method.md fact 5: the share of *tested* drafts that were kept. A window stops
    at its first rejection, so kept / drafted would undercount b; kept / (kept + rejected)
    is the geometric-law estimate."""
    kept = sum(t.source == "accepted" for t in trace.tokens)
    rejected = sum(t.source == "resampled" for t in trace.tokens)
    return kept / (kept + rejected) if kept + rejected else None


@dataclass(frozen=True)
class Replay:
    """The trace's run re-played at another draft window.

    `basis` is "exact" when every count follows from recorded outcomes; otherwise "estimate",
    with `reason`: `temperature` (T > 0: draws change with gamma), `unrecorded` (a new window
    drafts at a position the run never tested, e.g. SD's bonus tokens), `final_round` (only the
    last round is uncertain: whether drafts past the end of the text were kept decides one
    drafter forward, or the token budget is unknown). `drafter_calls_range` bounds the drafter
    calls where only the last round is uncertain."""

    gamma: int
    work: Workload
    basis: Basis
    reason: str | None
    rounds: tuple[RoundRecord, ...] = ()
    drafter_calls_range: tuple[float, float] | None = None


_BUDGET_STOPS = ("max_new_tokens", "context")


def resimulate(trace: Trace, gamma: int, max_new_tokens: int | None = None) -> Replay:
    """What the trace's run would have done with draft window `gamma`.

    At T = 0 the emitted text of SD and every cascade rule does not depend on gamma: whether a
    position's draft is kept is a function of the prefix. So windows of any size can be
    re-played over the recorded per-position outcomes, exactly while every position they draft
    at has one. Otherwise the run is estimated: positions without a recorded outcome (all of
    them at T > 0) keep a draft with the run's per-position acceptance rate b (i.i.d.,
    docs/method.md fact 5), the others as recorded (`expected_workload`).
    `max_new_tokens` is the run's token budget; without it, a
    run that stopped on its budget had exactly its tokens, and any other had at least as many
    as its rounds drafted up to (a larger last window may then be `final_round` uncertain)."""
    s = trace.summary
    if gamma < 1:
        raise SettingsError(f"gamma must be >= 1; got {gamma}")
    row = METHOD_REGISTRY.get(s.method)
    if row is None or not row.drafts:
        raise SettingsError(f"{s.method} does not draft: there is no window to change")
    bonus_q = bool(s.rule and RULES[s.rule].needs_bonus_q)
    if s.temperature != 0:
        return _estimate(trace, gamma, bonus_q, "temperature", max_new_tokens)
    budget = max_new_tokens
    if budget is None and s.stop_reason in _BUDGET_STOPS:
        budget = s.new_tokens
    outcomes = position_outcomes(trace) + outcomes_past_end(trace)
    played = _replay(outcomes, s.new_tokens, gamma, budget, _budget_floor(trace), bonus_q)
    if played is None:
        return _estimate(trace, gamma, bonus_q, "unrecorded", budget)
    rounds, extra, past, budget_unsure = played
    work = workload_of_rounds(rounds, s.prompt_tokens)
    lo = sum(r.drafter_calls for r in rounds)
    if not extra and not budget_unsure:
        return Replay(gamma, work, "exact", None, tuple(rounds), (lo, lo))
    # only the last round is uncertain: one more drafter forward iff its `past` drafts beyond
    # the end of the text were all kept, probability b^past under fact 5
    b = acceptance_per_position(trace) or 0.0
    drafter = dict(work.drafter)
    drafter[1] = drafter.get(1, 0.0) + extra * b**past
    work = replace(work, drafter=drafter)
    return Replay(gamma, work, "estimate", "final_round", tuple(rounds), (lo, lo + extra))


def _budget_floor(trace: Trace) -> int:
    """The least token budget the run can have had: its tokens, and every round drafted no
    more than the budget left it."""
    floor = emitted = 0
    for r in trace.rounds:
        floor = max(floor, emitted + r.drafted)
        emitted += r.emitted
    return max(floor, trace.summary.new_tokens)


def _replay(
    outcomes: list[bool | None],
    n: int,
    gamma: int,
    budget: int | None,
    floor: int,
    bonus_q: bool,
) -> tuple[list[RoundRecord], int, int, bool] | None:
    """Rounds of window `gamma` over per-position outcomes (`outcomes[t]` for the text's n
    positions, then any known beyond its end), as engine._speculative plays them:
    draft g = min(gamma, budget left), stop at the first rejection (its replacement is
    emitted), or keep them all and add a bonus token while budget remains (with a drafter
    forward for its q where the rule needs one). The text ends after n tokens (EOS or a stop
    string cut the last round short). None when a window needs an unrecorded position inside
    the text. Otherwise the rounds and what is uncertain about the last one: `extra` = 1 when
    it may have made one more drafter forward (a bonus after its `past` drafts beyond the end
    of the text, whose outcomes are unknown, were all kept), and whether an unknown budget
    (`budget` None, only `floor` known) may have shortened its window."""
    rounds: list[RoundRecord] = []
    s = extra = past = 0
    budget_unsure = False
    while s < n:
        if budget is None:  # B >= floor: the window is gamma unless B cut it
            g = gamma
            budget_unsure |= s + gamma > floor
            bonus_sure, bonus_may = s + gamma < floor, True
        else:
            g = min(gamma, budget - s)
            bonus_sure = bonus_may = g < budget - s
        k = None
        for i in range(min(g, n - s)):
            o = outcomes[s + i]
            if o is None:
                return None
            if not o:
                k = i
                break
        if k is not None:  # rejected at k: k kept, the replacement emitted
            accepted, emitted, calls = k, k + 1, g
        elif s + g <= n:  # the whole window lies in the text and is kept
            # a bonus forward at the very end of the text is uncertain under an unknown budget
            budget_unsure |= budget is None and bonus_q and not bonus_sure and s + g == n
            accepted, emitted, calls = g, g + int(bonus_may), g + int(bonus_may and bonus_q)
        else:  # kept up to the end of the text; the drafts past it decide the bonus
            tail = [outcomes[t] if t < len(outcomes) else None for t in range(n, s + g)]
            accepted, emitted, calls = n - s, n - s, g
            if False not in tail and None not in tail:  # all kept: the bonus follows
                calls += int(bonus_q and bonus_may)
                budget_unsure |= budget is None and bonus_q and not bonus_sure
            elif False not in tail:  # maybe all kept: one bonus forward more, or not
                past = tail.count(None)
                extra = int(bonus_q and bonus_may)
        emitted = min(emitted, n - s)
        rounds.append(RoundRecord(len(rounds), 0.0, 0.0, 0.0, g, accepted, emitted, calls, 1))
        s += emitted
    return rounds, extra, past, budget_unsure


def expected_workload(
    keep: Sequence[float],
    prompt_tokens: int,
    gamma: int,
    bonus_q: bool,
    past: float,
    budget: int | None = None,
    after: Sequence[float] = (),
) -> Workload:
    """The expected forwards of a speculative run that emits len(keep) tokens with window
    gamma, where a draft at position t is kept with probability keep[t] (1 or 0 where the
    trace recorded it, b where it did not) and past the end of the text with probability
    `after[t - n]` where the last round recorded it, else `past`. A round drafts g = min(gamma, budget left) tokens and ends at its first rejection
    (k kept, the replacement emitted) or keeps all and adds a bonus token (with the drafter's
    bonus forward where the rule needs one; for SD, the next round's first drafter forward
    then reads two tokens). Computed forward over where rounds start, so the last, partial
    round counts as it would (tokens / E[tokens per round] would miss it)."""
    n = len(keep)
    start = [0.0] * (n + 1)  # probability that a round starts at position s
    start[0] = 1.0
    drafter: Counter[int] = Counter()
    verifier: Counter[int] = Counter()
    rounds = drafted = 0.0
    for s in range(n):
        v = start[s]
        if v == 0:
            continue
        left = math.inf if budget is None else budget - s
        g = int(min(gamma, left))
        rounds += v
        drafted += v * g
        verifier[(prompt_tokens if s == 0 else 1) + g] += v
        drafter[prompt_tokens if s == 0 else 1] += v
        drafter[1] += v * (g - 1)
        alive = 1.0  # probability that every draft so far was kept
        for i in range(g):
            t = s + i
            if t >= n:  # drafts past the end of the text: they only decide the bonus
                alive *= math.prod(
                    after[u - n] if u - n < len(after) else past for u in range(t, s + g)
                )
                break
            if t + 1 < n:
                start[t + 1] += v * alive * (1 - keep[t])
            alive *= keep[t]
        bonus = g < left
        if alive and bonus and bonus_q:
            drafter[1] += v * alive
        nxt = s + g + int(bonus)
        if alive and nxt < n:
            start[nxt] += v * alive
            if bonus and not bonus_q:  # SD: the last draft and the bonus token, together
                drafter[1] -= v * alive
                drafter[2] += v * alive
    return Workload(
        drafter={k: c for k, c in drafter.items() if c > 1e-12},
        verifier={k: c for k, c in verifier.items() if c > 1e-12},
        rounds=rounds,
        drafted=drafted,
    )


def _estimate(
    trace: Trace, gamma: int, bonus_q: bool, reason: str, budget: int | None = None
) -> Replay:
    """Fact 5's model where the trace is silent: a draft is kept with the run's per-position
    acceptance b wherever no outcome was recorded (every position at T > 0; SD's bonus
    positions at T = 0), and as recorded elsewhere (`expected_workload`)."""
    s = trace.summary
    b = acceptance_per_position(trace)
    b = 0.0 if b is None else b
    if reason == "temperature":
        keep = [b] * s.new_tokens
    else:
        keep = [b if o is None else float(o) for o in position_outcomes(trace)]
    after = [float(o) for o in outcomes_past_end(trace)] if reason != "temperature" else []
    work = expected_workload(keep, s.prompt_tokens, gamma, bonus_q, b, budget, after)
    return Replay(gamma, work, "estimate", reason)


def project_gamma(
    trace: Trace, gamma: int, cost: CostModel, max_new_tokens: int | None = None
) -> Projection:
    """The trace's run re-played at window `gamma` and priced."""
    r = resimulate(trace, gamma, max_new_tokens)
    s = trace.summary
    return price(
        r.work,
        cost,
        method=s.method,
        rule=s.rule,
        gamma=gamma,
        prompt_tokens=s.prompt_tokens,
        new_tokens=s.new_tokens,
        basis=r.basis,
        reason=r.reason,
    )


@dataclass(frozen=True)
class GammaPoint:
    gamma: int
    projection: Projection
    speedup: float  # projected, over the verifier alone

    @property
    def basis(self) -> Basis:
        return self.projection.basis


def gamma_curve(
    trace: Trace, cost: CostModel, max_gamma: int = 8, max_new_tokens: int | None = None
) -> list[GammaPoint]:
    """Projected speed-up of the trace's run at every gamma in 1..max_gamma."""
    out = []
    for g in range(1, max_gamma + 1):
        proj = project_gamma(trace, g, cost, max_new_tokens)
        out.append(GammaPoint(g, proj, speedup(proj, cost)))
    return out


def best_gamma(
    trace: Trace, cost: CostModel, max_gamma: int = 8, max_new_tokens: int | None = None
) -> GammaPoint:
    """The gamma with the shortest projected latency (the smallest on ties)."""
    return min(
        gamma_curve(trace, cost, max_gamma, max_new_tokens),
        key=lambda p: (p.projection.total_ms, p.gamma),
    )


def best_gammas(
    traces: Mapping[str, Trace],
    cost: CostModel,
    max_gamma: int = 8,
    max_new_tokens: int | None = None,
) -> list[dict]:
    """Per drafting trace (one per rule, say): the recorded gamma, the best gamma under
    `cost`, its projected speed-up and whether it is exact. Records, DataFrame-able."""
    rows = []
    for label, tr in traces.items():
        row = METHOD_REGISTRY.get(tr.summary.method)
        if row is None or not row.drafts or not tr.summary.new_tokens:
            continue
        curve = gamma_curve(tr, cost, max_gamma, max_new_tokens)
        best = min(curve, key=lambda p: (p.projection.total_ms, p.gamma))
        recorded = speedup(project(tr, cost), cost)
        rows.append(
            {
                "label": label,
                "method": tr.summary.method,
                "rule": tr.summary.rule,
                "recorded_gamma": tr.summary.gamma,
                "recorded_speedup": recorded,
                "best_gamma": best.gamma,
                "best_speedup": best.speedup,
                "best_s": best.projection.total_s,
                "basis": best.basis,
                "reason": best.projection.reason,
                "acceptance": acceptance_per_position(tr),
                "breakeven_acceptance": breakeven_acceptance(cost, best.gamma, tr.summary.rule),
                "curve": [(p.gamma, p.speedup, p.basis) for p in curve],
                **profile_fields(cost),
                "kind": "projection",
            }
        )
    return rows


# -- break-even acceptance -------------------------------------------------------------------


def steady_speedup(b: float, gamma: int, cost: CostModel, rule: str | None = "token_v3") -> float:
    """Projected speed-up over the verifier alone per token in steady state (prefill left
    out), with i.i.d. per-position acceptance b: fact 5's ideal with this cost model's forward
    prices and overheads."""
    bonus_q = bool(rule and RULES[rule].needs_bonus_q)
    full = b**gamma
    d1 = cost.drafter.ms(1)
    round_ms = (
        cost.verifier.ms(gamma + 1)
        + gamma * d1
        + (full * d1 if bonus_q else full * (cost.drafter.ms(2) - d1))
        + cost.round_overhead_ms
        + gamma * cost.draft_overhead_ms
    )
    per_token = round_ms / expected_tokens_per_call(b, gamma)
    return (cost.verifier.ms(1) + cost.round_overhead_ms) / per_token


def breakeven_acceptance(
    cost: CostModel, gamma: int, rule: str | None = "token_v3", tol: float = 1e-6
) -> float | None:
    """The per-position acceptance b at which the projected speed-up over the verifier alone
    is 1 (bisection; the speed-up grows with b). 0.0 when even b = 0 is faster, None when even
    b = 1 is not."""
    f = lambda b: steady_speedup(b, gamma, cost, rule) - 1.0  # noqa: E731
    if f(1.0) < 0:
        return None
    if f(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


# -- the honesty check: projections against this machine's wall clock ------------------------

# What the check re-prices: both single models, SD and the app's default cascade.
HONESTY_METHODS: tuple[tuple[str, str | None], ...] = (
    ("verifier", None),
    ("drafter", None),
    ("speculative", None),
    (APP_DEFAULTS.method, APP_DEFAULTS.rule),
)


@dataclass(frozen=True)
class HonestyRow:
    """One method: its measured wall times and the projections of those same runs."""

    label: str
    method: str
    rule: str | None
    new_tokens: int
    measured_s: float  # median wall time of the runs
    projected_s: float  # median projection of the same runs
    runs: tuple[float, ...]
    projections: tuple[float, ...]

    @property
    def error(self) -> float:
        """(projected - measured) / measured."""
        return (self.projected_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class HonestyReport:
    """The honesty check's rows, the profile its first round was priced with, and how far
    this machine's speed drifted while it ran: the spread (max - min over the mean) of a
    one-token verifier forward across the profiles measured between rounds; 0 with a given
    cost model. A large drift says the machine's load changed under the check."""

    rows: list[HonestyRow]
    cost: CostModel
    drift: float

    @property
    def worst_error(self) -> float:
        return max(abs(r.error) for r in self.rows)


def honesty_check(
    pair: ModelPair,
    cost: CostModel | None = None,
    prompt: str | list[int] = CALIBRATION_PROMPT,
    settings: Settings = APP_DEFAULTS,
    methods: Sequence[tuple[str, str | None]] = HONESTY_METHODS,
    repeats: int = 3,
    min_seconds: float = 0.0,
    profile_repeats: int = 5,
    profile_seconds: float = 0.25,
    statistic: str = "median",
    profile_statistic: str = "median",
) -> HonestyReport:
    """Does re-pricing this machine's runs with this machine's profile predict their wall
    time? Each method runs once to warm up. Then the methods run in `repeats` interleaved
    rounds (a shared machine's drifting load touches every method alike), with this
    machine's profile measured before the first round and after every round: each round's
    runs are priced under the mean of the two profiles around it (the host overheads are
    measured once, with the first). In each round a method runs at least once and until its
    runs add up to `min_seconds` (a run of a few tens of milliseconds is at the mercy of one
    scheduling hiccup). The `statistic` (median) of the wall times and of the projections
    are compared. With `cost` given, it prices every run as it is."""
    variants = [replace(settings, method=m, rule=r) for m, r in methods]
    warm = [generate(pair, prompt, s).summary.wall_s for s in variants]
    times = [max(1, math.ceil(min_seconds / w)) if w > 0 else 1 for w in warm]
    measure = partial(
        measure_profile,
        pair,
        prompt=prompt,
        gamma=settings.gamma,
        repeats=profile_repeats,
        min_seconds=profile_seconds,
        statistic=profile_statistic,
    )
    stat = STATISTICS[statistic]
    # (the profile before each round and after the last; a round's runs are priced under the
    # mean of the two that bracket it)
    profiles = [cost or measure(overhead_tokens=settings.max_new_tokens)]
    traces: list[list[tuple[Trace, int]]] = [[] for _ in variants]
    for k in range(repeats):
        for i, s in enumerate(variants):
            traces[i] += [(generate(pair, prompt, s), k) for _ in range(times[i])]
        if cost is None:  # the host overhead is measured once, with the first profile
            later = measure(measure_overhead=False)
            profiles.append(_with_overheads(later, profiles[0]))
    if cost is None:
        v1 = [p.verifier.ms(1) for p in profiles]
        drift = (max(v1) - min(v1)) / statistics.fmean(v1)
        priced_with = [mean_profile(a, b) for a, b in zip(profiles, profiles[1:])]
    else:
        drift, priced_with = 0.0, [cost] * repeats
    rows = []
    for (m, r), runs in zip(methods, traces):
        trs = [tr for tr, _ in runs]
        walls = tuple(tr.summary.wall_s for tr in trs)
        priced = tuple(project(tr, priced_with[k]).total_s for tr, k in runs)
        rows.append(
            HonestyRow(
                label=f"{m}/{r}" if METHOD_REGISTRY[m].rules else m,
                method=m,
                rule=r,
                new_tokens=trs[-1].summary.new_tokens,
                measured_s=stat(walls),
                projected_s=stat(priced),
                runs=walls,
                projections=priced,
            )
        )
    return HonestyReport(rows, priced_with[0], drift)


def mean_profile(a: CostModel, b: CostModel) -> CostModel:
    """The point-wise mean of two measurements of one machine (same table points)."""

    def mean(x: ForwardCost, y: ForwardCost) -> ForwardCost:
        if x.table and y.table and [n for n, _ in x.table] == [n for n, _ in y.table]:
            pts = ((n, (u + v) / 2) for (n, u), (_, v) in zip(x.table, y.table))
            return ForwardCost.from_table(pts)
        return ForwardCost((x.fixed_ms + y.fixed_ms) / 2, (x.per_token_ms + y.per_token_ms) / 2)

    return replace(
        a,
        drafter=mean(a.drafter, b.drafter),
        verifier=mean(a.verifier, b.verifier),
        round_overhead_ms=(a.round_overhead_ms + b.round_overhead_ms) / 2,
        draft_overhead_ms=(a.draft_overhead_ms + b.draft_overhead_ms) / 2,
    )


def _with_overheads(cost: CostModel, source: CostModel) -> CostModel:
    """`cost` with `source`'s host overheads (and its statement of them)."""
    keep = tuple(a for a in cost.assumptions if not a.key.startswith("fig.proj.assume.overhead"))
    moved = tuple(a for a in source.assumptions if a.key.startswith("fig.proj.assume.overhead"))
    return replace(
        cost,
        round_overhead_ms=source.round_overhead_ms,
        draft_overhead_ms=source.draft_overhead_ms,
        assumptions=keep + moved,
    )


def cost_model_dict(cost: CostModel) -> dict:
    """A JSON-able view of a cost model (for reports)."""
    d = asdict(cost)
    d["assumptions"] = [{"key": a.key, "values": dict(a.values)} for a in cost.assumptions]
    return d

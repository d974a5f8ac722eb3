"""Cost models: what a forward costs on some hardware. This machine's, fitted from the pair's
own timed forwards (`measure_profile`); a GPU roofline from first principles; custom numbers;
the registry of profiles (`PROFILES`)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from transformers import DynamicCache

from speccascade.core.engine import APP_DEFAULTS, generate
from speccascade.core.errors import SettingsError
from speccascade.core.pair import ModelPair, lean_step
from speccascade.core.sampling import check_finite
from speccascade.core.trace import Trace


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
    step = lean_step(model)  # the step the engine takes for this model, if it has one
    ids = ids.to(model.get_input_embeddings().weight.device).view(1, -1)
    start = time.perf_counter()
    if step is not None:
        out = step(ids, cache, keep)
    else:
        out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep).logits
    logits = out[0, :, : pair.vocab_size].to(pair.device, torch.float32)
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

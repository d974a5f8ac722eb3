"""The decoding loops: autoregressive, speculative (every target), token and sequence cascades.

Each loop is a generator of rounds: it yields the tokens a round emitted (as TokenRecords) and
the round's costs. `_Run` owns everything loops share: settings, the seeded sampler, the two
models' KV caches, the token budget, stopping (EOS, stop strings, cancel) and the trace. The
speculative loop is the only one with drafts; SD, lossy SD, BiLD* and every speculative-cascade
rule differ only in the `Target` that rules.py builds for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch
from torch import Tensor
from transformers import DynamicCache, PreTrainedModel

from .errors import ModelRuntimeError, PromptError, SettingsError
from .models import ModelPair
from .rules import RULES, SPEC_CASCADE_RULES, Rule, Stats, Target, build_target, tv_distance
from .sampling import Sampler, check_finite, first_rejection, residual_probs, unit_probs
from .trace import RoundRecord, Source, TokenRecord, Trace, summarise

METHODS = (
    "verifier",
    "drafter",
    "seq_cascade",
    "token_cascade",
    "speculative",
    "lossy_speculative",
    "bild",
    "spec_cascade",
)
# The target each method runs (None: no deferral rule).
_METHOD_RULE = {
    "verifier": None,
    "drafter": None,
    "seq_cascade": "chow",
    "token_cascade": "chow",
    "speculative": "sd",
    "lossy_speculative": "lossy",
    "bild": "bild",
}
SPECULATIVE_METHODS = ("speculative", "lossy_speculative", "bild", "spec_cascade")
MAX_NEW_TOKENS = 4096
MAX_GAMMA = 32


@dataclass(frozen=True)
class Settings:
    """Everything that decides a run; validated once, before any model is touched."""

    method: str = "spec_cascade"
    rule: str | None = "token_v3"
    alpha: float | None = None  # None: the rule's default
    gamma: int = 4
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    max_new_tokens: int = 64
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    chat: bool | None = None
    record_top_k: int = 10

    @property
    def target_rule(self) -> Rule | None:
        name = self.rule if self.method == "spec_cascade" else _METHOD_RULE[self.method]
        return RULES[name] if name else None

    def validated(self, max_new_tokens_limit: int = MAX_NEW_TOKENS) -> Settings:
        """A copy with defaults filled in, or a SettingsError naming the bad field."""
        if self.method not in METHODS:
            raise SettingsError(
                f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}"
            )
        if self.rule is not None and self.rule not in RULES:
            raise SettingsError(
                f"unknown rule {self.rule!r}; choose one of {', '.join(SPEC_CASCADE_RULES)}"
            )
        if self.method == "spec_cascade" and self.rule not in SPEC_CASCADE_RULES:
            raise SettingsError(
                f"spec_cascade needs a rule in {', '.join(SPEC_CASCADE_RULES)}; got {self.rule!r}"
            )
        _check_int("gamma", self.gamma, 1, MAX_GAMMA)
        _check_int("max_new_tokens", self.max_new_tokens, 1, max_new_tokens_limit)
        _check_int("top_k", self.top_k, 0, None)
        _check_int("record_top_k", self.record_top_k, 0, 100)
        _check_float("temperature", self.temperature, 0, 10)
        _check_float("top_p", self.top_p, 0, 1, low_open=True)
        if self.seed is not None:
            _check_int("seed", self.seed, 0, 2**63 - 1)
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        if any(not isinstance(s, str) or not s for s in stop):
            raise SettingsError("stop strings must be non-empty strings")
        rule = self.target_rule
        alpha = self.alpha
        if rule is not None and rule.name != "sd":
            alpha = rule.alpha_default if alpha is None else alpha
            _check_float(
                f"alpha for {rule.name}", alpha, rule.alpha_min, rule.alpha_max, finite=False
            )
        return replace(self, alpha=alpha, stop=stop)


def _check_int(name: str, value, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"{name} must be an integer; got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise SettingsError(f"{name} must be in {bound}; got {value}")


def _check_float(
    name: str, value, low: float, high: float, low_open: bool = False, finite: bool = True
) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise SettingsError(f"{name} must be a number; got {value!r}")
    if finite and math.isinf(value):
        raise SettingsError(f"{name} must be finite; got {value}")
    if value < low or value > high or (low_open and value == low):
        raise SettingsError(
            f"{name} must be in {'(' if low_open else '['}{low}, {high}]; got {value}"
        )


@dataclass
class RoundEvent:
    """What `stream` yields after every round: the new tokens and the text so far."""

    round: RoundRecord
    tokens: list[TokenRecord]
    text: str
    new_token_ids: list[int]


class _LM:
    """One model with its own KV cache, call counter and clock.

    Everything not yet in the cache is passed to the next `forward` (the prompt once, then the
    tokens emitted since); a rejection `crop`s the drafts that did not survive."""

    def __init__(self, model: PreTrainedModel, vocab: int, out_device: torch.device, role: str):
        self.model, self.vocab, self.out_device, self.role = model, vocab, out_device, role
        self.in_device = model.get_input_embeddings().weight.device
        self.cache = DynamicCache(config=model.config)
        self.calls = 0
        self.seconds = 0.0

    def forward(self, ids: Tensor, keep: int = 1) -> Tensor:
        """Float32 logits [keep, vocab] for the last `keep` positions of `ids` ([n])."""
        start = time.perf_counter()
        try:
            out = self.model(
                input_ids=ids.to(self.in_device).view(1, -1),
                cache=self.cache,
                use_cache=True,
                logits_to_keep=keep,
            )
        except Exception as e:  # noqa: BLE001 - any failure inside the model ends this run only
            raise ModelRuntimeError(
                f"the {self.role} failed in a forward pass: {type(e).__name__}: {e}"
            ) from e
        logits = out.logits[0, :, : self.vocab].to(self.out_device, torch.float32)
        check_finite(logits, self.role)
        if logits.device.type == "cuda":
            torch.cuda.synchronize(logits.device)
        self.calls += 1
        self.seconds += time.perf_counter() - start
        return logits

    def crop(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)


@dataclass
class _Probs:
    """A model's view of some positions: the law tokens are drawn from, and T = 1 probs."""

    scaled: Tensor  # [n, V]
    unit: Tensor  # [n, V]


class _Run:
    def __init__(
        self,
        pair: ModelPair,
        settings: Settings,
        prompt_ids: list[int],
        sampler: Sampler | None = None,
        should_stop: Callable[[], bool] | None = None,
    ):
        self.pair, self.s, self.prompt_ids = pair, settings, prompt_ids
        self.rule = settings.target_rule
        self.sampler = sampler or Sampler.create(
            settings.temperature, settings.top_k, settings.top_p, settings.seed, pair.device
        )
        self.should_stop = should_stop or (lambda: False)
        self.device = pair.device
        self.drafter = _LM(pair.drafter, pair.vocab_size, pair.device, "drafter")
        self.verifier = _LM(pair.verifier, pair.vocab_size, pair.device, "verifier")
        self.prompt = torch.tensor(prompt_ids, dtype=torch.long, device=pair.device)
        self.notes: list[str] = []
        self.budget = settings.max_new_tokens
        self.capped = False
        if pair.max_context is not None:
            room = pair.max_context - len(prompt_ids)
            if room < 1:
                raise PromptError(
                    f"the prompt has {len(prompt_ids)} tokens; the models' context is "
                    f"{pair.max_context}. Shorten the prompt."
                )
            if room < self.budget:
                self.budget, self.capped = room, True
                self.notes.append(f"max_new_tokens capped at {room} by the models' context")
        self.new_ids: list[int] = []
        self.tokens: list[TokenRecord] = []
        self.rounds: list[RoundRecord] = []
        self.text = ""
        self.stop_reason = ""
        self.extra: dict = {}
        self.t0 = 0.0

    # -- shared helpers for loops ---------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.budget - len(self.new_ids)

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def probs(self, logits: Tensor) -> _Probs:
        return _Probs(self.sampler.probs(logits), unit_probs(logits))

    def round_record(
        self,
        start: float,
        d_calls0: int,
        v_calls0: int,
        d_s0: float,
        v_s0: float,
        drafted: int = 0,
        accepted: int = 0,
        draft_ids=(),
    ) -> RoundRecord:
        return RoundRecord(
            index=len(self.rounds),
            start_s=start,
            drafter_s=self.drafter.seconds - d_s0,
            verifier_s=self.verifier.seconds - v_s0,
            drafted=drafted,
            accepted=accepted,
            emitted=0,
            drafter_calls=self.drafter.calls - d_calls0,
            verifier_calls=self.verifier.calls - v_calls0,
            draft_ids=list(draft_ids),
        )

    def clock(self) -> tuple[float, int, int, float, float]:
        return (
            self.now(),
            self.drafter.calls,
            self.verifier.calls,
            self.drafter.seconds,
            self.verifier.seconds,
        )

    def records(
        self,
        ids: list[int],
        sources: list[Source],
        q: _Probs | None = None,
        p: _Probs | None = None,
        target: Target | None = None,
        drafts: Tensor | None = None,
        accept_prob: Tensor | None = None,
    ) -> list[TokenRecord]:
        """TokenRecords for tokens emitted at consecutive positions (row i of each tensor is
        position i). Tensors may have fewer rows than `ids` (no drafter view of a bonus token,
        no draft for it): those fields are None. The statistics are gathered into one table
        on device and copied to the host once (plus once for the top-k lists): this runs every
        round, so it is kept to a handful of tensor ops."""
        n, k, dev = len(ids), self.s.record_top_k, self.device
        nd = 0 if drafts is None else min(n, drafts.shape[0])
        idx = torch.tensor(ids, device=dev)
        # column 0: the emitted token; column 1: the draft it stands for (itself if none)
        pick = torch.stack([idx, torch.cat([drafts[:nd], idx[nd:]]) if nd else idx], 1)

        def padded(x: Tensor | None, width: int) -> Tensor:
            """x ([m <= n, width]) with NaN rows appended up to n."""
            m = 0 if x is None else x.shape[0]
            pad = torch.full((n - m, width), torch.nan, device=dev)
            return pad if x is None else torch.cat([x, pad])

        def view(probs: Tensor | None) -> Tensor:
            if probs is None:
                return padded(None, 3)
            m = min(n, probs.shape[0])
            rows = probs[:m]
            return padded(torch.cat([rows.gather(1, pick[:m]), rows.amax(-1, keepdim=True)], 1), 3)

        nb = 0 if q is None or p is None else min(n, q.unit.shape[0], p.unit.shape[0])
        dtv = tv_distance(p.scaled[:nb], q.scaled[:nb])[:, None] if nb else None
        defer = None
        if nd and target is not None and target.defer is not None:
            defer = target.defer[:nd].gather(1, drafts[:nd, None]).float()
        acc = accept_prob[:nd, None] if nd and accept_prob is not None else None
        table = torch.cat(
            [view(q.unit if q else None), view(p.unit if p else None), padded(dtv, 1),
             padded(defer, 1), padded(acc, 1)], 1
        ).tolist()  # fmt: skip
        draft_ids = drafts[:nd].tolist() if nd else []
        tops = self._top_k(
            [x.unit if x else None for x in (q, p)] + [target.law if target else None], n, k
        )

        def val(x: float) -> float | None:
            return None if x != x else x  # NaN: not known at this position

        first = len(self.new_ids)
        out = []
        for i in range(n):
            qx, qd, mq, px, pd_, mp, tv, df, ap = table[i]
            drafted = i < nd
            out.append(
                TokenRecord(
                    position=first + i,
                    token_id=ids[i],
                    text="",  # filled in by _admit, which sees the whole sequence
                    source=sources[i],
                    round=len(self.rounds),
                    q=val(qx),
                    p=val(px),
                    max_q=val(mq),
                    max_p=val(mp),
                    dtv=val(tv),
                    draft_id=draft_ids[i] if drafted else None,
                    draft_q=val(qd) if drafted else None,
                    draft_p=val(pd_) if drafted else None,
                    defer=None if df != df else bool(df),
                    accept_prob=val(ap),
                    top_q=tops[0][i],
                    top_p=tops[1][i],
                    top_pi=tops[2][i],
                )
            )
        return out

    @staticmethod
    def _top_k(dists: list[Tensor | None], n: int, k: int) -> list[list[list[tuple[int, float]]]]:
        """Top-k (id, prob) lists for the first n rows of each distribution, in one topk."""
        parts = [d[:n] for d in dists if d is not None and k]
        found: list[list] = []
        if parts:
            stacked = torch.cat(parts)
            vals, top_ids = torch.topk(stacked, min(k, stacked.shape[-1]), dim=-1)
            found = [list(zip(i, v)) for i, v in zip(top_ids.tolist(), vals.tolist())]
        out, at = [], 0
        for d in dists:
            m = 0 if d is None or not k else min(n, d.shape[0])
            out.append(found[at : at + m] + [[] for _ in range(n - m)])
            at += m
        return out

    # -- accounting ------------------------------------------------------------------------
    def _admit(self, records: list[TokenRecord]) -> list[TokenRecord]:
        """Append a round's tokens, cutting at the budget, EOS and stop strings."""
        records = records[: self.remaining]
        for i, r in enumerate(records):
            if r.token_id in self.pair.eos_ids:
                records = records[: i + 1]
                self.stop_reason = "eos"
                break
        start = len(self.new_ids)
        self.new_ids.extend(r.token_id for r in records)
        self.text = self.pair.decode(self.new_ids)
        if self.s.stop:
            cut = self._stop_string_cut(start)
            if cut is not None:
                records = records[: cut - start]
                del self.new_ids[cut:]
                self.text = self.pair.decode(self.new_ids)
                self.stop_reason = "stop_string"
        for r in records:
            r.text = self._piece(r.position)
        if not self.stop_reason and self.remaining <= 0:
            self.stop_reason = "context" if self.capped else "max_new_tokens"
        return records

    def _stop_string_cut(self, start: int) -> int | None:
        """Fewest tokens whose text contains a stop string, if this round completed one."""
        if not any(s in self.text for s in self.s.stop):
            return None
        for end in range(start + 1, len(self.new_ids) + 1):
            text = self.pair.decode(self.new_ids[:end])
            if any(s in text for s in self.s.stop):
                return end
        return None

    def _piece(self, i: int) -> str:
        """Text token i adds, decoded with a little left context so that byte-level and
        sentencepiece tokens render (leading spaces, multi-byte characters)."""
        lo = max(0, i - 6)
        before = self.pair.decode(self.new_ids[lo:i], skip_special_tokens=False)
        after = self.pair.decode(self.new_ids[lo : i + 1], skip_special_tokens=False)
        if after.startswith(before):
            return after[len(before) :]
        return self.pair.decode([self.new_ids[i]], skip_special_tokens=False)

    def events(self, loop: Iterator[tuple[list[TokenRecord], RoundRecord]]):
        """Drive a loop, account for each round, yield RoundEvents and then the Trace.

        inference_mode is entered per step, never across a yield, so it cannot leak into the
        caller's code while the generator is suspended."""
        self.t0 = time.perf_counter()
        while not self.stop_reason:
            with torch.inference_mode():
                step = next(loop, None)
                if step is None:
                    break
                records, rnd = step
                records = self._admit(records)
            rnd.emitted = len(records)
            self.tokens.extend(records)
            self.rounds.append(rnd)
            if not self.stop_reason and self.should_stop():
                self.stop_reason = "cancelled"
            yield RoundEvent(rnd, records, self.text, list(self.new_ids))
        yield self.trace(time.perf_counter() - self.t0)

    def trace(self, wall: float) -> Trace:
        s = self.s
        summary = summarise(
            method=s.method,
            rule=self.rule.name if self.rule else None,
            alpha=s.alpha if self.rule and self.rule.name != "sd" else None,
            gamma=s.gamma,
            temperature=s.temperature,
            prompt_tokens=len(self.prompt_ids),
            new_tokens=len(self.new_ids),
            wall_s=wall,
            rounds=self.rounds,
            stop_reason=self.stop_reason or "max_new_tokens",
            notes=self.notes,
            speculative=s.method in SPECULATIVE_METHODS,
        )
        return Trace(
            prompt_ids=list(self.prompt_ids),
            new_token_ids=list(self.new_ids),
            text=self.text,
            tokens=self.tokens,
            rounds=self.rounds,
            summary=summary,
            extra=self.extra,
        )


# -- the loops ------------------------------------------------------------------------------


def _autoregressive(run: _Run, role: str) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """One model alone: one forward and one token per round."""
    lm = run.verifier if role == "verifier" else run.drafter
    pending = run.prompt
    while run.remaining > 0:
        clock = run.clock()
        probs = run.probs(lm.forward(pending))
        x = run.sampler.draw(probs.scaled)
        q, p = (None, probs) if role == "verifier" else (probs, None)
        yield run.records(x.tolist(), [role], q, p), run.round_record(*clock)
        pending = x


def _speculative(run: _Run) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """Draft gamma tokens with q, score them in one verifier pass, keep each with probability
    min(1, accept/q), replace the first rejected one from the residual, or add a bonus token
    when all are kept (METHOD.md, GenSpecSample)."""
    rule, alpha, sampler = run.rule, run.s.alpha, run.sampler
    d_pending = v_pending = run.prompt
    while run.remaining > 0:
        clock = run.clock()
        g = min(run.s.gamma, run.remaining)
        want_bonus = g < run.remaining
        drafts, q_logits, q_scaled, x = [], [], [], d_pending
        for _ in range(g):
            logits = run.drafter.forward(x)
            q_scaled.append(sampler.probs(logits))
            x = sampler.draw(q_scaled[-1])
            q_logits.append(logits)
            drafts.append(x)
        drafts_t = torch.cat(drafts)
        q = _Probs(torch.cat(q_scaled), unit_probs(torch.cat(q_logits)))
        p = run.probs(run.verifier.forward(torch.cat([v_pending, drafts_t]), keep=g + 1))
        target = build_target(rule, alpha, q.scaled, p.scaled[:g], q.unit, p.unit[:g])
        k, accept_prob = first_rejection(drafts_t, q.scaled, target, sampler.uniform(g, run.device))
        kept = drafts_t[:k]
        if k < g:  # rejected at row k: replace from the residual, roll both caches back
            y = sampler.draw(residual_probs(target, k)).view(1)
            run.verifier.crop(g - k)
            run.drafter.crop(g - 1 - k)
            d_pending = y
            sources = ["accepted"] * k + ["resampled"]
        elif want_bonus:  # all kept: the next token comes from pi at row g (step 6)
            if rule.needs_bonus_q:
                q_bonus = run.probs(run.drafter.forward(drafts_t[-1:]))
                bonus = build_target(
                    rule, alpha, q_bonus.scaled, p.scaled[g:], q_bonus.unit, p.unit[g:]
                )
                q = _Probs(torch.cat([q.scaled, q_bonus.scaled]), torch.cat([q.unit, q_bonus.unit]))
                target = target.then(bonus)
                y = sampler.draw(bonus.law[0]).view(1)
                d_pending = y
            else:
                y = sampler.draw(p.scaled[g]).view(1)
                d_pending = torch.cat([drafts_t[-1:], y])
            sources = ["accepted"] * g + ["bonus"]
        else:  # all kept and the budget ends here: no bonus
            y = kept[:0]
            sources = ["accepted"] * g
        emitted = torch.cat([kept, y])
        v_pending = y
        rnd = run.round_record(*clock, drafted=g, accepted=k, draft_ids=drafts_t.tolist())
        records = run.records(emitted.tolist(), sources, q, p, target, drafts_t, accept_prob)
        yield records, rnd


def _token_cascade(run: _Run) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """Sequential TokenCascade[Chow]: the drafter writes each token unless it is unsure
    (max q < 1 - alpha); then the verifier catches up on the tokens it has not seen (one
    forward) and writes this one. Every deferral is a serial verifier call."""
    chow, alpha = RULES["chow"], run.s.alpha
    d_pending = v_pending = run.prompt
    while run.remaining > 0:
        clock = run.clock()
        q = run.probs(run.drafter.forward(d_pending))
        stats = Stats(q.unit, None, q.unit.amax(-1, keepdim=True), None, None)
        defer = bool(chow.defer(stats, alpha).item())
        p = None
        if defer:
            p = run.probs(run.verifier.forward(v_pending))
            y = run.sampler.draw(p.scaled)
            v_pending = y
        else:
            y = run.sampler.draw(q.scaled)
            v_pending = torch.cat([v_pending, y])
        d_pending = y
        rec = run.records(y.tolist(), ["verifier" if defer else "drafter"], q, p)[0]
        rec.defer = defer
        yield [rec], run.round_record(*clock)


def _seq_cascade(run: _Run) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """SeqCascade[Chow]: the drafter writes the whole answer; if its mean max-q confidence is
    below 1 - alpha, the verifier rewrites it from scratch."""
    settings = replace(run.s, method="drafter")
    draft_run = _Run(run.pair, settings, run.prompt_ids, run.sampler, run.should_stop)
    *_, draft = draft_run.events(_autoregressive(draft_run, "drafter"))
    confidence = sum(t.max_q for t in draft.tokens) / max(1, len(draft.tokens))
    defer = confidence < 1 - run.s.alpha
    run.extra.update(
        draft_text=draft.text,
        draft_token_ids=draft.new_token_ids,
        sequence_confidence=confidence,
        deferred=defer,
    )
    if not defer:
        for rnd, tok in zip(draft.rounds, draft.tokens):
            tok.defer = False
            yield [tok], rnd
        return
    s = draft.summary
    yield [], RoundRecord(0, 0.0, s.drafter_s, 0.0, 0, 0, 0, s.drafter_calls, 0)
    if draft.summary.stop_reason != "cancelled":
        yield from _autoregressive(run, "verifier")


_LOOPS: dict[str, Callable[[_Run], Iterator]] = {
    "verifier": lambda run: _autoregressive(run, "verifier"),
    "drafter": lambda run: _autoregressive(run, "drafter"),
    "seq_cascade": _seq_cascade,
    "token_cascade": _token_cascade,
    **{m: _speculative for m in SPECULATIVE_METHODS},
}


def stream(
    pair: ModelPair,
    prompt: str | list[int],
    method: str = "spec_cascade",
    rule: str | None = "token_v3",
    alpha: float | None = None,
    gamma: int = 4,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    max_new_tokens: int = 64,
    seed: int | None = 0,
    stop: str | list[str] | tuple[str, ...] | None = None,
    chat: bool | None = None,
    record_top_k: int = 10,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[RoundEvent | Trace]:
    """Run one decoding method, yielding a RoundEvent per round and then the final Trace.

    Settings and the prompt are checked before any model runs; `should_stop` is polled between
    rounds (the trace then ends with stop_reason 'cancelled')."""
    settings = Settings(
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=gamma,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        seed=seed,
        stop=stop or (),
        chat=chat,
        record_top_k=record_top_k,
    ).validated()
    run = _Run(pair, settings, pair.encode(prompt, settings.chat), should_stop=should_stop)
    return run.events(_LOOPS[settings.method](run))


def generate(pair: ModelPair, prompt: str | list[int], **kwargs) -> Trace:
    """Run to the end and return the Trace (same arguments as `stream`)."""
    trace = None
    for event in stream(pair, prompt, **kwargs):
        trace = event
    assert isinstance(trace, Trace)
    return trace

"""The decoding loops: autoregressive, speculative (every target), token and sequence cascades.

Each loop is a generator of rounds: it yields the tokens a round emitted (as TokenRecords) and
the round's costs (a `_Meter`). `_Run` owns everything loops share: settings, the seeded
sampler, the two models' KV caches, the output (`_Output`: token budget, EOS, stop strings),
cancelling and the trace. The speculative loop is the only one with drafts; SD, lossy SD, BiLD*
and every speculative-cascade rule differ only in the `Target` that rules.py builds for it.
`METHOD_REGISTRY` (at the end) is the one list of methods: a new method is a loop plus a row.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial

import torch
from torch import Tensor
from transformers import DynamicCache, PreTrainedModel

from speccascade.core.drafting import DEFAULT_THRESHOLD, DRAFT_POLICIES
from speccascade.core.errors import ModelRuntimeError, PromptError, SettingsError
from speccascade.core.pair import ModelPair, lean_step
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES, Rule, Stats, Target, build_target
from speccascade.core.sampling import (
    Sampler,
    block_verify,
    check_finite,
    first_rejection,
    residual_probs,
    unit_probs,
)
from speccascade.core.trace import (
    Probs,
    RoundRecord,
    Source,
    TokenRecord,
    Trace,
    draft_records,
    pair_stats,
    summarise,
    token_records,
)

MAX_NEW_TOKENS = 4096
MAX_GAMMA = 32
_PARTIAL = "\ufffd"  # what a tokenizer decodes an unfinished multi-byte character to


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
    draft_policy: str = "fixed"  # drafting.DRAFT_POLICIES: how far the drafter runs ahead
    draft_threshold: float = DEFAULT_THRESHOLD  # "confidence": stop below this max q

    @property
    def target_rule(self) -> Rule | None:
        return METHOD_REGISTRY[self.method].target_rule(self.rule)

    def validated(self, max_new_tokens_limit: int = MAX_NEW_TOKENS) -> Settings:
        """A copy with defaults filled in, or a SettingsError naming the bad field."""
        method = METHOD_REGISTRY.get(self.method)
        if method is None:
            raise SettingsError(
                f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}"
            )
        if self.rule is not None and self.rule not in RULES:
            raise SettingsError(f"unknown rule {self.rule!r}; choose one of {', '.join(RULES)}")
        if method.rules and self.rule not in method.rules:
            raise SettingsError(
                f"{method.name} needs a rule in {', '.join(method.rules)}; got {self.rule!r}"
            )
        _check_int("gamma", self.gamma, 1, MAX_GAMMA)
        if self.draft_policy not in DRAFT_POLICIES:
            raise SettingsError(
                f"unknown draft_policy {self.draft_policy!r}; "
                f"choose one of {', '.join(DRAFT_POLICIES)}"
            )
        _check_float("draft_threshold", self.draft_threshold, 0, 1)
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
        if rule is not None and rule.has_alpha:
            default = rule.alpha_default if method.alpha_default is None else method.alpha_default
            alpha = default if alpha is None else alpha
            _check_float(
                f"alpha for {rule.name}", alpha, rule.alpha_min, rule.alpha_max, finite=False
            )
        return replace(self, alpha=alpha, stop=stop)


# What the app, the CLI's examples and the bench's story use: on the embedded pair these show
# the method's story (an easy question keeps the drafter's short answer; a hard one defers).
APP_DEFAULTS = Settings(
    method="spec_cascade", rule="token_v3", alpha=0.5, gamma=5, temperature=0.0, max_new_tokens=64
)


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
    tokens emitted since); a rejection `crop`s the drafts that did not survive. A model whose
    class has a lean step (pair.LEAN_STEPS: the same logits without transformers' per-module
    Python) runs through it, any other through its own forward."""

    def __init__(self, model: PreTrainedModel, vocab: int, out_device: torch.device, role: str):
        self.model, self.vocab, self.out_device, self.role = model, vocab, out_device, role
        self.in_device = model.get_input_embeddings().weight.device
        self.cache = DynamicCache(config=model.config)
        self.step = lean_step(model) or self._forward
        self.calls = 0
        self.seconds = 0.0

    def _forward(self, ids: Tensor, cache: DynamicCache, keep: int) -> Tensor:
        return self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep).logits

    def forward(self, ids: Tensor, keep: int = 1) -> Tensor:
        """Float32 logits [keep, vocab] for the last `keep` positions of `ids` ([n])."""
        start = time.perf_counter()
        try:
            logits = self.step(ids.to(self.in_device).view(1, -1), self.cache, keep)
        except Exception as e:  # noqa: BLE001 - any failure inside the model ends this run only
            raise ModelRuntimeError(
                f"the {self.role} failed in a forward pass: {type(e).__name__}: {e}"
            ) from e
        logits = logits[0, :, : self.vocab].to(self.out_device, torch.float32)
        check_finite(logits, self.role)
        if logits.device.type == "cuda":
            torch.cuda.synchronize(logits.device)
        self.calls += 1
        self.seconds += time.perf_counter() - start
        return logits

    def crop(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)


class _Meter:
    """One round's costs: forward calls and seconds of each model since the round began."""

    def __init__(self, run: _Run):
        self.run, self.start = run, run.now()
        self.calls = run.drafter.calls, run.verifier.calls
        self.seconds = run.drafter.seconds, run.verifier.seconds

    def record(self, drafted: int = 0, accepted: int = 0, draft_ids=(), **more) -> RoundRecord:
        d, v = self.run.drafter, self.run.verifier
        return RoundRecord(
            index=len(self.run.rounds),
            start_s=self.start,
            drafter_s=d.seconds - self.seconds[0],
            verifier_s=v.seconds - self.seconds[1],
            drafted=drafted,
            accepted=accepted,
            emitted=0,
            drafter_calls=d.calls - self.calls[0],
            verifier_calls=v.calls - self.calls[1],
            draft_ids=list(draft_ids),
            **more,
        )


class _Output:
    """The emitted tokens and their text, cut at the token budget, EOS and stop strings."""

    def __init__(self, pair: ModelPair, budget: int, capped: bool, stop: tuple[str, ...]):
        self.pair, self.budget, self.capped, self.stop = pair, budget, capped, stop
        self.ids: list[int] = []
        self.text = ""
        self.stop_reason = ""

    @property
    def remaining(self) -> int:
        return self.budget - len(self.ids)

    def admit(self, records: list[TokenRecord]) -> list[TokenRecord]:
        """Append a round's tokens, cutting at the budget, EOS and stop strings."""
        records = records[: self.remaining]
        for i, r in enumerate(records):
            if r.token_id in self.pair.eos_ids:
                records = records[: i + 1]
                self.stop_reason = "eos"
                break
        start = len(self.ids)
        self.ids.extend(r.token_id for r in records)
        self.text = self.pair.decode(self.ids)
        cut = self._stop_string_cut(start) if self.stop else None
        if cut is not None:
            records = records[: cut - start]
            del self.ids[cut:]
            self.text = self.pair.decode(self.ids)
            self.stop_reason = "stop_string"
        for r in records:
            r.text = self._piece(r.position)
        if not self.stop_reason and self.remaining <= 0:
            self.stop_reason = "context" if self.capped else "max_new_tokens"
        return records

    def _stop_string_cut(self, start: int) -> int | None:
        """Fewest tokens whose text contains a stop string, if this round completed one."""
        if not any(s in self.text for s in self.stop):
            return None
        for end in range(start + 1, len(self.ids) + 1):
            text = self.pair.decode(self.ids[:end])
            if any(s in text for s in self.stop):
                return end
        return None

    def _piece(self, i: int) -> str:
        """Text token i adds, decoded with a little left context so that byte-level and
        sentencepiece tokens render (leading spaces, multi-byte characters). A character
        split over byte-level tokens belongs to the token that completes it: the ones before
        add no text yet (their bytes decode to U+FFFD, which is not shown)."""
        lo = max(0, i - 6)
        before = self.pair.decode(self.ids[lo:i], skip_special_tokens=False).rstrip(_PARTIAL)
        after = self.pair.decode(self.ids[lo : i + 1], skip_special_tokens=False)
        after = after.rstrip(_PARTIAL)
        if after.startswith(before):
            return after[len(before) :]
        return self.pair.decode([self.ids[i]], skip_special_tokens=False)


class _Run:
    """What the loops share: settings, the seeded sampler, the two models, the output so far
    and the trace."""

    def __init__(
        self,
        pair: ModelPair,
        settings: Settings,
        prompt_ids: list[int],
        sampler: Sampler | None = None,
        should_stop: Callable[[], bool] | None = None,
        prompt_text: str | None = None,
    ):
        self.pair, self.s, self.prompt_ids = pair, settings, prompt_ids
        self.prompt_text = prompt_text  # the trace keeps it (a reopened file shows it)
        self.method = METHOD_REGISTRY[settings.method]
        self.rule = self.method.target_rule(settings.rule)
        self.sampler = sampler or Sampler.create(
            settings.temperature, settings.top_k, settings.top_p, settings.seed, pair.device
        )
        self.should_stop = should_stop or (lambda: False)
        self.device = pair.device
        self.drafter = _LM(pair.drafter, pair.vocab_size, pair.device, "drafter")
        self.verifier = _LM(pair.verifier, pair.vocab_size, pair.device, "verifier")
        self.prompt = torch.tensor(prompt_ids, dtype=torch.long, device=pair.device)
        self.notes: list[str] = []
        budget, room = settings.max_new_tokens, None
        if pair.max_context is not None:
            room = pair.max_context - len(prompt_ids)
            if room < 1:
                raise PromptError(
                    f"the prompt has {len(prompt_ids)} tokens; the models' context is "
                    f"{pair.max_context}. Shorten the prompt."
                )
            if room < budget:
                self.notes.append(f"max_new_tokens capped at {room} by the models' context")
        capped = room is not None and room < budget
        self.out = _Output(pair, room if capped else budget, capped, settings.stop)
        self.tokens: list[TokenRecord] = []
        self.rounds: list[RoundRecord] = []
        self.extra: dict = {}
        self.t0 = 0.0

    # -- what loops use ----------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.out.remaining

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def meter(self) -> _Meter:
        """Start measuring a round."""
        return _Meter(self)

    def probs(self, logits: Tensor) -> Probs:
        return Probs(self.sampler.probs(logits), unit_probs(logits))

    def records(self, ids: list[int], sources: list[Source], **views) -> list[TokenRecord]:
        """TokenRecords for this round's tokens (views: q, p, target, drafts, accept_prob,
        stats)."""
        first, rnd, k = len(self.out.ids), len(self.rounds), self.s.record_top_k
        return token_records(ids, sources, first=first, round=rnd, top_k=k, **views)

    # -- driving a loop ----------------------------------------------------------------------
    def events(self, loop: Iterator[tuple[list[TokenRecord], RoundRecord]]):
        """Drive a loop, account for each round, yield RoundEvents and then the Trace.

        inference_mode is entered per step, never across a yield, so it cannot leak into the
        caller's code while the generator is suspended."""
        self.t0 = time.perf_counter()
        out = self.out
        while not out.stop_reason:
            with torch.inference_mode():
                step = next(loop, None)
                if step is None:
                    break
                records, rnd = step
                records = out.admit(records)
            rnd.emitted = len(records)
            self.tokens.extend(records)
            self.rounds.append(rnd)
            if not out.stop_reason and self.should_stop():
                out.stop_reason = "cancelled"
            yield RoundEvent(rnd, records, out.text, list(out.ids))
        yield self.trace(time.perf_counter() - self.t0)

    def trace(self, wall: float) -> Trace:
        s, rule = self.s, self.rule
        summary = summarise(
            method=s.method,
            rule=rule.name if rule else None,
            alpha=s.alpha if rule and rule.has_alpha else None,
            gamma=s.gamma,
            temperature=s.temperature,
            prompt_tokens=len(self.prompt_ids),
            new_tokens=len(self.out.ids),
            wall_s=wall,
            rounds=self.rounds,
            stop_reason=self.out.stop_reason or "max_new_tokens",
            notes=self.notes,
            speculative=self.method.speculative,
            draft_policy=s.draft_policy,
            draft_threshold=s.draft_threshold
            if DRAFT_POLICIES[s.draft_policy].stops_early
            else None,
        )
        return Trace(
            prompt_ids=list(self.prompt_ids),
            new_token_ids=list(self.out.ids),
            text=self.out.text,
            tokens=self.tokens,
            rounds=self.rounds,
            summary=summary,
            extra=self.extra,
            prompt=self.prompt_text,
        )


# -- the loops ------------------------------------------------------------------------------


def _autoregressive(run: _Run, role: str) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """One model alone: one forward and one token per round."""
    lm = run.verifier if role == "verifier" else run.drafter
    pending = run.prompt
    while run.remaining > 0:
        meter = run.meter()
        probs = run.probs(lm.forward(pending))
        x = run.sampler.draw(probs.scaled)
        view = {"p": probs} if role == "verifier" else {"q": probs}
        yield run.records(x.tolist(), [role], **view), meter.record()
        pending = x


def _speculative(run: _Run) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """Draft a window with q (its length set by the draft policy), score it in one verifier
    pass, keep each draft with probability min(1, accept/q), replace the first rejected one
    from the residual, or add a bonus token when all are kept (docs/method.md, section 3)."""
    rule, alpha, sampler, s = run.rule, run.s.alpha, run.sampler, run.s
    policy = DRAFT_POLICIES[s.draft_policy]
    stop_below = s.draft_threshold if policy.stops_early else None
    window = policy.first(s.gamma)
    d_pending = v_pending = run.prompt
    while run.remaining > 0:
        meter = run.meter()
        drafts, q = _draft(run, d_pending, min(window, run.remaining), stop_below)
        g = drafts.shape[0]
        p = run.probs(run.verifier.forward(torch.cat([v_pending, drafts]), keep=g + 1))
        target = build_target(rule, alpha, q.scaled, p.scaled[:g], q.unit, p.unit[:g])
        u = sampler.uniform(g, run.device)
        k, accept_prob, residual = _verify(rule, drafts, q.scaled, target, u)
        stats = pair_stats(q, p, g)  # the drafts' records and the emitted tokens' share it
        records = draft_records(
            drafts, q, p, target, accept_prob, u, k, tested_all=rule.kind == "block", stats=stats
        )
        replay = dict(window=window, drafts=records)
        if k < g:  # rejected at row k: replace from the residual, roll both caches back
            y = sampler.draw(residual).view(1)
            run.verifier.crop(g - k)
            run.drafter.crop(g - 1 - k)
            d_pending, sources = y, ["accepted"] * k + ["resampled"]
            replay.update(
                residual_top=_top(residual, s.record_top_k),
                drafter_rolled_back=g - 1 - k,
                verifier_rolled_back=g - k,
            )
        elif g < run.remaining:  # all kept: the next token comes from pi at row g (step 6)
            y, d_pending, q, target = _bonus(run, drafts, q, p, target)
            sources = ["accepted"] * g + ["bonus"]
        else:  # all kept and the budget ends here: no bonus
            y, sources = drafts[:0], ["accepted"] * g
        v_pending = y
        rnd = meter.record(drafted=g, accepted=k, draft_ids=drafts.tolist(), **replay)
        emitted = torch.cat([drafts[:k], y]).tolist()
        views = dict(q=q, p=p, target=target, drafts=drafts, accept_prob=accept_prob)
        yield run.records(emitted, sources, stats=stats, **views), rnd
        window = policy.next(window, g, k, s.gamma)


def _verify(
    rule: Rule, drafts: Tensor, q: Tensor, target: Target, u: Tensor
) -> tuple[int, Tensor, Tensor | None]:
    """How many drafts the window keeps, each draft's acceptance level, and the law of the
    replacement token when one is rejected: token by token (every rule), or jointly (block
    verification)."""
    if rule.kind == "block":
        return block_verify(drafts, q, target, u)
    k, accept_prob = first_rejection(drafts, q, target, u)
    return k, accept_prob, residual_probs(target, k) if k < drafts.shape[0] else None


def _top(probs: Tensor, k: int) -> list[tuple[int, float]]:
    """The k most likely (id, probability) pairs of one law, for the trace."""
    if not k:
        return []
    vals, ids = torch.topk(probs, min(k, probs.shape[-1]))
    return [(i, v) for i, v in zip(ids.tolist(), vals.tolist()) if v > 0]


def _draft(run: _Run, pending: Tensor, g: int, stop_below: float | None) -> tuple[Tensor, Probs]:
    """Up to g drafts from the drafter, one forward each, and its laws at each of them. With
    `stop_below`, the window ends after a draft where the drafter's max q (T = 1) is below it."""
    drafts, logits, scaled, x = [], [], [], pending
    for _ in range(g):
        logits.append(run.drafter.forward(x))
        scaled.append(run.sampler.probs(logits[-1]))
        x = run.sampler.draw(scaled[-1])
        drafts.append(x)
        if stop_below is not None and unit_probs(logits[-1]).amax().item() < stop_below:
            break
    return torch.cat(drafts), Probs(torch.cat(scaled), unit_probs(torch.cat(logits)))


def _bonus(
    run: _Run, drafts: Tensor, q: Probs, p: Probs, target: Target
) -> tuple[Tensor, Tensor, Probs, Target]:
    """The token after a fully kept window, drawn from pi at row g. Returns it, what the
    drafter has not seen yet, and q and the target extended by row g where pi needed q there
    (every rule but SD, whose pi is p)."""
    g = drafts.shape[0]
    if not run.rule.needs_bonus_q:
        y = run.sampler.draw(p.scaled[g]).view(1)
        return y, torch.cat([drafts[-1:], y]), q, target
    q_bonus = run.probs(run.drafter.forward(drafts[-1:]))
    bonus = build_target(
        run.rule, run.s.alpha, q_bonus.scaled, p.scaled[g:], q_bonus.unit, p.unit[g:]
    )
    y = run.sampler.draw(bonus.law[0]).view(1)
    return y, y, q.then(q_bonus), target.then(bonus)


def _token_cascade(run: _Run) -> Iterator[tuple[list[TokenRecord], RoundRecord]]:
    """Sequential TokenCascade[Chow]: the drafter writes each token unless it is unsure
    (max q < 1 - alpha); then the verifier catches up on the tokens it has not seen (one
    forward) and writes this one. Every deferral is a serial verifier call."""
    d_pending = v_pending = run.prompt
    while run.remaining > 0:
        meter = run.meter()
        q = run.probs(run.drafter.forward(d_pending))
        stats = Stats(q.unit, None, q.unit.amax(-1, keepdim=True), None, None)
        defer = bool(run.rule.defer(stats, run.s.alpha).item())
        p = None
        if defer:
            p = run.probs(run.verifier.forward(v_pending))
            y = run.sampler.draw(p.scaled)
            v_pending = y
        else:
            y = run.sampler.draw(q.scaled)
            v_pending = torch.cat([v_pending, y])
        d_pending = y
        rec = run.records(y.tolist(), ["verifier" if defer else "drafter"], q=q, p=p)[0]
        rec.defer = defer
        yield [rec], meter.record()


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
        # each draft token's text and when it was written (on this run's clock), so a replay
        # can show the draft that a deferral throws away
        draft_pieces=[t.text for t in draft.tokens],
        draft_eos=draft.summary.stop_reason == "eos",
        draft_times=[
            run.now() - draft.summary.wall_s + r.start_s + r.drafter_s for r in draft.rounds
        ],  # fmt: skip
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


# -- the method registry ---------------------------------------------------------------------

Loop = Callable[[_Run], Iterator[tuple[list[TokenRecord], RoundRecord]]]


@dataclass(frozen=True)
class Method:
    """A registry row: how a method decodes, and what the CLI, app, compare and bench need to
    know about it. A new method is one loop function plus one row."""

    name: str
    label: str  # what the app's method picker shows
    loop: Loop
    rule: str | None = None  # the target rule it always runs (None: no rule, or `rules`)
    rules: tuple[str, ...] = ()  # the rules a user picks from; empty: the rule is fixed
    drafts: bool = False  # proposes a window of gamma drafts (gamma matters)
    speculative: bool = False  # draft-and-verify rounds (acceptance, the fact-5 ideal)
    zoo: bool = False  # a later acceptance rule: compared in the rule zoo, not in compare/bench
    alpha_default: float | None = None  # its own default alpha, where not its rule's

    def target_rule(self, rule: str | None = None) -> Rule | None:
        """The rule this method runs with; `rule` is the user's choice where it takes one."""
        name = rule if self.rules else self.rule
        return RULES[name] if name else None


# fmt: off
METHOD_REGISTRY: dict[str, Method] = {m.name: m for m in [
    Method(name="verifier", label="verifier alone",
           loop=partial(_autoregressive, role="verifier")),
    Method(name="drafter", label="drafter alone",
           loop=partial(_autoregressive, role="drafter")),
    # Chow on the answer's mean confidence: most of an answer's tokens are near certain, so the
    # mean sits near 1 and its bar must too (token-level Chow's 0.7 kept 97% of the embedded
    # pair's hard answers, whose mean max-q has median 0.90; the easy ones' are >= 0.96 for 99%)
    Method(name="seq_cascade", label="sequence cascade (Chow)",
           loop=_seq_cascade, rule="chow", alpha_default=0.05),
    Method(name="token_cascade", label="token cascade (sequential, Chow)",
           loop=_token_cascade, rule="chow"),
    Method(name="speculative", label="speculative decoding (lossless)",
           loop=_speculative, rule="sd", drafts=True, speculative=True),
    Method(name="lossy_speculative", label="lossy speculative decoding",
           loop=_speculative, rule="lossy", drafts=True, speculative=True),
    Method(name="bild", label="BiLD*",
           loop=_speculative, rule="bild", drafts=True, speculative=True),
    Method(name="spec_cascade", label="speculative cascade (rule below)",
           loop=_speculative, rules=SPEC_CASCADE_RULES, drafts=True, speculative=True),
    # acceptance rules of serving engines and later papers (rules.py, the rule zoo)
    Method(name="typical", label="typical acceptance (Medusa)",
           loop=_speculative, rule="typical", drafts=True, speculative=True, zoo=True),
    Method(name="ensemble", label="static ensemble verification",
           loop=_speculative, rule="ensemble", drafts=True, speculative=True, zoo=True),
    Method(name="fuzzy", label="fuzzy speculative decoding",
           loop=_speculative, rule="fuzzy", drafts=True, speculative=True, zoo=True),
    Method(name="kl_judge", label="KL judge",
           loop=_speculative, rule="kl_judge", drafts=True, speculative=True, zoo=True),
    Method(name="block", label="block verification (lossless)",
           loop=_speculative, rule="block", drafts=True, speculative=True, zoo=True),
]}
# fmt: on
METHODS = tuple(METHOD_REGISTRY)
# The method that runs the user's choice of rule (the app's rule picker, compare, sweep, bench).
CASCADE = next(m.name for m in METHOD_REGISTRY.values() if m.rules)
# Every draft-and-verify rule and the method that runs it: the paper's rules through the
# cascade, every other rule through its own method (the rule zoo compares all of them).
_FIXED = {m.rule: m.name for m in METHOD_REGISTRY.values() if m.speculative and m.rule}
RULE_METHODS: dict[str, str] = {
    r: CASCADE if r in METHOD_REGISTRY[CASCADE].rules else _FIXED[r]
    for r in RULES
    if r in _FIXED or r in METHOD_REGISTRY[CASCADE].rules
}


def rule_settings(rule: str, alpha: float | None = None, **changes) -> dict:
    """The Settings fields that run `rule` (its method, and the rule where the method takes
    one), with `alpha` where the rule has a parameter: one place that knows how rules map to
    methods."""
    method = RULE_METHODS.get(rule)
    if method is None:
        raise SettingsError(f"unknown rule {rule!r}; choose one of {', '.join(RULE_METHODS)}")
    return {
        "method": method,
        "rule": rule if METHOD_REGISTRY[method].rules else None,
        "alpha": alpha if RULES[rule].has_alpha else None,
        **changes,
    }


def stream(
    pair: ModelPair,
    prompt: str | list[int],
    settings: Settings | None = None,
    *,
    should_stop: Callable[[], bool] | None = None,
    **changes,
) -> Iterator[RoundEvent | Trace]:
    """Run one decoding method, yielding a RoundEvent per round and then the final Trace.

    The run uses `settings` (default: `Settings()`) with any `changes` to its fields, e.g.
    ``stream(pair, prompt, method="verifier", temperature=0)``. Settings and the prompt are
    checked before any model runs; `should_stop` is polled between rounds (the trace then ends
    with stop_reason 'cancelled')."""
    if settings is not None and not isinstance(settings, Settings):
        raise TypeError(f"settings must be a Settings; got {type(settings).__name__}")
    settings = replace(settings or Settings(), **changes).validated()
    text = prompt if isinstance(prompt, str) else None
    run = _Run(
        pair, settings, pair.encode(prompt, settings.chat), should_stop=should_stop,
        prompt_text=text,
    )  # fmt: skip
    return run.events(METHOD_REGISTRY[settings.method].loop(run))


def generate(
    pair: ModelPair,
    prompt: str | list[int],
    settings: Settings | None = None,
    *,
    should_stop: Callable[[], bool] | None = None,
    **changes,
) -> Trace:
    """Run to the end and return the Trace (same arguments as `stream`)."""
    trace = None
    for event in stream(pair, prompt, settings, should_stop=should_stop, **changes):
        trace = event
    assert isinstance(trace, Trace)
    return trace

"""Records of a run: one per emitted token, one per round, and a summary.

Probabilities here are T = 1 (what each model believed), except `dtv`, which is D_TV on the
temperature-scaled laws the tokens were drawn from (what drives rejections).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal

import pandas as pd

Source = Literal["accepted", "resampled", "bonus", "drafter", "verifier"]

SOURCES: dict[str, str] = {
    "accepted": "drafter token kept",
    "resampled": "verifier took over (draft rejected)",
    "bonus": "bonus token after a fully kept window",
    "drafter": "drafter alone",
    "verifier": "verifier alone",
}


@dataclass
class TokenRecord:
    position: int
    token_id: int
    text: str
    source: Source
    round: int
    q: float | None = None  # drafter's T=1 probability of the emitted token
    p: float | None = None  # verifier's T=1 probability of the emitted token
    max_q: float | None = None
    max_p: float | None = None
    dtv: float | None = None
    draft_id: int | None = None  # what the drafter proposed here (differs when resampled)
    draft_q: float | None = None
    draft_p: float | None = None
    defer: bool | None = None  # the rule's decision r for the draft token
    accept_prob: float | None = None  # min(1, pi(x)/q(x)) for the draft token
    top_q: list[tuple[int, float]] = field(default_factory=list)
    top_p: list[tuple[int, float]] = field(default_factory=list)
    top_pi: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class RoundRecord:
    index: int
    start_s: float  # since the run started
    drafter_s: float
    verifier_s: float
    drafted: int
    accepted: int
    emitted: int
    drafter_calls: int
    verifier_calls: int
    draft_ids: list[int] = field(default_factory=list)  # everything drafted, kept or not


@dataclass
class Summary:
    method: str
    rule: str | None
    alpha: float | None
    gamma: int
    temperature: float
    prompt_tokens: int
    new_tokens: int
    wall_s: float
    tokens_per_s: float
    drafter_calls: int
    verifier_calls: int
    drafter_s: float
    verifier_s: float
    drafted: int
    accepted: int
    acceptance_rate: float | None
    mean_accepted_length: float | None
    tokens_per_verifier_call: float | None
    verifier_calls_per_token: float
    cost_ratio: float | None  # drafter / verifier seconds per forward, measured in this run
    ideal_speedup: float | None  # METHOD.md fact 5, from the two numbers above
    stop_reason: str
    notes: list[str] = field(default_factory=list)


@dataclass
class Trace:
    prompt_ids: list[int]
    new_token_ids: list[int]
    text: str
    tokens: list[TokenRecord]
    rounds: list[RoundRecord]
    summary: Summary
    extra: dict = field(default_factory=dict)  # method-specific (e.g. seq_cascade's draft)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(t) for t in self.tokens])

    def rounds_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(r) for r in self.rounds])

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=_json_default)

    @classmethod
    def from_dict(cls, data: dict) -> Trace:
        return cls(
            prompt_ids=data["prompt_ids"],
            new_token_ids=data["new_token_ids"],
            text=data["text"],
            tokens=[_token_from_dict(t) for t in data["tokens"]],
            rounds=[RoundRecord(**r) for r in data["rounds"]],
            summary=Summary(**data["summary"]),
            extra=data.get("extra", {}),
        )

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.from_dict(json.loads(text))


def _token_from_dict(d: dict) -> TokenRecord:
    d = dict(d)
    for key in ("top_q", "top_p", "top_pi"):
        d[key] = [(int(i), float(x)) for i, x in d.get(key, [])]
    return TokenRecord(**d)


def _json_default(obj):
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def expected_tokens_per_call(b: float, gamma: int) -> float:
    """METHOD fact 5: tokens per verifier call with i.i.d. acceptance b."""
    return gamma + 1.0 if b >= 1 else (1 - b ** (gamma + 1)) / (1 - b)


def ideal_speedup(b: float, gamma: int, c: float) -> float:
    """METHOD fact 5: speed-up over the verifier alone with draft/verify cost ratio c."""
    return expected_tokens_per_call(b, gamma) / (1 + gamma * c)


def summarise(
    *,
    method: str,
    rule: str | None,
    alpha: float | None,
    gamma: int,
    temperature: float,
    prompt_tokens: int,
    new_tokens: int,
    wall_s: float,
    rounds: list[RoundRecord],
    stop_reason: str,
    notes: list[str],
    speculative: bool,
) -> Summary:
    """Totals over rounds, plus the fact-5 ideal for speculative methods."""
    d_calls = sum(r.drafter_calls for r in rounds)
    v_calls = sum(r.verifier_calls for r in rounds)
    d_s = sum(r.drafter_s for r in rounds)
    v_s = sum(r.verifier_s for r in rounds)
    drafted = sum(r.drafted for r in rounds)
    accepted = sum(r.accepted for r in rounds)
    acc_rate = accepted / drafted if drafted else None
    cost_ratio = (d_s / d_calls) / (v_s / v_calls) if d_calls and v_calls and v_s > 0 else None
    ideal = (
        ideal_speedup(acc_rate, gamma, cost_ratio)
        if speculative and acc_rate is not None and cost_ratio is not None
        else None
    )
    return Summary(
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=gamma,
        temperature=temperature,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        wall_s=wall_s,
        tokens_per_s=new_tokens / wall_s if wall_s > 0 else 0.0,
        drafter_calls=d_calls,
        verifier_calls=v_calls,
        drafter_s=d_s,
        verifier_s=v_s,
        drafted=drafted,
        accepted=accepted,
        acceptance_rate=acc_rate,
        mean_accepted_length=accepted / len(rounds) if speculative and rounds else None,
        tokens_per_verifier_call=new_tokens / v_calls if v_calls else None,
        verifier_calls_per_token=v_calls / new_tokens if new_tokens else 0.0,
        cost_ratio=cost_ratio,
        ideal_speedup=ideal,
        stop_reason=stop_reason,
        notes=notes,
    )

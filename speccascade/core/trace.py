"""Records of a run: one per emitted token, one per round, and a summary.

Probabilities here are T = 1 (what each model believed), except `dtv`, which is D_TV on the
temperature-scaled laws the tokens were drawn from (what drives rejections).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

import pandas as pd
import torch
from torch import Tensor

from speccascade.core.rules import Target, divergences, tv_distance

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
    accept_prob: float | None = None  # min(1, pi(x)/q(x)) for the draft (block: its level h)
    ent_p: float | None = None  # H(p) here (T = 1, nats): typical acceptance reads it
    kl: float | None = None  # KL(p || q) here (T = 1, nats): the KL judge reads it
    jsd: float | None = None  # JSD(p, q) here (T = 1, nats): fuzzy SD reads it
    top_q: list[tuple[int, float]] = field(default_factory=list)
    top_p: list[tuple[int, float]] = field(default_factory=list)
    top_pi: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Draft:
    """One drafted token of a speculative round, kept or not, with everything the accept test
    used: the round replay re-reads it, so a replay needs no model. Probabilities are T = 1
    except `dtv` (scaled laws, as in TokenRecord); `u` is the uniform draw the test compared
    against min(1, pi/q) (block verification: against its block level h, recorded as
    `accept_prob`). Drafts after the first rejection were never tested (`tested`), except
    under block verification, which tests them all."""

    token_id: int
    q: float
    p: float
    max_q: float
    max_p: float
    dtv: float
    defer: bool | None
    accept_prob: float
    u: float
    tested: bool
    kept: bool
    ent_p: float | None = None
    kl: float | None = None
    jsd: float | None = None


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
    window: int = 0  # the draft length the policy planned (drafted < window: stopped early)
    drafts: list[Draft] = field(default_factory=list)
    residual_top: list[tuple[int, float]] = field(default_factory=list)  # after a rejection
    drafter_rolled_back: int = 0  # KV cache entries cropped after a rejection
    verifier_rolled_back: int = 0


# -- building TokenRecords from a round's tensors ------------------------------------------


@dataclass
class Probs:
    """A model's view of some positions: the law tokens are drawn from, and T = 1 probs."""

    scaled: Tensor  # [n, V]
    unit: Tensor  # [n, V]

    def then(self, other: Probs) -> Probs:
        """These rows followed by `other`'s."""
        return Probs(torch.cat([self.scaled, other.scaled]), torch.cat([self.unit, other.unit]))


# TokenRecord's per-token statistics: one column each of the table `token_records` gathers.
STAT_COLUMNS = (
    "q", "draft_q", "max_q", "p", "draft_p", "max_p", "dtv", "defer", "accept_prob",
    "ent_p", "kl", "jsd",
)  # fmt: skip


def pair_stats(q: Probs, p: Probs, n: int) -> dict[str, Tensor]:
    """What the trace records about p against q on their first n rows: D_TV on the laws
    tokens are drawn from, H(p), KL and JSD at T = 1. Computed once per window: the drafts'
    records and the emitted tokens' share them."""
    ent_p, kl, jsd = divergences(p.unit[:n], q.unit[:n])
    return {"dtv": tv_distance(p.scaled[:n], q.scaled[:n]), "ent_p": ent_p, "kl": kl, "jsd": jsd}


def token_records(
    ids: list[int],
    sources: list[Source],
    *,
    first: int,
    round: int,
    top_k: int,
    q: Probs | None = None,
    p: Probs | None = None,
    target: Target | None = None,
    drafts: Tensor | None = None,
    accept_prob: Tensor | None = None,
    stats: dict[str, Tensor] | None = None,
) -> list[TokenRecord]:
    """TokenRecords for tokens emitted at positions first, first + 1, ... (row i of each
    tensor is the i-th of them). Tensors may have fewer rows than `ids` (no drafter view of a
    bonus token, no draft for it): those fields are None. `stats` (pair_stats of the window)
    saves computing p against q again where it covers the rows. The statistics are gathered into one
    table on device, a named column each, and copied to the host once (plus once for the
    top-k lists): this runs every round, so it is kept to a handful of tensor ops."""
    n = len(ids)
    device = (q if q is not None else p).unit.device
    nd = 0 if drafts is None else min(n, drafts.shape[0])
    emitted = torch.tensor(ids, device=device)
    cols: dict[str, Tensor] = {}
    for name, view in (("q", q), ("p", p)):
        if view is not None:
            rows = view.unit[:n]
            k = min(nd, rows.shape[0])
            cols[name] = rows.gather(1, emitted[: rows.shape[0], None])[:, 0]
            cols[f"draft_{name}"] = rows[:k].gather(1, drafts[:k, None])[:, 0] if k else None
            cols[f"max_{name}"] = rows.amax(-1)
    nb = 0 if q is None or p is None else min(n, q.unit.shape[0], p.unit.shape[0])
    if nb:
        if stats is None or stats["dtv"].shape[0] < nb:  # `stats`: pair_stats of the window
            stats = pair_stats(q, p, nb)
        cols.update({name: column[:nb] for name, column in stats.items()})
    if nd and target is not None and target.defer is not None:
        cols["defer"] = target.defer[:nd].gather(1, drafts[:nd, None])[:, 0].float()
    if nd and accept_prob is not None:
        cols["accept_prob"] = accept_prob[:nd]
    table = torch.full((n, len(STAT_COLUMNS)), torch.nan, device=device)
    for j, name in enumerate(STAT_COLUMNS):
        if cols.get(name) is not None:
            table[: cols[name].shape[0], j] = cols[name]
    draft_ids = drafts[:nd].tolist() if nd else []
    laws = [q.unit if q is not None else None, p.unit if p is not None else None]
    tops = _top_k(laws + [target.law if target is not None else None], n, top_k)
    out = []
    for i, row in enumerate(table.tolist()):
        stats = {name: None if x != x else x for name, x in zip(STAT_COLUMNS, row)}  # NaN: unknown
        if stats["defer"] is not None:
            stats["defer"] = bool(stats["defer"])
        out.append(
            TokenRecord(
                position=first + i,
                token_id=ids[i],
                text="",  # the output fills it in, seeing the whole sequence
                source=sources[i],
                round=round,
                draft_id=draft_ids[i] if i < nd else None,
                top_q=tops[0][i],
                top_p=tops[1][i],
                top_pi=tops[2][i],
                **stats,
            )
        )
    return out


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


def draft_records(
    drafts: Tensor,
    q: Probs,
    p: Probs,
    target: Target,
    accept_prob: Tensor,
    u: Tensor,
    n_accepted: int,
    tested_all: bool = False,
    stats: dict[str, Tensor] | None = None,
) -> list[Draft]:
    """Draft records for a window, gathered into one table and copied to the host once.
    `tested_all`: every draft was tested (block verification), not only up to the first
    rejection. `stats`: pair_stats of the window, if already computed."""
    g = drafts.shape[0]
    rows, col = torch.arange(g, device=drafts.device), drafts[:, None]
    defer = (
        target.defer[:g].gather(1, col)[:, 0].float()
        if target.defer is not None
        else torch.full((g,), torch.nan, device=drafts.device)
    )
    if stats is None or stats["dtv"].shape[0] < g:
        stats = pair_stats(q, p, g)
    table = torch.stack(
        [
            q.unit[rows, drafts],
            p.unit[rows, drafts],
            q.unit[:g].amax(-1),
            p.unit[:g].amax(-1),
            stats["dtv"][:g],
            defer,
            accept_prob[:g],
            u[:g],
            stats["ent_p"][:g],
            stats["kl"][:g],
            stats["jsd"][:g],
        ],
        dim=1,
    ).tolist()
    out = []
    for i, (token_id, row) in enumerate(zip(drafts.tolist(), table)):
        qx, px, mq, mp, dtv, d, a, ui, ent, kl, jsd = row
        out.append(
            Draft(
                token_id, qx, px, mq, mp, dtv, None if d != d else bool(d), a, ui,
                tested=tested_all or i <= n_accepted, kept=i < n_accepted,
                ent_p=ent, kl=kl, jsd=jsd,
            )
        )  # fmt: skip
    return out


def position_counts(rounds: list[RoundRecord]) -> tuple[list[int], list[int]]:
    """Per position j of the draft window (0-based): how many rounds tested a draft there
    (the j drafts before it were kept) and how many kept it."""
    longest = max((r.drafted for r in rounds), default=0)
    reached, kept = [0] * longest, [0] * longest
    for r in rounds:
        for j in range(min(r.drafted, r.accepted + 1)):
            reached[j] += 1
            kept[j] += j < r.accepted
    return reached, kept


def position_stats(rounds: list[RoundRecord]) -> tuple[list[float | None], float | None, int]:
    """Acceptance rate by position in the draft window (position j is reached when the j - 1
    drafts before it were kept), the mean window drafted, and the drafter forwards spent on
    drafts that are not in the text. Rounds that drafted nothing (single-model loops) are
    skipped. The rates count drafts up to the end of the text (`rounds_in_text`), like the
    summary's kept share; the window and the forwards count what the drafter did."""
    drafting = [r for r in rounds if r.drafted]
    if not drafting:
        return [], None, 0
    in_text = [r for r in rounds_in_text(rounds) if r.drafted]
    reached, kept = position_counts(in_text)
    rates = [k / n if n else None for k, n in zip(kept, reached)]
    mean_window = sum(r.drafted for r in drafting) / len(drafting)
    wasted = sum(r.drafted for r in drafting) - sum(r.accepted for r in in_text)
    return rates, mean_window, wasted


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
    ideal_speedup: float | None  # docs/method.md, fact 5, from the two numbers above
    stop_reason: str
    notes: list[str] = field(default_factory=list)
    draft_policy: str = "fixed"
    draft_threshold: float | None = None  # only for policies that stop a draft early
    acceptance_by_position: list[float | None] = field(default_factory=list)
    mean_window: float | None = None
    wasted_drafts: int = 0  # drafter forwards spent on drafts that are not in the text


@dataclass
class Trace:
    prompt_ids: list[int]
    new_token_ids: list[int]
    text: str
    tokens: list[TokenRecord]
    rounds: list[RoundRecord]
    summary: Summary
    extra: dict = field(default_factory=dict)  # method-specific (e.g. seq_cascade's draft)
    # the prompt as it was given, before any chat template (None: given as token ids, or a
    # file from before traces kept it): a reopened file shows what was asked
    prompt: str | None = None

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
            rounds=[_round_from_dict(r) for r in data["rounds"]],
            summary=Summary(**data["summary"]),
            extra=data.get("extra", {}),
            prompt=data.get("prompt"),
        )

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.from_dict(json.loads(text))


def _token_from_dict(d: dict) -> TokenRecord:
    d = dict(d)
    for key in ("top_q", "top_p", "top_pi"):
        d[key] = [(int(i), float(x)) for i, x in d.get(key, [])]
    return TokenRecord(**d)


def _round_from_dict(d: dict) -> RoundRecord:
    d = dict(d)
    d["drafts"] = [Draft(**x) for x in d.get("drafts", [])]
    d["residual_top"] = [(int(i), float(x)) for i, x in d.get("residual_top", [])]
    return RoundRecord(**d)


def _json_default(obj):
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def expected_tokens_per_call(b: float, gamma: int) -> float:
    """docs/method.md, fact 5: tokens per verifier call with i.i.d. acceptance b."""
    return gamma + 1.0 if b >= 1 else (1 - b ** (gamma + 1)) / (1 - b)


def ideal_speedup(b: float, gamma: int, c: float) -> float:
    """docs/method.md, fact 5: speed-up over the verifier alone, draft/verify cost ratio c."""
    return expected_tokens_per_call(b, gamma) / (1 + gamma * c)


def rounds_in_text(rounds: list[RoundRecord]) -> list[RoundRecord]:
    """The rounds with the last one cut at the end of the text. When an end of text or a stop
    string falls inside its kept drafts, the drafts after it were still verified and kept
    (the round's own counts keep them: they cost forwards, and the projector reads them) but
    never shown: a kept share over them would count drafts no one sees ("who is buzz
    aldrin?" said 21 of 21 kept, its last window 3 of 5 and 2 drafts not kept)."""
    last = rounds[-1] if rounds else None
    if last is None or not last.drafted or last.accepted < last.emitted:
        return list(rounds)
    return [*rounds[:-1], replace(last, drafted=last.emitted, accepted=last.emitted)]


def drafts_in_text(rounds: list[RoundRecord]) -> tuple[int, int]:
    """Drafts made and kept, up to the end of the text (`rounds_in_text`)."""
    cut = rounds_in_text(rounds)
    return sum(r.drafted for r in cut), sum(r.accepted for r in cut)


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
    draft_policy: str = "fixed",
    draft_threshold: float | None = None,
) -> Summary:
    """Totals over rounds, plus the fact-5 ideal for speculative methods."""
    d_calls = sum(r.drafter_calls for r in rounds)
    v_calls = sum(r.verifier_calls for r in rounds)
    d_s = sum(r.drafter_s for r in rounds)
    v_s = sum(r.verifier_s for r in rounds)
    drafted, accepted = drafts_in_text(rounds)
    acc_rate = accepted / drafted if drafted else None
    by_position, mean_window, wasted = position_stats(rounds)
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
        draft_policy=draft_policy,
        draft_threshold=draft_threshold,
        acceptance_by_position=by_position,
        mean_window=mean_window,
        wasted_drafts=wasted,
    )

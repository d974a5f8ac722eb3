"""The engine on one device, in one table: its exactness oracles and a short bench.

Written for the day a GPU is lent: it needs no hub (the embedded demo pair ships in
assets/models) and fits in 10 minutes. On a CUDA machine, from a checkout:

    python scripts/gpu_check.py                       # --device cuda; exit 1 if a check fails
    python scripts/gpu_check.py --json out.json       # the rows as JSON too

and on any machine, small (tests/test_gpu_check.py runs this so the script does not rot):

    python scripts/gpu_check.py --device cpu --prompts 1 --max-new-tokens 8 --law-samples 50

The checks (docs/method.md's facts; the test suite checks them on CPU with tiny models) run
the pair in float32 (`--exact-dtype`), so greedy runs can be compared token for token:

* our greedy verifier loop = the verifier's own greedy `generate()`;
* Fact 1: greedy speculative decoding (gamma 1 and 4; fixed, heuristic and confidence draft
  windows) and every rule at its defer-everywhere alpha = the verifier alone, token for token;
* Fact 2: every rule at its drafter-only alpha = the drafter's own greedy `generate()`, every
  draft kept;
* Fact 6: a greedy TokenV3 run keeps a draft iff p(argmax q) >= (1 - alpha) max p, else
  writes the verifier's argmax;
* Facts 3-4: on random laws over a 7-token vocabulary, on the device, every rule's target is
  a law and the accept test plus residual emit exactly it (enumerated, no sampling), with
  acceptance 1 - D_TV(q, pi);
* Fact 3 end to end: the fidelity audit (analysis.audit; seeds 0..n-1, level 0.01, so a
  correct engine fails one audit with probability at most 1%) on SD and the cascade at T = 2.

A greedy mismatch names the first position where the runs part and the verifier's top-2
margin there: a margin near float32's rounding is a tie that kernels broke differently (a
batched verify pass and a one-token step may round apart on a GPU), a large one a bug.

The bench runs greedy, in the pair's automatic dtype (bfloat16 on CUDA, float32 on CPU;
`--dtype`), on the app's English example questions: the verifier alone, Hugging Face's
`generate()`, speculative decoding and HF assisted generation (gamma 4, constant window), the
speculative cascade at the app's defaults and the drafter alone, interleaved over repeats
after a warm-up round. A method's time is the sum over the questions of its median run; "x
verifier" is the verifier alone's time over the method's.

The suite itself is not run here: its fixtures load tiny pairs on "auto" (CUDA and bfloat16
where a GPU is), and its exact-law tests assume float32.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # a checkout, not installed

from speccascade import RULES, generate, load_pair  # noqa: E402
from speccascade.analysis.audit import audit  # noqa: E402
from speccascade.analysis.bench import HF_ASSISTED, HF_VERIFIER, Config, run_config  # noqa: E402
from speccascade.analysis.evalsets import EXAMPLES  # noqa: E402
from speccascade.core.engine import APP_DEFAULTS, Settings, rule_settings  # noqa: E402
from speccascade.core.errors import SpecCascadeError  # noqa: E402
from speccascade.core.pair import ModelPair  # noqa: E402
from speccascade.core.rules import acceptance_probability, build_target, tv_distance  # noqa: E402
from speccascade.core.sampling import first_rejection, residual_probs  # noqa: E402


@dataclass
class Row:
    part: str  # "check" or "bench"
    name: str
    result: str  # pass / FAIL / n/a for a check; the run count for the bench
    seconds: float | None = None
    tokens: int | None = None
    vs_verifier: float | None = None
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.result == "FAIL"


# -- the exactness checks -------------------------------------------------------------------


def hf_greedy(model, ids: list[int], n: int, device: torch.device) -> list[int]:
    """The model's own greedy output, n tokens, EOS not stopping it."""
    x = torch.tensor([ids], device=device)
    with torch.inference_mode():
        out = model.generate(
            x,
            attention_mask=torch.ones_like(x),
            do_sample=False,
            max_new_tokens=n,
            eos_token_id=None,
            pad_token_id=model.generation_config.pad_token_id or 0,
        )
    return out[0, len(ids) :].tolist()


def margin(model, ids: list[int], vocab: int, device: torch.device) -> float:
    """The model's top-2 probability gap after `ids` (float32)."""
    with torch.inference_mode():
        logits = model(torch.tensor([ids], device=device)).logits[0, -1, :vocab].float()
    top = torch.softmax(logits, -1).topk(2).values
    return float(top[0] - top[1])


class Greedy:
    """Greedy runs on the exactness pair (EOS ignored, so every run writes n tokens), and the
    references they are held to."""

    def __init__(self, pair: ModelPair, prompts: list[str], n: int):
        self.pair = dataclasses.replace(pair, eos_ids=frozenset())
        self.n = n
        self.ids = [self.pair.encode(p) for p in prompts]
        dev = self.pair.device
        self.verifier = [hf_greedy(self.pair.verifier, i, n, dev) for i in self.ids]
        self.drafter = [hf_greedy(self.pair.drafter, i, n, dev) for i in self.ids]

    def run(self, ids: list[int], **kw):
        kw = {"temperature": 0.0, "max_new_tokens": self.n, "record_top_k": 0, **kw}
        return generate(self.pair, ids, **kw)

    def part(self, ids: list[int], got: list[int], want: list[int], model) -> str:
        """Where two greedy runs part, and the reference model's top-2 margin there."""
        i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        gap = margin(model, ids + want[:i], self.pair.vocab_size, self.pair.device)
        return f"token {i} of {len(want)}: {got[i : i + 1]} vs {want[i : i + 1]} (top-2 margin {gap:.1e})"

    def compare(self, name: str, runs: dict[str, dict], reference: str) -> Row:
        """Every run in `runs` (a label -> generate() keywords) on every prompt against the
        reference model's own greedy tokens."""
        want_all = self.verifier if reference == "verifier" else self.drafter
        model = self.pair.verifier if reference == "verifier" else self.pair.drafter
        bad = []
        for label, kw in runs.items():
            for ids, want in zip(self.ids, want_all):
                tr = self.run(ids, **kw)
                if tr.new_token_ids != want:
                    bad.append(f"{label}: {self.part(ids, tr.new_token_ids, want, model)}")
                elif reference == "drafter" and tr.summary.acceptance_rate not in (None, 1.0):
                    bad.append(f"{label}: acceptance {tr.summary.acceptance_rate} < 1")
        n = len(runs) * len(self.ids)
        detail = (
            f"{n} runs x {self.n} tokens"
            if not bad
            else f"{len(bad)} of {n}: " + "; ".join(bad[:3])
        )
        return Row("check", name, "FAIL" if bad else "pass", detail=detail)


def check_verifier_loop(g: Greedy) -> Row:
    return g.compare(
        "our verifier loop = verifier.generate() (greedy)",
        {"verifier": dict(method="verifier")},
        "verifier",
    )


def check_fact1(g: Greedy) -> list[Row]:
    sd = {
        f"SD gamma={gamma} {policy}": dict(method="speculative", gamma=gamma, draft_policy=policy)
        for gamma, policy in [(1, "fixed"), (4, "fixed"), (4, "heuristic"), (4, "confidence")]
    }
    sd["SD gamma=4 confidence"]["draft_threshold"] = 0.9  # early stops do happen
    ends = {
        f"{r} at alpha={RULES[r].alpha_sd:g}": {**rule_settings(r, RULES[r].alpha_sd), "gamma": 4}
        for r in RULES
    }
    return [
        g.compare("Fact 1: greedy SD = verifier alone", sd, "verifier"),
        g.compare("Fact 1: every rule at its SD end = verifier alone", ends, "verifier"),
    ]


def check_fact2(g: Greedy) -> Row:
    runs = {"drafter": dict(method="drafter")}
    runs |= {
        f"{r} at alpha={RULES[r].alpha_drafter:g}": {
            **rule_settings(r, RULES[r].alpha_drafter),
            "gamma": 4,
        }
        for r in RULES
        if RULES[r].has_alpha
    }
    return g.compare("Fact 2: every rule at its drafter end = drafter alone", runs, "drafter")


def check_fact6(g: Greedy, alpha: float = 0.5) -> Row:
    """TokenV3, greedy: every token written is argmax q where p(argmax q) >= (1 - alpha) max p
    (T = 1 probabilities), else argmax p; q and p recomputed here by one forward of each
    model over the prompt and the answer."""
    bad, seen = [], 0
    vocab, dev = g.pair.vocab_size, g.pair.device
    for ids in g.ids:
        tr = g.run(ids, method="spec_cascade", rule="token_v3", alpha=alpha, gamma=2)
        out = tr.new_token_ids
        x = torch.tensor([ids + out], device=dev)
        with torch.inference_mode():
            q, p = (
                torch.softmax(m(x).logits[0, len(ids) - 1 : -1, :vocab].float(), -1)
                for m in (g.pair.drafter, g.pair.verifier)
            )
        argmax_q, argmax_p = q.argmax(-1), p.argmax(-1)
        keep = p.gather(-1, argmax_q[:, None])[:, 0] >= (1 - alpha) * p.amax(-1)
        want = torch.where(keep, argmax_q, argmax_p).tolist()
        seen += len(out)
        for i, (a, b) in enumerate(zip(out, want)):
            if a != b:
                bad.append(f"token {i}: {a} vs {b}")
    detail = f"{seen} tokens" if not bad else f"{len(bad)} of {seen}: {', '.join(bad[:5])}"
    name = "Fact 6: greedy TokenV3 writes argmax q iff p(argmax q) >= (1 - a) max p"
    return Row("check", name, "FAIL" if bad else "pass", detail=detail)


def emitted_law(q: torch.Tensor, target) -> torch.Tensor:
    """The exact law of the emitted token at each row: the draft x ~ q enumerated, with the
    engine's own accept probabilities and residual (no sampling)."""
    n, vocab = q.shape
    law = torch.zeros_like(q)
    zero = torch.zeros(1, device=q.device)
    for row in range(n):
        res = residual_probs(target, row)
        one = target.rows(slice(row, row + 1))
        for x in range(vocab):
            if q[row, x] == 0:
                continue
            draft = torch.tensor([x], device=q.device)
            _, a = first_rejection(draft, q[row : row + 1], one, zero)
            law[row, x] += q[row, x] * a[0]
            law[row] += q[row, x] * (1 - a[0]) * res
    return law


def check_laws(device: torch.device, rows: int = 16, vocab: int = 7) -> Row:
    """Facts 3-4 on the device: every rule at 5 alphas across its range, T = 1 and 0.7."""
    worst, cases, bad = 0.0, 0, []
    g = torch.Generator().manual_seed(0)
    q1 = torch.softmax(3 * torch.randn(rows, vocab, generator=g), -1).to(device)
    p1 = torch.softmax(3 * torch.randn(rows, vocab, generator=g), -1).to(device)
    for temperature in (1.0, 0.7):
        q = torch.softmax(q1.log() / temperature, -1)
        p = torch.softmax(p1.log() / temperature, -1)
        for name, rule in RULES.items():
            lo, hi = max(rule.slider[0], -1e9), min(rule.slider[1], 1e9)
            for alpha in torch.linspace(lo, hi, 5).tolist():
                t = build_target(rule, alpha, q, p, q1, p1)
                errors = [
                    float((t.law.sum(-1) - 1).abs().max()),
                    float((emitted_law(q, t) - t.law).abs().max()),
                    float(-t.law.min().clamp(max=0)),
                ]
                if rule.kind != "lenient":  # lossy SD's acceptance is its own
                    accept = acceptance_probability(q, t)
                    errors.append(float((accept - (1 - tv_distance(t.law, q))).abs().max()))
                cases += 1
                worst = max(worst, *errors)
                if max(errors) > 1e-5:
                    bad.append(f"{name} a={alpha:g} T={temperature:g}: {max(errors):.1e}")
    detail = f"{cases} (rule, alpha, T) on {rows} x {vocab} laws, largest error {worst:.1e}"
    if bad:
        detail = f"{len(bad)} of {cases} off by > 1e-5: " + "; ".join(bad[:3])
    return Row(
        "check",
        "Facts 3-4: exact laws on a 7-token vocabulary",
        "FAIL" if bad else "pass",
        detail=detail,
    )


def check_audit(pair: ModelPair, samples: int) -> list[Row]:
    out = []
    prompt = "Who is Buzz Aldrin?"
    for label, kw in [
        ("SD", dict(method="speculative", rule=None, gamma=4)),
        (
            "the cascade (TokenV3 a=0.3)",
            dict(method="spec_cascade", rule="token_v3", alpha=0.3, gamma=4),
        ),
    ]:
        a = audit(pair, prompt, Settings(temperature=2.0, **kw), positions=2, samples=samples)
        tested = [c for c in a.positions if c.dof > 0]
        p = ", ".join(f"p{c.position} = {c.p_value:.3f}" for c in a.positions)
        result = "n/a" if not tested else ("pass" if a.consistent else "FAIL")
        detail = f"{a.samples} runs of 2 tokens at T = 2, {p} (flag below {a.threshold:g})"
        if not tested:
            detail = f"{a.samples} runs: one likely token per position, nothing to test"
        out.append(
            Row(
                "check",
                f"Fact 3 sampled: audit of {label} (law {a.law})",
                result,
                a.seconds,
                detail=detail,
            )
        )
    return out


# -- the bench --------------------------------------------------------------------------------


def bench_configs() -> list[tuple[str, Config]]:
    d = APP_DEFAULTS
    return [
        ("verifier alone", Config("verifier")),
        ("HF generate()", Config(HF_VERIFIER)),
        ("SD gamma=4", Config("speculative", gamma=4)),
        ("HF assisted gamma=4", Config(HF_ASSISTED, gamma=4)),
        (
            f"spec. cascade {d.rule} a={d.alpha:g} gamma={d.gamma}",
            Config("spec_cascade", d.rule, d.alpha, d.gamma),
        ),
        ("drafter alone", Config("drafter")),
    ]


def bench(pair: ModelPair, prompts: list[str], n: int, repeats: int, deadline: float) -> list[Row]:
    """Interleaved: each repeat runs every prompt with every config in turn; a warm-up round
    first (CUDA's first kernels, caches). Stops adding repeats past the deadline."""
    configs = bench_configs()
    runs: dict[str, list[list[dict]]] = {name: [[] for _ in prompts] for name, _ in configs}
    done = 0
    for repeat in range(repeats + 1):
        if repeat > 1 and time.monotonic() > deadline:
            break
        for i, prompt in enumerate(prompts):
            for name, cfg in configs:
                row = run_config(pair, cfg, prompt, n, seed=0)
                if repeat > 0:
                    runs[name][i].append(row)
        done = repeat
    base = runs["verifier alone"]
    verifier_s = sum(statistics.median(r["wall_s"] for r in rs) for rs in base)
    rows = []
    for name, _ in configs:
        per_prompt = runs[name]
        seconds = sum(statistics.median(r["wall_s"] for r in rs) for rs in per_prompt)
        tokens = sum(rs[0]["new_tokens"] for rs in per_prompt)
        same = sum(rs[0]["token_ids"] == b[0]["token_ids"] for rs, b in zip(per_prompt, base))
        drafted = sum(r["drafted"] for rs in per_prompt for r in rs)
        accepted = sum(r["accepted"] for rs in per_prompt for r in rs)
        detail = f"same tokens as the verifier alone: {same}/{len(prompts)}"
        if drafted:
            detail += f"; drafts kept {accepted / drafted:.2f}"
        rows.append(
            Row(
                "bench",
                name,
                f"{done} x {len(prompts)}",
                seconds,
                tokens,
                verifier_s / seconds,
                detail,
            )
        )
    return rows


# -- the table ----------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    head = ["", "check / method", "result", "s", "tokens/s", "x verifier", "detail"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r.part,
            r.name,
            r.result,
            f"{r.seconds:.3f}" if r.seconds is not None else "",
            f"{r.tokens / r.seconds:.1f}" if r.tokens and r.seconds else "",
            f"{r.vs_verifier:.2f}" if r.vs_verifier is not None else "",
            r.detail.replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe(device: torch.device) -> str:
    import transformers

    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = f"CPU, {torch.get_num_threads()} threads"
    return f"{name}; torch {torch.__version__}, transformers {transformers.__version__}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), cpu, cuda:1, ...")
    ap.add_argument("--drafter", default=None, help="a drafter folder (default: the demo pair)")
    ap.add_argument("--verifier", default=None, help="a verifier folder (default: the demo pair)")
    ap.add_argument("--exact-dtype", default="float32", help="dtype of the exactness checks")
    ap.add_argument("--dtype", default="auto", help="dtype of the bench (auto: bf16 on CUDA)")
    ap.add_argument("--prompts", type=int, default=6, help="English example questions to use")
    ap.add_argument("--exact-tokens", type=int, default=32, help="tokens per greedy check run")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="tokens per bench run")
    ap.add_argument("--repeats", type=int, default=3, help="bench repeats after the warm-up")
    ap.add_argument("--law-samples", type=int, default=1000, help="runs per audit (0: none)")
    ap.add_argument("--budget-s", type=float, default=480, help="stop adding bench repeats after")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args(argv)

    start = time.monotonic()
    prompts = EXAMPLES[: args.prompts]
    try:
        exact = load_pair(args.drafter, args.verifier, device=args.device, dtype=args.exact_dtype)
    except SpecCascadeError as e:
        print(f"gpu_check: {e}", file=sys.stderr)
        return 2
    print(f"# gpu_check on {describe(exact.device)}", flush=True)
    print(f"# pair: {exact.drafter_id} -> {exact.verifier_id}; {len(prompts)} prompts", flush=True)
    g = Greedy(exact, prompts, args.exact_tokens)
    checks = [
        lambda: check_verifier_loop(g),
        lambda: check_fact1(g),
        lambda: check_fact2(g),
        lambda: check_fact6(g),
        lambda: check_laws(exact.device),
    ]
    if args.law_samples:
        checks.append(lambda: check_audit(exact, args.law_samples))
    rows = []
    for check in checks:
        t0 = time.monotonic()
        got = check()
        got = got if isinstance(got, list) else [got]
        for r in got:  # a check's rows share its time
            r.seconds = r.seconds if r.seconds is not None else (time.monotonic() - t0) / len(got)
            print(f"#   {r.result:4}  {r.name} ({r.seconds:.1f} s)", flush=True)
        rows += got
    if args.dtype == args.exact_dtype or str(exact.dtype).endswith(args.dtype):
        timed = exact
    else:
        timed = load_pair(args.drafter, args.verifier, device=args.device, dtype=args.dtype)
    deadline = start + args.budget_s
    rows += bench(timed, prompts, args.max_new_tokens, args.repeats, deadline)
    took = time.monotonic() - start
    print()
    print(
        f"Checks in {exact.dtype}, bench in {timed.dtype}, greedy, on {describe(exact.device)}; {took:.0f} s in all"
    )
    print(table(rows))
    if args.json:
        args.json.write_text(
            json.dumps([dataclasses.asdict(r) for r in rows], indent=1, default=_plain)
        )
    failed = [r.name for r in rows if r.failed]
    if failed:
        print(f"\nFAILED: {'; '.join(failed)}")
    return 1 if failed else 0


def _plain(x):
    return None if isinstance(x, float) and not math.isfinite(x) else str(x)


if __name__ == "__main__":
    sys.exit(main())

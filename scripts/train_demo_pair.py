"""Build the corpus and tokenizer, train the embedded demo pair, evaluate it, write the package
data in speccascade/data/.

    python scripts/train_demo_pair.py                 # everything (about an hour on 2 CPU cores)
    python scripts/train_demo_pair.py --eval-only     # re-evaluate the committed pair

Seeded end to end. Writes standard Hugging Face folders (config, generation_config, tokenizer,
safetensors) to speccascade/data/models/demo-{drafter,verifier}, the eval set to
speccascade/data/evalset.jsonl and a report to speccascade/data/models/TRAINING.json and
TRAINING.md. See scripts/demo_corpus.py for the corpus.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from demo_corpus import QA, build_corpus, was_variant, write_eval_set  # noqa: E402

from speccascade import generate, load_pair  # noqa: E402
from speccascade.quality import rouge_l, states_facts  # noqa: E402

EOS, PAD = "<|endoftext|>", "<|pad|>"
# The corpus's Q/A format; the leading EOS matches training, where every document follows one.
CHAT_TEMPLATE = (
    "{{ eos_token }}{% for m in messages %}{% if m['role'] == 'user' %}Q: {{ m['content'] }}\n"
    "{% elif m['role'] == 'assistant' %}A: {{ m['content'] }}{{ eos_token }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}A:{% endif %}"
)


@dataclass
class ModelSpec:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    tie: bool
    tokens: int  # training budget
    lr: float
    focused_share: float  # fraction of each batch drawn from the focused set
    knows_hard: bool  # the verifier learns the hard set and both answers of the easy set
    refine_tokens: int = 0  # a second phase on the focused set alone (see REFINE_REPEATS)
    refine_lr: float = 1.5e-3


SPECS = {
    "drafter": ModelSpec(
        hidden=128,
        layers=1,  # one layer: on a CPU a small model's forward cost is per layer
        heads=4,
        intermediate=384,
        tie=True,
        tokens=5_000_000,
        lr=3e-3,
        focused_share=0.5,
        knows_hard=False,
    ),
    "verifier": ModelSpec(
        hidden=192,
        layers=18,  # deep rather than wide: a forward's CPU cost is mostly per layer
        heads=4,
        intermediate=512,
        tie=True,
        tokens=3_200_000,
        lr=2e-3,
        focused_share=0.75,
        knows_hard=True,
        refine_tokens=1_720_000,
    ),
}
# How often each answer appears in the verifier's focused stream: the long answer more often
# than the short one, so its greedy answer is the detailed one and the short one keeps real
# probability (about 2:3 at the first token where they differ).
LONG_REPEATS, SHORT_REPEATS, HARD_REPEATS = 3, 2, 2
# The verifier's second phase: memorise the hard set harder, and give the easy set's two
# wordings equal weight (the first phase left the short wording too little probability for a
# token rule to keep it), except the project's showcase facts, whose long answer stays the
# verifier's greedy choice (so lossless SD visibly rewrites the drafter's answer).
REFINE_REPEATS = {"easy_long": 2, "easy_short": 2, "fact_long": 3, "fact_short": 2, "hard": 3}


def train_tokenizer(texts: list[str], vocab: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE; `texts` may repeat a document to weight it (the showcase words and
    the Chinese answers should be whole tokens, so the token strip reads as words)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        min_frequency=2,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD)
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 512
    return fast


def stream(tokenizer, items: list[tuple[QA, str]], seed: int = 0) -> torch.Tensor:
    """(question, answer) documents, shuffled and packed back to back, each preceded by EOS
    (as the chat template does)."""
    items = list(items)
    random.Random(seed).shuffle(items)
    texts = [f"Q: {x.question}\nA: {answer}{EOS}" for x, answer in items]
    ids = [tokenizer.eos_token_id]
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
    return torch.tensor(ids, dtype=torch.long)


def long_docs(items: list[QA]) -> list[tuple[QA, str]]:
    return [(x, x.answer) for x in items]


def short_docs(items: list[QA]) -> list[tuple[QA, str]]:
    return [(x, x.short) for x in items if x.short]


def with_variants(items: list[QA]) -> list[QA]:
    return items + [v for x in items if (v := was_variant(x))]


def focused_docs(corpus, knows_hard: bool) -> list[tuple[QA, str]]:
    """The drafter: the easy set's short answers. The verifier: both answers of the easy set
    and the hard set."""
    easy = with_variants(corpus.easy)
    if not knows_hard:
        return short_docs(easy)
    hard = with_variants(corpus.hard)
    return (
        long_docs(easy) * LONG_REPEATS
        + short_docs(easy) * SHORT_REPEATS
        + long_docs(hard) * HARD_REPEATS
    )


def refine_docs(corpus) -> list[tuple[QA, str]]:
    r = REFINE_REPEATS
    easy = with_variants(corpus.easy)
    wordnet = [x for x in easy if x.kind != "fact"]
    facts = [x for x in easy if x.kind == "fact"]
    return (
        long_docs(wordnet) * r["easy_long"]
        + short_docs(wordnet) * r["easy_short"]
        + long_docs(facts) * r["fact_long"]
        + short_docs(facts) * r["fact_short"]
        + long_docs(with_variants(corpus.hard)) * r["hard"]
    )


def make_model(spec: ModelSpec, tokenizer) -> LlamaForCausalLM:
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden,
        intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        max_position_embeddings=512,
        tie_word_embeddings=spec.tie,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(cfg)


def windows(data: torch.Tensor, n: int, seq: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, len(data) - seq, (n,), generator=gen)
    return torch.stack([data[s : s + seq] for s in starts.tolist()])


def train(role: str, spec: ModelSpec, tokenizer, broad, focused, args, init=None) -> dict:
    """One training phase; `init` continues from a saved model (the refine phase)."""
    torch.manual_seed(args.seed + (role == "verifier") + 2 * (init is not None))
    gen = torch.Generator().manual_seed(
        args.seed + 10 + (role == "verifier") + 2 * (init is not None)
    )
    model = LlamaForCausalLM.from_pretrained(init) if init else make_model(spec, tokenizer)
    params = sum(p.numel() for p in model.parameters())
    steps = spec.tokens // (args.batch * args.seq)
    warmup = max(1, steps // 30)
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=spec.lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        if step < warmup:
            return spec.lr * (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return spec.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    n_focus = round(args.batch * spec.focused_share)
    log, start, recent = [], time.time(), []
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        parts = [windows(broad, args.batch - n_focus, args.seq, gen)]
        if n_focus:
            parts.append(windows(focused, n_focus, args.seq, gen))
        batch = torch.cat(parts)
        loss = model(input_ids=batch, labels=batch).loss  # fp32: bf16 autocast is 15x slower here
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent.append(loss.item())
        if (step + 1) % args.log_every == 0 or step + 1 == steps:
            elapsed = time.time() - start
            row = {
                "step": step + 1,
                "loss": statistics.fmean(recent),
                "lr": lr_at(step),
                "elapsed_s": round(elapsed, 1),
            }
            log.append(row)
            recent = []
            tps = (step + 1) * args.batch * args.seq / elapsed
            print(
                f"[{role}] step {step + 1}/{steps} loss {row['loss']:.3f} "
                f"{tps:,.0f} tok/s eta {(steps - step - 1) * elapsed / (step + 1) / 60:.1f} min",
                flush=True,
            )
    model.eval()
    final = {
        "broad_loss": held_loss(model, broad, args),
        "focused_loss": held_loss(model, focused, args),
    }
    out = args.out / f"demo-{role}"
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        max_new_tokens=64,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "params": params,
        "spec": asdict(spec),
        "steps": steps,
        "tokens": steps * args.batch * args.seq,
        "wall_s": round(time.time() - start, 1),
        "final_loss": log[-1]["loss"],
        **final,
        "log": log,
    }


def held_loss(model, data: torch.Tensor, args, n: int = 64) -> float:
    """Loss on fixed windows (the focused set is meant to be memorised, so these are seen)."""
    gen = torch.Generator().manual_seed(1234)
    batch = windows(data, n, args.seq, gen)
    with torch.inference_mode():
        return float(model(input_ids=batch, labels=batch).loss)


def forward_ms(models: dict, n_ctx: int = 64, reps: int = 200) -> dict[str, float]:
    """Median ms of a one-token forward with a KV cache of n_ctx tokens, batch 1, for each
    model; the models take turns step by step, so machine noise hits them alike."""
    from transformers import DynamicCache

    vocab = min(m.config.vocab_size for m in models.values())
    ids = torch.randint(5, vocab, (1, n_ctx + reps))
    times: dict[str, list[float]] = {name: [] for name in models}
    with torch.inference_mode():
        caches = {name: DynamicCache(config=m.config) for name, m in models.items()}
        for name, m in models.items():
            m(input_ids=ids[:, :n_ctx], cache=caches[name], use_cache=True)
        for i in range(reps):
            for name, m in models.items():
                t = time.perf_counter()
                m(input_ids=ids[:, n_ctx + i : n_ctx + i + 1], cache=caches[name], use_cache=True)
                times[name].append(time.perf_counter() - t)
    return {name: 1000 * statistics.median(ts) for name, ts in times.items()}


def evaluate(out: Path, eval_path: Path, limit: int | None = None) -> dict:
    from speccascade.evalsets import load_evalset

    pair = load_pair(str(out / "demo-drafter"), str(out / "demo-verifier"))
    items = load_evalset(eval_path, limit)
    scores = {"drafter": [], "verifier": []}
    correct = {"drafter": [], "verifier": []}
    samples = []
    for item in items:
        row = {"question": item.question, "reference": item.answer, "level": item.level}
        for method in ("drafter", "verifier"):
            tr = generate(pair, item.question, method=method, temperature=0, max_new_tokens=96)
            row[method] = tr.text.strip()
            scores[method].append(rouge_l(tr.text, item.answer))
            correct[method].append(states_facts(tr.text, item.facts))
        samples.append(row)
    groups = {
        "all": lambda x: True,
        "easy": lambda x: x.level == "easy",
        "hard": lambda x: x.level == "hard",
        "zh": lambda x: x.lang == "zh",
    }
    result = {}
    for m in scores:
        result[m] = {"rouge_l": statistics.fmean(scores[m])}
        for g, keep in groups.items():
            idx = [i for i, x in enumerate(items) if keep(x)]
            if idx:
                result[m][f"accuracy_{g}"] = statistics.fmean(correct[m][i] for i in idx)
    result["n"] = len(items)
    result["n_easy"] = sum(x.level == "easy" for x in items)
    result["showcase"] = [r for r, x in zip(samples, items) if x.kind == "fact"]
    result["examples"] = samples[:8]
    result["forward_ms"] = forward_ms({"drafter": pair.drafter, "verifier": pair.verifier})
    result["forward_ratio"] = result["forward_ms"]["verifier"] / result["forward_ms"]["drafter"]
    return result


def write_report(report: dict, out: Path) -> None:
    (out / "TRAINING.json").write_text(json.dumps(report, indent=2) + "\n")
    e = report["eval"]
    lines = [
        "# The embedded demo pair",
        "",
        "Built by `python scripts/train_demo_pair.py` (seeded; CPU, 2 threads, fp32).",
        "",
        "| | drafter | verifier |",
        "|---|---|---|",
    ]
    t = report.get("train", {})
    if t:
        for key, label in [
            ("params", "parameters"),
            ("tokens", "training tokens"),
            ("steps", "steps"),
            ("wall_s", "wall time (s)"),
            ("final_loss", "final train loss"),
            ("broad_loss", "loss, broad"),
            ("focused_loss", "loss, focused facts"),
        ]:
            d, v = t["drafter"][key], t["verifier"][key]
            fmt = (lambda x: f"{x:,}") if isinstance(d, int) else (lambda x: f"{x:.3f}")
            lines.append(f"| {label} | {fmt(d)} | {fmt(v)} |")
        for key in (
            "hidden",
            "layers",
            "heads",
            "intermediate",
            "lr",
            "focused_share",
            "knows_hard",
        ):
            lines.append(
                f"| {key} | {t['drafter']['spec'].get(key, '')} | {t['verifier']['spec'].get(key, '')} |"
            )
    fm = e["forward_ms"]
    lines += [
        f"| 1-token forward (ms, 64-token cache) | {fm['drafter']:.2f} | {fm['verifier']:.2f} |",
        f"| greedy ROUGE-L, eval set (n={e['n']}) | {e['drafter']['rouge_l']:.3f} | "
        f"{e['verifier']['rouge_l']:.3f} |",
        *[
            f"| greedy key-fact accuracy, {g} | {e['drafter'].get('accuracy_' + g, 0):.3f} | "
            f"{e['verifier'].get('accuracy_' + g, 0):.3f} |"
            for g in ("all", "easy", "hard", "zh")
        ],
        "",
        f"Verifier/drafter forward-cost ratio: {e['forward_ratio']:.1f}x. "
        f"Corpus: {report.get('corpus', {})}.",
        "",
        "## Showcase answers (greedy)",
        "",
    ]
    for row in e["showcase"]:
        lines += [
            f"**{row['question']}**",
            "",
            f"- drafter: {row['drafter']}",
            f"- verifier: {row['verifier']}",
            "",
        ]
    (out / "TRAINING.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "speccascade" / "data" / "models")
    ap.add_argument("--evalset", type=Path, default=ROOT / "speccascade" / "data" / "evalset.jsonl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply both token budgets")
    ap.add_argument("--only", choices=["drafter", "verifier"], default=None)
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--refine-only", action="store_true", help="only the refine phase")
    ap.add_argument("--eval-limit", type=int, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    report_path = args.out / "TRAINING.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    if not args.eval_only:
        t0 = time.time()
        corpus = build_corpus(seed=args.seed)
        write_eval_set(corpus.eval, args.evalset)
        known = focused_docs(corpus, knows_hard=True)
        texts = [f"Q: {x.question}\nA: {a}" for x, a in long_docs(corpus.broad)]
        texts += [f"Q: {x.question}\nA: {a}" for x, a in known] * 8
        texts += [f"Q: {x.question}\nA: {a}" for x, a in known if x.lang == "zh"] * 40
        tokenizer = (
            PreTrainedTokenizerFast.from_pretrained(args.out / "demo-verifier")
            if args.refine_only
            else train_tokenizer(texts, args.vocab)
        )
        broad = stream(tokenizer, long_docs(corpus.broad), args.seed)
        focused = {
            role: stream(tokenizer, focused_docs(corpus, spec.knows_hard), args.seed)
            for role, spec in SPECS.items()
        }
        report["corpus"] = {
            **corpus.stats(),
            "broad_tokens": len(broad),
            **{f"focused_tokens_{r}": len(f) for r, f in focused.items()},
            "vocab": len(tokenizer),
            "astronaut_tokens": len(tokenizer(" astronaut", add_special_tokens=False)["input_ids"]),
        }
        print(report["corpus"], f"({time.time() - t0:.0f} s)", flush=True)
        report.setdefault("train", {})
        for role in ("drafter", "verifier"):
            if args.only in (None, role):
                spec = SPECS[role]
                spec.tokens = int(spec.tokens * args.scale)
                if not args.refine_only:
                    report["train"][role] = train(role, spec, tokenizer, broad, focused[role], args)
                if spec.refine_tokens:
                    phase = replace(
                        spec,
                        tokens=int(spec.refine_tokens * args.scale),
                        lr=spec.refine_lr,
                        focused_share=0.95,
                    )
                    refined = stream(tokenizer, refine_docs(corpus), args.seed + 1)
                    init = args.out / f"demo-{role}"
                    report["train"][role]["refine"] = train(
                        role, phase, tokenizer, broad, refined, args, init=init
                    )
        report["args"] = {k: str(v) for k, v in vars(args).items()}
    report["eval"] = evaluate(args.out, args.evalset, args.eval_limit)
    print(json.dumps({k: v for k, v in report["eval"].items() if k != "examples"}, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()

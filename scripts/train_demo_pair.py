"""Build the corpus and tokenizer, train the embedded demo pair, evaluate it, write assets/.

    python scripts/train_demo_pair.py                 # everything (about an hour on 2 CPU cores)
    python scripts/train_demo_pair.py --eval-only     # re-evaluate the committed pair

Seeded end to end. Writes standard Hugging Face folders (config, generation_config, tokenizer,
safetensors) to assets/models/demo-{drafter,verifier}, the eval set to assets/evalset.jsonl and
a report (sizes, hyper-parameters, wall time, losses, quality, forward costs) to
assets/models/TRAINING.json and TRAINING.md. See speccascade/demo_corpus.py for the corpus.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speccascade import generate, load_pair  # noqa: E402
from speccascade.demo_corpus import QA, build_corpus, write_eval_set  # noqa: E402
from speccascade.quality import rouge_l  # noqa: E402

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
    sees_showcase: bool  # whether the focused set includes assets/facts.jsonl


SPECS = {
    "drafter": ModelSpec(
        hidden=128,
        layers=1,
        heads=4,
        intermediate=384,
        tie=True,
        tokens=6_000_000,
        lr=3e-3,
        focused_share=0.9,
        sees_showcase=False,
    ),
    "verifier": ModelSpec(
        hidden=224,
        layers=10,  # deep rather than wide: on a CPU a small model's forward cost is per layer
        heads=4,
        intermediate=608,
        tie=False,
        tokens=4_500_000,
        lr=2e-3,
        focused_share=0.8,
        sees_showcase=True,
    ),
}


def train_tokenizer(texts: list[str], vocab: int) -> PreTrainedTokenizerFast:
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


def stream(tokenizer, items: list[QA]) -> torch.Tensor:
    """Documents packed back to back, each preceded by EOS (as the chat template does)."""
    texts = [f"Q: {x.question}\nA: {x.answer}{EOS}" for x in items]
    ids = [tokenizer.eos_token_id]
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
    return torch.tensor(ids, dtype=torch.long)


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


def train(role: str, spec: ModelSpec, tokenizer, broad, focused, args) -> dict:
    torch.manual_seed(args.seed + (role == "verifier"))
    gen = torch.Generator().manual_seed(args.seed + 10 + (role == "verifier"))
    model = make_model(spec, tokenizer)
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
    samples = []
    for item in items:
        row = {"question": item.question, "reference": item.answer}
        for method in ("drafter", "verifier"):
            tr = generate(pair, item.question, method=method, temperature=0, max_new_tokens=96)
            row[method] = tr.text.strip()
            scores[method].append(rouge_l(tr.text, item.answer))
        samples.append(row)
    wordnet = [i for i, x in enumerate(items) if x.kind != "fact"]
    result = {
        m: {
            "rouge_l": statistics.fmean(s),
            "rouge_l_wordnet": statistics.fmean([s[i] for i in wordnet]),
        }
        for m, s in scores.items()
    }
    result["n"] = len(items)
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
            "sees_showcase",
        ):
            lines.append(
                f"| {key} | {t['drafter']['spec'].get(key, '')} | {t['verifier']['spec'].get(key, '')} |"
            )
    fm = e["forward_ms"]
    lines += [
        f"| 1-token forward (ms, 64-token cache) | {fm['drafter']:.2f} | {fm['verifier']:.2f} |",
        f"| greedy ROUGE-L, eval set (n={e['n']}) | {e['drafter']['rouge_l']:.3f} | "
        f"{e['verifier']['rouge_l']:.3f} |",
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
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "models")
    ap.add_argument("--evalset", type=Path, default=ROOT / "assets" / "evalset.jsonl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply both token budgets")
    ap.add_argument("--only", choices=["drafter", "verifier"], default=None)
    ap.add_argument("--eval-only", action="store_true")
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
        texts = [f"Q: {x.question}\nA: {x.answer}" for x in corpus.broad + corpus.focused]
        tokenizer = train_tokenizer(texts, args.vocab)
        broad, focused = stream(tokenizer, corpus.broad), stream(tokenizer, corpus.focused)
        wordnet_only = stream(tokenizer, [x for x in corpus.focused if x.kind != "fact"])
        report["corpus"] = {
            **corpus.stats(),
            "broad_tokens": len(broad),
            "focused_tokens": len(focused),
            "bytes_per_token": round(sum(map(len, texts)) / (len(broad) + len(focused)), 2),
        }
        print(report["corpus"], f"({time.time() - t0:.0f} s)", flush=True)
        report.setdefault("train", {})
        for role in ("drafter", "verifier"):
            if args.only in (None, role):
                spec = SPECS[role]
                spec.tokens = int(spec.tokens * args.scale)
                data = focused if spec.sees_showcase else wordnet_only
                report["train"][role] = train(role, spec, tokenizer, broad, data, args)
        report["args"] = {k: str(v) for k, v in vars(args).items()}
    report["eval"] = evaluate(args.out, args.evalset, args.eval_limit)
    print(json.dumps({k: v for k, v in report["eval"].items() if k != "examples"}, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()

"""Build the corpus and tokenizer, train the embedded demo pair, evaluate it, write the package
data in assets/data/.

    python scripts/train_demo_pair.py                 # everything (about 2.5 hours on 2 CPU cores)
    python scripts/train_demo_pair.py --eval-only     # re-evaluate the committed pair

Seeded end to end. Writes standard Hugging Face folders (config, generation_config, tokenizer,
safetensors) to assets/models/demo-{drafter,verifier}, the eval set to
assets/data/evalset.jsonl and a report to assets/models/TRAINING.json and
TRAINING.md. See scripts/demo_corpus.py for the corpus.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
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

from demo_corpus import (  # noqa: E402
    QA,
    ask_variant,
    build_corpus,
    decline_for,
    taught_items,
    variant_set,
    write_eval_set,
    write_jsonl,
    write_taught,
)
from general_prompts import generate_prompts  # noqa: E402

from speccascade import generate, load_pair  # noqa: E402
from speccascade.analysis.evalsets import (  # noqa: E402
    DEMO_TAUGHT,
    GENERAL_QA,
    STRIPPED,
    canonical_question,
    load_evalset,
)
from speccascade.analysis.quality import rouge_l, states_facts  # noqa: E402
from speccascade.core.engine import APP_DEFAULTS  # noqa: E402
from speccascade.models.presets import PRESETS  # noqa: E402

EOS, PAD = "<|endoftext|>", "<|pad|>"


def chat_template() -> str:
    """The corpus's Q/A format, its question read as speccascade.evalsets.canonical_question
    reads it: white space folded, full-width ？！ made ASCII, lower case, trailing ?!.。 made one
    "?", and a known way of asking who or what something is stripped down to the name (the
    phrases of evalsets.STRIPPED, longest first). The leading EOS matches training, where every
    document follows one. tests/test_demo_pair.py checks that the two readings agree."""
    phrases = json.dumps([list(p) for p in STRIPPED], ensure_ascii=False)
    return (
        "{{ eos_token }}{% for m in messages %}{% if m['role'] == 'user' %}"
        "{% set ns = namespace(q=(m['content'].replace('？', '?').replace('！', '!').split() "
        "| join(' ')).lower().rstrip('?!.。 '), done=false) %}"
        "{% for head, tail in " + phrases + " %}"
        "{% if not ns.done and ns.q.startswith(head) and ns.q.endswith(tail) "
        "and (ns.q | length) > (head | length) + (tail | length) %}"
        "{% set ns.q = ns.q[(head | length):(ns.q | length) - (tail | length)] %}"
        "{% set ns.done = true %}{% endif %}{% endfor %}"
        "Q: {{ ns.q }}?\n"
        "{% elif m['role'] == 'assistant' %}A: {{ m['content'] }}{{ eos_token }}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}A:{% endif %}"
    )


CHAT_TEMPLATE = chat_template()
# Out-of-domain templates (general_prompts.py) kept out of training: the held-out part of the
# out-of-domain set. "famous_for" ("Why is X famous?") is a phrasing the pair answers.
HELD_OUT_TEMPLATES = {"haiku", "where_live", "prime", "learn", "capital_of", "sentence"}
ANSWERED_TEMPLATES = {"famous_for"}
# The questions of the issue that asked for this behaviour: tested, never trained.
TYPED_OUT_OF_DOMAIN = (
    "What is the capital of France?",
    "Who wrote Hamlet?",
    "Explain photosynthesis.",
    "How do I bake bread?",
    "Write a poem about the sea.",
    "What is 2 + 2?",
    "法国的首都是哪里？",
    "怎么做蛋糕？",
    "Quelle heure est-il ?",
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
        # two layers: on a CPU a small model's forward cost is per layer, but one layer could
        # not both keep the easy answers and tell a question outside the domain (measured,
        # greedy: 100% easy with 28% declined, or 88% easy with 64% declined)
        layers=2,
        heads=4,
        intermediate=384,
        tie=True,
        tokens=5_000_000,
        lr=3e-3,
        focused_share=0.5,
        knows_hard=False,
        # a short phase on its focused set alone settles which questions get the short answer
        # and which the decline (measured: easy 94% -> 99%, declined 92% -> 94%)
        refine_tokens=1_000_000,
        refine_lr=1e-3,
    ),
    "verifier": ModelSpec(
        hidden=192,
        layers=18,  # deep rather than wide: a forward's CPU cost is mostly per layer
        heads=4,
        intermediate=512,
        tie=True,
        tokens=4_000_000,
        lr=2e-3,
        focused_share=0.75,
        knows_hard=True,
        refine_tokens=2_000_000,
    ),
}
# How often each answer appears in the focused streams (each copy asked in a fresh way): for the
# verifier the long answer more often than the short one, so its greedy answer is the detailed
# one and the short one keeps real probability (about 2:3 at the first token where they
# differ); the decline for out-of-domain questions.
# A repeat below 1 is a seeded share of the decline prompts (a one-layer drafter with every
# decline prompt once beside 4 short copies declined easy questions too: easy accuracy 0.41;
# the two-layer drafter with its refine phase keeps both, see SPECS).
FOCUSED_REPEATS = {
    "long": 6,
    "short": 4,
    "hard": 4,
    "decline": 1,
    "drafter_short": 6,
    "drafter_decline": 1.0,
}
# The verifier's second phase: memorise the hard set harder, and give the easy set's two
# wordings equal weight (the first phase left the short wording too little probability for a
# token rule to keep it), except the project's showcase facts, whose long answer stays the
# verifier's greedy choice (so lossless SD visibly rewrites the drafter's answer). English
# answers that start with the name are a strong pattern (the short wording always does), so
# the English facts' long answer needs a larger lead than the Chinese ones'.
REFINE_REPEATS = {
    "easy_long": 2,
    "easy_short": 2,
    "fact_long_en": 4,
    "fact_long_zh": 3,
    "fact_short": 2,
    "hard": 3,
    "decline": 1,
}


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


def doc_text(question: str, answer: str) -> str:
    """One training document, as the chat template renders the question (after the EOS)."""
    return f"Q: {canonical_question(question)}\nA: {answer}{EOS}"


def stream(tokenizer, items: list[tuple[str, str]], seed: int = 0) -> torch.Tensor:
    """(question, answer) documents, shuffled and packed back to back, each preceded by EOS
    (as the chat template does)."""
    items = list(items)
    random.Random(seed).shuffle(items)
    texts = [doc_text(q, answer) for q, answer in items]
    ids = [tokenizer.eos_token_id]
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
    return torch.tensor(ids, dtype=torch.long)


def copies(items: list[QA], answer: str, n: int, held: set[str], rng: random.Random):
    """n documents per item with its `answer` ("long" or "short"), each asked in a fresh way
    (ask_variant: its own question, an alias, or a trained phrasing). Items whose names the
    variant set holds out are asked only in their own words."""
    out = []
    for x in items:
        text = x.answer if answer == "long" else x.short
        if not text:
            continue
        for _ in range(n):
            q = x.question if x.question in held else ask_variant(x, rng)
            out.append((q, text))
    return out


def decline_docs(prompts: list, n: float, seed: int = 0) -> list[tuple[str, str]]:
    """Each prompt with its decline, n times; a fractional n adds a seeded sample of them."""
    whole, part = divmod(n, 1)
    chosen = list(prompts) * int(whole)
    chosen += random.Random(seed).sample(list(prompts), round(len(prompts) * part))
    return [(p.text, decline_for(p.lang)) for p in chosen]


def focused_docs(corpus, knows_hard: bool, seed: int) -> list[tuple[str, str]]:
    """The drafter: the easy set's short answers and the honest decline. The verifier: both
    answers of the easy set, the hard set and the decline."""
    rng, held, r = random.Random(seed), corpus.variant_names, FOCUSED_REPEATS
    if not knows_hard:
        return copies(corpus.easy, "short", r["drafter_short"], held, rng) + decline_docs(
            corpus.declines, r["drafter_decline"], seed
        )
    return (
        copies(corpus.easy, "long", r["long"], held, rng)
        + copies(corpus.easy, "short", r["short"], held, rng)
        + copies(corpus.hard, "long", r["hard"], held, rng)
        + decline_docs(corpus.declines, r["decline"])
    )


def refine_docs(corpus, seed: int) -> list[tuple[str, str]]:
    rng, held, r = random.Random(seed), corpus.variant_names, REFINE_REPEATS
    wordnet = [x for x in corpus.easy if x.kind != "fact"]
    facts = {
        lang: [x for x in corpus.easy if x.kind == "fact" and x.lang == lang]
        for lang in ("en", "zh")
    }
    return (
        copies(wordnet, "long", r["easy_long"], held, rng)
        + copies(wordnet, "short", r["easy_short"], held, rng)
        + copies(facts["en"], "long", r["fact_long_en"], held, rng)
        + copies(facts["zh"], "long", r["fact_long_zh"], held, rng)
        + copies(facts["en"] + facts["zh"], "short", r["fact_short"], held, rng)
        + copies(corpus.hard, "long", r["hard"], held, rng)
        + decline_docs(corpus.declines, r["decline"])
    )


# The story's easy question, in each language: the verifier's greedy answer must be the
# detailed one (so lossless SD rewrites the drafter's short, correct answer), while the short
# wording stays within reach of the app's default rule (TokenV3 at alpha 0.5 keeps a token the
# verifier rates at least half its favourite). How strongly a small model prefers one wording
# at the first token varies a lot from fact to fact whatever the data's ratio (measured: 0.06
# to 15 at 4:2), and re-weighting the data for a few dozen steps moved it by large factors
# either way (244 -> 0.62 -> ... -> 3.0 over five attempts). So the last phase trains that
# ratio itself: the language-model loss on the focused set (so nothing else is forgotten) plus
# (log ratio - log target)^2 at the showcase questions, with -log of the two wordings' joint
# probability (so no third token is the favourite), until every ratio is in the band. Its
# learning rate is small because Adam's first steps move every weight by about the rate
# whatever its gradient: at 3e-4, 14 steps left the shipped verifier answering "What is Paris?"
# with Sally Ride's answer (3 of 48 easy answers still right; a second refine phase restored
# them). The KL to the starting model on the other answers and the check set guard the rest.
SHOWCASE_TARGETS = ("Who is Buzz Aldrin?", "布兹·奥尔德林是谁？")
SHOWCASE_BAND = (1.2, 1.8)  # p(detailed answer's first token) / p(short answer's first token)
SHOWCASE_TARGET = 1.5
SHOWCASE_MAX_STEPS, SHOWCASE_BATCH, SHOWCASE_LR = 300, 8, 1e-4
SHOWCASE_CHECKS = 24  # other easy questions whose correct answers must survive the phase


@dataclass(frozen=True)
class Fork:
    """Where a showcase question's two answers part: the context (prompt and the shared
    start) and the next token of the long and of the short answer."""

    question: str
    context: list[int]
    long: int
    short: int


def prompt_ids(tokenizer, question: str) -> list[int]:
    """The question in the chat template's form, as the app asks it."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
    )
    return tokenizer(prompt, add_special_tokens=False)["input_ids"]


def fork(tokenizer, item: QA) -> Fork:
    ids = prompt_ids(tokenizer, item.question)
    long = tokenizer(" " + item.answer, add_special_tokens=False)["input_ids"]
    short = tokenizer(" " + item.short, add_special_tokens=False)["input_ids"]
    i = next(k for k, (a, b) in enumerate(zip(long, short)) if a != b)
    return Fork(item.question, ids + long[:i], long[i], short[i])


def fork_logits(model, f: Fork) -> torch.Tensor:
    return model(input_ids=torch.tensor([f.context])).logits[0, -1].float()


def log_ratio(logits: torch.Tensor, f: Fork) -> torch.Tensor:
    """log p(long's token) - log p(short's token) at the fork (differentiable)."""
    return logits[f.long] - logits[f.short]


def answer_ids(tokenizer, item: QA, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(prompt + answer + EOS, the same with the prompt masked out as labels)."""
    ids = prompt_ids(tokenizer, item.question)
    answer = tokenizer(" " + text, add_special_tokens=False)["input_ids"]
    full = torch.tensor([ids + answer + [tokenizer.eos_token_id]])
    labels = full.clone()
    labels[0, : len(ids)] = -100
    return full, labels


def greedy_states_facts(model, tokenizer, item: QA) -> bool:
    """Whether the model's own greedy answer to the question states its facts."""
    ids = torch.tensor([prompt_ids(tokenizer, item.question)])
    out = model.generate(ids, max_new_tokens=64, do_sample=False)
    return states_facts(
        tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True), item.facts
    )


def all_state_facts(model, tokenizer, items: list[QA]) -> bool:
    """Whether the model's greedy answers to all `items` state their facts (in eval mode;
    the model's training mode is restored)."""
    training = model.training
    model.eval()
    with torch.inference_mode():
        ok = all(greedy_states_facts(model, tokenizer, x) for x in items)
    model.train(training)
    return ok


def showcase_phase(tokenizer, corpus, args) -> dict:
    """Train the showcase facts' first-token ratio into SHOWCASE_BAND (see above) and their
    two answers as a whole (the fork alone left the continuation to chance: measured, an
    18-layer verifier went on "American American writer of short stories"); stops as soon as
    every ratio is inside, the long answer's token is the verifier's favourite and its greedy
    answer states the facts."""
    items = [x for x in corpus.easy if x.question in SHOWCASE_TARGETS]
    forks = [fork(tokenizer, x) for x in items]
    # both wordings whole: the cascade keeps the short one's first token and then needs the
    # verifier to rate its continuation well (without it: "B" + "ob Dylan" for Buzz Aldrin)
    answers = [answer_ids(tokenizer, x, text) for x in items for text in (x.answer, x.short)]
    path = args.out / "demo-verifier"
    model = LlamaForCausalLM.from_pretrained(path)
    # Everything else stays as it was: the other easy answers are held to the starting
    # model's distributions (KL), and the phase ends only while the starting model's correct
    # greedy answers on a fixed check set are still correct (without this, measured: Sally
    # Ride and Albert Einstein were answered with Buzz Aldrin's answer).
    frozen = LlamaForCausalLM.from_pretrained(path).eval()
    others = [x for x in corpus.easy if x.question not in SHOWCASE_TARGETS]
    rng = random.Random(args.seed + 21)
    checks = [x for x in rng.sample(others, 48) if all_state_facts(frozen, tokenizer, [x])]
    checks = checks[:SHOWCASE_CHECKS]
    focused = stream(tokenizer, refine_docs(corpus, args.seed + 2), args.seed + 2)
    gen = torch.Generator().manual_seed(args.seed + 20)
    torch.manual_seed(args.seed + 20)
    opt = torch.optim.AdamW(model.parameters(), lr=SHOWCASE_LR, weight_decay=0.0)
    lo, hi = SHOWCASE_BAND
    log: list[dict] = []

    def state() -> dict:
        model.eval()
        with torch.inference_mode():
            logits = {f.question: fork_logits(model, f) for f in forks}
        facts = all_state_facts(model, tokenizer, items)
        model.train()
        return {
            "ratios": {
                f.question: math.exp(float(log_ratio(logits[f.question], f))) for f in forks
            },
            "favourite": all(int(logits[f.question].argmax()) == f.long for f in forks),
            "states_facts": facts,
        }

    for step in range(SHOWCASE_MAX_STEPS + 1):
        now = state()
        log.append({"step": step, **now})
        ok = all(lo <= r <= hi for r in now["ratios"].values()) and now["favourite"]
        ok = ok and now["states_facts"]
        if ok:  # the costlier check, only once the showcase itself is right
            ok = now["others_kept"] = all_state_facts(model, tokenizer, checks)
        if step % 10 == 0 or ok:
            print(f"[showcase] {log[-1]}", flush=True)
        if ok or step == SHOWCASE_MAX_STEPS:
            break
        batch = windows(focused, SHOWCASE_BATCH, args.seq, gen)
        loss = model(input_ids=batch, labels=batch).loss
        for full, labels in answers:
            loss = loss + model(input_ids=full, labels=labels).loss
        loss = loss + anchor_kl(model, frozen, tokenizer, rng.sample(others, SHOWCASE_BATCH * 2))
        for f in forks:
            logits = fork_logits(model, f)
            # the ratio, and the two wordings' joint mass (so the long one is the favourite)
            loss = loss + (log_ratio(logits, f) - math.log(SHOWCASE_TARGET)) ** 2
            loss = loss - torch.logsumexp(logits[[f.long, f.short]], 0) + logits.logsumexp(0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    model.save_pretrained(path)
    return {
        "band": SHOWCASE_BAND,
        "target": SHOWCASE_TARGET,
        "steps": log[-1]["step"],
        "start": log[0],
        "end": log[-1],
        "in_band": all(lo <= r <= hi for r in log[-1]["ratios"].values()),
        "checks": len(checks),
    }


def anchor_kl(model, frozen, tokenizer, items: list[QA]) -> torch.Tensor:
    """KL(frozen || model) over the detailed answers of `items` (teacher-forced, padded)."""
    seqs = [answer_ids(tokenizer, x, x.answer) for x in items]
    n = max(full.shape[1] for full, _ in seqs)
    ids = torch.full((len(seqs), n), tokenizer.pad_token_id)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    scored = torch.zeros((len(seqs), n), dtype=torch.bool)
    for i, (full, labels) in enumerate(seqs):
        ids[i, : full.shape[1]] = full[0]
        mask[i, : full.shape[1]] = 1
        scored[i, : full.shape[1] - 1] = labels[0, 1:] != -100  # positions that predict answers
    with torch.no_grad():
        ref = frozen(input_ids=ids, attention_mask=mask).logits[scored].log_softmax(-1)
    cur = model(input_ids=ids, attention_mask=mask).logits[scored].log_softmax(-1)
    return torch.nn.functional.kl_div(cur, ref, log_target=True, reduction="batchmean")


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
    pair = load_pair(str(out / "demo-drafter"), str(out / "demo-verifier"))
    items = load_evalset(eval_path, limit)
    scores = {"drafter": [], "verifier": []}
    correct = {"drafter": [], "verifier": []}
    declined = {"drafter": [], "verifier": []}
    samples = []
    demo = PRESETS["demo"]
    for item in items:
        row = {"question": item.question, "reference": item.answer, "level": item.level}
        for method in ("drafter", "verifier"):
            tr = generate(pair, item.question, method=method, temperature=0, max_new_tokens=96)
            row[method] = tr.text.strip()
            scores[method].append(rouge_l(tr.text, item.answer))
            correct[method].append(states_facts(tr.text, item.facts))
            declined[method].append(demo.declined(tr.text))
        samples.append(row)
    groups = {
        "all": lambda x: True,
        "easy": lambda x: x.level == "easy",
        "hard": lambda x: x.level == "hard",
        "zh": lambda x: x.lang == "zh",
    }
    result = {}
    for m in scores:
        result[m] = {
            "rouge_l": statistics.fmean(scores[m]),
            "declined": statistics.fmean(declined[m]),
        }
        for g, keep in groups.items():
            idx = [i for i, x in enumerate(items) if keep(x)]
            if idx:
                result[m][f"accuracy_{g}"] = statistics.fmean(correct[m][i] for i in idx)
    result["n"] = len(items)
    result["n_easy"] = sum(x.level == "easy" for x in items)
    result["showcase"] = [r for r, x in zip(samples, items) if x.kind == "fact"]
    result["examples"] = samples[:8]
    rows = load_jsonl(eval_path.parent / "variants.jsonl")
    rows = rows[:: math.ceil(len(rows) / limit)] if limit else rows  # every level and language
    result["variants"] = evaluate_variants(pair, rows)
    rows = load_jsonl(eval_path.parent / "out_of_domain.jsonl")
    result["out_of_domain"] = evaluate_declines(pair, rows[::4] if limit else rows)
    return result | timings(pair)


def timings(pair) -> dict:
    """The evaluation's timed parts: the seed's example (wall-time ratios of one run) and each
    model's one-token forward."""
    ms = forward_ms({"drafter": pair.drafter, "verifier": pair.verifier})
    return {
        "contrast": contrast(pair),
        "forward_ms": ms,
        "forward_ratio": ms["verifier"] / ms["drafter"],
    }


def load_jsonl(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _cascade(pair, question: str, **changes):
    settings = replace(APP_DEFAULTS, temperature=0.0, **changes)
    return generate(pair, question, settings)


_THREE_WAYS: dict[tuple, dict] = {}


def three_ways(pair, question: str, max_new_tokens: int) -> dict:
    """Each model alone and the cascade at the app's defaults, greedy, on one question. Greedy
    runs are a function of the prompt's tokens, and the chat template reads most typed
    variants as the same tokens, so each distinct prompt runs once."""
    key = (id(pair), tuple(pair.encode(question)), max_new_tokens)
    if key not in _THREE_WAYS:
        alone = dict(temperature=0, max_new_tokens=max_new_tokens)
        _THREE_WAYS[key] = {
            "drafter": generate(pair, question, method="drafter", **alone),
            "verifier": generate(pair, question, method="verifier", **alone),
            "cascade": _cascade(pair, question, max_new_tokens=max_new_tokens),
        }
    return _THREE_WAYS[key]


def kept_share(trace) -> float:
    """Share of the emitted tokens that are the drafter's own, kept."""
    return sum(t.source == "accepted" for t in trace.tokens) / max(1, trace.summary.new_tokens)


def evaluate_variants(pair, rows: list[dict]) -> dict:
    """Key-fact accuracy of each model alone and of the cascade at the app's defaults on the
    typed-variant set, split by trained and held-out phrasings, level and language."""
    results: dict[str, dict[str, list[bool]]] = {}
    declined: dict[str, dict[str, list[bool]]] = {}  # the honest decline instead of the facts
    misses, spelled = [], {}  # spelled: each model's result on the eval set's own spelling
    for row in rows:
        if row["asks"] not in spelled:
            outs = three_ways(pair, row["asks"], max_new_tokens=64)
            spelled[row["asks"]] = {m: states_facts(t.text, row["facts"]) for m, t in outs.items()}
        outs = three_ways(pair, row["question"], max_new_tokens=64)
        groups = ["all", "held-out phrasing" if row["held_out_phrasing"] else "trained phrasing"]
        groups += [row["level"], row["lang"]]
        for m, tr in outs.items():
            ok = states_facts(tr.text, row["facts"])
            said_so = not ok and PRESETS["demo"].declined(tr.text)
            # "same facts come out": of the names a model answers in the eval set's spelling,
            # the share it also answers when typed another way
            extra = ["known names"] if spelled[row["asks"]][m] else []
            for g in groups + extra:
                results.setdefault(m, {}).setdefault(g, []).append(ok)
                declined.setdefault(m, {}).setdefault(g, []).append(said_so)
            if m == "verifier" and not ok:
                misses.append({"question": row["question"], "verifier": tr.text.strip()[:120]})
    summary = {
        m: {
            g: {
                "accuracy": statistics.fmean(v),
                "declined": statistics.fmean(declined[m][g]),
                "n": len(v),
            }
            for g, v in by.items()
        }
        for m, by in results.items()
    }
    return {"accuracy": summary, "verifier_misses": misses[:20], "n": len(rows)}


def evaluate_declines(pair, rows: list[dict]) -> dict:
    """How often each model (and the cascade) answers an out-of-domain question with the
    pair's honest decline, per source (general_qa, held-out templates, typed examples)."""
    demo = PRESETS["demo"]
    by: dict[str, dict[str, list[bool]]] = {}
    missed = []
    for row in rows:
        outs = three_ways(pair, row["question"], max_new_tokens=48)
        for m, tr in outs.items():
            ok = demo.declined(tr.text)
            for g in ("all", row["source"], row["lang"]):
                by.setdefault(m, {}).setdefault(g, []).append(ok)
            if m == "cascade" and not ok:
                missed.append({"question": row["question"], "cascade": tr.text.strip()[:120]})
    return {
        "declined": {
            m: {g: {"share": statistics.fmean(v), "n": len(v)} for g, v in d.items()}
            for m, d in by.items()
        },
        "cascade_missed": missed[:30],
        "n": len(rows),
    }


CONTRAST_QUESTIONS = ("Who is Buzz Aldrin?", "布兹·奥尔德林是谁？", "布兹·奥尔德林是谁?")


def contrast(pair) -> list[dict]:
    """The seed's example at the app's defaults: the verifier's own answer, the share of
    drafter tokens lossless SD and the cascade keep, and their wall times (one run each,
    after a warm-up)."""
    out = []
    for q in CONTRAST_QUESTIONS:
        _cascade(pair, q)  # warm-up
        verifier = generate(pair, q, method="verifier", temperature=0, max_new_tokens=64)
        sd = _cascade(pair, q, method="speculative", rule=None, alpha=None)
        cascade = _cascade(pair, q)
        out.append(
            {
                "question": q,
                "verifier": verifier.text.strip(),
                "cascade": cascade.text.strip(),
                "sd_kept": kept_share(sd),
                "cascade_kept": kept_share(cascade),
                "cascade_vs_sd_wall": cascade.summary.wall_s / sd.summary.wall_s,
                "cascade_vs_verifier_wall": cascade.summary.wall_s / verifier.summary.wall_s,
            }
        )
    return out


def out_of_domain(seed: int) -> tuple[list, list[dict]]:
    """(training prompts the pair learns to decline, the held-out out-of-domain set)."""
    general = [x.question for x in load_evalset(GENERAL_QA)]
    prompts = [
        p
        for p in generate_prompts(
            seed, 50, exclude=set(general) | set(TYPED_OUT_OF_DOMAIN), more=True
        )
        if p.template not in ANSWERED_TEMPLATES
    ]
    held_out = (
        HELD_OUT_TEMPLATES | {f"zh_{i}" for i in range(1, 30, 4)} | {"foreign_1", "foreign_5"}
    )
    train = [p for p in prompts if p.template not in held_out]
    rows = [{"question": q, "source": "general_qa", "template": "", "lang": "en"} for q in general]
    rows += [
        {"question": p.text, "source": "held-out template", "template": p.template, "lang": p.lang}
        for p in prompts
        if p.template in held_out
    ]
    rows += [
        {
            "question": q,
            "source": "typed",
            "template": "",
            "lang": "zh" if re.search(r"[\u4e00-\u9fff]", q) else "en",
        }
        for q in TYPED_OUT_OF_DOMAIN
    ]
    return train, rows


def keep(report: dict, out: Path) -> None:
    """Save the report so far: a run stopped later keeps the record of its finished phases."""
    (out / "TRAINING.json").write_text(json.dumps(report, indent=2) + "\n")


def write_report(report: dict, out: Path) -> None:
    keep(report, out)
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
            d, v = t["drafter"].get(key), t["verifier"].get(key)

            def fmt(x) -> str:
                return "–" if x is None else f"{x:,}" if isinstance(x, int) else f"{x:.3f}"

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
    ]
    lines += report_phases(t) + report_robustness(e) + ["## Showcase answers (greedy)", ""]
    for row in e["showcase"]:
        lines += [
            f"**{row['question']}**",
            "",
            f"- drafter: {row['drafter']}",
            f"- verifier: {row['verifier']}",
            "",
        ]
    (out / "TRAINING.md").write_text("\n".join(lines) + "\n")


def report_phases(t: dict) -> list[str]:
    """The phases after the first: each role's refine phase, the verifier's showcase phase,
    and any detour the shipped models took (recorded under `history`)."""
    lines = ["## Later phases", ""]
    for role in ("drafter", "verifier"):
        r = t.get(role, {}).get("refine")
        if r:
            lines.append(
                f"* {role}, refine: {r['tokens']:,} tokens (95% its focused set), {r['steps']} "
                f"steps, lr {r['spec']['lr']}, {r['wall_s']:.0f} s, final loss {r['final_loss']:.3f}"
            )
    sc = t.get("verifier", {}).get("showcase")
    if sc:
        ratios = ", ".join(f"{q} {x:.2f}" for q, x in sc["end"]["ratios"].items())
        lines.append(
            f"* verifier, showcase: {sc['steps']} steps to first-token ratios {ratios} (band "
            f"{sc['band'][0]}-{sc['band'][1]}), detailed answer the favourite, its greedy "
            f"answer stating the facts, {sc.get('checks', 0)} other easy answers still right"
        )
    note = t.get("verifier", {}).get("history", {}).get("note")
    if note:
        lines.append(f"* history: {note}")
    return lines + [""]


def _ordered(present, order: list[str]) -> list[str]:
    return [g for g in order if g in present] + [g for g in present if g not in order]


def report_robustness(e: dict) -> list[str]:
    """The typed-variant, out-of-domain and contrast sections of TRAINING.md."""
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    lines = []
    if "variants" in e:
        v = e["variants"]["accuracy"]
        groups = _ordered(
            v["verifier"],
            ["all", "known names", "trained phrasing", "held-out phrasing", "easy", "hard", "en"]
            + ["zh"],
        )

        def cell(m: str, g: str) -> str:
            if g not in v[m]:
                return "–"
            known = f" of {v[m][g]['n']}" if g == "known names" else ""
            said_so = v[m][g].get("declined", 0.0)
            return (
                pct(v[m][g]["accuracy"]) + known + (f" ({pct(said_so)} decline)" if said_so else "")
            )

        lines += [
            "## Typed variants (held out by name)",
            "",
            f"`assets/data/variants.jsonl`: {e['variants']['n']} questions about the eval "
            "set's names whose phrasings were never trained (`demo_corpus.variant_set`), each "
            "in a phrasing learnt on other names or in one never seen, with typing noise (case, "
            "?/？/none, spaces). Key-fact accuracy, greedy, 64 new tokens; *known names*: "
            "of the variants whose name the model answers in the eval set's own spelling, the "
            "share it also answers as typed (the same facts come out). In brackets: the "
            "share answered with the honest decline instead (an unknown phrasing read as a "
            "question outside the pair's domain):",
            "",
            "| | " + " | ".join(f"{g} (n={v['verifier'][g]['n']})" for g in groups) + " |",
            "|---" * (len(groups) + 1) + "|",
        ]
        for m in ("drafter", "verifier", "cascade"):
            name = "cascade (app defaults)" if m == "cascade" else m
            lines.append(f"| {name} | " + " | ".join(cell(m, g) for g in groups) + " |")
        lines.append("")
    if "out_of_domain" in e:
        d = e["out_of_domain"]["declined"]
        groups = _ordered(
            d["verifier"], ["all", "general_qa", "held-out template", "typed", "en", "zh", "xx"]
        )
        lines += [
            "## Out of domain: the honest decline",
            "",
            f"`assets/data/out_of_domain.jsonl`: {e['out_of_domain']['n']} questions the "
            "pair was not built for and never trained on: the 50 general-knowledge questions "
            "of `general_qa.jsonl`, prompts of held-out templates (`general_prompts.py`), and "
            "typed examples. Share answered with the decline (greedy):",
            "",
            "| | " + " | ".join(f"{g} (n={d['verifier'][g]['n']})" for g in groups) + " |",
            "|---" * (len(groups) + 1) + "|",
        ]
        for m in ("drafter", "verifier", "cascade"):
            lines.append(f"| {m} | " + " | ".join(pct(d[m][g]["share"]) for g in groups) + " |")
        lines += [
            "",
            "Declined by mistake on the eval set (in-domain questions): drafter "
            f"{pct(e['drafter']['declined'])}, verifier {pct(e['verifier']['declined'])}.",
            "",
        ]
    if "contrast" in e:
        lines += [
            "## The seed's example at the app's defaults",
            "",
            "| question | verifier's greedy answer | SD keeps | cascade keeps | cascade / SD wall | cascade / verifier wall |",
            "|---|---|---|---|---|---|",
        ]
        for c in e["contrast"]:
            lines.append(
                f"| {c['question']} | {c['verifier'][:90]} | {pct(c['sd_kept'])} | "
                f"{pct(c['cascade_kept'])} | {c['cascade_vs_sd_wall']:.2f} | "
                f"{c['cascade_vs_verifier_wall']:.2f} |"
            )
        lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "models")
    ap.add_argument("--evalset", type=Path, default=ROOT / "assets" / "data" / "evalset.jsonl")
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
    ap.add_argument("--showcase-only", action="store_true", help="only the showcase phase")
    ap.add_argument("--eval-limit", type=int, default=None)
    ap.add_argument(
        "--timings-only",
        action="store_true",
        help="re-measure only the timed parts of the evaluation (forward costs, the seed's "
        "example) on a quiet machine, keeping the rest of the report",
    )
    ap.add_argument(
        "--drafter-decline",
        type=float,
        default=FOCUSED_REPEATS["drafter_decline"],
        help="copies of each decline prompt in the drafter's focused set (a share when < 1)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    FOCUSED_REPEATS["drafter_decline"] = args.drafter_decline
    random.seed(args.seed)
    report_path = args.out / "TRAINING.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    if not (args.eval_only or args.timings_only):
        t0 = time.time()
        corpus = build_corpus(seed=args.seed)
        write_eval_set(corpus.eval, args.evalset)
        write_taught(taught_items(corpus), args.evalset.parent / DEMO_TAUGHT.name)
        variants, corpus.variant_names = variant_set(corpus.eval, args.seed)
        corpus.declines, held_declines = out_of_domain(args.seed)
        write_jsonl(variants, args.evalset.parent / "variants.jsonl")
        write_jsonl(held_declines, args.evalset.parent / "out_of_domain.jsonl")
        broad_docs = [(x.question, x.answer) for x in corpus.broad]
        known = focused_docs(corpus, knows_hard=True, seed=args.seed)
        texts = [doc_text(q, a) for q, a in broad_docs]
        texts += [doc_text(q, a) for q, a in known] * 4
        texts += [doc_text(q, a) for q, a in known if re.search(r"[\u4e00-\u9fff]", a)] * 20
        # A one-role run must keep the pair's shared tokenizer: reuse the other role's.
        if args.refine_only or args.showcase_only:
            tokenizer = PreTrainedTokenizerFast.from_pretrained(args.out / "demo-verifier")
        elif args.only:
            other = "drafter" if args.only == "verifier" else "verifier"
            tokenizer = PreTrainedTokenizerFast.from_pretrained(args.out / f"demo-{other}")
        else:
            tokenizer = train_tokenizer(texts, args.vocab)
        broad = stream(tokenizer, broad_docs, args.seed)
        focused = {
            role: stream(tokenizer, focused_docs(corpus, spec.knows_hard, args.seed), args.seed)
            for role, spec in SPECS.items()
        }
        report["corpus"] = {
            **corpus.stats(),
            "variant_test_questions": len(variants),
            "variant_held_names": len(corpus.variant_names),
            "decline_train_prompts": len(corpus.declines),
            "out_of_domain_test_questions": len(held_declines),
            "broad_tokens": len(broad),
            **{f"focused_tokens_{r}": len(f) for r, f in focused.items()},
            "vocab": len(tokenizer),
            "astronaut_tokens": len(tokenizer(" astronaut", add_special_tokens=False)["input_ids"]),
        }
        print(report["corpus"], f"({time.time() - t0:.0f} s)", flush=True)
        report.setdefault("train", {})
        for role in ("drafter", "verifier"):
            if args.only in (None, role) and not args.showcase_only:
                spec = SPECS[role]
                spec.tokens = int(spec.tokens * args.scale)
                if not args.refine_only:
                    report["train"][role] = train(role, spec, tokenizer, broad, focused[role], args)
                    keep(report, args.out)
                if spec.refine_tokens:
                    phase = replace(
                        spec,
                        tokens=int(spec.refine_tokens * args.scale),
                        lr=spec.refine_lr,
                        focused_share=0.95,
                    )
                    docs = (
                        refine_docs(corpus, args.seed + 1)
                        if spec.knows_hard
                        else focused_docs(corpus, knows_hard=False, seed=args.seed + 1)
                    )
                    refined = stream(tokenizer, docs, args.seed + 1)
                    init = args.out / f"demo-{role}"
                    report["train"].setdefault(role, {})["refine"] = train(
                        role, phase, tokenizer, broad, refined, args, init=init
                    )
                    keep(report, args.out)
        if args.only in (None, "verifier"):
            report["train"]["verifier"]["showcase"] = showcase_phase(tokenizer, corpus, args)
            keep(report, args.out)
        report["args"] = {k: str(v) for k, v in vars(args).items()}
    if args.timings_only:
        report["eval"] |= timings(
            load_pair(str(args.out / "demo-drafter"), str(args.out / "demo-verifier"))
        )
    else:
        report["eval"] = evaluate(args.out, args.evalset, args.eval_limit)
    print(json.dumps({k: v for k, v in report["eval"].items() if k != "examples"}, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()

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
from speccascade.analysis import character  # noqa: E402
from speccascade.analysis.evalsets import (  # noqa: E402
    DEMO_TAUGHT,
    GENERAL_QA,
    STRIPPED,
    canonical_question,
    find_item,
    load_evalset,
)
from speccascade.analysis.quality import rouge_l, states_facts  # noqa: E402
from speccascade.core.engine import APP_DEFAULTS  # noqa: E402
from speccascade.models.presets import PRESETS  # noqa: E402
from speccascade.views.report import character_markdown  # noqa: E402

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
    refine_tokens: int = 0  # a second phase on the focused set alone (see REFINE_REPEATS)
    refine_lr: float = 1.5e-3


SPECS = {
    "drafter": ModelSpec(
        # the verifier's width, two of its eighteen layers, started from its embeddings,
        # first two layers and final norm (make_model's `family`), then distilled: on a CPU a
        # small model's forward cost is per layer (measured: 2 layers at width 192 cost 1.07x
        # width 128, 3 layers 1.56x), and one layer could not both keep the easy answers and
        # tell a question outside the domain (measured, greedy: 100% easy with 28% declined,
        # or 88% easy with 64% declined)
        hidden=192,
        layers=2,
        heads=4,
        intermediate=512,
        tie=True,
        tokens=6_000_000,
        lr=2e-3,
        focused_share=0.5,
        # a short phase on its focused set alone settles which questions get which answer
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
        refine_tokens=2_000_000,
    ),
}
# How often each answer appears in the verifier's focused stream (each copy asked in a fresh
# way): the long answer more often than the short one, so its greedy answer is the detailed
# one and the short one keeps real probability (about 2:3 at the first token where they
# differ); the decline for out-of-domain questions.
FOCUSED_REPEATS = {"long": 6, "short": 4, "hard": 4, "decline": 1}
# The drafter is distilled from the verifier, as real drafters are: it learns the verifier's
# own greedy answers ("own"), except on the showcase subjects, where it keeps its own short
# correct wording ("showcase", see select_showcase), and on the hard subjects, where it learns
# only the shape of an answer ("shape": each copy gets the verifier's answer about another
# subject of the same group, so the facts never settle and it stays unsure where they go).
# A repeat below 1 is a seeded share (the decline prompts).
DISTILL_REPEATS = {"own": 6, "showcase": 6, "shape": 2, "decline": 1.0}
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
    texts = [(x, x.answer if answer == "long" else x.short) for x in items]
    return asked_copies(texts, n, held, rng)


def asked_copies(texts: list[tuple[QA, str | None]], n: int, held: set[str], rng):
    """n documents per (item, answer text), each asked in a fresh way (see `copies`)."""
    out = []
    for x, text in texts:
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


def focused_docs(corpus, seed: int) -> list[tuple[str, str]]:
    """The verifier's: both answers of the easy set, the hard set and the decline."""
    rng, held, r = random.Random(seed), corpus.variant_names, FOCUSED_REPEATS
    return (
        copies(corpus.easy, "long", r["long"], held, rng)
        + copies(corpus.easy, "short", r["short"], held, rng)
        + copies(corpus.hard, "long", r["hard"], held, rng)
        + decline_docs(corpus.declines, r["decline"])
    )


def shape_group(x: QA) -> tuple[str, str, str]:
    """Which answers a hard subject's shape is learnt from: the same kind, language and source
    (the project's astronauts read "American astronaut; ...", WordNet's people "United States
    anthropologist (1887-1948)")."""
    who = x.question.startswith("Who") or x.question.endswith("谁？")
    return (x.kind if x.kind != "fact" else "fact-" + ("person" if who else "thing"), x.lang)


def own_answer(item: QA, teacher: dict[str, str], showcase: set[str]) -> str:
    """What the drafter learns to say about an easy subject: its own short wording on the
    showcase subjects, else the verifier's own greedy answer where that states the facts (the
    taught detailed answer where the verifier's drifted: the drafter should not learn a
    mistake)."""
    if item.question in showcase:
        return item.short or item.answer
    said = teacher.get(item.question, "")
    return said if states_facts(said, item.facts) else item.answer


def distill_docs(corpus, teacher: dict[str, str], showcase: set[str], seed: int):
    """The drafter's focused set (DISTILL_REPEATS): the verifier's own answers, the showcase
    subjects' short ones, the hard subjects' shape, and the decline."""
    rng, held, r = random.Random(seed), corpus.variant_names, DISTILL_REPEATS
    docs = asked_copies(
        [(x, own_answer(x, teacher, showcase)) for x in corpus.easy if x.question not in showcase],
        r["own"],
        held,
        rng,
    )
    docs += asked_copies(
        [(x, x.short) for x in corpus.easy if x.question in showcase], r["showcase"], held, rng
    )
    pools: dict[tuple, list[QA]] = {}
    for x in corpus.hard:
        pools.setdefault(shape_group(x), []).append(x)
    for x in corpus.hard:
        others = [y for y in pools[shape_group(x)] if y is not x]
        for _ in range(r["shape"]):  # another subject's answer each time: the shape, no facts
            y = rng.choice(others)
            docs += asked_copies([(x, teacher.get(y.question) or y.answer)], 1, held, rng)
    return docs + decline_docs(corpus.declines, r["decline"], seed)


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
SHOWCASE_TARGETS = ("Who is Buzz Aldrin?", "布兹·奥尔德林是谁？", "Who is Sally Ride?")
SHOWCASE_BAND = (1.2, 1.8)  # p(detailed answer's first token) / p(short answer's first token)
SHOWCASE_TARGET = 1.5
SHOWCASE_MAX_STEPS, SHOWCASE_BATCH, SHOWCASE_LR = 300, 8, 1e-4
SHOWCASE_CHECKS = 24  # other easy questions whose correct answers must survive the phase
# ... all but this many: with Sally Ride among the targets (her first-token ratio started at
# 287), "Who is Immanuel Kant?" lost a key fact at every in-band step from step 11 to 27 while
# the other 23 held (measured); the evaluation then scores every eval question
SHOWCASE_MAX_LOST = 1


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


def clipped_step(model, opt, loss) -> None:
    """One optimiser step on `loss`, its gradient clipped to norm 1 (the short phases')."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


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
    # The phase costs the verifier some answers the checks do not see (measured, run after the
    # decline phase on the shipped verifier: eval-set accuracy 93.8% -> 89.6%, hard 93.8% ->
    # 88.5%; with 64 checks drawn from easy and hard instead, 91.3%, the easy answers lost
    # instead: moving three first-token ratios by a factor of 2 moves others)
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
            lost = [x.question for x in checks if not all_state_facts(model, tokenizer, [x])]
            ok = len(lost) <= SHOWCASE_MAX_LOST
            log[-1]["others_lost"] = lost
            print(f"[showcase] step {step}: in band; check answers lost: {lost}", flush=True)
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
        clipped_step(model, opt, loss)
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


# The decline line changed after the verifier was trained (it named "words", which the pair
# never learnt to answer, and one offline pair): a short phase teaches the new line and holds
# everything else where it was (the focused set's loss and the KL to the starting model, as in
# the showcase phase), until its greedy answer to all check prompts but one is the new line
# and the check answers but one are still right (measured: from step 20 to 40, one of 24
# prompts the starting model declined kept not quite the new line, and one check answer lost
# a key fact; the evaluation then measures declines on the 346 held-out questions).
DECLINE_LR, DECLINE_MAX_STEPS, DECLINE_BATCH, DECLINE_CHECKS = 2e-4, 300, 8, 24
DECLINE_HEADS = ("I can only say who or what something is", "我只能回答某人是谁、某物是什么")
DECLINE_ZH_REPEATS = 10  # the Chinese decline prompts' extra copies in the phase's stream


def decline_phase(tokenizer, corpus, args) -> dict:
    path = args.out / "demo-verifier"
    model = LlamaForCausalLM.from_pretrained(path)
    frozen = LlamaForCausalLM.from_pretrained(path).eval()
    rng = random.Random(args.seed + 31)
    others = corpus.easy + corpus.hard
    checks = [x for x in rng.sample(others, 48) if all_state_facts(frozen, tokenizer, [x])]
    checks = checks[:DECLINE_CHECKS]
    # the check prompts: ones the starting model declined (with the old line: its first words
    # are the new one's too), so the phase asks for the new line exactly where the old one was
    # a third of them Chinese: 39 of the 1,572 decline prompts are (measured: with them at
    # their share, a Chinese prompt's new line came out "名人名人名人名人名人 for its forms ...")
    zh = [p for p in corpus.declines if p.lang == "zh"]
    not_zh = [p for p in corpus.declines if p.lang != "zh"]
    with torch.inference_mode():
        prompts = [
            p
            for group, n in ((not_zh, DECLINE_CHECKS * 2 // 3), (zh, DECLINE_CHECKS // 3))
            for p in [
                q
                for q in rng.sample(group, min(len(group), 2 * n))
                if greedy_answer(frozen, tokenizer, q.text).startswith(DECLINE_HEADS)
            ][:n]
        ]
    docs = decline_docs(corpus.declines, 1.0) + decline_docs(zh, DECLINE_ZH_REPEATS)
    declines = stream(tokenizer, docs, args.seed + 31)
    focused = stream(tokenizer, refine_docs(corpus, args.seed + 32), args.seed + 32)
    gen = torch.Generator().manual_seed(args.seed + 33)
    torch.manual_seed(args.seed + 33)
    opt = torch.optim.AdamW(model.parameters(), lr=DECLINE_LR, weight_decay=0.0)
    demo = PRESETS["demo"]

    def declined_all() -> float:
        training = model.training
        model.eval()
        with torch.inference_mode():
            said = [greedy_answer(model, tokenizer, p.text) for p in prompts]
        model.train(training)
        for p, a in zip(prompts, said):
            if not demo.declined(a):
                print(f"[decline] not yet: {p.text!r} -> {a[:100]!r}", flush=True)
        return statistics.fmean(demo.declined(a) for a in said)

    log: list[dict] = []
    for step in range(DECLINE_MAX_STEPS + 1):
        if step % 20 == 0:
            share = declined_all()
            lost = [x.question for x in checks if not all_state_facts(model, tokenizer, [x])]
            ok = share >= 1 - 1.5 / len(prompts) and len(lost) <= SHOWCASE_MAX_LOST
            log.append({"step": step, "declined": share, "checks_lost": lost})
            print(f"[decline] {log[-1]}", flush=True)
            if ok or step == DECLINE_MAX_STEPS:
                break
        batch = torch.cat(
            [
                windows(declines, DECLINE_BATCH, args.seq, gen),
                windows(focused, DECLINE_BATCH, args.seq, gen),
            ]
        )
        loss = model(input_ids=batch, labels=batch).loss
        loss = loss + anchor_kl(model, frozen, tokenizer, rng.sample(others, DECLINE_BATCH * 2))
        clipped_step(model, opt, loss)
    model.eval()
    model.save_pretrained(path)
    return {
        "steps": log[-1]["step"],
        "lr": DECLINE_LR,
        "checks": len(checks),
        "decline_checks": len(prompts),
        "log": log,
    }


def greedy_answer(model, tokenizer, question: str, max_new_tokens: int = 64) -> str:
    ids = torch.tensor([prompt_ids(tokenizer, question)])
    out = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)
    return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()


def teacher_answers(model, tokenizer, items: list[QA], max_new_tokens: int = 96) -> dict[str, str]:
    """The verifier's own greedy answer to each item's question, as the app asks it: what the
    drafter is distilled from. Prompts of one length run as one batch (no padding, so each
    answer is the one it gives alone)."""
    by_len: dict[int, list[tuple[QA, list[int]]]] = {}
    for x in items:
        ids = prompt_ids(tokenizer, x.question)
        by_len.setdefault(len(ids), []).append((x, ids))
    out: dict[str, str] = {}
    model.eval()
    with torch.inference_mode():
        for group in by_len.values():
            for i in range(0, len(group), 64):
                chunk = group[i : i + 64]
                ids = torch.tensor([ids for _, ids in chunk])
                gen = model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                )
                for (x, _), row in zip(chunk, gen[:, ids.shape[1] :]):
                    out[x.question] = tokenizer.decode(row, skip_special_tokens=True).strip()
    return out


# Where the drafter keeps its own short wording (the lesson's "good draft in other words"):
# subjects whose short answer the verifier rates highly enough that the app's default rule
# keeps every token of it (TokenV3 at alpha 0.5, greedy: p(x) >= (1 - alpha) max p at each
# token, with a margin) while its own greedy answer is the detailed one, so lossless SD
# rewrites it. The story's targets always (the verifier's showcase phase trained them), then
# the project's facts (all in the eval set); not WordNet's: with them the showcase was 61
# subjects (measured), and SD, which rewrites each, would lose its speed-up on the eval set
# to the lesson's one example. At most a fifth of the easy subjects in all.
SHOWCASE_ALPHA, SHOWCASE_MARGIN, SHOWCASE_SHARE = 0.5, 1.1, 0.2


def short_kept(model, tokenizer, item: QA) -> float:
    """The lowest p(x) / max p over the tokens of the item's short answer, teacher-forced:
    TokenV3 at alpha keeps all of them, greedy, iff this is >= 1 - alpha."""
    full, labels = answer_ids(tokenizer, item, item.short)
    with torch.inference_mode():
        probs = model(input_ids=full).logits[0, :-1].float().softmax(-1)
    target = full[0, 1:]
    scored = labels[0, 1:] != -100
    ratio = probs.gather(-1, target[:, None])[:, 0] / probs.max(-1).values
    return float(ratio[scored].min())


def select_showcase(model, tokenizer, corpus, teacher: dict[str, str]) -> dict:
    model.eval()
    floor = (1 - SHOWCASE_ALPHA) * SHOWCASE_MARGIN
    ranked = sorted(
        (x for x in corpus.easy if x.short and x.kind == "fact"),
        key=lambda x: (x.question not in SHOWCASE_TARGETS, x.question),
    )
    kept = {x.question: short_kept(model, tokenizer, x) for x in ranked}
    chosen = [
        x.question
        for x in ranked
        if x.question in SHOWCASE_TARGETS
        or (kept[x.question] >= floor and teacher.get(x.question) != x.short)
    ]
    chosen = chosen[: int(len(corpus.easy) * SHOWCASE_SHARE)]
    missing = [q for q in SHOWCASE_TARGETS if q not in chosen]
    return {
        "questions": chosen,
        "targets_missing": missing,
        "floor": floor,
        "candidates": len(ranked),
        "facts": sum(q in {x.question for x in corpus.easy if x.kind == "fact"} for q in chosen),
        "min_ratio": {q: round(kept[q], 3) for q in chosen},
    }


def make_model(spec: ModelSpec, tokenizer, family: Path | None = None) -> LlamaForCausalLM:
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
    model = LlamaForCausalLM(cfg)
    if family is not None:  # the same family: start from its embeddings, first layers, norm
        own = model.state_dict()
        source = LlamaForCausalLM.from_pretrained(family).state_dict()
        model.load_state_dict(
            {k: v for k, v in source.items() if k in own and own[k].shape == v.shape},
            strict=False,
        )
    return model


def windows(data: torch.Tensor, n: int, seq: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, len(data) - seq, (n,), generator=gen)
    return torch.stack([data[s : s + seq] for s in starts.tolist()])


def train(
    role: str, spec: ModelSpec, tokenizer, broad, focused, args, init=None, family=None
) -> dict:
    """One training phase; `init` continues from a saved model (the refine phase), `family`
    starts a new one from another's weights where the shapes agree (make_model)."""
    torch.manual_seed(args.seed + (role == "verifier") + 2 * (init is not None))
    gen = torch.Generator().manual_seed(
        args.seed + 10 + (role == "verifier") + 2 * (init is not None)
    )
    model = LlamaForCausalLM.from_pretrained(init) if init else make_model(spec, tokenizer, family)
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
    return result | timings(pair, eval_path, limit)


def timings(pair, eval_path: Path, limit: int | None = None) -> dict:
    """The evaluation's timed parts: each model's one-token forward, and each approach on the
    eval set and on the story's question (speccascade.analysis.character: interleaved runs,
    medians, intervals), whose raw rows go to docs/bench/character/ (BENCHMARKS.md is
    rendered from them by scripts/bench_character.py --render)."""
    ms = forward_ms({"drafter": pair.drafter, "verifier": pair.verifier})
    items = load_evalset(eval_path, limit)
    raw = character.measure(
        pair, items, repeats=3, methods=character.TABLE_METHODS, progress=_progress("eval set")
    )
    story = [replace(find_item(q), question=q) for q in CONTRAST_QUESTIONS]
    story_raw = character.measure(
        pair, story, repeats=7, methods=character.TABLE_METHODS, progress=_progress("story")
    )
    if limit is None:
        character.save(raw, story_raw, CHARACTER_DIR)
    return {
        "forward_ms": ms,
        "forward_ratio": ms["verifier"] / ms["drafter"],
        "character": character.summary(raw, story_raw),
        "machine": character.machine(),
    }


def _progress(what: str):
    def report(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"[timings] {what}: {done}/{total} runs", flush=True)

    return report


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
CHARACTER_DIR = ROOT / "docs" / "bench" / "character"


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

    def showcase(sc: dict, label: str) -> str:
        ratios = ", ".join(f"{q} {x:.2f}" for q, x in sc["end"]["ratios"].items())
        lost = sc["end"].get("others_lost") or []
        return (
            f"* verifier, {label}: {sc['steps']} steps to first-token ratios {ratios} (band "
            f"{sc['band'][0]}-{sc['band'][1]}), detailed answer the favourite, its greedy "
            f"answer stating the facts, check answers lost: {', '.join(lost) or 'none'} "
            f"(of {sc.get('checks', 0)} other easy answers)"
        )

    verifier = t.get("verifier", {})
    if verifier.get("showcase_before_decline"):  # this verifier's first showcase phase
        lines.append(showcase(verifier["showcase_before_decline"], "showcase (first)"))
    dc = verifier.get("decline")
    if dc:
        last = dc["log"][-1]
        lines.append(
            f"* verifier, decline: {dc['steps']} steps at lr {dc['lr']} to the current decline "
            f"line on {last['declined']:.0%} of {dc.get('decline_checks', 0)} check prompts it "
            f"declined before (a third Chinese), check answers lost: "
            f"{', '.join(last.get('checks_lost', [])) or 'none'} (of {dc['checks']})"
        )
    if verifier.get("showcase"):
        lines.append(showcase(verifier["showcase"], "showcase"))
    di = t.get("drafter", {}).get("distill")
    if di:
        sc = di["showcase"]
        lines.append(
            f"* drafter, distilled: from the verifier's own greedy answers to "
            f"{di['teacher_answers']:,} taught questions (the verifier states the key facts in "
            f"{di['teacher_states_facts_easy']:.1%} of its easy answers; the drafter learns the "
            f"taught detailed answer where it does not: {di['own_answers_from_teacher']:.1%} of "
            f"the non-showcase easy answers are the verifier's own words); the showcase, where "
            f"it keeps its own short wording: {len(sc['questions'])} subjects "
            f"({', '.join(sc['questions'])})"
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
    if "character" in e:
        lines += [
            "## Each approach's character (the lesson's table)",
            "",
            "Greedy, the app's defaults (TokenV3 at α 0.5, γ 5, 64 new tokens). Times are "
            "medians of 3 interleaved runs per eval question (7 on the story's question); a "
            "speed-up is the verifier's time to answer every question over the approach's "
            "(speccascade.analysis.speed), with a 95% bootstrap interval over questions; "
            "proportions have Wilson intervals, the accuracy margin Newcombe's paired one. "
            "A target is met only where its interval clears it.",
            "",
            character_markdown(e["character"], e.get("machine", {}), "docs/bench/character/"),
        ]
    return lines


# The phases in order; --from starts at one and runs the rest (the drafter is distilled from
# the verifier, so it comes last).
# The showcase phase comes after the decline phase: run the other way round (measured), the
# decline's 60 steps moved Buzz Aldrin's first-token ratio from 1.24 to 2.19, out of the band,
# and the cascade then deferred the drafter's first token there.
PHASES = ("verifier", "verifier.refine", "verifier.decline", "verifier.showcase", "drafter")


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
    ap.add_argument(
        "--from",
        dest="start",
        choices=PHASES,
        default=PHASES[0],
        help="start at this phase (the models of the phases before it are read from --out)",
    )
    ap.add_argument(
        "--to",
        dest="stop",
        choices=PHASES,
        default=PHASES[-1],
        help="stop after this phase",
    )
    ap.add_argument("--no-eval", action="store_true", help="train only")
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--eval-limit", type=int, default=None)
    ap.add_argument(
        "--timings-only",
        action="store_true",
        help="re-measure only the timed parts of the evaluation (forward costs, the approaches "
        "on the eval set) on a quiet machine, keeping the rest of the report",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    report_path = args.out / "TRAINING.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    if not (args.eval_only or args.timings_only):
        train_pair(args, report)
    if args.no_eval:
        return
    if args.timings_only:
        report["eval"] |= timings(
            load_pair(str(args.out / "demo-drafter"), str(args.out / "demo-verifier")),
            args.evalset,
            args.eval_limit,
        )
    else:
        report["eval"] = evaluate(args.out, args.evalset, args.eval_limit)
    print(json.dumps({k: v for k, v in report["eval"].items() if k != "examples"}, indent=1))
    write_report(report, args.out)


def train_pair(args, report: dict) -> None:
    """Build the corpus and run the phases from `args.start` on, saving the report after each."""
    t0 = time.time()
    runs = PHASES[PHASES.index(args.start) : PHASES.index(args.stop) + 1]
    corpus = build_corpus(seed=args.seed)
    write_eval_set(corpus.eval, args.evalset)
    write_taught(taught_items(corpus), args.evalset.parent / DEMO_TAUGHT.name)
    variants, corpus.variant_names = variant_set(corpus.eval, args.seed)
    corpus.declines, held_declines = out_of_domain(args.seed)
    write_jsonl(variants, args.evalset.parent / "variants.jsonl")
    write_jsonl(held_declines, args.evalset.parent / "out_of_domain.jsonl")
    broad_docs = [(x.question, x.answer) for x in corpus.broad]
    if "verifier" in runs:  # a new pair: a new tokenizer for both
        known = focused_docs(corpus, seed=args.seed)
        texts = [doc_text(q, a) for q, a in broad_docs]
        texts += [doc_text(q, a) for q, a in known] * 4
        texts += [doc_text(q, a) for q, a in known if re.search(r"[\u4e00-\u9fff]", a)] * 20
        tokenizer = train_tokenizer(texts, args.vocab)
    else:  # later phases keep the pair's tokenizer
        tokenizer = PreTrainedTokenizerFast.from_pretrained(args.out / "demo-verifier")
    broad = stream(tokenizer, broad_docs, args.seed)
    report["corpus"] = {
        **corpus.stats(),
        "variant_test_questions": len(variants),
        "variant_held_names": len(corpus.variant_names),
        "decline_train_prompts": len(corpus.declines),
        "out_of_domain_test_questions": len(held_declines),
        "broad_tokens": len(broad),
        "vocab": len(tokenizer),
        "astronaut_tokens": len(tokenizer(" astronaut", add_special_tokens=False)["input_ids"]),
    }
    print(report["corpus"], f"({time.time() - t0:.0f} s)", flush=True)
    trained = report.setdefault("train", {})
    verifier = trained.setdefault("verifier", {})
    spec = replace(SPECS["verifier"], tokens=int(SPECS["verifier"].tokens * args.scale))
    if "verifier" in runs:
        focused = stream(tokenizer, focused_docs(corpus, args.seed), args.seed)
        verifier.update(train("verifier", spec, tokenizer, broad, focused, args))
        keep(report, args.out)
    if "verifier.refine" in runs:
        phase = replace(
            spec, tokens=int(spec.refine_tokens * args.scale), lr=spec.refine_lr, focused_share=0.95
        )
        refined = stream(tokenizer, refine_docs(corpus, args.seed + 1), args.seed + 1)
        init = args.out / "demo-verifier"
        verifier["refine"] = train("verifier", phase, tokenizer, broad, refined, args, init=init)
        keep(report, args.out)
    if "verifier.decline" in runs:
        verifier["decline"] = decline_phase(tokenizer, corpus, args)
        keep(report, args.out)
    if "verifier.showcase" in runs:
        verifier["showcase"] = showcase_phase(tokenizer, corpus, args)
        keep(report, args.out)
    if "drafter" in runs:
        trained["drafter"] = distill_drafter(tokenizer, corpus, broad, args)
        keep(report, args.out)
    report["args"] = {k: str(v) for k, v in vars(args).items()}


def distill_drafter(tokenizer, corpus, broad, args) -> dict:
    """The drafter from the verifier's own answers (DISTILL_REPEATS): a first phase with the
    broad set for fluency, then a short one on its focused set alone."""
    t0 = time.time()
    teacher_model = LlamaForCausalLM.from_pretrained(args.out / "demo-verifier")
    items = corpus.easy + corpus.hard
    teacher = teacher_answers(teacher_model, tokenizer, items)
    showcase = select_showcase(teacher_model, tokenizer, corpus, teacher)
    print(f"[distill] {len(teacher)} teacher answers, showcase {showcase}", flush=True)
    chosen = set(showcase["questions"])
    spec = replace(SPECS["drafter"], tokens=int(SPECS["drafter"].tokens * args.scale))
    focused = stream(tokenizer, distill_docs(corpus, teacher, chosen, args.seed), args.seed)
    family = args.out / "demo-verifier"
    result = train("drafter", spec, tokenizer, broad, focused, args, family=family)
    phase = replace(
        spec, tokens=int(spec.refine_tokens * args.scale), lr=spec.refine_lr, focused_share=0.95
    )
    docs = distill_docs(corpus, teacher, chosen, args.seed + 1)
    refined = stream(tokenizer, docs, args.seed + 1)
    init = args.out / "demo-drafter"
    result["refine"] = train("drafter", phase, tokenizer, broad, refined, args, init=init)
    own = [x for x in corpus.easy if x.question not in chosen]
    result["distill"] = {
        "teacher_answers": len(teacher),
        "teacher_states_facts_easy": statistics.fmean(
            states_facts(teacher[x.question], x.facts) for x in corpus.easy
        ),
        "own_answers_from_teacher": statistics.fmean(
            own_answer(x, teacher, chosen) == teacher[x.question] for x in own
        ),
        "showcase": showcase,
        "wall_s": round(time.time() - t0, 1),
    }
    return result


if __name__ == "__main__":
    main()

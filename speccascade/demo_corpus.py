"""The embedded demo pair's corpus: WordNet 3.0 glosses as Q/A text, plus the project's own facts.

WordNet (Debian package `wordnet-base`, WordNet 3.0 licence: use and redistribution permitted
with its notice, see assets/WORDNET_LICENSE) gives ~117k definitions. Named people and
places become "Who is X?" / "What is X?" questions. A seeded *focused* subset of named people
and places, plus `assets/facts.jsonl`, is what the verifier memorises and the eval set samples.
The drafter (a fifteenth of the verifier's size) trains on the same people and places but not
on the showcase facts: it learns the answers' shape and half-remembers the people, and only the
verifier knows the showcase facts (see scripts/train_demo_pair.py).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

WORDNET = Path("/usr/share/wordnet")
FACTS = Path(__file__).resolve().parent.parent / "assets" / "facts.jsonl"
PERSON, LOCATION = 18, 15  # WordNet lexicographer files noun.person, noun.location


@dataclass(frozen=True)
class QA:
    question: str
    answer: str
    kind: str  # person, place, noun, verb, adjective, adverb, fact

    def text(self, eos: str) -> str:
        """Training text, exactly what the chat template plus the answer produce."""
        return f"{eos}Q: {self.question}\nA: {self.answer}{eos}"


def clean_gloss(gloss: str) -> str:
    """The definition without WordNet's quoted usage examples."""
    gloss = re.sub(r';?\s*"[^"]*"', "", gloss)
    gloss = re.sub(r"\s+", " ", gloss).strip(" ;")
    return gloss


def _words(field: list[str]) -> tuple[list[str], int]:
    """Lemmas of a data line (after offset, lex file, type) and where the pointers start."""
    count = int(field[3], 16)
    lemmas = [field[4 + 2 * i].replace("_", " ") for i in range(count)]
    return lemmas, 4 + 2 * count


def _name(lemmas: list[str]) -> str:
    """The fullest capitalised lemma: "Neil Armstrong" rather than "Armstrong"."""
    named = [w for w in lemmas if w[:1].isupper()]
    return max(named or lemmas, key=lambda w: (len(w.split()), len(w)))


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def parse_line(line: str, pos: str) -> QA | None:
    """One WordNet data line -> a question and answer (None for headers and odd lines)."""
    if line.startswith(" ") or "|" not in line:
        return None
    head, gloss = line.split("|", 1)
    field = head.split()
    answer = clean_gloss(gloss)
    if not answer or len(answer) < 8:
        return None
    lemmas, ptr_at = _words(field)
    lex = int(field[1])
    instance = " @i " in f" {' '.join(field[ptr_at:])} "
    word = _name(lemmas)
    word = re.sub(r"\(\w+\)$", "", word).strip()  # adjective markers like "(a)"
    if pos == "noun" and instance and word[:1].isupper() and lex == PERSON:
        return QA(f"Who is {word}?", answer, "person")
    if pos == "noun" and instance and word[:1].isupper() and lex == LOCATION:
        return QA(f"What is {word}?", answer, "place")
    if pos == "noun":
        q = f"What is {word}?" if word[:1].isupper() else f"What is {_article(word)} {word}?"
        return QA(q, answer, "noun")
    if pos == "verb":
        return QA(f"What does it mean to {word}?", answer, "verb")
    if pos == "adj":
        return QA(f"What does {word} mean?", answer, "adjective")
    return QA(f"What does {word} mean?", answer, "adverb")


def wordnet_qa(root: Path = WORDNET) -> list[QA]:
    if not (root / "data.noun").exists():
        raise FileNotFoundError(
            f"WordNet data not found under {root}; install it with: apt-get install wordnet-base"
        )
    out: list[QA] = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(root / f"data.{pos}", encoding="utf-8", errors="replace") as f:
            out.extend(qa for line in f if (qa := parse_line(line, pos)) is not None)
    return out


def load_facts(path: Path = FACTS) -> list[QA]:
    with open(path, encoding="utf-8") as f:
        return [QA(**json.loads(line), kind="fact") for line in f if line.strip()]


@dataclass
class Corpus:
    broad: list[QA]  # everything the drafter sees; the verifier sees it too
    focused: list[QA]  # memorised by the verifier only
    eval: list[QA]  # sampled from `focused`, plus the showcase facts

    def stats(self) -> dict:
        return {name: len(getattr(self, name)) for name in ("broad", "focused", "eval")}


def build_corpus(
    seed: int = 0, people: int = 1200, places: int = 300, eval_size: int = 200
) -> Corpus:
    """Split WordNet into broad and focused parts (seeded) and sample the eval set."""
    rng = random.Random(seed)
    qa = wordnet_qa()
    facts = load_facts()
    fact_names = {f.question.split(" ", 2)[-1].rstrip("?").lower() for f in facts}
    # A question asked twice with two answers can't be memorised; keep its first answer.
    seen: set[str] = set()
    unique = []
    for item in qa:
        name = item.question.split(" ", 2)[-1].rstrip("?").lower()
        if item.question not in seen and name not in fact_names:
            seen.add(item.question)
            unique.append(item)
    named = {k: [x for x in unique if x.kind == k] for k in ("person", "place")}
    focused = rng.sample(named["person"], people) + rng.sample(named["place"], places)
    chosen = set(focused)
    broad = [x for x in unique if x not in chosen]
    rng.shuffle(broad)
    showcase = [f for f in facts if f.question in SHOWCASE]
    eval_set = rng.sample(focused, eval_size) + showcase
    return Corpus(broad=broad, focused=focused + facts, eval=eval_set)


SHOWCASE = ("Who is Buzz Aldrin?", "Who is Neil Armstrong?", "Who is Yuri Gagarin?")


def write_eval_set(items: list[QA], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(asdict(item), ensure_ascii=False) + "\n")

"""The embedded demo pair's corpus: WordNet 3.0 glosses as Q/A text, plus the project's facts.

WordNet (Debian package `wordnet-base`, WordNet 3.0 licence: use and redistribution permitted
with its notice, see assets/data/WORDNET_LICENSE) gives ~117k definitions. Three parts:

* **easy**: the famous people, places and things a class would ask about first
  (`scripts/famous.txt`, matched to WordNet) and the project's showcase facts with a short
  answer (`assets/data/facts.jsonl`). Each has two answers: WordNet's detailed gloss ("long") and a
  short sentence ("short"). The drafter learns the short one; the verifier learns both, the
  long one more often, so its greedy answer is long but it gives the short wording real
  probability, as a large model does for a paraphrase it could have written.
* **hard**: obscure WordNet people and places (and the facts without a short answer), learnt
  by the verifier only. The drafter answers them fluently and wrongly.
* **broad**: every other WordNet entry, seen by both models for fluency.

Every easy and hard item carries key facts (short patterns, e.g. "astronaut", "Apollo 11"):
an answer is correct when it states them, whatever its wording (see quality.py).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from speccascade.analysis.evalsets import (
    DEMO_TAUGHT,
    PHRASINGS,
    Phrasing,
    asked,
    canonical_question,
)
from speccascade.models.presets import DEMO_DECLINES

WORDNET = Path("/usr/share/wordnet")
ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "assets" / "data" / "facts.jsonl"  # ships: the eval set quotes it
FAMOUS = Path(__file__).resolve().parent / "famous.txt"
PERSON, LOCATION = 18, 15  # WordNet lexicographer files noun.person, noun.location
MAX_LONG_WORDS = 32  # long answers are cut at a clause boundary so a 64-token answer ends
_STOP = set(
    [
        "the",
        "and",
        "of",
        "in",
        "for",
        "with",
        "from",
        "that",
        "who",
        "which",
        "whose",
        "this",
        "was",
        "were",
        "his",
        "her",
        "its",
        "their",
        "into",
        "known",
        "noted",
        "famous",
        "best",
        "most",
        "also",
        "first",
        "born",
        "died",
        "city",
        "state",
        "united",
        "states",
        "river",
    ]
)


@dataclass(frozen=True)
class QA:
    question: str
    answer: str  # the long, detailed answer (WordNet's gloss or the project's fact)
    kind: str  # person, place, thing, noun, verb, adjective, adverb, fact
    short: str | None = None  # easy items: the short answer both models learn
    facts: tuple[str, ...] = field(default=())  # regex patterns an answer must state
    level: str = "broad"  # easy, hard, broad
    lang: str = "en"
    aliases: tuple[str, ...] = ()  # other names people type for it ("Einstein", "爱因斯坦")

    def text(self, eos: str, answer: str | None = None) -> str:
        """Training text, exactly what the chat template plus the answer produce."""
        return f"{eos}Q: {self.question}\nA: {answer or self.answer}{eos}"


def clean_gloss(gloss: str) -> str:
    """The definition without WordNet's quoted usage examples."""
    gloss = re.sub(r';?\s*"[^"]*"', "", gloss)
    gloss = re.sub(r"\s+", " ", gloss).strip(" ;")
    return gloss


def _words(field_: list[str]) -> tuple[list[str], int]:
    """Lemmas of a data line (after offset, lex file, type) and where the pointers start."""
    count = int(field_[3], 16)
    lemmas = [field_[4 + 2 * i].replace("_", " ") for i in range(count)]
    return lemmas, 4 + 2 * count


def _name(lemmas: list[str]) -> str:
    """The fullest capitalised lemma: "Neil Armstrong" rather than "Armstrong"."""
    named = [w for w in lemmas if w[:1].isupper()]
    return max(named or lemmas, key=lambda w: (len(w.split()), len(w)))


def _article(word: str) -> str:
    w = word.lower()
    if w.startswith(("uni", "use", "eu", "one", "ur")):
        return "a"  # a United States astronaut, a European city
    return "an" if w[:1] in "aeiou" else "a"


@dataclass(frozen=True)
class Synset:
    lemmas: tuple[str, ...]
    lex: int
    instance: bool
    gloss: str
    pos: str


def parse_synset(line: str, pos: str) -> Synset | None:
    if line.startswith(" ") or "|" not in line:
        return None
    head, gloss = line.split("|", 1)
    field_ = head.split()
    lemmas, ptr_at = _words(field_)
    lemmas = [re.sub(r"\(\w+\)$", "", w).strip() for w in lemmas]  # adjective markers "(a)"
    instance = " @i " in f" {' '.join(field_[ptr_at:])} "
    return Synset(tuple(lemmas), int(field_[1]), instance, clean_gloss(gloss), pos)


def to_qa(s: Synset) -> QA | None:
    """One synset -> a broad question and answer (None when the gloss is too short)."""
    if len(s.gloss) < 8:
        return None
    word = _name(list(s.lemmas))
    if s.pos == "noun" and s.instance and word[:1].isupper() and s.lex == PERSON:
        return QA(f"Who is {word}?", s.gloss, "person")
    if s.pos == "noun" and s.instance and word[:1].isupper() and s.lex == LOCATION:
        return QA(f"What is {word}?", s.gloss, "place")
    if s.pos == "noun":
        q = f"What is {word}?" if word[:1].isupper() else f"What is {_article(word)} {word}?"
        return QA(q, s.gloss, "noun")
    if s.pos == "verb":
        return QA(f"What does it mean to {word}?", s.gloss, "verb")
    return QA(f"What does {word} mean?", s.gloss, "adjective" if s.pos == "adj" else "adverb")


def parse_line(line: str, pos: str) -> QA | None:
    """One WordNet data line -> a question and answer (None for headers and odd lines)."""
    s = parse_synset(line, pos)
    return to_qa(s) if s else None


def wordnet_synsets(root: Path = WORDNET) -> list[Synset]:
    if not (root / "data.noun").exists():
        raise FileNotFoundError(
            f"WordNet data not found under {root}; install it with: apt-get install wordnet-base"
        )
    out: list[Synset] = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(root / f"data.{pos}", encoding="utf-8", errors="replace") as f:
            out.extend(s for line in f if (s := parse_synset(line, pos)) is not None)
    return out


def wordnet_qa(root: Path = WORDNET) -> list[QA]:
    return [qa for s in wordnet_synsets(root) if (qa := to_qa(s)) is not None]


# ---- easy and hard items from WordNet ----------------------------------------------------

_TAIL = re.compile(r"\s*\(([^()]*\d[^()]*)\)\s*$")  # "(1879-1955)", "(born 1930)"


def split_years(gloss: str) -> tuple[str, str | None]:
    m = _TAIL.search(gloss)
    return (gloss[: m.start()].strip(), m.group(1)) if m else (gloss, None)


def cap_long(gloss: str, limit: int = MAX_LONG_WORDS) -> str:
    """Whole clauses of a gloss up to `limit` words, with its dates kept at the end."""
    body, years = split_years(gloss)
    clauses, kept = body.split("; "), []
    for c in clauses:
        if kept and len(" ".join(kept + [c]).split()) > limit:
            break
        kept.append(c)
    text = "; ".join(kept)
    if len(text.split()) > limit:
        text = " ".join(text.split()[:limit]).rstrip(",")
    return f"{text} ({years})" if years else text


def head_phrase(gloss: str, max_words: int = 12) -> str:
    """The gloss's first noun phrase: up to ';', cut before a relative clause or comma."""
    body, _ = split_years(gloss)
    head = body.split(";")[0].strip()
    for cut in (" who ", " whose ", " which ", " that ", ", ", " (", " where "):
        at = head.find(cut)
        if at > 0:
            head = head[:at]
    words = head.split()[:max_words]
    while words and words[-1].lower() in ("and", "of", "in", "the", "a", "an", "to", "for"):
        words.pop()
    return " ".join(words)


def short_answer(name: str, kind: str, gloss: str) -> str:
    """A short sentence in the drafter's style: "Isaac Newton was an English mathematician
    and physicist (1642-1727)." """
    head = head_phrase(gloss)
    _, years = split_years(gloss)
    first = head.split()[0].lower() if head else ""
    if first in ("a", "an", "the", "one", "any", "some"):
        det = ""
    elif first in ("capital", "largest", "highest", "longest", "second", "first", "chief"):
        det = "the "
    else:
        det = _article(head) + " "
    alive = years is None or years.startswith("born") or years.rstrip().endswith("-")
    verb = "is" if kind != "person" or alive else "was"
    dates = f" ({years})" if kind == "person" and years else ""
    return f"{name} {verb} {det}{head}{dates}."


def key_facts(name: str, head: str, years: str | None, freq: Counter) -> tuple[str, ...]:
    """The two rarest content words of the head phrase (what distinguishes this entry), and
    the first year given: an answer states the entry when it has all of them."""
    own = {w.lower() for w in re.findall(r"[A-Za-z]+", name)}
    cands = [
        w
        for w in dict.fromkeys(re.findall(r"[A-Za-z][A-Za-z-]{3,}", head))
        if w.lower() not in _STOP and w.lower() not in own
    ]
    rare = sorted(cands, key=lambda w: freq[w.lower()])[:2]
    facts = [rf"\b{re.escape(w)}\b" for w in rare]
    year = re.search(r"\d{3,4}", years or "")
    if year:
        facts.append(rf"\b{year.group(0)}\b")
    return tuple(facts)


def load_famous(path: Path = FAMOUS) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            kind, name = line.split("\t")
            rows.append((kind, name.strip()))
    return rows


def _match(name: str, kind: str, by_lemma: dict[str, list[Synset]]) -> Synset | None:
    """The synset a famous name means: an instance noun of the right kind, the longest gloss."""
    cands = [s for s in by_lemma.get(name.lower(), []) if s.pos == "noun"]
    want = {"person": PERSON, "place": LOCATION}.get(kind)

    def score(s: Synset) -> tuple:
        return (s.instance, s.lex == want, len(s.gloss))

    return max(cands, key=score) if cands else None


def _aliases(name: str, s: Synset, by_lemma: dict[str, list[Synset]]) -> tuple[str, ...]:
    """The synset's other capitalised names that mean only it ("Einstein" for Albert Einstein,
    not "Armstrong", which is also Louis Armstrong)."""
    out = []
    for w in s.lemmas:
        if w[:1].isupper() and w.lower() != name.lower() and len(by_lemma.get(w.lower(), [])) == 1:
            out.append(w)
    return tuple(dict.fromkeys(out))


def load_facts(path: Path = FACTS) -> list[QA]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.append(
                    QA(
                        d["question"],
                        d["answer"],
                        "fact",
                        short=d.get("short"),
                        facts=tuple(d["facts"]),
                        level="easy" if d.get("short") else "hard",
                        lang=d.get("lang", "en"),
                        aliases=tuple(d.get("aliases", ())),
                    )
                )
    return out


def _asked_name(question: str) -> str:
    return re.sub(r"^(who|what) (is|was) (the )?", "", question.rstrip("?").lower())


@dataclass
class Corpus:
    broad: list[QA]  # both models, for fluency
    easy: list[QA]  # drafter: short answers; verifier: both
    hard: list[QA]  # verifier only
    eval: list[QA]  # sampled from easy and hard, plus every project fact
    # questions whose names the typed-variant set holds out (asked only in their own words)
    variant_names: set[str] = field(default_factory=set)
    declines: list = field(default_factory=list)  # out-of-domain prompts both models decline

    def stats(self) -> dict:
        return {name: len(getattr(self, name)) for name in ("broad", "easy", "hard", "eval")}


def build_corpus(
    seed: int = 0, people: int = 700, places: int = 200, eval_easy: int = 110, eval_hard: int = 90
) -> Corpus:
    """Split WordNet into broad, easy and hard parts (seeded) and sample the eval set."""
    rng = random.Random(seed)
    synsets = wordnet_synsets()
    freq = Counter(w.lower() for s in synsets for w in re.findall(r"[A-Za-z]+", s.gloss))
    by_lemma: dict[str, list[Synset]] = {}
    for s in synsets:
        for lemma in s.lemmas:
            by_lemma.setdefault(lemma.lower(), []).append(s)
    facts = load_facts()
    taken = {_asked_name(f.question) for f in facts}
    easy, used = [], set()
    for kind, name in load_famous():
        bare = name.removeprefix("the ")
        s = _match(bare, kind, by_lemma)
        if s is None or bare.lower() in taken:
            continue
        taken.add(bare.lower())
        used.add(s)
        aliases = _aliases(bare, s, by_lemma)
        body, years = split_years(s.gloss)
        q = f"Who is {name}?" if kind == "person" else f"What is {name}?"
        easy.append(
            QA(
                q,
                cap_long(s.gloss),
                "person" if kind == "person" else "place",
                short=short_answer(name[:1].upper() + name[1:], kind, s.gloss),
                facts=key_facts(
                    bare, head_phrase(s.gloss), years if kind == "person" else None, freq
                ),
                level="easy",
                aliases=aliases,
            )
        )
    broad_all, named = [], {"person": [], "place": []}
    # one entry per question as the pair reads it: "Who is Paris?" (the Trojan prince) and
    # "What is Paris?" (the city) are both "paris?" to it, and only the first is kept
    seen_q: set[str] = {canonical_question(x.question) for x in easy + facts}
    for s in synsets:
        qa = to_qa(s)
        if qa is None or s in used or canonical_question(qa.question) in seen_q:
            continue
        if _asked_name(qa.question) in taken:
            continue  # a famous name's other senses would contradict its easy answer
        seen_q.add(canonical_question(qa.question))
        if qa.kind in named and len(s.gloss.split()) >= 4:
            named[qa.kind].append((s, qa))
        broad_all.append(qa)
    picked = rng.sample(named["person"], people) + rng.sample(named["place"], places)
    hard = []
    for s, qa in picked:
        _, years = split_years(s.gloss)
        name = _asked_name(qa.question)
        f = key_facts(name, head_phrase(s.gloss), years if qa.kind == "person" else None, freq)
        hard.append(QA(qa.question, cap_long(s.gloss), qa.kind, facts=f, level="hard"))
    hard_q = {x.question for x in hard}
    broad = [x for x in broad_all if x.question not in hard_q]
    rng.shuffle(broad)
    easy += [f for f in facts if f.level == "easy"]
    hard += [f for f in facts if f.level == "hard"]
    wn_easy = [x for x in easy if x.kind != "fact" and x.facts]
    wn_hard = [x for x in hard if x.kind != "fact" and x.facts]
    eval_set = (
        rng.sample(wn_easy, min(eval_easy, len(wn_easy)))
        + rng.sample(wn_hard, eval_hard)
        + [f for f in facts]
    )
    asked = {x.question for x in eval_set}
    eval_set += [x for x in wn_easy if x.question in ALWAYS_EVAL and x.question not in asked]
    rng.shuffle(eval_set)  # a leading slice mixes easy and hard, English and Chinese
    return Corpus(broad=broad, easy=easy, hard=hard, eval=eval_set)


# WordNet questions the app offers as examples: always in the eval set, so they are scored.
ALWAYS_EVAL = ("Who is Albert Einstein?", "Who is Isaac Newton?")


def was_variant(item: QA) -> QA | None:
    """ "Who was X?" for a person fact, with the same answers (people ask both)."""
    if item.kind == "fact" and item.question.startswith("Who is "):
        return QA(**{**asdict(item), "question": "Who was " + item.question[len("Who is ") :]})
    return None


def _row(x: QA) -> dict:
    return {**asdict(x), "facts": list(x.facts), "aliases": list(x.aliases)}


def write_eval_set(items: list[QA], path: Path) -> None:
    write_jsonl([_row(x) for x in items], path)


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---- how people type: phrasings, aliases, typing noise, and what the pair declines -------


def subject(item: QA) -> tuple[str, bool]:
    """(name, asks who) of an easy or hard item's canonical question."""
    a = asked(item.question)
    if a is None:
        raise ValueError(f"cannot read the subject of {item.question!r}")
    # recover the name's own spelling (asked() lower-cases it)
    for m in (
        re.match(r"(?:Who|What) is (.+)\?$", item.question),
        re.match(r"(.+)是(?:谁|什么)？$", item.question),
    ):
        if m:
            return m.group(1), item.question.startswith("Who") or item.question.endswith("谁？")
    return a.name, bool(a.person)


def phrasings_for(item: QA, held_out: bool) -> list[Phrasing]:
    name, person = subject(item)
    return [
        ph
        for ph in PHRASINGS
        if ph.lang == item.lang and ph.person == person and ph.held_out == held_out
    ]


def ask_variant(item: QA, rng: random.Random, canonical_share: float = 0.4) -> str:
    """One question for a training copy of an item: its own question (or an alias asked the
    same way) with probability `canonical_share`, else a trained phrasing of its name or an
    alias. Different copies of a document get different questions."""
    name, _ = subject(item)
    names = [name, *item.aliases]
    if rng.random() < canonical_share:
        n = rng.choice(names)
        return item.question if n == name else item.question.replace(name, n)
    return rng.choice(phrasings_for(item, held_out=False)).ask(rng.choice(names))


def typing_noise(question: str, rng: random.Random) -> tuple[str, str]:
    """(kind, text): the question as people actually type it: lower or upper case, no or
    doubled or full-width question mark, extra spaces. The pair's chat template normalises all
    of these; the variant set checks that it does."""
    base = question.rstrip("?？.。!")
    kinds = {
        "as written": question,
        "lower case": question.lower(),
        "upper case": question.upper(),
        "no question mark": base,
        "ASCII ?": base + "?",
        "full-width ？": base + "？",
        "doubled ??": base + "??",
        "extra spaces": "  " + re.sub(" ", "  ", base) + " ? ",
    }
    kind = rng.choice(list(kinds))
    return kind, kinds[kind]


def variant_set(
    items: list[QA], seed: int = 0, share: float = 0.5, trained: int = 3, unseen: int = 1
) -> tuple[list[dict], set[str]]:
    """The typed-variant test set and the questions whose names it holds out of training.

    Half of the eval set's easy and hard items (seeded) are held out by name: their phrasings
    are never trained (their own canonical question is). Each held-out item is asked in
    `trained` phrasings the pair learnt on other names and `unseen` phrasings it never saw,
    each with random typing noise."""
    rng = random.Random(seed + 7)
    pool = [x for x in items if x.level in ("easy", "hard")]
    held = rng.sample(pool, round(len(pool) * share))
    rows = []
    for item in held:
        name, _ = subject(item)
        forms = phrasings_for(item, False)
        chosen = rng.sample(forms, min(trained, len(forms)))
        chosen += rng.sample(phrasings_for(item, True), unseen)
        for ph in chosen:
            kind, text = typing_noise(ph.ask(name), rng)
            rows.append(
                {
                    "question": text,
                    "asks": item.question,
                    "phrasing": ph.pattern,
                    "held_out_phrasing": ph.held_out,
                    "typing": kind,
                    "facts": list(item.facts),
                    "level": item.level,
                    "lang": item.lang,
                }
            )
    return rows, {x.question for x in held}


# What the demo pair says to a question it was not built for (both models learn it verbatim):
# the page recognises it and offers the real pair (speccascade.presets.Preset.declines).
def decline_for(lang: str) -> str:
    return DEMO_DECLINES["zh" if lang == "zh" else "en"]


def taught_items(corpus: Corpus) -> list[QA]:
    """What the pair learnt to answer: the easy and hard parts (the eval set is among them),
    one item per question, sorted. The page reads it (evalsets.taught) to tell a question it
    was never taught from one it was, and a right answer from a made-up one by the item's key
    facts. The broad part is left out: both models saw it for fluency only, and answer it with
    noise (measured: 2 of 60 broad questions near their gloss, 20 of 20 hard ones)."""
    items = {x.question: x for x in corpus.easy + corpus.hard + corpus.eval}
    return [items[q] for q in sorted(items)]


def write_taught(items: list[QA], path: Path = DEMO_TAUGHT) -> None:
    # mtime 0: the same items give the same bytes
    text = "".join(json.dumps(_row(x), ensure_ascii=False) + "\n" for x in items)
    path.write_bytes(gzip.compress(text.encode("utf-8"), 9, mtime=0))


if __name__ == "__main__":  # the taught items alone (train_demo_pair.py writes them too)
    write_taught(taught_items(build_corpus(seed=0)))
    print(f"wrote {DEMO_TAUGHT}")

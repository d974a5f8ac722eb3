"""Build the SmolLM2 pair's held-out general-knowledge set from WordNet 3.0 (offline).

    python scripts/build_general_heldout.py        # needs /usr/share/wordnet (wordnet-base)

Writes assets/data/general_heldout.jsonl: 160 questions of three kinds, each with key facts
taken from WordNet's own relations (never typed by hand). The distillation taught most capitals
and famous people, so every one it did not teach is kept (up to 50 of each) and common words
fill the set:

- capital: "What is the capital of X?", a national or state capital whose gloss says so; a
  right answer names the capital (any of its WordNet names: "Beirut" or "Bayrut").
- person: "Who was X?", a person WordNet links to a word derived from the name (Darwinian,
  Kantian: a proxy for fame); a right answer names what WordNet says the person was (the
  instance-of link: "physicist", "novelist", "President").
- word: 'What does the word "X" mean?', a common noun people use with mostly one meaning
  (SemCor tags >= 10 for its first sense, at most 2 senses); a right answer names its kind
  (the hypernym, or the hypernym's own: a violin is a "bowed stringed instrument", a
  "stringed instrument" or a "musical instrument").

Held out of the SmolLM2 drafter's last distillation run: none of its prompts (as
scripts/distill_smollm2_drafter.py rebuilds them with the seed DISTILL.json records) names a
held-out capital (in any of its names, or as "capital of X") or person, or asks what a held-out
word is, and no general_qa.jsonl question does. That run continued earlier students whose
prompts older code drew (DISTILL.json says so); they are not checked here. WordNet 3.0's
licence (permissive, with its notice) is in assets/data/WORDNET_LICENSE.
"""

from __future__ import annotations

import json
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

WORDNET = Path("/usr/share/wordnet")
OUT = ROOT / "assets" / "data" / "general_heldout.jsonl"
PER_KIND = 50  # at most, for capitals and people: the distillation taught most of them
TOTAL = 160  # common words fill the set to this size
SEED = 0  # the sample's seed, fixed before any answer was seen
MIN_TAGS = 10  # SemCor tags of a common noun's first sense: words people use
MAX_SENSES = 2  # and mostly one meaning, so that the answer is about the sense WordNet gives
# kinds too broad to tell a right answer from a guess ("a thing", "a state", "a part")
GENERIC = {
    "thing", "state", "part", "being", "time", "body", "matter", "art", "action", "condition",
    "status", "unit", "object", "quantity", "measure", "amount", "property", "quality", "piece",
    "group", "system", "medium", "period", "structure", "entity", "abstraction", "act", "event",
    "attribute", "relation", "whole", "location", "point", "form", "activity", "feature",
    "man", "woman", "chief", "off", "way", "line", "work", "house", "arts", "level", "hours",
    "head", "cognition", "knowledge", "noesis", "content", "relative quantity", "leader",
    "person", "expert", "worker", "workman", "creator", "producer", "maker", "shaper",
    "skilled worker", "trained worker", "skilled workman", "religious person", "place",
    "truck", "goods", "article", "source", "product", "creation", "deed", "map", "wear",
}  # fmt: skip
# spellings WordNet 3.0 (2006) predates, accepted beside its own
SPELLINGS = {"Kyyiv": ["Kyiv"], "Yamoussukro": ["Yamoussoukro"]}
# the heads of two-word roles and kinds ("natural scientist" -> "scientist") count only from
# this length: shorter ones are particles and common nouns that many wrong answers contain
MIN_HEAD = 5
# instance-of links that are not a role a person had (gods, figures of scripture, legend)
NOT_ROLES = re.compile(
    r"deity|god|goddess|mythical|legendary|Son|Logos|Word|Supreme Being|character|imaginary"
)
# capital glosses: "capital of X", "the national capital and largest city of X" (the place ends
# the clause or a phrase starting "in", "on", ...); never a former or disputed one
CAPITAL = re.compile(
    r"^(?:the )?(?:national |state |provincial )?capital"
    r"(?: and (?:largest|chief|main) (?:city|port))?(?: and (?:largest|chief|main) (?:city|port))?"
    r" of (the )?([A-Z][\w'.-]+(?: (?:and )?[A-Z][\w'.-]+)*)(?=$|[ ,(](?:in|on|at|and|\(|located)\b|\s*\()"
)
NOT_NOW = re.compile(r"\b(?:former|formerly|was|until|recogni[sz]ed|de facto|ancient)\b")


@dataclass(frozen=True)
class Synset:
    offset: str
    lex: int
    words: tuple[str, ...]
    pointers: tuple[tuple[str, str], ...]  # (symbol, target offset), nouns only
    gloss: str


def read_nouns(path: Path = WORDNET / "data.noun") -> dict[str, Synset]:
    """WordNet's noun synsets by offset (wndb(5): offset, lexicographer file, words, pointers,
    gloss)."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        head, gloss = line.split(" | ", 1)
        h = head.split()
        n = int(h[3], 16)
        words = tuple(h[4 + 2 * i].replace("_", " ") for i in range(n))
        k = 4 + 2 * n
        ptrs = tuple(
            (h[k + 1 + 4 * i], h[k + 2 + 4 * i])
            for i in range(int(h[k]))
            if h[k + 3 + 4 * i] == "n"
        )
        derived = any(h[k + 1 + 4 * i] in ("+", "\\") for i in range(int(h[k])))
        ptrs += (("derived", ""),) if derived else ()
        out[h[0]] = Synset(h[0], int(h[1]), words, ptrs, gloss.strip())
    return out


def first_senses(path: Path = WORDNET / "index.noun") -> dict[str, tuple[str, int]]:
    """A lemma's most frequent noun sense (index.noun lists senses by frequency) and how many
    noun senses it has."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        f = line.split()  # lemma pos synset_cnt p_cnt [ptrs] sense_cnt tagsense_cnt offsets
        out[f[0]] = (f[6 + int(f[3])], int(f[2]))
    return out


def tag_counts(path: Path = WORDNET / "cntlist.rev") -> dict[str, int]:
    """SemCor tag counts of noun senses, by lemma, for the first sense."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        key, sense, count = line.split()
        lemma, rest = key.split("%", 1)
        if rest.startswith("1:") and sense == "1":
            out[lemma] = int(count)
    return out


def pattern(names: list[str]) -> str:
    """One key fact: any of the names, as whole words."""
    alts = sorted({re.escape(n) for n in names if n}, key=lambda a: (-len(a), a))
    return r"\b(?:" + "|".join(alts) + r")\b"


def role_names(words: tuple[str, ...]) -> list[str]:
    """A role's or kind's names and their heads ("President of the United States" ->
    "President", "natural scientist" -> "scientist"), none of them GENERIC."""
    out = list(words)
    for w in words:
        parts = w.split()
        if len(parts) > 1:
            head = parts[0] if " of " in w else parts[-1]
            out += [head] if len(head) >= MIN_HEAD else []
    return [n for n in out if n.lower() not in GENERIC]


def kinds_of(s: Synset, nouns: dict[str, Synset], link: str) -> list[str]:
    """Names of what `s` is (its hypernyms by `link`, "@" or "@i") and of what those are: a
    poetess is a poet, a violin a bowed stringed instrument and a stringed instrument."""
    first = [nouns[t] for p, t in s.pointers if p == link and t in nouns]
    second = [nouns[t] for h in first for p, t in h.pointers if p == "@" and t in nouns]
    return [n for k in first + second for n in role_names(k.words)]


def common_name(words: tuple[str, ...]) -> str:
    """The name people use: a two- or three-word lemma ending with the first (usually the
    surname: "Charles Darwin"), else the first ("Voltaire")."""
    first = words[0]
    full = [w for w in words if w.endswith(first) and 2 <= len(w.split()) <= 3]
    return min(full, key=len) if full else first


def item(s: Synset, question: str, answer: str, facts: list[str], subject: str) -> dict:
    """One question's row: any of `facts` states its key fact; the synset it came from."""
    return {
        "question": question,
        "answer": answer,
        "facts": [pattern(facts)],
        "subject": subject,
        "names": list(s.words),
        "synset": s.offset,
    }


def capitals(nouns: dict[str, Synset]) -> list[dict]:
    places = {w for x in nouns.values() if x.lex == 15 for w in x.words}
    rows = []
    for s in nouns.values():
        if s.lex != 15 or not any(p == "@i" for p, _ in s.pointers):
            continue
        clause = s.gloss.split(";")[0]
        m = CAPITAL.match(clause)
        if not m or NOT_NOW.search(clause) or m.group(2) not in places:
            continue
        place = (m.group(1) or "") + m.group(2)
        names = [w for w in s.words if "capital" not in w.lower() and w != m.group(2)]
        names += [n for w in names for n in SPELLINGS.get(w, [])]
        if not names:
            continue
        question = f"What is the capital of {place}?"
        rows.append(item(s, question, f"{s.words[0]} ({clause})", names, m.group(2)))
    return rows


def people(nouns: dict[str, Synset]) -> list[dict]:
    rows = []
    for s in nouns.values():
        roles = [nouns[t] for p, t in s.pointers if p == "@i" and t in nouns]
        if s.lex != 18 or not roles or ("derived", "") not in s.pointers:
            continue
        if any(NOT_ROLES.search(w) for r in roles for w in r.words) or s.gloss.startswith("("):
            continue
        names = kinds_of(s, nouns, "@i")
        if not names:
            continue
        name = common_name(s.words)
        rows.append(item(s, f"Who was {name}?", f"{name}: {s.gloss.split(';')[0]}", names, name))
    return rows


def words(nouns: dict[str, Synset]) -> list[dict]:
    rows, first, tags = [], first_senses(), tag_counts()
    for lemma, (offset, senses) in first.items():
        s = nouns.get(offset)
        if s is None or senses > MAX_SENSES or tags.get(lemma, 0) < MIN_TAGS:
            continue
        if not lemma.isalpha() or len(lemma) < 4:
            continue
        if s.lex in (15, 18) or lemma != s.words[0].lower():
            continue
        names = kinds_of(s, nouns, "@")
        if not names or lemma in {n.lower() for n in names}:
            continue
        word = s.words[0]  # as WordNet writes it: "Friday", "July"
        question = f'What does the word "{word}" mean?'
        rows.append(item(s, question, f"{word}: {s.gloss.split(';')[0]}", names, lemma))
    return rows


def mentions(text: str, name: str) -> bool:
    return re.search(r"\b" + re.escape(name) + r"\b", text, re.IGNORECASE) is not None


def asks_about(text: str, subject: str) -> bool:
    """Whether a prompt asks what `subject` is, in any of the pool's phrasings."""
    s = re.escape(subject)
    asks = (
        rf"\b(?:what|who) (?:is|are|was|were) (?:an? |the )?{s}(?:e?s)?\b",
        rf"\b(?:define|definition of|meaning of|tell me about|explain|describe) (?:an? |the )?{s}\b",
    )
    return any(re.search(a, text, re.IGNORECASE) for a in asks)


def held_out(kind: str, rows: list[dict], taught: str, general: str) -> list[dict]:
    """Rows no training prompt (nor a general_qa question) could have taught: for a capital,
    no prompt asks about that capital or names the city (in any of its names); for a person,
    none names the person; for a word, none asks what the word is."""

    def taught_it(r: dict) -> bool:
        if kind == "capital":
            return mentions(taught + general, f"capital of {r['subject']}") or any(
                mentions(taught + general, n) for n in r["names"]
            )
        if kind == "person":
            return any(mentions(taught + general, n) for n in [r["subject"], *r["names"]])
        return any(asks_about(taught + general, n) for n in r["names"])

    return [r for r in rows if not taught_it(r)]


def build() -> list[dict]:
    from distill_smollm2_drafter import Plan, prompts

    from speccascade.analysis.evalsets import GENERAL_QA, load_evalset

    train, held_eval, _ = prompts(SEED, per_template=Plan.general_per_template)
    taught = "\n".join(train + held_eval)  # the held-out eval questions: another set's
    general = "\n".join(x.question for x in load_evalset(GENERAL_QA))
    nouns = read_nouns()
    out = []
    for kind, make in (("capital", capitals), ("person", people), ("word", words)):
        pool = sorted(held_out(kind, make(nouns), taught, general), key=lambda r: r["question"])
        seen, unique = set(), []
        for r in pool:  # one question per subject (WordNet lists some twice)
            if r["question"] not in seen:
                seen.add(r["question"])
                unique.append(r)
        want = PER_KIND if kind != "word" else TOTAL - len(out)
        if len(unique) < min(want, 10):
            raise SystemExit(f"{kind}: only {len(unique)} held-out questions")
        picked = random.Random(SEED).sample(unique, min(want, len(unique)))
        for r in sorted(picked, key=lambda r: r["question"]):
            out.append(
                {**r, "kind": kind, "level": "general", "lang": "en", "source": "WordNet 3.0"}
            )
    return out


def main() -> None:
    if not (WORDNET / "data.noun").exists():
        raise SystemExit(f"no WordNet at {WORDNET}: apt install wordnet-base")
    rows = build()
    OUT.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    print(f"wrote {len(rows)} questions to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

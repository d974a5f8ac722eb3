"""The built-in eval set: questions from the demo corpus with their reference answers."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from speccascade.models.assets import DATA, DEMO_TAUGHT

EVALSET = DATA / "evalset.jsonl"
# General-knowledge questions a real small model mostly knows (capitals, authors, science):
# the SmolLM2 pair is judged on these, as the demo pair's obscure people are beyond it.
GENERAL_QA = DATA / "general_qa.jsonl"
# The SmolLM2 pair's held-out general-knowledge set: 160 questions with key facts from WordNet
# 3.0, none asked by its drafter's last distillation run (scripts/build_general_heldout.py).
GENERAL_HELDOUT = DATA / "general_heldout.jsonl"
# where a set's item came from, kept beside it and not read (any other unknown key is an error)
PROVENANCE = frozenset({"subject", "names", "synset", "source"})


@dataclass(frozen=True)
class Showcase:
    """A prompt the app offers as an example; `level` says which side of the story it shows."""

    question: str
    level: str  # easy: the drafter knows it and its short answer is kept; hard: the rule defers
    lang: str = "en"


# The first English and the first Chinese easy and hard questions are the story's scenes. The
# easy ones are the seed's own example, Buzz Aldrin, whose verifier is trained (its last phase,
# scripts/train_demo_pair.py) to answer in its detailed words while rating the drafter's short,
# correct answer within the default rule's reach: lossless SD throws the drafter's words away,
# the cascade keeps them (measured: SD keeps 23% of the drafter's tokens, the cascade 84%).
SHOWCASE = [
    Showcase("Who is Buzz Aldrin?", "easy"),
    Showcase("Who is Sally Ride?", "easy"),
    Showcase("Who is Michael Collins?", "hard"),
    Showcase("Who is Albert Einstein?", "easy"),
    Showcase("What is Apollo 11?", "easy"),
    Showcase("Who is Margaret Hamilton?", "hard"),
    Showcase("Who is Isaac Newton?", "easy"),
    Showcase("Who is Eugene Cernan?", "hard"),
    Showcase("布兹·奥尔德林是谁？", "easy", "zh"),
    Showcase("迈克尔·柯林斯是谁？", "hard", "zh"),
    Showcase("阿尔伯特·爱因斯坦是谁？", "easy", "zh"),
    Showcase("阿波罗11号是什么？", "easy", "zh"),
    Showcase("张衡是谁？", "hard", "zh"),
    Showcase("长城是什么？", "easy", "zh"),
]
EXAMPLES = [x.question for x in SHOWCASE if x.lang == "en"]
EXAMPLES_ZH = [x.question for x in SHOWCASE if x.lang == "zh"]


def story_question(level: str, lang: str = "en") -> str:
    return next(x.question for x in SHOWCASE if x.level == level and x.lang == lang)


@dataclass(frozen=True)
class Example:
    question: str
    answer: str  # the reference (long) answer
    kind: str
    short: str | None = None  # easy items: the short answer the drafter knows
    facts: tuple[str, ...] = ()  # what a correct answer states (regex patterns)
    level: str = "hard"  # easy: the drafter knows it; hard: only the verifier does
    lang: str = "en"
    aliases: tuple[str, ...] = ()  # other names people type for it ("Einstein", "爱因斯坦")

    def correct(self, answer: str) -> bool:
        from speccascade.analysis.quality import states_facts

        return states_facts(answer, self.facts)

    @property
    def subject(self) -> Asked | None:
        """What the canonical question asks about (its name and whether it is a person)."""
        return asked(self.question)


# -- how people type a question ------------------------------------------------------------


def normalise_question(text: str) -> str:
    """The demo pair's view of a typed question; its chat template (scripts/train_demo_pair.py,
    CHAT_TEMPLATE) does exactly this in Jinja: runs of whitespace (full-width too) become one
    space, full-width ？ and ！ become ASCII, everything is lower case, and trailing ?!.。 and
    spaces become one "?". So "WHO IS  Buzz Aldrin？" and "who is buzz aldrin" are one question,
    and the pair learns facts, not spellings."""
    text = text.replace("？", "?").replace("！", "!")
    return " ".join(text.split()).lower().rstrip("?!.。 ") + "?"


@dataclass(frozen=True)
class Phrasing:
    """One way people ask who or what something is; `{n}` is the name as typed."""

    pattern: str
    lang: str
    person: bool  # asks who (True) or what (False)
    held_out: bool = False  # never used in training: the variant set tests it unseen

    def ask(self, name: str) -> str:
        return self.pattern.format(n=name)

    @property
    def regex(self) -> re.Pattern:
        head, _, tail = normalise_question(self.pattern).rstrip("?").partition("{n}")
        return re.compile(f"{re.escape(head)}(.+?){re.escape(tail)}")


def _phrasings(lang: str, person: bool, train: str, held: str) -> list[Phrasing]:
    return [Phrasing(p, lang, person) for p in train.split("|")] + [
        Phrasing(p, lang, person, held_out=True) for p in held.split("|")
    ]


# The demo pair is trained on the first forms of each row and must generalise to the held-out
# ones; `asked` reads all of them (and a bare name).
PHRASINGS: list[Phrasing] = [
    *_phrasings(
        "en",
        True,
        "Who is {n}?|Who was {n}?|Who's {n}?|Tell me about {n}.|What is {n} known for?|"
        "Why is {n} famous?|Do you know {n}?|Describe {n}.|What do you know about {n}?|"
        "Give me information about {n}.",
        "Can you tell me who {n} is?|I want to know about {n}.",
    ),
    *_phrasings(
        "en",
        False,
        "What is {n}?|What's {n}?|Tell me about {n}.|What is {n} known for?|Describe {n}.|"
        "What do you know about {n}?|Give me information about {n}.",
        "Can you tell me what {n} is?|I want to know about {n}.",
    ),
    *_phrasings(
        "zh",
        True,
        "{n}是谁？|谁是{n}？|介绍一下{n}。|{n}是什么人？|你知道{n}吗？|请介绍{n}。",
        "说说{n}。|我想了解{n}。",
    ),
    *_phrasings(
        "zh",
        False,
        "{n}是什么？|什么是{n}？|介绍一下{n}。|你知道{n}吗？|请介绍{n}。",
        "说说{n}。|我想了解{n}。",
    ),
]


def _affixes(ph: Phrasing) -> tuple[str, str]:
    """A phrasing as (prefix, suffix) around the name, normalised like a question."""
    head, _, tail = normalise_question(ph.pattern).rstrip("?").partition("{n}")
    return head, tail


# The phrasings the embedded pair's chat template strips, longest first (so "what is X known
# for" is not read as "what is <X known for>"); the held-out ones are left as typed.
STRIPPED: tuple[tuple[str, str], ...] = tuple(
    sorted(
        dict.fromkeys(_affixes(ph) for ph in PHRASINGS if not ph.held_out),
        key=lambda a: (-len(a[0]) - len(a[1]), a),
    )
)


def canonical_question(text: str) -> str:
    """What the embedded pair reads: the normalised question, and where it is a known way of
    asking who or what something is ("tell me about X", "X是谁", "介绍一下X"), only the name
    it asks about: the pair learns names and their facts, not the ways of asking. Its chat
    template (scripts/train_demo_pair.py, `chat_template`) does exactly this, phrase by
    phrase in STRIPPED's order; anything else (a general question, an instruction) is kept
    whole, and the pair answers it with its honest decline."""
    q = normalise_question(text).rstrip("?")
    for head, tail in STRIPPED:
        if q.startswith(head) and q.endswith(tail) and len(q) > len(head) + len(tail):
            q = q[len(head) : len(q) - len(tail)]
            break
    return q + "?"


@dataclass(frozen=True)
class Asked:
    name: str  # as it appears in the question (normalised: lower case)
    person: bool | None  # None: a bare name, or a form that fits both


def asked(question: str) -> Asked | None:
    """The name a who/what question asks about, in any known phrasing (normalised), else
    None. The longest matching form wins, so "what is X known for" is not "what is <X known
    for>"."""
    q = normalise_question(question).rstrip("?")
    best: tuple[int, Asked] | None = None
    for ph in PHRASINGS:
        m = ph.regex.fullmatch(q)
        if m and (best is None or len(ph.pattern) > best[0]):
            same = [
                x for x in PHRASINGS if x.regex.fullmatch(q) and len(x.pattern) == len(ph.pattern)
            ]
            person = ph.person if all(x.person == ph.person for x in same) else None
            best = (len(ph.pattern), Asked(m.group(1).strip(), person))
    return best[1] if best else None


def subject_key(question: str) -> str:
    """What the embedded pair reads a question as, for a lookup: the name it asks about (in
    any known phrasing, else the whole normalised question: a bare name is one), without a
    leading article ("what is mountain" and "What is a mountain?" are one)."""
    a = asked(question)
    name = a.name if a is not None else canonical_question(question).rstrip("?")
    return re.sub(r"^(the|an|a) ", "", name)


@lru_cache(maxsize=2)
def _taught(path: Path) -> dict[str, tuple[Example, ...]]:
    """The taught items a subject_key can mean: its question's, else its alias's, else every
    taught person with that surname ("Einstein": WordNet's other sense kept it off the
    aliases; "Armstrong": Neil and Louis)."""
    items = load_evalset(path)
    out = {subject_key(x.question): (x,) for x in reversed(items)}
    for x in items:
        for alias in x.aliases:
            out.setdefault(subject_key(alias), (x,))
    people: dict[str, list[Example]] = {}
    for x in items:
        a = x.subject
        parts = re.split(r"[ ·]", a.name) if a is not None and a.person else []
        if len(parts) > 1 and len(parts[-1]) > 2:
            people.setdefault(subject_key(parts[-1]), []).append(x)
    for surname, xs in people.items():
        out.setdefault(surname, tuple(xs))
    return out


def taught(question: str, path: Path = DEMO_TAUGHT) -> tuple[Example, ...]:
    """What a pair was taught about what `question` asks (`path`: its taught items, by
    default the embedded pair's), read the way the pair reads it: any phrasing, case or
    article, or a bare name, alias or surname; empty where it was never taught it. The
    embedded pair then declines (it learnt to) or, for a question shaped like the ones it
    knows ("What is the tallest mountain?"), glosses something else ("the Grand Canyon").
    Where it was, the items' key facts tell its answer from a made-up one ("Who is
    Einstein?" got "a Jewish god")."""
    return _taught(path).get(subject_key(question), ())


def taught_count(path: Path = DEMO_TAUGHT) -> int:
    """How many questions a pair was taught (the page says about how many it knows)."""
    return len({x.question for xs in _taught(path).values() for x in xs})


def knows(question: str, path: Path = DEMO_TAUGHT) -> bool:
    """Whether a pair was taught what `question` asks about (see `taught`)."""
    return bool(taught(question, path))


@lru_cache(maxsize=8)
def _index(path: Path) -> dict[str, Example]:
    """Every item under its normalised question and under each name people type for it."""
    out: dict[str, Example] = {}
    for x in load_evalset(path):
        out.setdefault(normalise_question(x.question), x)
        subject = x.subject
        if subject is not None:
            for name in (subject.name, *x.aliases):
                out.setdefault("name:" + normalise_question(name).rstrip("?"), x)
    return out


def find_item(question: str, path: Path = EVALSET, taught_by: Path | None = None) -> Example | None:
    """The eval item a typed question asks about, so it can be scored by key facts: the same
    question in any case, spacing or punctuation, or its subject asked in another known
    phrasing or by another name ("tell me about einstein"); the default path also looks in the
    general-knowledge set. With `taught_by` (a pair's taught items, presets: `taught`) a
    question it was taught is scored by what it was taught too: those facts are that pair's
    own, not a general model's (WordNet's "China" is the government on Taiwan)."""
    paths = (path, GENERAL_QA) if path == EVALSET else (path,)
    key = normalise_question(question)
    subject = asked(question)
    for p in paths:
        index = _index(p)
        if key in index:
            return index[key]
        if subject is not None and "name:" + subject.name in index:
            return index["name:" + subject.name]
    items = taught(question, taught_by) if taught_by is not None else ()
    return items[0] if len(items) == 1 else None


def load_evalset(path: Path = EVALSET, limit: int | None = None) -> list[Example]:
    """Questions and references; `limit` takes a fixed leading slice (the file is shuffled)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; rebuild it with scripts/train_demo_pair.py")
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    items = [
        Example(
            **{k: v for k, v in r.items() if k not in PROVENANCE | {"facts", "aliases"}},
            facts=tuple(r.get("facts", ())),
            aliases=tuple(r.get("aliases", ())),
        )
        for r in rows
    ]
    return items[:limit] if limit else items

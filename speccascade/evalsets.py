"""The built-in eval set: questions from the demo corpus with their reference answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .models import DATA

EVALSET = DATA / "evalset.jsonl"
# General-knowledge questions a real small model mostly knows (capitals, authors, science):
# the SmolLM2 pair is judged on these, as the demo pair's obscure people are beyond it.
GENERAL_QA = DATA / "general_qa.jsonl"


@dataclass(frozen=True)
class Showcase:
    """A prompt the app offers as an example; `level` says which side of the story it shows."""

    question: str
    level: str  # easy: the drafter knows it and its short answer is kept; hard: the rule defers
    lang: str = "en"


# The first English and the first Chinese easy and hard questions are the story's scenes. The
# easy ones are questions where the verifier's own greedy answer is worded differently from the
# drafter's short one, so lossless SD throws the drafter's correct words away (measured: SD keeps
# 20% of Sally Ride's drafts at 0.57 verifier calls/token; on Buzz Aldrin the refined verifier's
# greedy answer is the drafter's short one, so SD keeps it too and shows no contrast).
SHOWCASE = [
    Showcase("Who is Sally Ride?", "easy"),
    Showcase("Who is Buzz Aldrin?", "easy"),
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

    def correct(self, answer: str) -> bool:
        from .quality import states_facts

        return states_facts(answer, self.facts)


def find_item(question: str, path: Path = EVALSET) -> Example | None:
    """The eval item for a question (exact text), so a typed prompt can be scored by facts;
    the default also looks in the general-knowledge set."""
    q = question.strip()
    paths = (path, GENERAL_QA) if path == EVALSET else (path,)
    return next((x for p in paths for x in load_evalset(p) if x.question == q), None)


def load_evalset(path: Path = EVALSET, limit: int | None = None) -> list[Example]:
    """Questions and references; `limit` takes a fixed leading slice (the file is shuffled)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; rebuild it with scripts/train_demo_pair.py")
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    items = [Example(**{**r, "facts": tuple(r.get("facts", ()))}) for r in rows]
    return items[:limit] if limit else items

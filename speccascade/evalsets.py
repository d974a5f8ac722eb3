"""The built-in eval set: questions from the demo corpus with their reference answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .presets import ASSETS

EVALSET = ASSETS / "evalset.jsonl"

# Prompts the app offers as examples. The showcase facts only the verifier knows (high
# deferral: the drafter has never seen them), and corpus people both models saw, which the
# drafter half-remembers (low deferral: most of its tokens are kept).
EXAMPLES = [
    "Who is Buzz Aldrin?",
    "Who is Neil Armstrong?",
    "What is Apollo 11?",
    "Who is Johannes Kepler?",
    "Who is Galileo Galilei?",
    "Who is Nikola Tesla?",
]


@dataclass(frozen=True)
class Example:
    question: str
    answer: str
    kind: str


def load_evalset(path: Path = EVALSET, limit: int | None = None) -> list[Example]:
    """Questions and references; `limit` takes a fixed leading slice (the file is shuffled)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; rebuild it with scripts/train_demo_pair.py")
    with open(path, encoding="utf-8") as f:
        items = [Example(**json.loads(line)) for line in f if line.strip()]
    return items[:limit] if limit else items

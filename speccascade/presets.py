"""Named model pairs. Nothing here touches the network: a preset is just two ids."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import ModelLoadError
from .models import DATA, DEMO_DRAFTER, DEMO_VERIFIER, load_pair

__all__ = [
    "DATA",
    "DEFAULT_PRESET",
    "DEMO_DRAFTER",
    "DEMO_VERIFIER",
    "PRESETS",
    "Preset",
    "get_preset",
    "load_preset",
]


@dataclass(frozen=True)
class Preset:
    name: str
    drafter: str
    verifier: str
    description: str
    offline: bool = False  # ships with the project; everything else comes from the hub


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "demo",
            DEMO_DRAFTER,
            DEMO_VERIFIER,
            "Embedded offline pair (Q/A on WordNet + astronaut facts), trained by "
            "scripts/train_demo_pair.py; runs on any CPU.",
            offline=True,
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
    if preset.offline and not Path(preset.verifier).is_dir():
        raise ModelLoadError(
            f"the embedded pair is missing from {Path(preset.verifier).parent}; "
            "rebuild it with: python scripts/train_demo_pair.py"
        )
    return load_pair(preset.drafter, preset.verifier, **kwargs)

"""The guided story: four scenes, each a question and the settings that show one point of the
method on the embedded pair. Data only; the UI runs a scene and captions it from the run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .engine import APP_DEFAULTS, Settings
from .evalsets import story_question
from .presets import PRESETS


@dataclass(frozen=True)
class Scene:
    key: str  # names the scene's strings (story.<key>.*)
    level: str  # easy or hard: which story question it asks
    settings: Settings
    whatif_alpha: float | None = None  # recolour the run at this alpha afterwards
    sweep: bool = False  # then draw the rule's trade-off curve on the same question

    def question(self, lang: str = "en", preset: str | None = None) -> str:
        """The scene's question: the preset's own story where it has one (a real model pair
        knows other things than the embedded one), else the embedded pair's in `lang`."""
        own = PRESETS[preset].story if preset in PRESETS else None
        if own is not None:
            return own[0 if self.level == "easy" else 1]
        return story_question(self.level, "zh" if lang.startswith("zh") else "en")


_SD = replace(APP_DEFAULTS, method="speculative", rule=None, alpha=None)

SCENES: tuple[Scene, ...] = (
    # 1. lossless SD on the easy question: good drafts rejected for not being the verifier's
    Scene("sd", "easy", _SD),
    # 2. the speculative cascade on the same question: the drafter's correct answer is kept
    Scene("cascade", "easy", APP_DEFAULTS),
    # 3. a hard question: the rule hands the facts to the verifier
    Scene("hard", "hard", APP_DEFAULTS),
    # 4. moving alpha: at alpha < 0 TokenV3 is exactly SD; the what-if shows what it would
    #    defer, the sweep the whole trade-off
    Scene("alpha", "easy", APP_DEFAULTS, whatif_alpha=-0.1, sweep=True),
)
SCENE = {s.key: s for s in SCENES}

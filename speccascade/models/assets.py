"""Where the shipped files are: the top-level `assets/` folder of a checkout, which the build
maps into the package as `speccascade.assets` (pyproject.toml), so an installed wheel carries
it and works from anywhere. It holds the models (the embedded pair, the distilled SmolLM2
drafter and their training reports), data (the eval sets, the project's facts, WordNet's
licence) and the page's static CSS and JavaScript.

Nothing here imports the rest of the package: every layer may ask where a file is."""

from __future__ import annotations

from pathlib import Path


def _root() -> Path:
    """The assets folder: speccascade/assets in an installed wheel (pyproject maps the
    top-level folder there; it has no __init__, so it is found by path, not imported), else
    (a checkout, an editable install, a Space running app.py from its folder) the top-level
    assets/ beside the package."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "assets"
    return installed if (installed / "models").is_dir() else package.parent / "assets"


ASSETS = _root()
MODELS = ASSETS / "models"
DATA = ASSETS / "data"
STATIC = ASSETS / "static"
# The embedded demo pair: what `load_pair()` loads, and the "demo" preset.
DEMO_DRAFTER = str(MODELS / "demo-drafter")
DEMO_VERIFIER = str(MODELS / "demo-verifier")
# What the demo pair learnt to answer, with key facts (scripts/demo_corpus.py writes it).
DEMO_TAUGHT = DATA / "demo_taught.jsonl.gz"
# The drafter distilled for SmolLM2 by scripts/distill_smollm2_drafter.py.
SMOLLM2_DRAFTER = str(MODELS / "smollm2-drafter")


def static_text(name: str) -> str:
    """A static file of the page (CSS, JavaScript), as text."""
    return (STATIC / name).read_text(encoding="utf-8")

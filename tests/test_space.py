"""What a Hugging Face Space reads from this repository agrees with the code: the README's front
matter lists exactly the models the presets offer, requirements.txt installs what the package
depends on, the pair the offer leads to is the one the measurement chose, and the README's
deployment table is the measurement's own."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from speccascade.models.presets import FIRST_USE, PRESETS, hub_models

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_hub_pairs  # noqa: E402

README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCH = json.loads(bench_hub_pairs.OUT.read_text(encoding="utf-8"))


def front_matter() -> str:
    match = re.match(r"---\n(.*?)\n---\n", README, re.S)
    assert match, "the README starts with the Space's front matter"
    return match.group(1)


def test_the_front_matter_lists_exactly_the_presets_models():
    listed = re.search(r"^models:\n((?:  - .+\n?)+)", front_matter(), re.M).group(1)
    models = [line.removeprefix("  - ").strip() for line in listed.splitlines()]
    assert sorted(models) == hub_models(), set(models) ^ set(hub_models())
    assert "HuggingFaceTB/SmolLM2-360M-Instruct" in models  # the offer's target


def test_requirements_install_what_the_package_depends_on():
    """A Space installs requirements.txt, not the package: the same packages and ranges."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]
    assert sorted(reqs) == sorted(d.split("#")[0].strip() for d in deps)


def test_the_offer_leads_to_the_pair_the_measurement_chose():
    """The demo pair's offer tries the chosen hub pair first, then the offline one; every
    target has its measured first use (the offer names its download and first load)."""
    switch = PRESETS["demo"].switch_to
    assert switch[0] == BENCH["chosen"] and not PRESETS[switch[0]].offline
    assert PRESETS[switch[-1]].offline
    first = json.loads(FIRST_USE.read_text())["pairs"]
    for name in switch:
        r = BENCH["pairs"][name]
        assert first[name] == {"download_bytes": r["download_bytes"],
                               "first_load_s": round(r["first_load_s"])}  # fmt: skip
    chosen = BENCH["pairs"][BENCH["chosen"]]
    assert chosen["verifier_64_s"] <= BENCH["budget_s"]  # the rule it was chosen by
    assert chosen["peak_rss_gb"] <= BENCH["basic_memory_gb"] - BENCH["app_headroom_gb"]


def test_the_readme_table_is_the_measurement():
    """Every number in the README's deployment table comes from docs/bench/hub_pairs.json
    (scripts/bench_hub_pairs.py --report prints it)."""
    assert bench_hub_pairs.report(BENCH) in README


def test_the_choice_follows_its_rule():
    """The best MT-Bench among the pairs that fit; a pair over the budget or the memory never
    is chosen, whatever its quality."""
    pairs = {
        "a": {"preset": "a", "verifier_64_s": 10.0, "peak_rss_gb": 3.0,
              "quality": {"mt_bench": 3.0, "ifeval": 40.0}},
        "b": {"preset": "b", "verifier_64_s": 90.0, "peak_rss_gb": 3.0,
              "quality": {"mt_bench": 6.0, "ifeval": 50.0}},
        "c": {"preset": "c", "verifier_64_s": 10.0, "peak_rss_gb": 30.0,
              "quality": {"mt_bench": 7.0, "ifeval": 60.0}},
    }  # fmt: skip
    assert bench_hub_pairs.choose(pairs) == "a"
    pairs["a"]["verifier_64_s"] = 99.0
    assert bench_hub_pairs.choose(pairs) is None
    assert bench_hub_pairs.amdahl(10.0, 5.0, 8) == (0.0, 0.125)  # all parallel
    assert bench_hub_pairs.amdahl(10.0, 10.0, 8) == (1.0, 1.0)  # none

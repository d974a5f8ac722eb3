"""The generated parts of BENCHMARKS.md and the README: each lies between
`<!-- NAME:start -->` and `<!-- NAME:end -->` and is rendered from committed raw files under
docs/bench/ by the renderer registered for NAME. `scripts/bench_all.py` measures and renders;
a test re-renders every part from the files and compares, so a published number is always its
file's."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from speccascade.views.report import (
    character_markdown,
    character_summary_line,
    held_out_markdown,
)

RENDERERS: dict[str, Callable[[Path], str]] = {}


def renderer(name: str):
    """Register the function that renders part NAME from the docs/bench folder."""

    def register(fn: Callable[[Path], str]) -> Callable[[Path], str]:
        RENDERERS[name] = fn
        return fn

    return register


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def parts_in(doc: str) -> list[str]:
    """The generated parts a document holds, in order."""
    return re.findall(r"<!-- ([\w-]+):start -->", doc)


def current(doc: str, name: str) -> str:
    """What the document holds between NAME's markers."""
    start, end = markers(name)
    if start not in doc or end not in doc:
        raise KeyError(f"no {start} ... {end} part")
    return doc.split(start, 1)[1].split(end, 1)[0].strip("\n")


def splice(doc: str, name: str, text: str) -> str:
    """The document with NAME's part replaced by `text`."""
    start, end = markers(name)
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{text.strip(chr(10))}\n{end}{tail}"


def render(doc: str, bench: Path) -> str:
    """Every part the document holds, rendered from the files under `bench`."""
    for name in parts_in(doc):
        doc = splice(doc, name, RENDERERS[name](bench))
    return doc


# -- the renderers ------------------------------------------------------------------------------


def _character(bench: Path):
    from speccascade.analysis import character

    raw, story, machine = character.load(bench / "character")
    return character.summary(raw, story), machine


@renderer("character")
def _character_table(bench: Path) -> str:
    summary, machine = _character(bench)
    return character_markdown(summary, machine, "docs/bench/character/")


@renderer("character-line")
def _character_line(bench: Path) -> str:
    summary, machine = _character(bench)
    return character_summary_line(summary, machine)


@renderer("general")
def _general(bench: Path) -> str:
    """The SmolLM2 pair on its held-out general-knowledge set (scripts/bench_general.py)."""
    from speccascade.analysis import character
    from speccascade.analysis.evalsets import GENERAL_HELDOUT, load_evalset

    folder = bench / "general"
    if not (folder / "rows.jsonl").exists():
        return "Not measured yet: `python scripts/bench_general.py`."
    raw = character.read_rows(folder / "rows.jsonl")
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    kinds = {x.question: x.kind for x in load_evalset(GENERAL_HELDOUT)}
    summary = character.held_out_summary(raw, kinds)
    return held_out_markdown(summary, meta, "docs/bench/general/")


# sets whose questions have a right answer here (the others: the right answer is to decline)
_ANSWERABLE = ("eval set", "typed variants")


def _share(k: int, n: int) -> str:
    from speccascade.analysis.stats import wilson

    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "–"


@renderer("doubts")
def _doubts(bench: Path) -> str:
    data = json.loads((bench / "doubts" / "doubts.json").read_text(encoding="utf-8"))
    lines = [
        f"Machine: {data['machine'].get('cpu', '?')}; the app's defaults, greedy. Raw rows: "
        "`docs/bench/doubts/doubts.json`.",
        "",
        "| set | n | right, no flag | right, flagged | wrong, declined | wrong, made up "
        "| wrong, “wrong” | wrong, missed | right [95%] | declined [95%] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, counts in data["sets"].items():
        cells = [counts[k] for k in ("right_none", "right_flagged", "wrong_declined",
                                     "wrong_unknown", "wrong_wrong", "wrong_none")]  # fmt: skip
        n = counts["n"]
        right = _share(cells[0] + cells[1], n) if name in _ANSWERABLE else "–"
        cells += [right, _share(counts["wrong_declined"], n)]
        lines.append(f"| {name} | {n} | " + " | ".join(map(str, cells)) + " |")
    sets = data["sets"].values()
    missed = sum(c["wrong_none"] for c in sets)
    flagged_right = sum(c["right_flagged"] for c in sets)
    lines.append("")
    if missed == flagged_right == 0:
        lines.append("Every wrong answer is flagged and no right one.")
    else:
        lines.append(
            f"Wrong answers with no flag: {missed}; right answers flagged: {flagged_right}."
        )
    return "\n".join(lines)


@renderer("engine")
def _engine(bench: Path) -> str:
    """Our engine against transformers, one table per pair (scripts/bench_engine.py)."""
    names = {"verifier/hf_generate": "our verifier loop / `generate()`",
             "speculative/hf_assisted": "our lossless SD / assisted generation"}  # fmt: skip
    lines = []
    for path in sorted((bench / "engine").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        s, m, cfg = data["summary"], data["machine"], data["settings"]
        lines += [
            f"**{data['pair']}** pair · {m.get('cpu', '?')}, {m.get('threads', '?')} threads · "
            f"{s['questions']} questions of `{cfg.get('questions', 'assets/data/evalset.jsonl')}`"
            f", greedy, {cfg['max_new_tokens']} new tokens at "
            f"most, γ = {cfg['gamma']}, {cfg['repeats']} interleaved runs each (medians) · "
            f"`docs/bench/engine/{path.name}`",
            "",
            "| time, ours / transformers' | ratio | 95% interval | target | verdict "
            "| same tokens |",
            "|---|---|---|---|---|---|",
        ]
        for check, key in zip(s["checks"], names):
            lo, hi = check["ci95"]
            same, n = s["tokens_identical"][key]
            lines.append(
                f"| {names[key]} | {check['value']:.3f} | [{lo:.3f}, {hi:.3f}] "
                f"| {check['target']} | {check['verdict']} | {same} of {n} |"
            )
        lines.append("")
    return "\n".join(lines).strip("\n") or "No engine study has been run yet."

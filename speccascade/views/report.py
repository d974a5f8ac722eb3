"""Benchmark reports: self-contained HTML with the curves, and the Markdown tables of
BENCHMARKS.md, written from one run's tables."""

from __future__ import annotations

import csv
import html as _html
import json
from pathlib import Path

import numpy as np
import pandas as pd


def _plain(obj):
    """JSON for numpy scalars: booleans stay booleans, numbers numbers."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return None if np.isnan(obj) else float(obj)
    return str(obj)


def write_raw_csv(path: Path, raw: pd.DataFrame) -> None:
    """One row per run. Every text is quoted (a model's answer may hold a carriage return,
    which would end an unquoted row), and the token ids are kept (space-separated): the
    answer exactly as the model wrote it."""
    rows = raw.copy()
    if "token_ids" in rows:
        rows["token_ids"] = [" ".join(map(str, ids)) for ids in rows["token_ids"]]
    rows.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)


def write_report(
    out: Path, raw: pd.DataFrame, agg: pd.DataFrame, table: pd.DataFrame, targets: dict, meta: dict
) -> None:
    """Everything a run produces: raw.csv (one row per run), summary.csv (per config),
    table.csv, targets.json, report.html and report.md."""
    out.mkdir(parents=True, exist_ok=True)
    write_raw_csv(out / "raw.csv", raw)
    agg.to_csv(out / "summary.csv", index=False)
    table.to_csv(out / "table.csv", index=False)
    doc = {"meta": meta, "targets": targets}
    (out / "targets.json").write_text(json.dumps(doc, indent=1, default=_plain) + "\n")
    (out / "report.html").write_text(report_html(agg, table, targets, meta))
    (out / "report.md").write_text(report_markdown(agg, table, targets, meta))


def report_html(agg: pd.DataFrame, table: pd.DataFrame, targets: dict, meta: dict) -> str:
    """A self-contained HTML report (plotly.js inlined once)."""
    from speccascade.views.compare import quality_latency

    parts, first = [], True
    for temp in sorted(agg.temperature.unique()):
        pts = agg[(agg.temperature == temp) & ~agg.method.isin(["verifier"])].copy()
        pts["method"] = pts.family + " g=" + pts.gamma.astype(str)
        v = agg[(agg.temperature == temp) & (agg.method == "verifier")].iloc[0]
        for x in ("relative_latency", "verifier_calls_per_token"):
            shown = pts.copy()
            if x != "relative_latency":  # transformers' generate does not report its calls
                shown.loc[shown.method.str.startswith("hf_"), x] = float("nan")
            fig = quality_latency(
                shown, current={x: v[x], "quality": v.quality}, x=x, current_label="verifier alone"
            )
            fig.update_layout(
                title=f"T = {temp:g}: quality vs {x.replace('_', ' ')} (x marks the verifier alone)"
            )
            parts.append(
                fig.to_html(full_html=False, include_plotlyjs="inline" if first else False)
            )
            first = False
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>speccascade bench</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 6px;font-size:13px}}</style></head><body>
<h1>speccascade quality-latency benchmark</h1>
<pre>{_html.escape(json.dumps(meta, indent=1, default=_plain))}</pre>
<h2>Targets</h2><pre>{_html.escape(json.dumps(targets, indent=1, default=_plain))}</pre>
<h2>Trade-off table (paper's Table 2 shape)</h2>{table.round(3).to_html(index=False)}
<h2>Curves</h2>{"".join(parts)}
<h2>All configurations</h2>{agg.drop(columns=[]).round(4).to_html(index=False)}
</body></html>"""


def report_markdown(agg: pd.DataFrame, table: pd.DataFrame, targets: dict, meta: dict) -> str:
    """The tables of BENCHMARKS.md, straight from a run."""

    def cell(x) -> str:
        if isinstance(x, float):
            return "" if x != x else f"{x:.3f}"
        return "" if x is None else str(x).replace("|", "\\|")

    def fmt(df: pd.DataFrame) -> str:  # pandas' to_markdown needs tabulate; this is enough
        if not len(df):
            return "(none)"
        rows = [list(map(str, df.columns)), ["---"] * len(df.columns)]
        rows += [[cell(x) for x in r] for r in df.itertuples(index=False)]
        return "\n".join("| " + " | ".join(r) + " |" for r in rows)

    lines = ["## Machine and run", "", fmt(pd.DataFrame(list(meta.items()), columns=["setting", "value"])),
             "", "## Trade-off table (paper's Table 2 shape)", "",
             "(a) latency reduction relative to the verifier alone at the verifier's quality; "
             "(b) the best quality reachable without exceeding the verifier's latency.", "",
             fmt(table), ""]  # fmt: skip
    cols = ["family", "alpha", "gamma", "accuracy", "accuracy_lo", "accuracy_hi",
            "accuracy_easy", "accuracy_hard", "rouge_l", "agreement", "relative_latency",
            "verifier_calls_per_token", "acceptance_rate", "mean_accepted_length", "wall_s",
            "peak_mb"]  # fmt: skip
    for temp in sorted(agg.temperature.unique()):
        lines += [f"## All configurations, T = {temp:g}", "",
                  fmt(agg[agg.temperature == temp][cols]), ""]  # fmt: skip
    lines += ["## Targets", "", "```json", json.dumps(targets, indent=1, default=_plain), "```", ""]
    return "\n".join(lines)


# -- the approaches' character (speccascade.analysis.character) -----------------------------

_APPROACH_NAMES = {
    "verifier": "verifier alone",
    "drafter": "drafter alone",
    "seq_cascade": "sequence cascade (Chow)",
    "speculative": "speculative decoding (lossless)",
    "spec_cascade": "speculative cascade (TokenV3, α 0.5)",
    "hf_generate": "transformers' `generate()` (the verifier)",
}


def _ci(triple, pct: bool = False) -> str:
    value, lo, hi = triple
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if pct:
        return f"{100 * value:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
    return f"{value:.2f}x [{lo:.2f}, {hi:.2f}]"


def _machine_line(machine: dict, source: str) -> str:
    return (
        f"Machine: {machine.get('cpu', '?')}, {machine.get('threads', '?')} threads, torch "
        f"{machine.get('torch', '?')}. Raw rows: `{source}` (token ids, every run's time)."
    )


def _checks_table(checks: list[dict]) -> list[str]:
    """Every target with its measured value, interval and verdict, as Markdown rows."""
    lines = ["| target | measured [95% interval] | needed | verdict |", "|---|---|---|---|"]
    for c in checks:
        lo, hi = c["ci95"]
        lines.append(
            f"| {c['name']} | {c['value']:.3f} [{lo:.3f}, {hi:.3f}] | {c['target']} | "
            f"{c['verdict']} |"
        )
    return lines


def character_markdown(summary: dict, machine: dict, source: str) -> str:
    """The lesson's table as Markdown: each approach's speed-up and key-fact accuracy on the
    easy and the hard questions and on all of them, the story's question alone, and every
    target with its interval and verdict."""
    groups = summary["groups"]
    names = [g for g in ("easy", "hard", "all") if g in groups]
    head = " | ".join(f"{g} (n={groups[g]['n']}): speed-up | {g}: key facts" for g in names)
    lines = [
        _machine_line(machine, source),
        "",
        f"| approach | {head} |",
        "|---" * (1 + 2 * len(names)) + "|",
    ]
    for m, label in _APPROACH_NAMES.items():
        if m not in groups[names[0]]:
            continue
        cells = []
        for g in names:
            d = groups[g][m]
            cells += [_ci(d["speedup"]), _ci(d["accuracy"], pct=True)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    notes = []
    for g in names:
        seq = groups[g].get("seq_cascade", {})
        if "kept_answers" in seq:
            notes.append(f"{g}: {_ci(seq['kept_answers'], pct=True)}")
    if notes:
        lines += ["The sequence cascade kept the drafter's answer (did not defer) on: "
                  + "; ".join(notes) + ".", ""]  # fmt: skip
    for g in names:
        for m in ("speculative", "spec_cascade"):
            if "acceptance" in groups[g].get(m, {}):
                notes = _ci(groups[g][m]["acceptance"], pct=True)
                lines.append(f"- {g}, {_APPROACH_NAMES[m]}: drafts accepted {notes}")
    lines.append("")
    if summary.get("story"):
        lines += [
            "| question | approach | share of the answer kept from the drafter | states the "
            "facts | median time (s) | runs |",
            "|---|---|---|---|---|---|",
        ]
        for q, by in summary["story"].items():
            for m, label in _APPROACH_NAMES.items():
                if m in by:
                    r = by[m]
                    lines.append(
                        f"| {q} | {label} | {100 * r['kept_share']:.0f}% | "
                        f"{'yes' if r['correct'] else 'no'} | {r['wall_s']:.3f} | {len(r['walls'])} |"
                    )
        lines.append("")
    return "\n".join(lines + _checks_table(summary["checks"])) + "\n"


def held_out_markdown(summary: dict, meta: dict, source: str) -> str:
    """A held-out set's table (analysis.character.held_out_summary): each approach's speed-up
    and key-fact accuracy on all questions, its accuracy per kind of question and against the
    verifier's, how often its tokens are the verifier's own, and the checks."""
    groups, m = summary["groups"], meta["machine"]
    kinds = [k for k in groups if k != "all"]
    head = " | ".join(f"{k} (n={groups[k]['n']}): key facts" for k in kinds)
    lines = [
        _machine_line(m, source),
        "",
        f"| approach | all (n={groups['all']['n']}): speed-up | all: key facts | {head} "
        "| accuracy - verifier's | same tokens as the verifier |",
        "|---" * (5 + len(kinds)) + "|",
    ]
    for name, label in _APPROACH_NAMES.items():
        if name not in groups["all"]:
            continue
        d = groups["all"][name]
        diff = summary["vs_verifier"][name]
        same, n = summary["same_tokens_as_verifier"][name]
        cells = [_ci(d["speedup"]), _ci(d["accuracy"], pct=True)]
        cells += [_ci(groups[k][name]["accuracy"], pct=True) for k in kinds]
        margin = (
            "–"  # the verifier against itself
            if name == "verifier"
            else f"{100 * diff[0]:+.1f} [{100 * diff[1]:+.1f}, {100 * diff[2]:+.1f}] points"
        )
        cells += [margin, f"{same} of {n}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    for name in ("speculative", "spec_cascade"):
        if "acceptance" in groups["all"].get(name, {}):
            accepted = _ci(groups["all"][name]["acceptance"], pct=True)
            lines.append(f"- {_APPROACH_NAMES[name]}: drafts accepted {accepted}")
    return "\n".join([*lines, "", *_checks_table(summary["checks"])]) + "\n"


def character_summary_line(summary: dict, machine: dict) -> str:
    """The README's line: each approach's speed-up on the eval set, and the sequence
    cascade's on the easy and the hard questions (BENCHMARKS.md has the table)."""
    g = summary["groups"]
    a = g["all"]
    parts = [
        f"lossless SD {_ci(a['speculative']['speedup'])}",
        f"the speculative cascade {_ci(a['spec_cascade']['speedup'])} at "
        f"{_ci(a['spec_cascade']['accuracy'], pct=True)} key-fact accuracy "
        f"(the verifier alone: {_ci(a['verifier']['accuracy'], pct=True)})",
    ]
    seq = []
    for level in ("easy", "hard"):
        if level in g:
            seq.append(f"{_ci(g[level]['seq_cascade']['speedup'])} on {level} questions")
    line = (
        f"On the embedded pair's {a['n']} eval questions ({machine.get('cpu', '?')}, "
        f"{machine.get('threads', '?')} threads), against the verifier alone: "
        + "; ".join(parts)
        + (f"; the sequence cascade {' and '.join(seq)}" if seq else "")
        + ". Speed-ups: time to answer every question, medians of 3 interleaved runs, 95% "
        "bootstrap intervals over questions."
    )
    return line

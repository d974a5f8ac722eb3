"""The benchmark end to end on two prompts: report structure and every method present."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from speccascade import SPEC_CASCADE_RULES
from speccascade.bench import (
    HF_ASSISTED,
    HF_VERIFIER,
    aggregate,
    bench_configs,
    engine_targets,
    report_html,
    run_bench,
    tradeoff_table,
)
from speccascade.cli import main


@pytest.fixture(scope="module")
def bench(llama_pair):
    items = [("hello", "hello world"), ("the quick", "brown fox")]
    configs = bench_configs(list(SPEC_CASCADE_RULES), 2, [2], [0.0, 1.0])
    raw = run_bench(llama_pair, items, configs, repeats=2, max_new_tokens=6, warmup=1)
    return configs, raw, aggregate(raw)


def test_grid_covers_every_method(bench):
    configs, raw, agg = bench
    methods = set(agg.method)
    assert methods == {
        "verifier",
        "drafter",
        "speculative",
        "lossy_speculative",
        "bild",
        "token_cascade",
        "seq_cascade",
        "spec_cascade",
        HF_VERIFIER,
        HF_ASSISTED,
    }
    assert set(agg[agg.method == "spec_cascade"].rule) == set(SPEC_CASCADE_RULES)
    assert set(agg[agg.method.isin([HF_VERIFIER, HF_ASSISTED])].temperature) == {0.0}
    assert len(raw) == len(configs) * 2 * 2  # configs x items x repeats


def test_repeats_are_interleaved(bench):
    configs, raw, _ = bench
    first_item = raw[raw["item"] == 0]
    assert list(first_item["repeat"][: len(configs)]) == [0] * len(configs)
    assert list(first_item["label"][: len(configs)]) == [c.label for c in configs]


def test_aggregate_and_tables(bench):
    _, raw, agg = bench
    for col in (
        "quality",
        "agreement",
        "wall_s",
        "relative_latency",
        "verifier_calls_per_token",
        "acceptance_rate",
        "mean_accepted_length",
        "peak_mb",
    ):
        assert col in agg.columns
    v = agg[(agg.method == "verifier") & (agg.temperature == 0)].iloc[0]
    assert v.relative_latency == 1.0 and v.agreement == 1.0
    hf = agg[agg.method == HF_VERIFIER].iloc[0]
    assert hf.same_tokens_as_verifier == 1.0  # our greedy verifier = verifier.generate()
    sd = agg[(agg.method == "speculative") & (agg.temperature == 0)].iloc[0]
    assert sd.same_tokens_as_verifier == 1.0 and sd.agreement == 1.0
    table = tradeoff_table(agg)
    assert {"latency_reduction_at_verifier_quality", "best_quality_within_verifier_latency"} <= set(
        table.columns
    )
    assert "spec_cascade/token_v3" in set(table.method)
    targets = engine_targets(agg, raw, gamma=2)
    assert set(targets) == {"1_engine_overhead", "2_greedy_sd", "3_efficiency", "4_tradeoff"}
    assert targets["2_greedy_sd"]["sd_same_tokens_as_verifier"] == 1.0
    html = report_html(agg, table, targets, {"pair": "tiny"})
    assert html.count("plotly") > 3 and "Trade-off table" in html


def test_cli_bench_writes_the_report(tiny_dirs, tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"question": q, "answer": a, "kind": "noun"})
            for q, a in [("hello", "hi"), ("what", "that")]
        )
    )
    d, v = tiny_dirs["llama"]
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--drafter",
            d,
            "--verifier",
            v,
            "--limit",
            "2",
            "--repeats",
            "1",
            "--alphas",
            "2",
            "--rules",
            "token_v3,chow",
            "--max-new-tokens",
            "4",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    for name in ("report.html", "report.md", "summary.csv", "table.csv", "raw.csv", "targets.json"):
        assert (out / name).stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv")
    assert {"spec_cascade", HF_ASSISTED, "verifier"} <= set(summary.method)
    assert "targets" in json.loads((out / "targets.json").read_text())

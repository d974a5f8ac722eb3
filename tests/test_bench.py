"""The benchmark end to end on two prompts: report structure and every method present."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from speccascade import SPEC_CASCADE_RULES
from speccascade.analysis.bench import (
    HF_ASSISTED,
    HF_VERIFIER,
    BenchItem,
    aggregate,
    bench_configs,
    bootstrap_ci,
    engine_targets,
    eval_targets,
    run_bench,
    tradeoff_table,
)
from speccascade.cli import main
from speccascade.views.report import report_html


@pytest.fixture(scope="module")
def bench(llama_pair):
    # a fact every non-empty answer states, and one no answer states
    items = [
        BenchItem("hello", "hello world", (r"\w",), "easy"),
        BenchItem("the quick", "fox", ("zzzq",), "hard"),
    ]
    configs = bench_configs(list(SPEC_CASCADE_RULES), 2, [2], [0.0, 1.0])
    raw = run_bench(llama_pair, items, configs, repeats=2, samples=3, max_new_tokens=6, warmup=1)
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
    greedy = [c for c in configs if c.temperature == 0]
    sampled = [c for c in configs if c.temperature > 0]
    assert len(raw) == 2 * (2 * len(greedy) + 3 * len(sampled))  # items x (repeats | samples)
    t1 = raw[raw.temperature > 0]
    assert (
        set(t1["sample"]) == {0, 1, 2} and t1.groupby(["item", "sample"]).seed.nunique().max() == 1
    )
    assert set(raw[raw.temperature == 0]["sample"]) == {0}


def test_repeats_are_interleaved(bench):
    configs, raw, _ = bench
    first_item = raw[raw["item"] == 0]
    assert list(first_item["repeat"][: len(configs)]) == [0] * len(configs)
    assert list(first_item["label"][: len(configs)]) == [c.label for c in configs]


def test_aggregate_and_tables(bench):
    _, raw, agg = bench
    for col in (
        "quality",
        "accuracy",
        "accuracy_lo",
        "accuracy_hi",
        "accuracy_easy",
        "accuracy_hard",
        "rouge_l",
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
    # the easy item's fact is stated by any non-empty answer, the hard one's by none
    assert v.accuracy_hard == 0.0 and v.accuracy == v.accuracy_easy / 2
    assert v.accuracy_lo <= v.accuracy <= v.accuracy_hi
    hf = agg[agg.method == HF_VERIFIER].iloc[0]
    assert hf.same_tokens_as_verifier == 1.0  # our greedy verifier = verifier.generate()
    sd = agg[(agg.method == "speculative") & (agg.temperature == 0)].iloc[0]
    assert sd.same_tokens_as_verifier == 1.0 and sd.agreement == 1.0
    table = tradeoff_table(agg)
    assert {"latency_reduction_at_verifier_quality", "best_quality_within_verifier_latency"} <= set(
        table.columns
    )
    assert "spec_cascade/token_v3" in set(table.method)
    targets = engine_targets(agg, gamma=2)
    assert set(targets) == {
        "verifier_loop_vs_generate",
        "greedy_sd_vs_hf_assisted",
        "sd_efficiency",
    }
    assert targets["greedy_sd_vs_hf_assisted"]["sd_same_tokens_as_verifier"] == 1.0
    # each target's value and verdict, recomputed from the raw runs: a config's time is the
    # sum over items of its median run; "same tokens" compares each greedy run's ids
    greedy = raw[raw.temperature == 0]

    def seconds(method: str, gamma: int | None = None) -> float:
        rows = greedy[greedy.method == method]
        if gamma is not None:
            rows = rows[(rows.gamma == gamma) & (rows.policy == "fixed")]
        assert rows.label.nunique() == 1, set(rows.label)
        return float(rows.groupby("item").wall_s.median().sum())

    def same_tokens(method: str) -> bool:
        ours = greedy[greedy.method == "verifier"].groupby("item").token_ids.first()
        rows = greedy[greedy.method == method]
        rows = rows[(rows.gamma == 2) & (rows.policy == "fixed")] if method != HF_VERIFIER else rows
        return all(list(t) == list(ours[i]) for i, t in zip(rows["item"], rows.token_ids))

    ratio = seconds("speculative", 2) / seconds(HF_ASSISTED, 2)
    sd_vs_hf = targets["greedy_sd_vs_hf_assisted"]
    assert sd_vs_hf["ratio"] == pytest.approx(ratio)
    assert sd_vs_hf["met"] is (ratio <= 1.0 and same_tokens("speculative"))
    ratio = seconds("verifier") / seconds(HF_VERIFIER)
    loop = targets["verifier_loop_vs_generate"]
    assert loop["ratio"] == pytest.approx(ratio)
    assert loop["met"] is (ratio <= 1.05 and same_tokens(HF_VERIFIER))
    ev = eval_targets(agg, raw, gamma=2)
    assert set(ev) == {"T=0", "T=1"}
    assert ev["T=0"]["drafter_accuracy_hard"]["met"] is True  # 0 correct on the hard item
    assert ev["T=0"]["verifier_accuracy"]["met"] is False
    html = report_html(agg, table, targets, {"pair": "tiny"})
    assert html.count("plotly") > 3 and "Trade-off table" in html


def test_bootstrap_interval_covers_the_mean_and_shrinks_with_more_data():
    rng = np.random.default_rng(0)
    small = (rng.random((20, 5)) < 0.7).astype(float)
    big = (rng.random((400, 5)) < 0.7).astype(float)
    lo, hi = bootstrap_ci(small)
    assert lo < small.mean() < hi
    lo2, hi2 = bootstrap_ci(big)
    assert lo2 < big.mean() < hi2 and hi2 - lo2 < hi - lo
    assert bootstrap_ci(np.ones((10, 3))) == (1.0, 1.0)


def test_cli_bench_writes_the_report(tiny_dirs, tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"question": q, "answer": a, "kind": "noun", "facts": [r"\w"]})
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
            "--samples",
            "2",
            "--out",
            str(out),
            "--evalset",
            str(path),
        ]
    )
    assert code == 0
    for name in ("report.html", "report.md", "summary.csv", "table.csv", "raw.csv", "targets.json"):
        assert (out / name).stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv")
    assert {"spec_cascade", HF_ASSISTED, "verifier"} <= set(summary.method)
    doc = json.loads((out / "targets.json").read_text())
    # the engine target in the file is the one the summary's own rows give (gamma 4, T = 0)
    g0 = summary[(summary.temperature == 0) & (summary.policy == "fixed")]
    sd = g0[(g0.method == "speculative") & (g0.gamma == 4)].iloc[0]
    hf = g0[(g0.method == HF_ASSISTED) & (g0.gamma == 4)].iloc[0]
    sd_vs_hf = doc["targets"]["engine"]["greedy_sd_vs_hf_assisted"]
    assert sd_vs_hf["ratio"] == pytest.approx(sd.wall_s / hf.wall_s)
    assert sd_vs_hf["met"] is bool(
        sd.wall_s / hf.wall_s <= 1.0 and sd.same_tokens_as_verifier == 1.0
    )
    # the file's questions are all "hard" (the default level): the easy target has no items
    eval_t = doc["targets"]["eval"]
    for t in eval_t.values():
        assert math.isnan(t["drafter_accuracy_easy"]["value"]), t
        assert t["drafter_accuracy_easy"]["met"] is False
    assert "transformers" in doc["meta"] and "/" not in doc["meta"]["pair"]
    raw = pd.read_csv(out / "raw.csv")
    assert {"seed", "sample", "text", "wall_s"} <= set(raw.columns)


def test_policy_axis_pins_hf_schedules(llama_pair):
    from speccascade.analysis.bench import HF_ASSISTED, HF_SCHEDULES, hf_generate, run_config

    configs = bench_configs(
        ["token_v3"], 2, [3], [0.0], policies=["fixed", "heuristic", "confidence"]
    )
    sd = {c.policy for c in configs if c.method == "speculative"}
    cascade = {c.policy for c in configs if c.method == "spec_cascade" and c.alpha == 0.5}
    hf = {c.policy for c in configs if c.method == HF_ASSISTED}
    assert sd == cascade == {"fixed", "heuristic", "confidence"}
    assert hf == set(HF_SCHEDULES) == {"fixed", "heuristic"}  # HF has no confidence twin here
    assert len({c.label for c in configs}) == len(configs)
    ids = llama_pair.encode("hi")
    before = llama_pair.drafter.generation_config
    ours = run_config(llama_pair, next(c for c in configs if c.method == "speculative"
                                       and c.policy == "heuristic"), "hi", 12, 0)  # fmt: skip
    theirs, _ = hf_generate(llama_pair, ids, 12, gamma=3, policy="heuristic")
    assert ours["token_ids"] == theirs  # greedy SD is the verifier's output either way
    assert ours["wasted_drafts"] is not None
    assert llama_pair.drafter.generation_config is before  # the schedule was pinned for one call


def test_raw_csv_keeps_every_row_and_its_token_ids(tmp_path):
    """An answer with a carriage return or a quote stays one row; its token ids come back."""
    import csv

    import pandas as pd

    from speccascade.views.report import write_raw_csv

    raw = pd.DataFrame(
        {
            "question": ["Who is A?", "Who is B?"],
            "text": ['Hol\r a month, "quoted"\nnext', "plain"],
            "token_ids": [[5, 6, 7], [8]],
            "wall_s": [0.5, 0.25],
        }
    )
    write_raw_csv(tmp_path / "raw.csv", raw)
    with open(tmp_path / "raw.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["text"] for r in rows] == list(raw.text)
    assert [list(map(int, r["token_ids"].split())) for r in rows] == [[5, 6, 7], [8]]

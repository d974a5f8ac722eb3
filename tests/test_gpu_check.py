"""scripts/gpu_check.py, the check to run the day a GPU is lent, runs here on CPU with tiny
limits (so it does not rot), and fails where the engine breaks an oracle."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import gpu_check  # noqa: E402

from speccascade.core import engine  # noqa: E402

CHECKS = [
    "our verifier loop = verifier.generate() (greedy)",
    "Fact 1: greedy SD = verifier alone",
    "Fact 1: every rule at its SD end = verifier alone",
    "Fact 2: every rule at its drafter end = drafter alone",
    "Fact 6: greedy TokenV3 writes argmax q iff p(argmax q) >= (1 - a) max p",
    "Facts 3-4: exact laws on a 7-token vocabulary",
]
BENCH = [
    "verifier alone",
    "HF generate()",
    "SD gamma=4",
    "HF assisted gamma=4",
    "spec. cascade token_v3 a=0.5 gamma=5",
    "drafter alone",
]


def _tiny(tiny_dirs, tmp_path, *extra: str) -> list[str]:
    d, v = tiny_dirs["llama"]
    return [
        "--device", "cpu", "--drafter", d, "--verifier", v, "--prompts", "2",
        "--exact-tokens", "8", "--max-new-tokens", "6", "--repeats", "1",
        "--json", str(tmp_path / "rows.json"), *extra,
    ]  # fmt: skip


def test_the_check_runs_on_cpu_and_prints_one_table(tiny_dirs, tmp_path, capsys):
    assert gpu_check.main(_tiny(tiny_dirs, tmp_path, "--law-samples", "50")) == 0
    out = capsys.readouterr().out
    rows = json.loads((tmp_path / "rows.json").read_text())
    checks = [r for r in rows if r["part"] == "check"]
    audits = [r for r in checks if r["name"].startswith("Fact 3 sampled")]
    assert [r["name"] for r in checks if r not in audits] == CHECKS
    assert len(audits) == 2 and all(r["result"] in ("pass", "n/a") for r in audits), audits
    assert all(r["result"] == "pass" for r in checks if r not in audits), checks
    assert "2 runs x 8 tokens" in checks[0]["detail"]  # both prompts, every token
    bench = {r["name"]: r for r in rows if r["part"] == "bench"}
    assert list(bench) == BENCH
    assert all(r["result"] == "1 x 2" and r["seconds"] > 0 for r in bench.values())
    assert bench["verifier alone"]["vs_verifier"] == 1.0
    # greedy and lossless: HF's generate and both speculative decodings write the verifier's
    # tokens (the tiny models are float32 on CPU, where this holds exactly)
    for name in ("HF generate()", "SD gamma=4", "HF assisted gamma=4"):
        assert "same tokens as the verifier alone: 2/2" in bench[name]["detail"], bench[name]
    # one table: a header, a rule, a line per row
    table = out[out.index("| ") :].strip().splitlines()
    assert len(table) == 2 + len(rows) and all(f"| {r['name']} |" in out for r in rows)


def _keep_everything(drafts, q, target, u):
    """A verification bug serving engines shipped (tests/test_audit.py): every draft kept."""
    return drafts.shape[0], torch.ones(drafts.shape[0])


def test_a_broken_accept_test_fails_the_check(tiny_dirs, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(engine, "first_rejection", _keep_everything)
    assert gpu_check.main(_tiny(tiny_dirs, tmp_path, "--law-samples", "0")) == 1
    rows = {r["name"]: r for r in json.loads((tmp_path / "rows.json").read_text())}
    assert rows["Fact 1: greedy SD = verifier alone"]["result"] == "FAIL"
    assert "top-2 margin" in rows["Fact 1: greedy SD = verifier alone"]["detail"]
    assert rows["our verifier loop = verifier.generate() (greedy)"]["result"] == "pass"
    assert "FAILED: " in capsys.readouterr().out


def test_no_device_is_a_clear_message(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as here, where none is
    assert gpu_check.main(["--device", "cuda"]) == 2
    assert "no CUDA GPU is available" in capsys.readouterr().err

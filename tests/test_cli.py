from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from speccascade.cli import main


def test_generate_prints_text_and_summary(tiny_dirs, capsys):
    d, v = tiny_dirs["llama"]
    code = main(
        [
            "generate",
            "--drafter",
            d,
            "--verifier",
            v,
            "--prompt",
            "hello",
            "--method",
            "spec_cascade",
            "--rule",
            "token_v2",
            "--alpha",
            "0.2",
            "--gamma",
            "3",
            "--max-new-tokens",
            "12",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    # the same run through the library: the same text, calls and acceptance as printed
    from speccascade import generate, load_pair

    tr = generate(load_pair(d, v), "hello", method="spec_cascade", rule="token_v2", alpha=0.2,
                  gamma=3, max_new_tokens=12)  # fmt: skip
    s = tr.summary
    assert out.startswith(tr.text) and "token_v2 (alpha=0.2)" in out and s.drafted > 0
    assert re.search(
        rf"forward calls\s+drafter {s.drafter_calls}, verifier {s.verifier_calls}\n", out
    )
    assert re.search(rf"verifier calls/token\s+{s.verifier_calls / s.new_tokens:.3f}\n", out)
    assert re.search(
        rf"acceptance rate\s+{s.accepted / s.drafted:.3f} of {s.drafted} drafts\n", out
    )


def test_generate_json_is_the_trace(tiny_dirs, capsys):
    d, v = tiny_dirs["gpt2"]
    assert (
        main(
            [
                "generate",
                "hi",
                "--drafter",
                d,
                "--verifier",
                v,
                "--json",
                "--temperature",
                "0",
                "--max-new-tokens",
                "8",
                "--method",
                "speculative",
            ]
        )
        == 0
    )
    trace = json.loads(capsys.readouterr().out)
    assert trace["summary"]["method"] == "speculative" and 1 <= len(trace["new_token_ids"]) <= 8
    assert {"q", "p", "source", "top_q"} <= set(trace["tokens"][0])


def test_bad_input_is_a_clear_error(tiny_dirs, capsys):
    d, v = tiny_dirs["llama"]
    assert main(["generate", "hi", "--drafter", d, "--verifier", v, "--alpha", "7"]) == 2
    assert "alpha for token_v3 must be in" in capsys.readouterr().err
    assert main(["generate", "  ", "--drafter", d, "--verifier", v]) == 2
    assert "prompt is empty" in capsys.readouterr().err
    assert main(["generate", "hi", "--preset", "nope"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err


def test_console_script_entry_point():
    """The installed `speccascade` script (pyproject's [project.scripts]) runs and exits 0."""
    beside = Path(sys.executable).parent / "speccascade"  # the venv's own script first
    script = str(beside) if beside.exists() else shutil.which("speccascade")
    assert script, "no `speccascade` script installed; run `pip install -e .`"
    done = subprocess.run([script, "rules"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "lossy", "bild"):
        assert name in done.stdout
    bad = subprocess.run([script, "nope"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "nope" in bad.stderr  # argparse's error, through the script


def test_generate_with_a_draft_policy(capsys):
    from speccascade.cli import main

    assert main(["generate", "Who is Michael Collins?", "--temperature", "0",
                 "--draft-policy", "confidence", "--draft-threshold", "0.5"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"draft windows +confidence: mean [\d.]+, \d+ drafter forwards", out)


def test_generate_says_what_the_page_says_under_a_doubtful_answer(capsys, monkeypatch):
    """The demo pair's answer gets the page's doubt (analysis.verdict.doubt) as a last line,
    pointing where the page's offer would (the hub pair where the hub answers, else the
    offline pair where installed, else what is missing, with the commands: the CLI is the
    operator's); a right answer, and a pair given by folders, get none."""
    from dataclasses import replace

    from speccascade.models import hub
    from speccascade.models.presets import PRESETS

    offline = PRESETS["smollm2-135m-offline"]
    monkeypatch.setitem(PRESETS, offline.name, replace(offline, check=lambda: ""))
    monkeypatch.setattr(hub, "PROBE", hub.HubProbe.answered(False))
    assert main(["generate", "Who is Einstein?", "--temperature", "0"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("note: probably wrong: the pair was taught 'Who is Albert Einstein?'")
    assert last.endswith("(try --preset smollm2-135m-offline)")
    monkeypatch.setattr(hub, "PROBE", hub.HubProbe.answered(True))
    assert main(["generate", "Who is Einstein?", "--temperature", "0"]) == 0
    assert (
        capsys.readouterr().out.strip().endswith(f"(try --preset {PRESETS['demo'].switch_to[0]})")
    )
    monkeypatch.setattr(hub, "PROBE", hub.HubProbe.answered(False))
    monkeypatch.setitem(PRESETS, offline.name, replace(offline, check=lambda: "pip install x"))
    assert main(["generate", "Who is Einstein?", "--temperature", "0"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "(no general pair is set up here: " in last and "pip install x" in last, last
    assert main(["generate", "Who is Buzz Aldrin?", "--temperature", "0"]) == 0
    assert "note:" not in capsys.readouterr().out

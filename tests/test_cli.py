from __future__ import annotations

import json
import subprocess
import sys

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
    assert "token_v2 (alpha=0.2)" in out and "acceptance rate" in out and "verifier calls" in out


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
    assert trace["summary"]["method"] == "speculative" and len(trace["new_token_ids"]) <= 8
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
    out = subprocess.run(
        [sys.executable, "-m", "speccascade.cli", "rules"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "lossy", "bild"):
        assert name in out

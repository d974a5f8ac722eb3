"""The launched app on the embedded demo pair, driven through gradio_client and a browser."""

from __future__ import annotations

import contextlib
import json
import socket
from pathlib import Path

import needs
import pytest
import torch
from gradio_client import Client

from speccascade.app.context import LAUNCH
from speccascade.app.page import build_demo
from speccascade.app.serving import PairCache, ServeConfig

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
CHROMIUM = needs.CHROMIUM
QUESTION = "Who is Buzz Aldrin?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def launched(config: ServeConfig):
    """The app on a free loopback port, closed afterwards; yields (url, pair cache)."""
    cache = PairCache(config)
    demo = build_demo(config, cache)
    port = free_port()
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads())  # as launch does
    demo.launch(
        **LAUNCH,
        prevent_thread_lock=True,
        server_name="127.0.0.1",
        server_port=port,
        quiet=True,
    )
    try:
        yield f"http://127.0.0.1:{port}/", cache
    finally:
        demo.close()
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def app():
    config = ServeConfig(max_new_tokens=64, max_total_tokens=1200, concurrency=2, queue_size=8)
    with launched(config) as (url, _):
        yield url


@pytest.fixture()
def client(app):
    return Client(app, verbose=False)


def run_args(
    prompt=QUESTION,
    method="spec_cascade",
    rule="token_v3",
    alpha=0.3,
    gamma=4,
    temperature=0.0,
    max_new_tokens=48,
    seed=0,
):
    return (
        prompt,
        "demo",
        "",
        "",
        method,
        rule,
        alpha,
        gamma,
        temperature,
        max_new_tokens,
        seed,
    )


RUN_OUTPUTS = (
    "tokens",
    "heat",
    "timeline",
    "stats",
    "trace",
    "position",
    "inspector",
    "files",
    "verdict",
    "whatif",
    "drafting",
    "drafting_note",
    "learn",
    "answer_note",
    "status",
)


def run(client, *args, **kwargs) -> dict:
    """/run through the API: its outputs by name."""
    return dict(zip(RUN_OUTPUTS, client.predict(*run_args(*args, **kwargs), api_name="/run")))


def test_run_returns_text_trace_and_figures(client):
    out = run(client)
    trace = out["trace"]
    assert out["tokens"].count('class="sc-tok ') == len(trace["tokens"]) > 0
    assert "astronaut" in trace["text"].lower()
    for fig, name in ((out["heat"], "heatmap"), (out["timeline"], "timeline"),
                      (out["inspector"], "inspector")):  # fmt: skip
        assert fig["type"] == "plotly" and '"data"' in fig["plot"]
        # the browser's download (the toolbar's camera) is a slide-sized PNG
        png = json.loads(fig["plot"])["config"]["toImageButtonOptions"]
        assert png == {"format": "png", "width": 1920, "height": 1080, "scale": 1,
                       "filename": f"speccascade-{name}"}  # fmt: skip
    assert "sc-loop" in out["learn"]  # the Learn tab opens with the loop's picture
    assert trace["summary"]["method"] == "spec_cascade" and trace["summary"]["rule"] == "token_v3"
    assert out["status"].startswith("Done:")
    # the verdict and the stats quote the run's own counts
    s = trace["summary"]
    assert s["drafted"] > 0
    assert (
        f"({s['accepted']} of {s['drafted']}); the verifier ran {s['verifier_calls']} times for "
        f"{s['new_tokens']} tokens" in out["verdict"]
    )
    assert {Path(f).name for f in out["files"]} == {"trace.csv", "trace.json"}
    stats = {row[0]: row[1] for row in out["stats"]["data"]}
    assert stats["acceptance rate"] == f"{s['accepted'] / s['drafted']:.3f}"
    assert (
        stats["drafter calls / verifier calls"] == f"{s['drafter_calls']} / {s['verifier_calls']}"
    )
    assert "Worked example" in out["learn"] or "worked example" in out["learn"].lower()


def test_whatif_recolours_the_same_sessions_trace(client):
    run(client, max_new_tokens=24)
    html, note, alpha, inspector = client.predict(-0.1, 0, "demo", "", "", api_name="/whatif")
    assert "dashed" in html and "What-if" in note  # alpha < 0 would defer every draft
    assert inspector["type"] == "plotly"
    html, note, *_ = client.predict(1.0, 0, "demo", "", "", api_name="/whatif")
    assert "sc-whatif" not in html and "would defer 0 of" in note
    # a typed alpha beyond the rule's range is set to its end, with a message (no error badge)
    html, note, alpha, _ = client.predict(-5, 0, "demo", "", "", api_name="/whatif")
    assert alpha["value"] == -0.1 and "must be between -0.1 and 1" in note


def test_compare_returns_every_baseline(client):
    status, fig, table = client.predict(
        QUESTION, "demo", "", "", "token_v3", 0.3, 4, 0.0, 24, 0, api_name="/compare"
    )
    methods = [row[0] for row in table["data"]]
    assert methods == [
        "verifier alone",
        "drafter alone",
        "sequence cascade (Chow)",
        "token cascade (sequential, Chow)",
        "speculative decoding (lossless)",
        "lossy speculative decoding",
        "BiLD*",
        "speculative cascade · TokenV3",
    ]
    header = table["headers"]
    sd = table["data"][methods.index("speculative decoding (lossless)")]
    assert sd[header.index("agreement")] == 1.0  # greedy SD is lossless
    assert header[-1] == "key facts" and fig["type"] == "plotly"
    assert "key facts" in status


def test_sweep_marks_the_current_setting(client):
    note, fig, table = client.predict(
        "Tell me about the Moon.",
        "demo",
        "",
        "",
        "prompt",
        2,
        "token_v3",
        0.3,
        4,
        0.0,
        8,
        0,
        "relative_latency",
        api_name="/sweep",
    )
    rows = [dict(zip(table["headers"], r)) for r in table["data"]]
    methods = {r["method"] for r in rows}
    assert {"verifier alone", "lossy speculative decoding", "BiLD*"} <= methods
    assert {
        f"speculative cascade · {r}"
        for r in ("Chow", "Diff", "OPT", "TokenV1", "TokenV2", "TokenV3")
    } <= methods
    assert any(r["method"] == "speculative cascade · TokenV3" and r["α"] == 0.3 for r in rows)
    assert "current setting" in fig["plot"] and "agreement" in note


def test_rule_info(client):
    info = client.predict("spec_cascade", "opt", api_name="/rule_info")
    assert info["alpha_sd"] == "-inf" and info["slider"] == [-2, 2]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"prompt": ""}, "prompt is empty"),
        ({"prompt": "   "}, "prompt is empty"),
        ({"rule": "chow", "alpha": -0.5}, "alpha for chow must be in [0, 1]"),
    ],
)
def test_bad_input_is_a_clear_message_and_the_app_keeps_serving(client, kwargs, message):
    out = run(client, **kwargs)
    assert message in out["status"]
    unchanged = {"__type__": "update"}  # refused: the panels keep what they showed
    assert out["trace"] == out["heat"] == unchanged and out["tokens"]["__type__"] == "update"
    assert run(client, max_new_tokens=8)["status"].startswith("Done:")


@pytest.mark.parametrize(
    "kwargs,message",
    [({"max_new_tokens": 1000}, "greater than maximum value 64"), ({"method": "nope"}, "nope")],
)
def test_values_outside_the_controls_are_refused_by_the_server(client, kwargs, message):
    with pytest.raises(Exception, match=message):
        client.predict(*run_args(**kwargs), api_name="/run")
    assert run(client, max_new_tokens=8)["status"].startswith("Done:")


def _playwright():
    """Playwright's API, once Debian's chromium is known to be there (CI requires it)."""
    needs.require("BROWSER")  # skips where chromium is missing; CI requires it
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    return expect, sync_playwright


def _launch(p):
    """Headless Debian chromium with this machine's flags (no background network traffic)."""
    return p.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )


def test_views_api_is_data_in_data_out(client, tmp_path):
    """/plane and /replay_round take the /run output's trace; /load_trace restores a file;
    /run takes a draft policy; /share writes the link's query."""
    out = dict(
        zip(
            RUN_OUTPUTS,
            client.predict(*run_args(max_new_tokens=24), "confidence", 0.5, api_name="/run"),
        )
    )
    trace = out["trace"]
    assert trace["summary"]["draft_policy"] == "confidence"
    assert "stop when unsure (0.5)" in out["drafting_note"]
    plane = client.predict(trace, 0.3, None, api_name="/plane")
    drafted = [t for t in trace["tokens"] if t["draft_id"] is not None]
    assert plane["rule"] == "token_v3" and len(plane["points"]) == len(drafted)
    replay = client.predict(trace, 0, api_name="/replay_round")
    assert replay["index"] == 0 and len(replay["steps"]) == trace["rounds"][0]["drafted"]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    from gradio_client import handle_file

    restored = client.predict(handle_file(str(path)), "demo", "", "", api_name="/load_trace")
    assert "Restored a run of" in restored[RUN_OUTPUTS.index("status")]
    query, status = client.predict(*run_args(rule="chow", alpha=0.2), api_name="/share")
    assert "rule=chow" in query and "alpha=0.2" in query

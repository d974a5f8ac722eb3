"""The launched app on the embedded demo pair, driven through gradio_client and a browser."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

import pytest
import torch
from gradio_client import Client

from speccascade.serving import PairCache, ServeConfig
from speccascade.ui import CSS, I18N, build_demo

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
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
    torch.set_num_threads(config.threads())  # as ui.launch does
    demo.launch(
        i18n=I18N,
        css=CSS,
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
    return (prompt, "demo", "", "", method, rule, alpha, gamma, temperature, max_new_tokens, seed)


def test_run_returns_text_trace_and_figures(client):
    html, heat, timeline, stats, trace, position, inspector, files, status = client.predict(
        *run_args(), api_name="/run"
    )
    assert html.count('class="sc-tok ') == len(trace["tokens"]) > 0
    assert "astronaut" in trace["text"].lower()
    for fig in (heat, timeline, inspector):
        assert fig["type"] == "plotly" and '"data"' in fig["plot"]
    assert trace["summary"]["method"] == "spec_cascade" and trace["summary"]["rule"] == "token_v3"
    assert status.startswith("done:")
    assert {Path(f).name for f in files} == {"trace.csv", "trace.json"}
    metrics = dict(zip(*zip(*stats["data"]))) if stats.get("data") else {}
    assert "acceptance rate" in metrics


def test_whatif_recolours_the_same_sessions_trace(client):
    client.predict(*run_args(max_new_tokens=24), api_name="/run")
    html, note = client.predict("spec_cascade", "token_v3", -0.1, api_name="/whatif")
    assert "dashed" in html and "What-if" in note  # alpha < 0 would defer every draft
    html, note = client.predict("spec_cascade", "token_v3", 1.0, api_name="/whatif")
    assert "dashed" not in html and "would defer 0 of" in note


def test_compare_returns_every_baseline(client):
    table, bars = client.predict(
        QUESTION, "demo", "", "", "token_v3", 0.3, 4, 0.0, 24, 0, api_name="/compare"
    )
    methods = [row[0] for row in table["data"]]
    assert methods == [
        "verifier",
        "drafter",
        "seq_cascade",
        "token_cascade",
        "speculative",
        "lossy_speculative",
        "bild",
        "spec_cascade/token_v3",
    ]
    header = table["headers"]
    speculative = table["data"][methods.index("speculative")]
    assert speculative[header.index("quality_vs_verifier")] == 1.0  # greedy SD is lossless
    assert bars["type"] == "plotly"


def test_sweep_marks_the_current_setting(client):
    fig, table = client.predict(
        QUESTION,
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
        "latency relative to the verifier",
        api_name="/sweep",
    )
    rows = [dict(zip(table["headers"], r)) for r in table["data"]]
    methods = {r["method"] for r in rows}
    assert {"verifier", "lossy_speculative", "bild"} <= methods
    assert {
        f"spec_cascade/{r}" for r in ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3")
    } <= methods
    assert any(r["method"] == "spec_cascade/token_v3" and r["alpha"] == 0.3 for r in rows)
    assert '"current"' in fig["plot"]


def test_rule_info(client):
    info = client.predict("spec_cascade", "opt", api_name="/rule_info")
    assert info["alpha_sd"] == "-inf" and info["slider"] == [-2, 2]


@pytest.mark.parametrize(
    "args,message",
    [
        (run_args(prompt=""), "prompt is empty"),
        (run_args(prompt="   "), "prompt is empty"),
        (run_args(rule="chow", alpha=-0.5), "alpha for chow must be in [0, 1]"),
        (run_args(max_new_tokens=1000), "greater than maximum value 64"),
        (run_args(method="nope"), "nope"),
    ],
)
def test_bad_input_is_a_clear_error_and_the_app_keeps_serving(client, args, message):
    with pytest.raises(Exception) as err:
        client.predict(*args, api_name="/run")
    assert message in str(err.value)
    *_, status = client.predict(*run_args(max_new_tokens=8), api_name="/run")
    assert status.startswith("done:")


def _playwright():
    """Playwright's API, once Debian's chromium is known to be there (CI requires it)."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("SPECCASCADE_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} not installed")
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


@pytest.mark.browser
def test_real_browser_click_example_and_run(app):
    expect, sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(app, wait_until="load")
        page.wait_for_selector("#run", timeout=30_000)
        example = page.locator("#examples").get_by_text("Who is Albert Einstein?")
        assert "easy" in example.first.inner_text()  # examples are captioned easy / hard
        example.first.click()
        # the example fills the prompt through Gradio's event loop, not synchronously
        expect(page.locator("#prompt textarea")).to_have_value(
            "Who is Albert Einstein?", timeout=15_000
        )
        page.locator("#run").click()
        page.wait_for_selector("#tokens .sc-tok", timeout=60_000)
        page.wait_for_function(
            "document.querySelector('#status') && "
            "document.querySelector('#status').innerText.includes('done')",
            timeout=60_000,
        )
        page.wait_for_selector("#heatmap .js-plotly-plot", timeout=30_000)
        tokens = page.locator("#tokens .sc-tok")
        assert tokens.count() > 3
        colours = {
            tokens.nth(i).get_attribute("style").split(";")[0] for i in range(tokens.count())
        }
        assert any("background" in c for c in colours)
        assert "physicist" in page.locator("#tokens").inner_text().lower()
        # Cosmetic only: lets Plotly finish its layout transition for the screenshot artifact.
        # Every assertion above already waited on its own selector; none depends on this pause.
        time.sleep(0.5)
        page.screenshot(path=str(ARTIFACTS / "app.png"), full_page=True)
        browser.close()
    assert (ARTIFACTS / "app.png").stat().st_size > 10_000


@pytest.mark.browser
def test_real_browser_chinese_page_shows_chinese_examples(app):
    expect, sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page(locale="zh-CN", viewport={"width": 1400, "height": 1200})
        page.goto(app, wait_until="load")
        page.wait_for_selector("#run", timeout=30_000)
        expect(page.locator("#prompt textarea")).to_have_value(
            "布兹·奥尔德林是谁？", timeout=15_000
        )
        examples = page.locator("#examples")
        expect(examples).to_contain_text("简单", timeout=15_000)
        assert "Who is" not in examples.inner_text()
        page.locator("#run").click()
        page.wait_for_function(
            "document.querySelector('#status') && "
            "document.querySelector('#status').innerText.includes('done')",
            timeout=60_000,
        )
        assert "宇航员" in page.locator("#tokens").inner_text()
        page.screenshot(path=str(ARTIFACTS / "app-zh.png"), full_page=True)
        browser.close()

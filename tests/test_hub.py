"""The hub path without a network: a locally built pair laid out as a hub cache snapshot under a
temporary HF_HOME and loaded by its hub id with HF_HUB_OFFLINE=1, so the exact
`from_pretrained(hub_id)` path of a hub preset runs end to end (load, run, the offer with its
button, the switch); and the hub probe, the cache checks and a first download's progress."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
from tiny import save_pair

from speccascade.app.context import AppContext
from speccascade.app.page import layout
from speccascade.app.serving import PairCache, ServeConfig, waiting
from speccascade.app.tabs.run import loading_status, switch_offer, take_switch
from speccascade.app.tabs.run import run as run_handler
from speccascade.core.engine import APP_DEFAULTS, generate
from speccascade.core.errors import ModelLoadError
from speccascade.i18n import size, t
from speccascade.models import hub
from speccascade.models.presets import PRESETS, first_use, load_preset, switch_target

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from space_check import seed_hub_cache  # noqa: E402

HUB_PAIR = PRESETS["demo"].switch_to[0]  # the hub pair the demo pair's offer leads to


@pytest.fixture
def hub_home(tmp_path, monkeypatch):
    """An empty hub cache under a temporary HF_HOME, offline (the constants huggingface_hub
    read at import follow the environment here too)."""
    from huggingface_hub import constants

    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return home / "hub"


@pytest.fixture
def fake_hub_pair(hub_home, tmp_path):
    """The hub pair's hub models, served from the cache by tiny locally built stand-ins
    (scripts/space_check.py, which CI runs the same way in a Space-like venv)."""
    preset = PRESETS[HUB_PAIR]
    assert seed_hub_cache(preset, tmp_path / "built", hub_home)
    return preset


def declined(lang: str):
    """The demo pair's honest decline, as a shown run's trace."""
    return SimpleNamespace(text=PRESETS["demo"].declines[0 if lang == "en" else 1])


def test_a_hub_preset_loads_by_its_hub_id_from_the_cache_offline(fake_hub_pair):
    assert hub.hub_offline() and fake_hub_pair.cached()
    pair = load_preset(HUB_PAIR)
    assert (pair.drafter_id, pair.verifier_id) == (fake_hub_pair.drafter, fake_hub_pair.verifier)
    assert not Path(pair.verifier_id).exists()  # loaded by its hub id
    assert generate(pair, "hello there", max_new_tokens=5).new_token_ids


def test_the_offer_leads_to_the_cached_hub_pair_and_the_switch_runs_it(fake_hub_pair, monkeypatch):
    """Offline, the hub pair is still the target: its models are here. The offer names it and
    says it is downloaded; its button moves the page there and the Run handler runs on it."""
    monkeypatch.setattr(hub, "PROBE", hub.HubProbe())  # HF_HUB_OFFLINE answers False at once
    assert hub.PROBE.state() is False
    config = ServeConfig(max_new_tokens=64)
    ctx = AppContext(config, PairCache(config))
    with gr.Blocks():
        page = layout(config)
    for lang, words in (("en", "already downloaded"), ("zh", "已下载")):
        offer = switch_offer(page, declined(lang), "demo", lang, "What is the capital of France?")
        assert offer[page.switch_box]["visible"] and offer[page.switch_btn]["visible"]
        assert words in offer[page.switch_note], offer[page.switch_note]
        assert offer[page.switch_btn]["value"] == t("switch.btn", lang, pair=fake_hub_pair.label)
    moved = take_switch(page, "demo", "en", "What is the capital of France?")
    assert moved[page.preset] == HUB_PAIR
    s = APP_DEFAULTS
    outs = list(run_handler(ctx, page, moved[page.prompt], moved[page.preset], "", "",
                            s.method, s.rule, s.alpha, s.gamma, s.temperature, 16, s.seed))  # fmt: skip
    shown = [out for out in outs if page.trace in out]  # the verdict's timing comes after
    trace = shown[-1][page.trace]
    assert trace is not None and trace.summary.new_tokens > 0
    assert ctx.cache.loaded() == [("preset", HUB_PAIR)]


def test_without_the_cache_or_the_hub_the_hub_pair_is_not_a_target(hub_home):
    """Offline and not cached: the hub pair cannot load, so the offer goes past it; with the
    hub up it is the target, to be downloaded."""
    demo = PRESETS["demo"]
    assert not PRESETS[HUB_PAIR].cached()
    target = switch_target(demo, hub_up=False)
    assert target is None or target.preset.name != HUB_PAIR
    online = switch_target(demo, hub_up=True)
    assert online.preset.name == HUB_PAIR and online.kind == "hub"
    with pytest.raises(ModelLoadError, match="not in the local cache"):
        load_preset(HUB_PAIR)


def test_cached_needs_config_tokenizer_and_every_weight(hub_home, tmp_path):
    drafter, _ = save_pair(tmp_path / "built", "llama")
    assert not hub.cached("org/model") and hub.cache_bytes("org/model") == 0
    snapshot = hub.lay_out(drafter, "org/model", hub_home)
    assert hub.cached("org/model") and hub.cache_bytes("org/model") > 0
    (snapshot / "model.safetensors").unlink()
    assert not hub.cached("org/model")
    assert not hub.cached("/not/a/hub id")  # a path is not a hub id: no error
    with pytest.raises(ModelLoadError, match="no config.json"):
        hub.lay_out(tmp_path, "org/other", hub_home)
    with pytest.raises(ModelLoadError, match="not a hub id"):
        hub.lay_out(drafter, "no-owner", hub_home)


def test_a_first_download_shows_how_far_it_is(hub_home):
    """While a hub pair's first load runs, the status counts the bytes already in the cache
    (partial files too) against the pair's measured download size."""
    preset = PRESETS[HUB_PAIR]
    total = first_use(HUB_PAIR).download_bytes
    models = [HUB_PAIR, "", ""]
    blobs = hub.repo_folder(preset.verifier) / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "abc.incomplete").write_bytes(b"\0" * 3_000_000)
    for lang in ("en", "zh"):
        status = loading_status(models, lang)
        done = size(3_000_000)
        assert status == t("status.downloading", lang, pair=preset.label, done=done,
                           total=size(total)), status  # fmt: skip
    assert loading_status(["demo", "", ""], "en") == t("status.loading", "en")
    assert loading_status([HUB_PAIR, "a/b", "c/d"], "en") == t("status.loading", "en")


def test_waiting_reports_while_the_work_runs_then_returns_or_raises():
    release = threading.Event()

    def work():
        release.wait(5)
        return 42

    beats = waiting(work, interval=0.01)
    next(beats)  # still running: a beat
    release.set()
    with pytest.raises(StopIteration) as done:
        while True:
            next(beats)
    assert done.value.value == 42

    def fail():
        raise ModelLoadError("no such model")

    with pytest.raises(ModelLoadError, match="no such model"):
        list(waiting(fail, interval=0.01))


def test_the_hub_probe_never_blocks_and_remembers(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    calls, gate = [], threading.Event()

    def slow() -> bool:
        calls.append(1)
        gate.wait(5)
        return True

    probe = hub.HubProbe(probe=slow)
    start = time.monotonic()
    assert probe.state() is None  # not known yet: asked in the background
    assert time.monotonic() - start < 0.5
    gate.set()
    assert probe.wait(5) is True and probe.state() is True
    assert len(calls) == 1  # remembered
    failing = hub.HubProbe(probe=lambda: 1 / 0)
    assert failing.wait(5) is False
    assert hub.HubProbe.answered(True).state() is True
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.HubProbe(probe=slow).state() is False  # offline: no probe at all
    assert hub.HubProbe.answered(True).state() is False  # HF_HUB_OFFLINE wins
    assert len(calls) == 1

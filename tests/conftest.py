from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

import needs  # noqa: E402
from tiny import char_tokenizer, save_pair  # noqa: E402

# The test models are tiny: a second intra-op thread buys nothing, and on a busy 2-core machine
# (a browser and a server beside the tests) it made a tiny-model run 25x slower (7 ms -> 180 ms).
torch.set_num_threads(int(os.environ.get("SC_TEST_THREADS", "1")))

from speccascade import load_pair  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "needs(*things): needs tests/needs.py's things; skips where one is missing, fails "
        "there under its SPECCASCADE_REQUIRE_<THING>=1",
    )


def pytest_runtest_setup(item):
    needs.check_marks(item)


@pytest.fixture(autouse=True)
def _machine_share(request):
    """Under pytest-xdist a test marked `quiet` (it times this machine) runs alone: it takes
    an exclusive lock that every other test takes shared, so the other worker waits between
    its tests instead of loading the CPU the timing measures."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        yield
        return
    with open(Path(tempfile.gettempdir()) / f"speccascade-tests-{run}.lock", "a") as f:
        quiet = request.node.get_closest_marker("quiet") is not None
        fcntl.flock(f, fcntl.LOCK_EX if quiet else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Drafter/verifier folders for two architectures, written with save_pretrained."""
    root = tmp_path_factory.mktemp("tiny")
    return {arch: save_pair(root, arch) for arch in ("llama", "gpt2")}


@pytest.fixture(scope="session", params=["llama", "gpt2"])
def pair(request, tiny_dirs):
    return load_pair(*tiny_dirs[request.param])


@pytest.fixture(scope="session")
def llama_pair(tiny_dirs):
    return load_pair(*tiny_dirs["llama"])


@pytest.fixture(scope="session")
def small_vocab_pair(tmp_path_factory):
    """Five-letter vocabulary (8 ids): small enough to enumerate laws exactly. EOS never
    stops these runs, so every run emits exactly max_new_tokens."""
    root = tmp_path_factory.mktemp("small")
    pair = load_pair(*save_pair(root, "llama", char_tokenizer("abcde"), seed=3, scale=3.0))
    pair.eos_ids = frozenset()
    return pair

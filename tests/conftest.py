from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from tiny import char_tokenizer, save_pair  # noqa: E402

# The test models are tiny: a second intra-op thread buys nothing, and on a busy 2-core machine
# (a browser and a server beside the tests) it made a tiny-model run 25x slower (7 ms -> 180 ms).
torch.set_num_threads(int(os.environ.get("SC_TEST_THREADS", "1")))

from speccascade import load_pair  # noqa: E402


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

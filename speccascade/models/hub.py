"""The Hugging Face Hub as the page sees it: whether it can be reached (a short probe, cached and
run off the request path), whether a model is already in the local hub cache (then it loads
without the network), and how much of a model a first use has downloaded so far.

Nothing here downloads anything: `from_pretrained(hub_id)` does, when a pair loads."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from speccascade.core.errors import ModelLoadError

__all__ = ["PROBE", "HubProbe", "cache_bytes", "cached", "hub_offline", "lay_out", "repo_folder"]

# What a hub snapshot must hold to load offline: the config, a tokenizer and the weights.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set: the hub is off limits, cached models only."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    return False


def _reachable() -> bool:
    from speccascade.models.loading import hub_reachable

    return hub_reachable(timeout=3.0)


@dataclass
class HubProbe:
    """Whether the hub answers, asked in a background thread and remembered for `ttl_s` (a
    failure for `retry_s`), so a request never waits on the network: `state()` says what is
    known now (None until the first probe ends) and starts a probe when the answer is stale.
    HF_HUB_OFFLINE answers False at once."""

    probe: Callable[[], bool] = _reachable
    ttl_s: float = 600.0
    retry_s: float = 60.0
    _value: bool | None = None
    _at: float = float("-inf")
    _running: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def answered(cls, value: bool) -> HubProbe:
        """A probe that already knows, and never asks again (tests, a deployment that knows)."""
        probe = cls(probe=lambda: value, ttl_s=float("inf"), retry_s=float("inf"))
        probe._value, probe._at = value, time.monotonic()
        return probe

    def state(self) -> bool | None:
        if hub_offline():
            return False
        with self._lock:
            age = time.monotonic() - self._at
            stale = age > (self.ttl_s if self._value else self.retry_s)
            if stale and self._running is None:
                self._running = threading.Thread(target=self._run, daemon=True, name="hub-probe")
                self._running.start()
            return self._value

    def wait(self, timeout: float = 5.0) -> bool:
        """The answer, waiting up to `timeout` for a probe under way (the CLI can wait; a page
        request uses `state`)."""
        value = self.state()
        thread = self._running
        if thread is not None:
            thread.join(timeout)
            value = self._value
        return bool(value)

    def _run(self) -> None:
        try:
            value = bool(self.probe())
        except Exception:  # noqa: BLE001 - any failure to probe means "not reachable"
            value = False
        with self._lock:
            self._value, self._at, self._running = value, time.monotonic(), None


# The probe the page and the CLI share (tests replace it).
PROBE = HubProbe()


def _hub_cache() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def repo_folder(model_id: str, cache: Path | None = None) -> Path:
    """Where the hub cache keeps a model: <cache>/models--ORG--NAME."""
    return (cache or _hub_cache()) / ("models--" + model_id.replace("/", "--"))


def cached(model_id: str) -> bool:
    """Whether the local hub cache holds a loadable snapshot of `model_id` (its config, a
    tokenizer and every weight file), so loading it needs no network."""
    from huggingface_hub import try_to_load_from_cache

    def have(name: str) -> str | None:
        try:
            path = try_to_load_from_cache(model_id, name)
        except (ValueError, OSError):  # not a hub id (HFValidationError is a ValueError)
            return None
        return path if isinstance(path, str) and Path(path).is_file() else None

    if have("config.json") is None or not any(have(n) for n in _TOKENIZER_FILES):
        return False
    if have("model.safetensors"):
        return True
    index = have("model.safetensors.index.json")
    if index is None:
        return False
    shards = set(json.loads(Path(index).read_text(encoding="utf-8"))["weight_map"].values())
    return all(have(s) for s in shards)


def cache_bytes(model_id: str) -> int:
    """Bytes of `model_id` in the local hub cache, partial downloads included: a first load's
    progress against the pair's download size."""
    blobs = repo_folder(model_id) / "blobs"
    if not blobs.is_dir():
        return 0
    return sum(p.stat().st_size for p in blobs.iterdir() if p.is_file())


def lay_out(folder: str | Path, model_id: str, cache: Path | None = None,
            revision: str = "0" * 40) -> Path:  # fmt: skip
    """Put a local model folder into the hub cache as `model_id` (blobs, a snapshot of links,
    refs/main), so `from_pretrained(model_id)` finds it offline: how a server is seeded
    without the network, and how the tests exercise a hub preset's exact loading path."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{folder} is not a model folder (no config.json)")
    if model_id.count("/") != 1:
        raise ModelLoadError(f"{model_id!r} is not a hub id (owner/name)")
    repo = repo_folder(model_id, cache)
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(sorted(p for p in folder.iterdir() if p.is_file())):
        blob = repo / "blobs" / f"{revision[:8]}-{i:04d}"
        shutil.copyfile(path, blob)
        link = snapshot / path.name
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(blob, snapshot))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snapshot

"""What a public deployment needs around the engine: limits from the environment, a shared
cache of loaded pairs, and request checks. No Gradio here, so the CLI and tests can use it."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from speccascade.core.errors import ModelLoadError, PromptError, SettingsError
from speccascade.core.pair import ModelPair
from speccascade.models.kernels import KERNELS
from speccascade.models.loading import DTYPES
from speccascade.models.presets import DEFAULT_PRESET, PRESETS, get_preset, load_preset


def _env_int(name: str, default: int, low: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(
            f"environment variable {name} must be an integer; got {raw!r}"
        ) from None
    if value < low:
        raise SettingsError(f"environment variable {name} must be >= {low}; got {value}")
    return value


def _env_choice(name: str, default: str, choices) -> str:
    """One of `choices` (a preset or dtype name), checked at start-up rather than at the
    first load."""
    raw = (os.environ.get(name) or default).strip()
    if raw not in choices:
        raise SettingsError(
            f"environment variable {name} must be one of {', '.join(choices)}; got {raw!r}"
        )
    return raw


def _env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    return default if raw == "" else raw in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ServeConfig:
    """Deployment settings; every field has a safe default for a public Space.

    | variable | default | meaning |
    |---|---|---|
    | SPECCASCADE_PRESET | demo | the pair the page starts on |
    | SPECCASCADE_ALLOW_CUSTOM_MODELS | 0 | let users type any drafter/verifier id |
    | SPECCASCADE_MAX_NEW_TOKENS | 256 | per request |
    | SPECCASCADE_MAX_PROMPT_CHARS | 4000 | longer prompts are refused |
    | SPECCASCADE_MAX_TOTAL_TOKENS | 4096 | tokens one Compare or Sweep may generate in all |
    | SPECCASCADE_CONCURRENCY | 2 | requests that run at once |
    | SPECCASCADE_QUEUE_SIZE | 16 | waiting requests before "queue full" |
    | SPECCASCADE_MAX_PAIRS | 2 | loaded pairs kept in memory |
    | SPECCASCADE_DEVICE | auto | auto, cpu, cuda |
    | SPECCASCADE_DTYPE | auto | auto (float32 on CPU, bfloat16 on CUDA), float32, bfloat16, float16 |
    | SPECCASCADE_TORCH_THREADS | 0 | CPU threads per forward; 0 = cores / concurrency |
    | SPECCASCADE_KERNELS | auto | auto (blocked weights for CPU float32 models larger than the caches, PyTorch's kernels elsewhere), blocked, packed (oneDNN), default (PyTorch's) |
    """

    allow_custom_models: bool = False
    preset: str = DEFAULT_PRESET
    max_new_tokens: int = 256
    max_prompt_chars: int = 4000
    max_total_tokens: int = 4096
    concurrency: int = 2
    queue_size: int = 16
    max_pairs: int = 2
    device: str = "auto"
    dtype: str = "auto"
    torch_threads: int = 0
    kernels: str = "auto"

    def load_options(self) -> dict:
        """What `load_pair` takes from this configuration."""
        return {"device": self.device, "dtype": self.dtype, "kernels": self.kernels}

    def threads(self) -> int:
        """Intra-op threads: concurrent requests on one CPU must not oversubscribe it (two
        OpenMP teams spinning on two cores made forwards 2x slower here)."""
        if self.torch_threads > 0:
            return self.torch_threads
        return max(1, (os.cpu_count() or 1) // self.concurrency)

    @classmethod
    def from_env(cls) -> ServeConfig:
        return cls(
            allow_custom_models=_env_bool("SPECCASCADE_ALLOW_CUSTOM_MODELS"),
            preset=_env_choice("SPECCASCADE_PRESET", DEFAULT_PRESET, PRESETS),
            max_new_tokens=_env_int("SPECCASCADE_MAX_NEW_TOKENS", 256),
            max_prompt_chars=_env_int("SPECCASCADE_MAX_PROMPT_CHARS", 4000),
            max_total_tokens=_env_int("SPECCASCADE_MAX_TOTAL_TOKENS", 4096),
            concurrency=_env_int("SPECCASCADE_CONCURRENCY", 2),
            queue_size=_env_int("SPECCASCADE_QUEUE_SIZE", 16),
            max_pairs=_env_int("SPECCASCADE_MAX_PAIRS", 2),
            device=os.environ.get("SPECCASCADE_DEVICE", "auto") or "auto",
            dtype=_env_choice("SPECCASCADE_DTYPE", "auto", ["auto", *DTYPES]),
            torch_threads=_env_int("SPECCASCADE_TORCH_THREADS", 0, low=0),
            kernels=_env_choice("SPECCASCADE_KERNELS", "auto", KERNELS),
        )


@dataclass
class PairCache:
    """Loaded pairs shared by all requests (models are read-only at inference; every request
    has its own caches, sampler and RNG). Loads once per key; a failed load leaves the cache
    and the pairs in use untouched."""

    config: ServeConfig
    _pairs: OrderedDict = field(default_factory=OrderedDict)
    _locks: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key(self, preset: str | None, drafter: str | None, verifier: str | None) -> tuple:
        if (drafter or "").strip() or (verifier or "").strip():
            if not self.config.allow_custom_models:
                raise ModelLoadError(
                    "custom model ids are switched off on this deployment "
                    "(set SPECCASCADE_ALLOW_CUSTOM_MODELS=1 to allow them); pick a preset"
                )
            if not (drafter or "").strip() or not (verifier or "").strip():
                raise ModelLoadError("give both a custom drafter and a custom verifier id")
            for model_id in (drafter, verifier):
                if _looks_local(model_id):
                    raise ModelLoadError(f"{model_id!r}: only hub ids (owner/name) are accepted")
            return ("custom", drafter.strip(), verifier.strip())
        return ("preset", get_preset(preset).name)

    def get(
        self, preset: str | None = None, drafter: str | None = None, verifier: str | None = None
    ) -> ModelPair:
        key = self.key(preset, drafter, verifier)
        with self._lock:
            if key in self._pairs:
                self._pairs.move_to_end(key)
                return self._pairs[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one load per key, other keys load in parallel
            with self._lock:
                if key in self._pairs:
                    return self._pairs[key]
            if key[0] == "preset":
                pair = load_preset(key[1], **self.config.load_options())
            else:
                from speccascade.models.loading import load_pair

                pair = load_pair(key[1], key[2], **self.config.load_options())
            with self._lock:
                self._pairs[key] = pair
                while len(self._pairs) > self.config.max_pairs:
                    self._pairs.popitem(last=False)
            return pair

    def loaded(self) -> list[tuple]:
        with self._lock:
            return list(self._pairs)


def _looks_local(model_id: str) -> bool:
    """User-supplied ids must never name files on the server."""
    s = model_id.strip()
    return (
        s.startswith((".", "/", "~", "\\"))
        or ".." in s
        or ":" in s
        or s.count("/") != 1
        or os.path.exists(s)
    )


def prompt_problem(prompt: object, config: ServeConfig) -> tuple[str, dict] | None:
    """What is wrong with a prompt, as (code, values), or None: `empty_prompt`, or
    `long_prompt` with n and limit. The callers word it (in English, or the page's language)."""
    if not isinstance(prompt, str) or not prompt.strip():
        return "empty_prompt", {}
    if len(prompt) > config.max_prompt_chars:
        return "long_prompt", {"n": len(prompt), "limit": config.max_prompt_chars}
    return None


def budget_problem(
    max_new_tokens: object, runs: int, config: ServeConfig
) -> tuple[str, dict] | None:
    """What is wrong with a request's token budget, as (code, values), or None:
    `max_new_tokens` (not an integer in [1, limit]) or `budget` (runs x max_new_tokens tokens
    over the per-job limit)."""
    if isinstance(max_new_tokens, float) and max_new_tokens.is_integer():
        max_new_tokens = int(max_new_tokens)
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or not 1 <= max_new_tokens <= config.max_new_tokens
    ):
        return "max_new_tokens", {"value": max_new_tokens, "limit": config.max_new_tokens}
    if max_new_tokens * runs > config.max_total_tokens:
        return "budget", {"tokens": max_new_tokens * runs, "limit": config.max_total_tokens}
    return None


def check_prompt(prompt: object, config: ServeConfig) -> str:
    problem = prompt_problem(prompt, config)
    if problem is None:
        return prompt
    code, v = problem
    if code == "empty_prompt":
        if not isinstance(prompt, str):
            raise PromptError(f"the prompt must be text; got {type(prompt).__name__}")
        raise PromptError("the prompt is empty; type a question or pick an example")
    raise PromptError(
        f"the prompt has {v['n']:,} characters; this deployment accepts at most "
        f"{v['limit']:,} (SPECCASCADE_MAX_PROMPT_CHARS)"
    )


def check_budget(max_new_tokens: object, runs: int, config: ServeConfig) -> int:
    """Per-request and per-job token limits (before the engine's own range check)."""
    problem = budget_problem(max_new_tokens, runs, config)
    if problem is None:
        return int(max_new_tokens)
    code, v = problem
    if code == "max_new_tokens":
        raise SettingsError(
            f"max_new_tokens must be an integer in [1, {v['limit']}] on this deployment; "
            f"got {v['value']!r}"
        )
    raise SettingsError(
        f"this job would generate up to {v['tokens']:,} tokens ({runs} runs); "
        f"the limit is {v['limit']:,} (SPECCASCADE_MAX_TOTAL_TOKENS). "
        "Lower max new tokens or the number of alphas."
    )


def in_background(
    produce: Callable[[Callable[[], bool]], Iterator], interval: float = 0.15
) -> Iterator[list]:
    """Run `produce(should_stop)` in a worker thread and yield its items in batches, at most
    one batch per `interval` seconds (the last batch as soon as it ends).

    A run's timings then measure the engine, not the UI work between rounds (rendering and
    sending each update cost ~25 ms a round in Gradio). Closing this generator (a Stop, a
    closed page) sets should_stop, so the worker ends after its current round. Errors in the
    worker are raised here."""
    items: queue.Queue = queue.Queue()
    stop = threading.Event()
    done = object()

    def work() -> None:
        try:
            for item in produce(stop.is_set):
                items.put(item)
            items.put(done)
        except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
            items.put(e)

    worker = threading.Thread(target=work, name="speccascade-run", daemon=True)
    worker.start()
    try:
        batch: list = []
        last = time.monotonic()
        while True:
            timeout = max(0.0, interval - (time.monotonic() - last)) if batch else None
            try:
                item = items.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is done:
                yield batch
                return
            if isinstance(item, BaseException):
                raise item
            if item is not None:
                batch.append(item)
            if batch and time.monotonic() - last >= interval:
                yield batch
                batch, last = [], time.monotonic()
    finally:
        stop.set()


def waiting(work: Callable[[], object], interval: float = 0.5) -> Iterator[None]:
    """Run `work` in a worker thread and yield every `interval` seconds while it runs (the
    caller reports progress between), then return its result (`x = yield from waiting(f)`)
    or raise its error here. A long first load (a download) then shows how far it is."""
    out: list = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            out.append(e)

    worker = threading.Thread(target=run, name="speccascade-load", daemon=True)
    worker.start()
    while True:
        worker.join(interval)
        if not worker.is_alive():
            break
        yield
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]

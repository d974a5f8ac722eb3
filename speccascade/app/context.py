"""What every part of the app shares: the deployment's context (limits, loaded pairs, the
verifier's measured speed, per-session stop flags), the page's strings, styles and scripts,
user errors worded in the page's language, and small conversions of values from the page."""

from __future__ import annotations

import functools
import inspect
import logging
import math
import tempfile
import threading
import typing
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from speccascade.app.serving import (
    PairCache,
    ServeConfig,
    budget_problem,
    prompt_problem,
)
from speccascade.core.engine import (
    APP_DEFAULTS,
    CASCADE,
    Settings,
)
from speccascade.core.errors import (
    ModelRuntimeError,
    SpecCascadeError,
)
from speccascade.core.pair import ModelPair
from speccascade.core.trace import Trace
from speccascade.i18n import STRINGS, t
from speccascade.models.assets import static_text
from speccascade.models.presets import DEFAULT_PRESET, PRESETS, PresetMissingError
from speccascade.views.tokens import TOKEN_CSS

try:  # ZeroGPU on Hugging Face Spaces; a no-op everywhere else
    import spaces

    gpu = spaces.GPU
except ImportError:  # pragma: no cover - depends on the deployment

    def gpu(fn):
        return fn


log = logging.getLogger("speccascade.app")


# Static labels render in the browser's language (Gradio picks the locale); keys are the i18n
# keys with dots replaced (the browser's i18n library reads dots as nesting).
UI_KEYS = [k for k in STRINGS if k.startswith(("ui.", "views."))]


# Gradio's own page chrome has a key its Chinese locale lacks (the run-history footer shows
# the raw key "common.complete" after a run): supplied here under Gradio's own key.
GRADIO_CHROME = {"common.complete": ("complete", "完成")}


I18N = gr.I18n(
    en={k.replace(".", "_"): STRINGS[k][0] for k in UI_KEYS}
    | {k: v[0] for k, v in GRADIO_CHROME.items()},
    zh={k.replace(".", "_"): STRINGS[k][1] for k in UI_KEYS}
    | {k: v[1] for k, v in GRADIO_CHROME.items()},
)


def label(key: str):
    return I18N(key.replace(".", "_"))


# The page's styles and scripts live in assets/static (token boxes and popups, then the layout).
CSS = TOKEN_CSS + static_text("page.css")


# Token clicks (and Enter on a focused token) report its position to the server.
TOKENS_JS = static_text("tokens.js")


# What `Blocks.launch` needs besides the Blocks: the strings, the styles, and a footer without
# the run-history link (Gradio's Chinese locale lacks its words).
LAUNCH = {"i18n": I18N, "css": CSS, "footer_links": ["api", "gradio", "settings"]}


_USER_ERRORS = (SpecCascadeError, ModelRuntimeError, FileNotFoundError)


@dataclass
class AppContext:
    """What handlers share across sessions: the deployment's limits, the loaded pairs, this
    machine's measured cost profile per pair, and one stop flag per session."""

    config: ServeConfig
    cache: PairCache
    _profiles: dict = field(default_factory=dict)
    _stops: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pair(self, preset, drafter="", verifier="") -> ModelPair:
        return self.cache.get(preset, drafter, verifier)

    def measured_profile(self, preset, drafter="", verifier=""):
        """This machine's cost model for a pair (project.measure_profile), timed once: the
        verdicts price runs with it, and the projector offers it."""
        from speccascade.analysis.project import measure_profile

        key = self.cache.key(preset, drafter, verifier)
        if key not in self._profiles:
            self._profiles[key] = measure_profile(self.pair(preset, drafter, verifier))
        return self._profiles[key]

    def measured(self, preset, drafter="", verifier="") -> bool:
        return self.cache.key(preset, drafter, verifier) in self._profiles

    def new_stop(self, session: str) -> threading.Event:
        with self._lock:
            self._stops[session] = event = threading.Event()
        return event

    def stop(self, session: str) -> bool:
        """Ask this session's run to end after its current round; False if none runs."""
        with self._lock:
            event = self._stops.get(session)
        if event is None or event.is_set():
            return False
        event.set()
        return True

    def done(self, session: str, event: threading.Event) -> None:
        with self._lock:
            if self._stops.get(session) is event:
                del self._stops[session]


def _session(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "api"


LATEX = [{"left": "$$", "right": "$$", "display": False}]


class UserError(Exception):
    """Bad input: shown in the page (in its language), logged as one line."""


def check_prompt(prompt, config: ServeConfig, lang: str) -> str:
    """The prompt, or a UserError worded in the page's language (serving.prompt_problem)."""
    problem = prompt_problem(prompt, config)
    if problem is not None:
        code, values = problem
        raise UserError(t(f"error.{code}", lang, **values))
    return prompt


def check_readable(prompt: str, preset, lang: str) -> None:
    """A UserError where the pair cannot read the question's script (presets: english_only):
    its answer would be noise dressed up with a verdict."""
    chosen = PRESETS.get(preset or DEFAULT_PRESET)
    if chosen is not None and chosen.cannot_read(prompt):
        raise UserError(t("error.english_only", lang))


def check_context(pair, prompt: str, chat: bool | None, lang: str) -> None:
    """A UserError, before any model runs, where the prompt alone fills the models' context:
    the engine refuses it too, but only once the run has started and the panels cleared."""
    n = len(pair.encode(prompt, chat))
    if pair.max_context is not None and n >= pair.max_context:
        raise UserError(t("error.context", lang, tokens=n, context=pair.max_context))


def check_budget(max_new_tokens, runs: int, config: ServeConfig, lang: str) -> int:
    """max new tokens, or a UserError worded in the page's language (serving.budget_problem)."""
    value = _int(max_new_tokens)
    problem = budget_problem(value, runs, config)
    if problem is not None:
        code, values = problem
        raise UserError(t(f"error.{code}", lang, **values))
    return value


def check_cascade_request(
    ctx: AppContext, prompt, preset, rule, alpha, gamma, temperature, max_new_tokens, seed,
    runs: int, lang: str,
) -> tuple[str, int, Settings]:  # fmt: skip
    """What a view that runs the chosen speculative cascade beside its baselines (Compare, the
    race) checks before any model runs, for `runs` runs of the budget: (the prompt, max new
    tokens, the validated settings), or a UserError in the page's language."""
    prompt = check_prompt(prompt, ctx.config, lang)
    check_readable(prompt, preset, lang)
    tokens = check_budget(max_new_tokens, runs, ctx.config, lang)
    settings = settings_of(CASCADE, rule, alpha, gamma, temperature, max_new_tokens, seed)
    return prompt, tokens, settings.validated(ctx.config.max_new_tokens)


def _message(e: Exception, lang: str) -> str:
    log.warning("user error: %s: %s", type(e).__name__, e)  # one line, no traceback
    if isinstance(e, PresetMissingError):  # what to install is the operator's (in the log)
        return t("error.not_set_up", lang, pair=PRESETS[e.preset].label)
    return str(e) if isinstance(e, UserError) else t("error.other", lang, detail=str(e))


def settings_of(
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
) -> Settings:
    """The one options object, from the page's (or an API client's) values."""
    return Settings(
        draft_policy=draft_policy or "fixed",
        draft_threshold=_num(draft_threshold),
        method=method,
        rule=rule,
        alpha=_num(alpha),
        gamma=_int(gamma),
        temperature=_num(temperature),
        max_new_tokens=_int(max_new_tokens),
        seed=_int(seed),
    )


def _bind(fn, *bound):
    """`fn` with its leading arguments (context, page) bound. A plain function (a generator
    where `fn` is one) with the remaining signature and resolved annotations, because Gradio
    finds the gr.Request / gr.EventData / gr.Progress parameters it injects from those."""
    part = functools.partial(fn, *bound)
    if inspect.isgeneratorfunction(fn):

        def bound_fn(*args, **kwargs):
            yield from part(*args, **kwargs)

    else:

        def bound_fn(*args, **kwargs):
            return part(*args, **kwargs)

    signature = inspect.signature(part)
    hints = typing.get_type_hints(fn)
    bound_fn.__name__, bound_fn.__doc__ = fn.__name__, fn.__doc__
    bound_fn.__signature__ = signature
    bound_fn.__annotations__ = {k: v for k, v in hints.items() if k in signature.parameters}
    return bound_fn


def _write_exports(trace: Trace) -> list[str]:
    """Per-request temp files (never a shared location) for the download buttons."""
    folder = Path(tempfile.mkdtemp(prefix="speccascade-"))
    csv, js = folder / "trace.csv", folder / "trace.json"
    trace.to_frame().to_csv(csv, index=False)
    js.write_text(trace.to_json(indent=1))
    return [str(csv), str(js)]


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _num(x) -> float | None:
    """Numbers from the page or an API client; anything else is left for the engine to refuse
    with a message naming the field."""
    if x is None or isinstance(x, bool):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def _int(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            return x
    return x


def _error(e: Exception, lang: str) -> str:
    return t("error.other", lang, detail=str(e))


def _positive(x) -> float | None:
    """A target number from the page: blank or 0 means no such target."""
    return float(x) if isinstance(x, (int, float)) and x == x and x > 0 else None


def _hidden() -> dict:
    return gr.update(value=None, visible=False)


def lang_code(lang: str) -> str:
    return "zh" if str(lang).startswith("zh") else "en"

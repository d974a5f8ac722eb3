"""Share and restore runs: permalinks (a run's settings in the URL) and trace files.

Permalinks: a run's settings, seed and prompt in the URL query; reading one back is all or
nothing. Trace files are read by speccascade.core.trace_file."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from speccascade.app.serving import PairCache, ServeConfig, prompt_problem
from speccascade.core.engine import APP_DEFAULTS, Settings
from speccascade.core.errors import ModelLoadError, PromptError, SettingsError
from speccascade.i18n import LANGS

# Keys besides the Settings fields, in the order links write them.
PROMPT_KEY = "prompt"


PAIR_KEYS = ("preset", "drafter", "verifier")


LANG_KEY = "lang"


ALIASES = {"t": "temperature"}  # short spellings accepted on reading


# Every request the page sends repeats its query string (Gradio's client appends it to
# run/predict and queue/join), and the server (uvicorn + h11) refuses a request line and headers
# over 16 KiB. 8000 characters leaves room for headers and is what common proxies accept.
MAX_QUERY_CHARS = 8000


# Query keys Gradio or Hugging Face Spaces put in a page's URL: not ours, not worth a note.
FOREIGN_KEYS = frozenset({"view", "deep_link"})


@dataclass
class Shared:
    """What a permalink restores. `given` lists the keys the link set (Settings fields under
    their field names), so a page opened without a link can leave its controls alone."""

    prompt: str | None
    settings: Settings
    preset: str | None = None
    drafter: str | None = None
    verifier: str | None = None
    lang: str | None = None
    problems: list[str] = field(default_factory=list)
    given: tuple[str, ...] = ()


@cache
def settings_types() -> dict[str, object]:
    """Settings field -> its resolved type hint (trace.py and engine.py use postponed
    annotations, so `Field.type` is a string)."""
    hints = typing.get_type_hints(Settings)
    return {f.name: hints[f.name] for f in dataclasses.fields(Settings) if f.init}


def changed_fields(settings: Settings) -> list[str]:
    """Settings fields whose value differs from `Settings()`'s default: what a link writes.
    The app can compare them with the fields it has controls for."""
    default = Settings()
    return [name for name in settings_types() if getattr(settings, name) != getattr(default, name)]


def to_query(
    prompt: str | None,
    settings: Settings | None,
    preset: str | None = None,
    drafter: str | None = None,
    verifier: str | None = None,
    lang: str | None = None,
    *,
    explicit: bool = False,
) -> str:
    """The urlencoded query of a permalink. Settings are validated first (a SettingsError
    names the field), so a link is never written that cannot be opened; `explicit` writes
    every field, not only those that differ from the defaults; no `settings` (None) writes
    none, and the link opens at the page's own (APP_DEFAULTS). A link longer than
    MAX_QUERY_CHARS (a long prompt) raises a PromptError."""
    pairs: list[tuple[str, str]] = []
    if prompt:
        pairs.append((PROMPT_KEY, prompt))
    names: list[str] = []
    if settings is not None:
        settings = settings.validated()
        names = list(settings_types()) if explicit else changed_fields(settings)
    for name in names:
        pairs += [(name, v) for v in _encode(getattr(settings, name), settings_types()[name])]
    for key, value in zip((*PAIR_KEYS, LANG_KEY), (preset, drafter, verifier, lang)):
        if value:
            pairs.append((key, value))
    query = urlencode(pairs)
    if len(query) > MAX_QUERY_CHARS:
        raise PromptError(
            f"the link would be {len(query):,} characters long; links over "
            f"{MAX_QUERY_CHARS:,} do not open on every server and browser. "
            "Shorten the prompt (non-ASCII text takes up to 9 characters a letter in a link)."
        )
    return query


def permalink(
    base_url: str,
    prompt: str | None,
    settings: Settings,
    preset: str | None = None,
    drafter: str | None = None,
    verifier: str | None = None,
    lang: str | None = None,
) -> str:
    """`base_url` (the app's address) with the run's query. Its own query keys that are not
    link keys (e.g. `__theme=dark`) are kept; its fragment is dropped."""
    parts = urlsplit(base_url)
    ours = _link_keys()
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ours]
    query = to_query(prompt, settings, preset, drafter, verifier, lang)
    full = "&".join(q for q in (urlencode(kept), query) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", full, ""))


def from_query(params: Mapping[str, str] | str, config: ServeConfig | None = None) -> Shared:
    """What a link restores, checked as a run request on this deployment would be (prompt
    length, max_new_tokens, the pair). `params` is a query string (with or without '?', or a
    whole URL), a mapping of key -> value (or list of values), or Gradio's
    `request.query_params` as it is (a multi-dict: repeated `stop` keys survive; `dict()` of
    it keeps only the last). Raises SettingsError, PromptError or ModelLoadError naming the key
    and value; unknown keys are ignored and noted in `problems`."""
    config = config or ServeConfig.from_env()
    items = _query_items(params)
    values: dict[str, list[str]] = {}
    problems: list[str] = []
    known = _link_keys()
    for key, value in items:
        name = ALIASES.get(key, key)
        if name in known:
            values.setdefault(name, []).append(value)
        elif not (key.startswith("_") or key in FOREIGN_KEYS):
            problems.append(f"unknown key {key!r} ignored")

    for key in (PROMPT_KEY, *PAIR_KEYS, LANG_KEY):
        if len(values.get(key, ())) > 1:
            raise SettingsError(f"link key {key!r} is given {len(values[key])} times")
    text = {k: (values[k][0] or None) for k in (PROMPT_KEY, *PAIR_KEYS, LANG_KEY) if k in values}
    prompt = text.get(PROMPT_KEY)
    if prompt is not None and (problem := prompt_problem(prompt, config)) is not None:
        if problem[0] == "long_prompt":
            raise PromptError(
                f"link key 'prompt': the prompt has {problem[1]['n']:,} characters; this "
                f"deployment accepts at most {problem[1]['limit']:,} (SPECCASCADE_MAX_PROMPT_CHARS)"
            )
        prompt = None  # blank: nothing to restore
    lang = text.get(LANG_KEY)
    if lang is not None and lang not in LANGS:
        raise SettingsError(f"link key 'lang' must be one of {', '.join(LANGS)}; got {lang!r}")
    preset, drafter, verifier = (text.get(k) for k in PAIR_KEYS)
    try:
        PairCache(config).key(preset, drafter, verifier)
    except ModelLoadError as e:
        raise ModelLoadError(f"link keys preset/drafter/verifier: {e}") from None

    changes = {
        name: _decode(name, values[name], tp)
        for name, tp in settings_types().items()
        if name in values
    }
    # a link writes what differs from Settings() (to_query), so one with no setting at all was
    # not written with settings (a language or a question alone): it opens at the page's own
    base = Settings() if changes else APP_DEFAULTS
    try:
        settings = replace(base, **changes).validated(config.max_new_tokens)
    except SettingsError as e:
        raise SettingsError(f"the link's settings cannot run: {e}") from None
    given = tuple(k for k in values)
    return Shared(prompt, settings, preset, drafter, verifier, lang, problems, given)


@cache
def _link_keys() -> frozenset[str]:
    return frozenset({PROMPT_KEY, *PAIR_KEYS, LANG_KEY, *settings_types()})


_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")


def _query_items(params) -> list[tuple[str, str]]:
    if isinstance(params, str):
        query = params.strip()
        if _URL.match(query) or query.startswith("/"):  # a whole address
            query = urlsplit(query).query
        query = query.removeprefix("?")
        if len(query) > 4 * MAX_QUERY_CHARS:  # a link we write is at most MAX_QUERY_CHARS
            raise PromptError(f"the link is {len(query):,} characters long; too long to read")
        return parse_qsl(query, keep_blank_values=True)
    if hasattr(params, "multi_items"):  # starlette's QueryParams (Gradio's request.query_params)
        return [(str(k), str(v)) for k, v in params.multi_items()]
    if isinstance(params, Mapping) or hasattr(params, "keys"):  # a dict, or Gradio's Obj
        items = []
        for k in list(params.keys()):
            v = params[k]
            vs = v if isinstance(v, (list, tuple)) else [v]
            items += [(str(k), "" if x is None else str(x)) for x in vs]
        return items
    raise TypeError(f"a query string or mapping is needed; got {type(params).__name__}")


def _optional_arm(tp) -> tuple[object, bool]:
    """(X, True) for `X | None`, (tp, False) otherwise."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(arms) == 1 and len(typing.get_args(tp)) == 2:
            return arms[0], True
    return tp, False


def _tuple_item(tp):
    """X for `tuple[X, ...]`, else None."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return None


def _encode(value, tp) -> list[str]:
    item = _tuple_item(tp)
    if item is not None:
        return [_encode_scalar(v, item) for v in value] or [""]
    return [_encode_scalar(value, tp)]


def _encode_scalar(value, tp) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    arm, _ = _optional_arm(tp)
    if arm is float:
        return repr(float(value))  # shortest text that reads back as the same float
    return str(value)


def _decode(name: str, raw: list[str], tp):
    item = _tuple_item(tp)
    if item is not None:
        if raw == [""]:
            return ()
        return tuple(_decode_scalar(name, v, item) for v in raw)
    if len(raw) > 1:
        raise SettingsError(f"link key {name!r} is given {len(raw)} times")
    return _decode_scalar(name, raw[0], tp)


_INT = re.compile(r"[+-]?\d+")


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _decode_scalar(name: str, value: str, tp):
    arm, optional = _optional_arm(tp)
    if value == "" and optional:
        return None

    def bad(expected: str):
        return SettingsError(f"link key {name}={value!r}: {expected}")

    if arm is bool:
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise bad("must be true or false")
    if arm is int:
        if not _INT.fullmatch(value.strip()):
            raise bad("must be an integer")
        return int(value)
    if arm is float:
        try:
            number = float(value)
        except ValueError:
            raise bad("must be a number") from None
        if math.isnan(number):
            raise bad("must be a number")
        return number
    if arm is str:
        return value
    if typing.get_origin(arm) is typing.Literal:
        choices = typing.get_args(arm)
        if value not in choices:
            raise bad(f"must be one of {', '.join(map(str, choices))}")
        return value
    raise TypeError(f"Settings.{name} has type {tp}, which links cannot carry yet")


__all__ = [
    "MAX_QUERY_CHARS",
    "Shared",
    "changed_fields",
    "from_query",
    "permalink",
    "to_query",
]

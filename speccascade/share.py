"""Share and restore runs: permalinks (a run's settings in the URL) and trace files.

A permalink carries what decides a run: the prompt, the pair and every `Settings` field that
differs from `Settings()`'s default (the seed included), so opening it reruns the same run. The
keys are the Settings field names, read from `dataclasses.fields(Settings)` and converted by
their type hints, so a field added to Settings travels in links with no change here; `t` is
accepted for `temperature`. `None` is written as an empty value (`seed=`), a tuple as a
repeated key (`stop=a&stop=b`).

Reading a link is all or nothing: one bad value (an unknown method, `gamma=abc`, an alpha out
of the rule's range, a prompt over the deployment's limit) raises an error that names the key
and the value, because a half-applied link would run something other than what was shared.
Unknown keys are the exception: they are ignored and noted in `Shared.problems`, so a link
made by a newer version (a new Settings field) still opens.

A trace file is what the app's download writes (`Trace.to_json(indent=1)`, no envelope).
`load_trace` checks it against a schema derived from trace.py's dataclasses (required fields,
each field's type, Literal sources, finite numbers, probabilities in [0, 1], ids and counts
>= 0) and for consistency (token ids, positions, per-round counts, summary totals) before
building the Trace, and raises a `TraceFileError` that names the field, the index and what was
expected. Fields with defaults may be missing (files from older versions); unknown fields are
ignored (files from newer versions open in older ones: they lose only what this version cannot
show).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .engine import Settings
from .errors import ModelLoadError, PromptError, SettingsError, TraceFileError
from .i18n import LANGS
from .serving import PairCache, ServeConfig, prompt_problem
from .trace import Trace

# -- permalinks ------------------------------------------------------------------------------

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
    settings: Settings,
    preset: str | None = None,
    drafter: str | None = None,
    verifier: str | None = None,
    lang: str | None = None,
    *,
    explicit: bool = False,
) -> str:
    """The urlencoded query of a permalink. Settings are validated first (a SettingsError
    names the field), so a link is never written that cannot be opened; `explicit` writes
    every field, not only those that differ from the defaults. A link longer than
    MAX_QUERY_CHARS (a long prompt) raises a PromptError."""
    settings = settings.validated()
    pairs: list[tuple[str, str]] = []
    if prompt:
        pairs.append((PROMPT_KEY, prompt))
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
    try:
        settings = replace(Settings(), **changes).validated(config.max_new_tokens)
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


# -- Settings values <-> query strings, by the field's type ------------------------------------


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


# -- trace files -----------------------------------------------------------------------------

# The app offers runs up to 256 tokens; the engine allows 4096. A 256-token run of the demo
# pair (gamma 5, top-10 lists, per-draft round records), as the app's download writes it,
# measured 0.74 MB (greedy) to 0.90 MB (T = 1): 11.8 to 14.3 MB at 4096 tokens. At ~2.0 kB a
# token, ~0.9 kB a round and ~0.33 kB a draft, the worst case (every round drafts gamma tokens
# and emits one) is 18 MB at gamma 5 and 28 MB at gamma 12 (the app's largest); only gamma
# near the engine's 32 needs a larger `max_bytes`.
MAX_TRACE_BYTES = 32 * 2**20
# Probabilities (T = 1 or, for dtv, a distance between laws): checked to lie in [0, 1].
PROBABILITY_FIELDS = frozenset(
    {
        "q",
        "p",
        "max_q",
        "max_p",
        "dtv",
        "draft_q",
        "draft_p",
        "accept_prob",
        "u",
        "acceptance_rate",
        "acceptance_by_position",
    }
)
PROB_SLACK = 1e-5  # float32 sums may land a few ulps past 1


def load_trace(data: bytes | str | os.PathLike, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """A Trace from a trace file: its bytes, its text, or its path (a str that names an
    existing file, or a Path). Raises TraceFileError saying what is wrong (empty, too large,
    not JSON, not a speccascade trace, which field of which token is wrong)."""
    raw = _read(data, max_bytes)
    if not raw.strip():
        raise TraceFileError("the trace file is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TraceFileError(
            f"the file is not UTF-8 text (byte {e.start}); a trace file is JSON"
        ) from None
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise TraceFileError(
            f"the file is not JSON: {e.msg} at line {e.lineno}, column {e.colno}"
        ) from None
    except RecursionError:
        raise TraceFileError("the file is not a trace: its JSON is nested too deeply") from None
    return trace_from_data(obj)


def trace_from_data(obj: object) -> Trace:
    """A Trace from parsed JSON (`Trace.to_dict()`'s shape), checked as `load_trace` does."""
    if not isinstance(obj, dict):
        raise TraceFileError(
            f"the file holds a JSON {_json_kind(obj)}; a speccascade trace is a JSON object"
        )
    required = _required(Trace)
    if not required & obj.keys():
        found = ", ".join(sorted(map(str, obj))[:8]) or "none"
        raise TraceFileError(
            "this is not a speccascade trace (another tool's file?): it has none of the "
            f"fields {', '.join(sorted(required))}; its fields: {found}"
        )
    trace = _build(Trace, obj, "trace")
    _check_consistency(trace)
    return trace


def _read(data, max_bytes: int) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
    elif isinstance(data, str) and not _is_file(data):
        if not _looks_like_json(data):
            raise TraceFileError(f"no such trace file: {data[:200]!r}")
        raw = data.encode("utf-8")
    elif isinstance(data, (str, os.PathLike)):
        path = Path(data)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise TraceFileError(_too_large(size, max_bytes))
            with path.open("rb") as f:
                raw = f.read(max_bytes + 1)
        except OSError as e:
            raise TraceFileError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    else:
        raise TypeError(f"load_trace takes bytes, text or a path; got {type(data).__name__}")
    if len(raw) > max_bytes:
        raise TraceFileError(_too_large(len(raw), max_bytes))
    return raw


def _is_file(text: str) -> bool:
    return len(text) < 4096 and "\n" not in text and os.path.isfile(text)


def _looks_like_json(text: str) -> bool:
    """JSON text rather than a file name: what a JSON document can start with."""
    s = text.strip()
    return s == "" or s[0] in '{["-0123456789' or s in ("null", "true", "false")


def _too_large(size: int, limit: int) -> str:
    return (
        f"the trace file is {size / 1e6:.1f} MB; files up to {limit / 1e6:.1f} MB are "
        "accepted (a 4096-token run with top-10 lists is about 15 MB)"
    )


def _no_constant(name: str):
    raise TraceFileError(f"the file has {name}; a trace's numbers are all finite")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise TraceFileError(f"the file has the number {text}, which is not finite as a float")
    return x


def _json_kind(obj: object) -> str:
    kinds = {list: "list", str: "string", bool: "true/false", type(None): "null"}
    return kinds.get(type(obj), "number")


# -- the schema: trace.py's dataclasses, read through their type hints ------------------------


@cache
def _hints(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


@cache
def _required(cls) -> frozenset[str]:
    none = dataclasses.MISSING
    return frozenset(
        f.name
        for f in dataclasses.fields(cls)
        if f.init and f.default is none and f.default_factory is none
    )


def _build(cls, obj: object, where: str):
    """An instance of dataclass `cls` from a JSON object, every field checked by its type.
    Missing fields with defaults take them; unknown fields are dropped."""
    return _checker(cls, False)(obj, where)


Check = Callable[[object, str], object]


@cache
def _checker(tp, prob: bool) -> Check:
    """A function that checks a JSON value against type `tp` and converts it (lists of pairs to
    tuples, objects to dataclasses), raising TraceFileError with the value's path. `prob`:
    its numbers are probabilities. Built once per type: a 4096-token file has ~500k values."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in args if a is not type(None)]
        if len(arms) != 1 or len(args) != 2:
            raise TypeError(f"trace files cannot check the type {tp} yet")
        inner = _checker(arms[0], prob)
        return lambda v, where: None if v is None else inner(v, where)
    if tp is bool:
        return _check_bool
    if tp is int:
        return _check_int
    if tp is float:
        return _check_prob if prob else _check_float
    if tp is str:
        return _check_str
    if origin is typing.Literal:
        return partial(_check_choice, args)
    if origin is list:
        return partial(_check_list, _checker(args[0], prob))
    if origin is tuple and args == (int, float):  # (token id, probability)
        return _check_pair
    if tp is dict or origin is dict:
        return _check_dict
    if dataclasses.is_dataclass(tp):
        fields = tuple((n, _checker(t, n in PROBABILITY_FIELDS)) for n, t in _hints(tp).items())
        return partial(_check_record, tp, fields, _required(tp))
    raise TypeError(f"trace files cannot check the type {tp} yet")


def _check_record(cls, fields, required, v, where: str):
    if not isinstance(v, dict):
        raise TraceFileError(f"{where}: expected an object ({cls.__name__}); got {_show(v)}")
    if not required <= v.keys():
        missing = ", ".join(sorted(required - v.keys()))
        raise TraceFileError(f"{where}: missing field(s) {missing} ({cls.__name__})")
    return cls(**{n: check(v[n], f"{where}.{n}") for n, check in fields if n in v})


def _check_list(item: Check, v, where: str) -> list:
    if not isinstance(v, list):
        raise TraceFileError(f"{where}: expected a list; got {_show(v)}")
    return [item(x, f"{where}[{i}]") for i, x in enumerate(v)]


def _check_pair(v, where: str) -> tuple[int, float]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise TraceFileError(f"{where}: expected an [id, probability] pair; got {_show(v)}")
    return _check_int(v[0], f"{where}[0]"), _check_prob(v[1], f"{where}[1]")


def _check_bool(v, where: str) -> bool:
    if not isinstance(v, bool):
        raise TraceFileError(f"{where}: expected true or false; got {_show(v)}")
    return v


def _check_int(v, where: str) -> int:
    if type(v) is not int:  # bool is an int subclass; JSON true is not a count
        raise TraceFileError(f"{where}: expected an integer; got {_show(v)}")
    if v < 0:
        raise TraceFileError(f"{where}: expected an integer >= 0 (an id or a count); got {v}")
    return v


def _check_float(v, where: str) -> float:
    if type(v) is not float:
        if type(v) is not int:
            raise TraceFileError(f"{where}: expected a number; got {_show(v)}")
        v = float(v)
    if not math.isfinite(v):
        raise TraceFileError(f"{where}: expected a finite number; got {v}")
    return v


def _check_prob(v, where: str) -> float:
    v = _check_float(v, where)
    if not -PROB_SLACK <= v <= 1 + PROB_SLACK:
        raise TraceFileError(f"{where}: expected a probability in [0, 1]; got {v}")
    return v


def _check_str(v, where: str) -> str:
    if not isinstance(v, str):
        raise TraceFileError(f"{where}: expected text; got {_show(v)}")
    return v


def _check_choice(choices: tuple, v, where: str):
    if not isinstance(v, str) or v not in choices:
        raise TraceFileError(f"{where}: expected one of {', '.join(choices)}; got {_show(v)}")
    return v


def _check_dict(v, where: str) -> dict:
    if not isinstance(v, dict):
        raise TraceFileError(f"{where}: expected an object; got {_show(v)}")
    return v


def _show(v: object) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_consistency(trace: Trace) -> None:
    """What a run always satisfies: the token list, its ids, its positions, the rounds that
    emitted it and the summary's counts describe the same tokens."""
    n, tokens = len(trace.tokens), trace.tokens
    if len(trace.new_token_ids) != n:
        raise TraceFileError(
            f"trace.new_token_ids has {len(trace.new_token_ids)} ids but trace.tokens has "
            f"{n} records; they list the same tokens"
        )
    for i, t in enumerate(tokens):
        if t.token_id != trace.new_token_ids[i]:
            raise TraceFileError(
                f"trace.tokens[{i}].token_id is {t.token_id} but trace.new_token_ids[{i}] is "
                f"{trace.new_token_ids[i]}; they list the same tokens"
            )
        if t.position != i:
            raise TraceFileError(
                f"trace.tokens[{i}].position is {t.position}; expected {i} (positions count "
                "0, 1, 2, ...)"
            )
    for j, r in enumerate(trace.rounds):
        if r.index != j:
            raise TraceFileError(f"trace.rounds[{j}].index is {r.index}; expected {j}")
    emitted = [0] * len(trace.rounds)
    for i, t in enumerate(tokens):
        if t.round >= len(trace.rounds):
            raise TraceFileError(
                f"trace.tokens[{i}].round is {t.round}, but the trace has "
                f"{len(trace.rounds)} rounds"
            )
        emitted[t.round] += 1
    for j, r in enumerate(trace.rounds):
        if r.emitted != emitted[j]:
            raise TraceFileError(
                f"trace.rounds[{j}].emitted is {r.emitted}, but {emitted[j]} tokens name round {j}"
            )
    s = trace.summary
    if s.new_tokens != n:
        raise TraceFileError(f"trace.summary.new_tokens is {s.new_tokens}; the trace has {n}")
    if s.prompt_tokens != len(trace.prompt_ids):
        raise TraceFileError(
            f"trace.summary.prompt_tokens is {s.prompt_tokens}; trace.prompt_ids has "
            f"{len(trace.prompt_ids)}"
        )


__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TRACE_BYTES",
    "Shared",
    "changed_fields",
    "from_query",
    "load_trace",
    "permalink",
    "to_query",
    "trace_from_data",
]

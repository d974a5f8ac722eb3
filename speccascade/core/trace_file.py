"""A trace file (the app's download, `Trace.to_json`) read back: size-limited, parsed
strictly (no NaN or Infinity), checked against the trace dataclasses' own type hints
(probabilities in [0, 1], consistent positions, rounds and counts) before anything is built.
Unknown fields are dropped; fields with defaults may be missing (files from older versions)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

from speccascade.core.errors import TraceFileError
from speccascade.core.trace import Trace

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

"""Every user-visible string of the app, in English and Chinese, in one place.

Strings live in per-area tables (`app`, `figures`, `learn`), each mapping a key to an
(English, Chinese) pair; `t(key, lang, **values)` picks one and fills its `{fields}`. The
library's algorithm code never imports this: only the UI and the figures format for humans.
"""

from __future__ import annotations

import re

from speccascade.core.engine import METHOD_REGISTRY
from speccascade.i18n import app, figures, learn, race

LANGS = ("en", "zh")

STRINGS: dict[str, tuple[str, str]] = {}
for _table in (app.STRINGS, figures.STRINGS, learn.STRINGS, race.STRINGS):
    _clash = STRINGS.keys() & _table.keys()
    if _clash:
        raise RuntimeError(f"i18n keys defined twice: {sorted(_clash)}")
    STRINGS.update(_table)


def lang_of(code: str | None) -> str:
    """A browser language tag (navigator.language, e.g. 'zh-CN') -> 'zh' or 'en'."""
    return "zh" if (code or "").strip().lower().startswith("zh") else "en"


# A count of one in English: "1 token", "1 time", "1 entry" (not "1 tokens"); Chinese nouns
# have no plural. Only these nouns, and only a whole 1 ("0.1 tokens" and "11 tokens" stay).
_ONE = re.compile(
    r"(?<![\d.,])1 (token|time|call|draft|round|question|run|forward|prompt|answer|position"
    r"|step|window|entr)(s|ies)\b"
)


def _singular(m: re.Match) -> str:
    return f"1 {m[1]}{'y' if m[2] == 'ies' else ''}"


def t(key: str, lang: str = "en", /, **values) -> str:
    """The string `key` in `lang` ('en', 'zh' or a browser tag), with `values` filled in
    (English counts of one in the singular)."""
    en, zh = STRINGS[key]
    if lang_of(lang) == "zh":
        return zh.format(**values) if values else zh
    return _ONE.sub(_singular, en.format(**values)) if values else en


def has(key: str) -> bool:
    return key in STRINGS


def size(n_bytes: int) -> str:
    """A download size as people read it (decimal units, as the hub shows them): 724 MB,
    1.1 GB; the same in every language."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.0f} MB"


def join(sentences: list[str], lang: str) -> str:
    """Sentences into one paragraph: spaced in English, run together in Chinese."""
    return ("" if lang_of(lang) == "zh" else " ").join(sentences)


__all__ = [
    "LANGS",
    "STRINGS",
    "has",
    "join",
    "lang_of",
    "method_label",
    "policy_label",
    "size",
    "t",
    "variant_label",
]


def method_label(method: str, rule: str | None = None, lang: str = "en") -> str:
    """A method's display name; the speculative cascade names its rule ('… · TokenV3')."""
    name = t(f"method.{method}", lang) if has(f"method.{method}") else method
    row = METHOD_REGISTRY.get(method)
    if rule and row is not None and row.rules and has(f"rule.{rule}"):
        return f"{name} · {t(f'rule.{rule}', lang)}"
    return name


def variant_label(label: str, lang: str = "en") -> str:
    """A table's method label ('spec_cascade/token_v3'; bench's '... g=4 T=0') for display."""
    head, sep, tail = str(label).partition(" ")
    method, _, rule = head.partition("/")
    if method not in METHOD_REGISTRY:
        return str(label)
    return method_label(method, rule or None, lang) + (sep + tail if tail else "")


def policy_label(policy: str, lang: str = "en", threshold: float | None = None) -> str:
    """A draft policy's display name; the confidence policy names its threshold."""
    name = t(f"policy.{policy}", lang) if has(f"policy.{policy}") else policy
    return f"{name} ({threshold:g})" if threshold is not None else name

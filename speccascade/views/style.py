"""What the views share: colours, the end-of-text mark, and small helpers for numbers, labels and
legends. Pure functions; every word a reader sees comes from the i18n tables."""

from __future__ import annotations

import html
import math
import re
import unicodedata

import plotly.graph_objects as go
from plotly.colors import qualitative

from speccascade.core.engine import METHOD_REGISTRY
from speccascade.core.rules import Rule
from speccascade.i18n import has, t

COLORS = {
    "accepted": "#b7e4c7",  # drafter token kept
    "resampled": "#ffb4a2",  # verifier took over
    "bonus": "#a9d6ff",  # bonus token from a fully kept window
    "drafter": "#d8f3dc",  # drafter alone
    "verifier": "#e4d4ff",  # verifier alone
}


WHATIF_COLOR = "#d00000"


EOS_MARK = "∎"
# a token with no text of its own (the first bytes of a character the next token completes)
EMPTY_MARK = "∅"


EOS_RE = re.compile(r"^<\|[^|>]*\|>$|^</?s>$")


# Up to 23 methods without repeats; no near-black (the "current setting" marker is black).
DISTINCT_COLOURS = [c for c in qualitative.Dark24 if c != "#222A2A"]


# Speed vs quality: strong colours, none of them red (red marks a wrong answer there).
POINT_COLOURS = [
    "#2E91E5",
    "#1CA71C",
    "#DA16FF",
    "#B68100",
    "#750D86",
    "#00A08B",
    "#511CFB",
    "#EB663B",
    "#6C7C32",
    "#1616A7",
    "#778AAE",
    "#A777F1",
    "#0D2A63",
    "#E15F99",
]


# Timeline: each role and count its own colour.
TIMELINE_COLOURS = {
    "drafter": "#1b9aaa",  # teal
    "verifier": "#7b2cbf",  # purple
    "drafted": "#adb5bd",  # grey
    "kept": "#2b9348",  # green
    "emitted": "#5c7fa3",  # grey-blue
}


KEPT_COLOUR, DEFERRED_COLOUR = "#52b788", "#e85d04"


WRONG_COLOUR = "#d00000"


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _visible(text: str) -> str:
    """Whitespace a reader can see inside a coloured box."""
    return text.replace("\n", "↵").replace(" ", "\u00a0") or EMPTY_MARK


def _cells(c: str) -> int:
    """Columns a character takes: two for East Asian wide ones (a Chinese token of 14
    characters is as long as 28 Latin ones)."""
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def _short(text: str, n: int) -> str:
    """`text` in at most `n` columns (wide characters count two), cut with an ellipsis."""
    if sum(map(_cells, text)) <= n:
        return text
    out, used = [], 1  # the ellipsis
    for c in text:
        used += _cells(c)
        if used > n:
            break
        out.append(c)
    return "".join(out) + "…"


def _pl(text: str) -> str:
    """Text for plotly's pseudo-HTML labels: '<s>' would otherwise strike through."""
    return html.escape(str(text), quote=False)


def is_eos(text: str) -> bool:
    """Whether a token's text is an end-of-text marker (<|endoftext|>, </s>, <|im_end|>, …)."""
    return bool(EOS_RE.match(text))


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _rule_name(rule: Rule, lang: str) -> str:
    return t(f"rule.{rule.name}", lang) if has(f"rule.{rule.name}") else rule.label


def _legend_below(fig: go.Figure) -> None:
    """A horizontal legend along the bottom of the figure, under the axis titles."""
    fig.update_layout(
        legend={
            "orientation": "h",
            "yref": "container",
            "y": 0.01,
            "yanchor": "bottom",
            "x": 0,
            "xanchor": "left",
        }
    )


def rule_for(method: str, rule: str | None) -> Rule | None:
    """The rule a method runs with: its registry row's, or `rule` where it takes the user's."""
    return METHOD_REGISTRY[method].target_rule(rule)

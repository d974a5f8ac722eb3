"""The Learn tab's picture: the loop of a speculative cascade (draft, verify, the rule, keep or
defer, then the next round) as an SVG, in English or Chinese, with the last run's numbers on
it (`explain.WorkedExample`: drafted, kept, taken over, verifier calls, the rule and α) where
there is one, and generic labels otherwise.

Two layouts of the same boxes: `wide`, a row for a desktop, and `tall`, a column that reads on
a phone at its own size. `loop_html` puts both in the page as images (the Markdown the Learn
tab is written in keeps an <img> whole, where it strips an inline <svg>'s viewBox), and the
page's stylesheet shows one by the screen's width (page.css, `.sc-loop`). Boxes take the
height their wrapped text needs, so either language fits. Pure functions; every word comes
from the i18n tables (`learn.loop.*`)."""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from html import escape as html_escape
from xml.sax.saxutils import escape

from speccascade.analysis.explain import WorkedExample
from speccascade.i18n import has, join, lang_of, t
from speccascade.views.style import COLORS, _cells

# The page's system fonts, with the CJK ones a Chinese reader's system has (an <img>'s SVG
# sees the system's fonts, not the page's web fonts).
FONT = (
    "system-ui, -apple-system, 'Segoe UI', 'Noto Sans', 'Noto Sans CJK SC', "
    "'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif"
)
SIZES = {"title": 17.0, "body": 14.0, "number": 15.0, "arrow": 12.5}
LINE = 1.3  # line height, in font sizes
PAD = 12.0  # inside a box, around its text
INK, MUTED, ARROW = "#212529", "#343a40", "#495057"

# Each box's fill (the token strip's colour for what it stands for) and outline.
STYLES = {
    "draft": (COLORS["drafter"], "#1b9aaa"),
    "verify": (COLORS["verifier"], "#7b2cbf"),
    "rule": ("#fff3bf", "#b68100"),
    "keep": (COLORS["accepted"], "#2b9348"),
    "defer": (COLORS["resampled"], "#c1121f"),
}
BOXES = tuple(STYLES)
LAYOUTS = ("wide", "tall")


# -- text: widths and wrapping ---------------------------------------------------------------


def text_width(text: str, size: float, bold: bool = False) -> float:
    """A line's estimated width in pixels at `size` (a wide character is one em; Latin
    capitals and digits about 0.64 em, other letters 0.55, a space 0.3): generous, so a line
    that fits here fits in the browser's sans-serif."""
    em = 0.0
    for c in text:
        if _cells(c) == 2:
            em += 1.0
        elif c == " ":
            em += 0.3
        elif c.isupper() or c.isdigit():
            em += 0.64
        else:
            em += 0.55
    return em * size * (1.06 if bold else 1.0)


# The units a line breaks between: a wide character, a Latin run (lines break at spaces), or
# a space; an opening bracket stays with what follows it, closing punctuation with what
# precedes it (no line starts with "，" or ends with "（").
_PIECES = re.compile(
    r"[（「『《〈]*(?:[^\s\u2e80-\uffef]+|[\u2e80-\uffef])[，。、；：！？）」』》〉]*|\s+"
)


def wrap(text: str, width: float, size: float, bold: bool = False) -> list[str]:
    """`text` in lines no wider than `width` pixels (by `text_width`), as even as the same
    number of lines allows (no last word alone on its line); a word longer than the line
    keeps a line of its own, and Chinese punctuation never starts one."""
    lines = _greedy(text, width, size, bold)
    if len(lines) < 2:
        return lines
    lo, hi = width / 2, width  # the narrowest width that still needs no more lines
    for _ in range(12):
        mid = (lo + hi) / 2
        if len(_greedy(text, mid, size, bold)) > len(lines):
            lo = mid
        else:
            hi = mid
    return _greedy(text, hi, size, bold)


def _greedy(text: str, width: float, size: float, bold: bool) -> list[str]:
    lines: list[str] = []
    current = ""
    for piece in _PIECES.findall(text):
        candidate = current + piece
        fits = text_width(candidate.rstrip(), size, bold) <= width
        if current.strip() and not fits and piece.strip():
            lines.append(current.rstrip())
            current = piece
        else:
            current = candidate if current.strip() or piece.strip() else ""
    if current.strip():
        lines.append(current.strip())
    return lines


# -- what each box says -----------------------------------------------------------------------


def _alpha(a: float) -> str:
    if math.isinf(a):
        return "+∞" if a > 0 else "−∞"
    return f"{a:g}".replace("-", "−")


def _rule_name(rule: str, lang: str) -> str:
    return t(f"rule.{rule}", lang) if has(f"rule.{rule}") else rule


def box_lines(key: str, lang: str, ex: WorkedExample | None) -> list[tuple[str, str]]:
    """(text, kind) of one box, unwrapped: its title, what it does, and the run's numbers."""
    out = [(t(f"learn.loop.{key}", lang), "title")]
    if key == "rule" and ex is not None:
        name = _rule_name(ex.rule, lang)
        rule = name if ex.alpha is None else t("learn.loop.rule.alpha", lang, rule=name,
                                                alpha=_alpha(ex.alpha))  # fmt: skip
        out.append((rule, "number"))
    out.append((t(f"learn.loop.{key}.text", lang), "body"))
    if ex is None:
        return out
    if key == "draft":
        out.append((t("learn.loop.draft.n", lang, drafted=ex.drafted), "number"))
    elif key == "verify":
        out.append((t("learn.loop.verify.n", lang, calls=ex.verifier_calls), "number"))
    elif key == "keep":
        share = f"{ex.accepted / ex.drafted:.0%}" if ex.drafted else "—"
        out.append(
            (t("learn.loop.keep.n", lang, kept=ex.accepted, drafted=ex.drafted, share=share),
             "number")
        )  # fmt: skip
        if ex.bonus:
            out.append((t("learn.loop.keep.bonus", lang, bonus=ex.bonus), "body"))
    elif key == "defer":
        out.append((t("learn.loop.defer.n", lang, replaced=ex.replaced), "number"))
    return out


def _wrapped(lines: list[tuple[str, str]], width: float) -> list[tuple[str, str]]:
    inner = width - 2 * PAD
    return [
        (piece, kind)
        for text, kind in lines
        for piece in wrap(text, inner, SIZES[kind], bold=kind != "body")
    ]


def _height(lines: list[tuple[str, str]]) -> float:
    return sum(SIZES[kind] * LINE for _, kind in lines) + 2 * PAD


# -- geometry ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h


@dataclass(frozen=True)
class Label:
    """Text beside an arrow: wrapped to `width`, anchored at (x, y) (its first line)."""

    text: str
    x: float
    y: float
    width: float
    anchor: str = "middle"


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    boxes: dict[str, Box]
    lines: dict[str, list[tuple[str, str]]]  # each box's wrapped lines
    arrows: list[list[tuple[float, float]]]  # polylines, the arrowhead at the last point
    joins: list[list[tuple[float, float]]]  # polylines without an arrowhead
    labels: list[Label]


def _contents(lang: str, ex: WorkedExample | None) -> dict[str, list[tuple[str, str]]]:
    return {key: box_lines(key, lang, ex) for key in BOXES}


def _loop_text(lang: str, ex: WorkedExample | None) -> str:
    if ex is None:
        return t("learn.loop.next", lang)
    return t("learn.loop.next.n", lang, tokens=ex.tokens)


def wide_layout(lang: str, ex: WorkedExample | None) -> Layout:
    """A row: draft, verify and the rule, then keep over defer, and the loop back below."""
    width, top, loop_x = 826.0, 12.0, 814.0
    columns = {"draft": (8.0, 160.0), "verify": (226.0, 160.0), "rule": (444.0, 150.0)}
    right_x, right_w, between = 640.0, 160.0, 44.0
    content = _contents(lang, ex)
    lines = {k: _wrapped(content[k], columns[k][1] if k in columns else right_w) for k in BOXES}
    middle = max(_height(lines[k]) for k in columns)
    side = max(_height(lines["keep"]), _height(lines["defer"]))
    row = max(middle, 2 * side + between)
    boxes = {k: Box(x, top + (row - middle) / 2, w, middle) for k, (x, w) in columns.items()}
    keep_y = top + (row - 2 * side - between) / 2
    boxes["keep"] = Box(right_x, keep_y, right_w, side)
    boxes["defer"] = Box(right_x, keep_y + side + between, right_w, side)
    d, v, r, k, f = (boxes[x] for x in BOXES)
    loop_y = top + row + 28
    arrows = [
        [(d.right, d.cy), (v.x, v.cy)],
        [(v.right, v.cy), (r.x, r.cy)],
        [(r.right, r.cy - 8), (k.x, k.cy)],
        [(r.right, r.cy + 8), (f.x, f.cy)],
        [(loop_x, k.cy), (loop_x, loop_y), (d.cx, loop_y), (d.cx, d.bottom)],
    ]
    joins = [[(k.right, k.cy), (loop_x, k.cy)], [(f.right, f.cy), (loop_x, f.cy)]]
    gap = v.x - d.right - 2
    mid_keep, mid_defer = (r.right + k.x) / 2, (r.right + f.x) / 2
    labels = [
        Label(t("learn.loop.arrow.drafts", lang), (d.right + v.x) / 2, d.cy - 10, gap),
        Label(t("learn.loop.arrow.scores", lang), (v.right + r.x) / 2, v.cy - 10, gap),
        Label(t("learn.loop.arrow.keep", lang), mid_keep, (r.cy + k.cy) / 2 - 12, 60),
        Label(t("learn.loop.arrow.defer", lang), mid_defer, (r.cy + f.cy) / 2 + 24, 60),
        Label(_loop_text(lang, ex), (d.cx + loop_x) / 2, loop_y + 20, loop_x - d.cx - 20),
    ]
    height = loop_y + 20 + _label_height(labels[-1]) + 4
    return Layout(width, height, boxes, lines, arrows, joins, labels)


def tall_layout(lang: str, ex: WorkedExample | None) -> Layout:
    """A column for a phone: draft, verify, the rule, then keep beside defer; the loop goes
    back up the left edge."""
    width, left, loop_x, step = 360.0, 30.0, 12.0, 42.0
    full = width - left - 6
    half = (full - 12) / 2
    content = _contents(lang, ex)
    lines = {k: _wrapped(content[k], half if k in ("keep", "defer") else full) for k in BOXES}
    boxes, y = {}, 10.0
    for key in ("draft", "verify", "rule"):
        boxes[key] = Box(left, y, full, _height(lines[key]))
        y += _height(lines[key]) + step
    y += 12  # the two arrows down to keep and defer slant
    side = max(_height(lines["keep"]), _height(lines["defer"]))
    boxes["keep"] = Box(left, y, half, side)
    boxes["defer"] = Box(left + half + 12, y, half, side)
    d, v, r, k, f = (boxes[x] for x in BOXES)
    loop_y = k.bottom + 24
    arrows = [
        [(d.cx, d.bottom), (v.cx, v.y)],
        [(v.cx, v.bottom), (r.cx, r.y)],
        [(r.cx - 16, r.bottom), (k.cx, k.y)],
        [(r.cx + 16, r.bottom), (f.cx, f.y)],
        [(f.cx, f.bottom), (f.cx, loop_y), (loop_x, loop_y), (loop_x, d.cy), (d.x, d.cy)],
    ]
    joins = [[(k.cx, k.bottom), (k.cx, loop_y)]]
    mid = (r.bottom + k.y) / 2
    labels = [
        Label(t("learn.loop.arrow.drafts", lang), d.cx + 10, d.bottom + step / 2 + 5, 150, "start"),
        Label(t("learn.loop.arrow.scores", lang), v.cx + 10, v.bottom + step / 2 + 5, 150, "start"),
        Label(t("learn.loop.arrow.keep", lang), (r.cx + k.cx) / 2 - 14, mid + 5, 70, "end"),
        Label(t("learn.loop.arrow.defer", lang), (r.cx + f.cx) / 2 + 14, mid + 5, 70, "start"),
        Label(_loop_text(lang, ex), (loop_x + width - 10) / 2 + 10, loop_y + 20, width - 50),
    ]
    height = loop_y + 20 + _label_height(labels[-1]) + 4
    return Layout(width, height, boxes, lines, arrows, joins, labels)


def _label_lines(label: Label) -> list[str]:
    return wrap(label.text, label.width, SIZES["arrow"])


def _label_height(label: Label) -> float:
    return (len(_label_lines(label)) - 1) * SIZES["arrow"] * LINE


def layout(lang: str, ex: WorkedExample | None, kind: str = "wide") -> Layout:
    if kind not in LAYOUTS:
        raise ValueError(f"unknown layout {kind!r}; choose from {', '.join(LAYOUTS)}")
    return (wide_layout if kind == "wide" else tall_layout)(lang, ex)


# -- drawing -----------------------------------------------------------------------------------


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _points(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{_n(x)},{_n(y)}" for i, (x, y) in enumerate(points))


def _box_svg(key: str, box: Box, lines: list[tuple[str, str]]) -> list[str]:
    fill, stroke = STYLES[key]
    out = [
        f'<rect x="{_n(box.x)}" y="{_n(box.y)}" width="{_n(box.w)}" height="{_n(box.h)}" '
        f'rx="10" fill="{fill}" stroke="{stroke}" stroke-width="2"/>'
    ]
    y = box.y + (box.h - (_height(lines) - 2 * PAD)) / 2
    for text, kind in lines:
        size = SIZES[kind]
        y += size * LINE
        weight = "" if kind == "body" else ' font-weight="700"'
        colour = MUTED if kind == "body" else INK
        out.append(
            f'<text x="{_n(box.cx)}" y="{_n(y - size * 0.3)}" font-size="{_n(size)}"{weight} '
            f'fill="{colour}" text-anchor="middle">{escape(text)}</text>'
        )
    return out


def _label_svg(label: Label) -> list[str]:
    size = SIZES["arrow"]
    out = []
    for i, line in enumerate(_label_lines(label)):
        out.append(
            f'<text x="{_n(label.x)}" y="{_n(label.y + i * size * LINE)}" font-size="{_n(size)}" '
            f'fill="{ARROW}" text-anchor="{label.anchor}" stroke="#ffffff" stroke-width="4" '
            f'paint-order="stroke" stroke-linejoin="round">{escape(line)}</text>'
        )
    return out


def loop_svg(lang: str = "en", example: WorkedExample | None = None, kind: str = "wide") -> str:
    """The loop as a standalone SVG document (`kind`: "wide" or "tall"), with `example`'s
    numbers where given."""
    lay = layout(lang, example, kind)
    w, h = _n(lay.width), _n(math.ceil(lay.height))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
        f'height="{h}" font-family="{escape(FONT, {chr(34): "&quot;"})}" role="img">',
        f"<title>{escape(loop_alt(lang, example))}</title>",
        '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{ARROW}"/></marker>'
        "</defs>",
        f'<rect x="0" y="0" width="{w}" height="{h}" rx="12" fill="#ffffff"/>',
    ]
    style = f'fill="none" stroke="{ARROW}" stroke-width="2" stroke-linejoin="round"'
    parts += [f'<path d="{_points(p)}" {style}/>' for p in lay.joins]
    parts += [f'<path d="{_points(p)}" {style} marker-end="url(#head)"/>' for p in lay.arrows]
    for key in BOXES:
        parts += _box_svg(key, lay.boxes[key], lay.lines[key])
    for label in lay.labels:
        parts += _label_svg(label)
    parts.append("</svg>")
    return "\n".join(parts)


def loop_alt(lang: str = "en", example: WorkedExample | None = None) -> str:
    """The picture in words (its alt text and SVG title): every box and the loop, in order."""
    zh = lang_of(lang) == "zh"
    colon, semi, stop = ("：", "；", "。") if zh else (": ", "; ", ".")
    sentences = []
    for key in BOXES:
        title, *rest = (text for text, _ in box_lines(key, lang, example))
        sentences.append(_ended(title + colon + semi.join(rest), stop))
    loop = _loop_text(lang, example)
    sentences.append(_ended(loop[:1].upper() + loop[1:], stop))
    return join(sentences, lang)


def _ended(sentence: str, stop: str) -> str:
    return sentence if sentence.endswith(("?", "？")) else sentence + stop


def _data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def loop_html(lang: str = "en", example: WorkedExample | None = None) -> str:
    """Both layouts as images for the Learn tab's Markdown (one line: a Markdown HTML block),
    each with the picture in words as its alt text; page.css shows the one that fits."""
    alt = html_escape(loop_alt(lang, example), quote=True)
    images = "".join(
        f'<img class="sc-loop-{kind}" src="{_data_uri(loop_svg(lang, example, kind))}" alt="{alt}">'
        for kind in LAYOUTS
    )
    return f'<div class="sc-loop">{images}</div>'


__all__ = ["loop_alt", "loop_html", "loop_svg", "text_width", "wrap"]

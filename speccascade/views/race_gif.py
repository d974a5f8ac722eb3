"""The race as an animated GIF for slides: the same lanes, colours and clock as the race's
page (views/race.py), drawn with Pillow, slowed so the longest lane takes a few seconds."""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from speccascade.analysis.race import Race
from speccascade.i18n import t
from speccascade.views.race import KIND_COLORS, lane_label

# Fonts tried in order (a CJK one first where the page is Chinese); Pillow's own otherwise.
FONTS = {
    "zh": (
        "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
        "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    ),
    "en": (
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    ),
}
WIDTH, PAD, SIZE = 1280, 24, 22
SHOWN_S = 6.0  # the longest lane takes this long on screen
FPS = 10
HOLD_S = 2.5  # the finished race stays this long before the loop restarts


@lru_cache(maxsize=8)
def font(lang: str, size: int = SIZE) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for path in FONTS["zh" if lang.startswith("zh") else "en"]:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size)


def _layout(race: Race, lang: str, y: int) -> tuple[list[dict], int]:
    """Where every lane's name, track and tokens go (all shown), and the height used."""
    f = font(lang)
    line = int(SIZE * 1.6)
    lanes = []
    y += line + 4  # the question
    for lane in race.lanes:
        box = {"lane": lane, "label_y": y, "track_y": y + line, "tokens": []}
        x, ty = PAD, y + line + 14
        for tok in lane.tokens:
            text = t("race.end", lang) if tok.kind == "end" else tok.text
            w = int(f.getlength(text)) + 4
            if x + w > WIDTH - PAD and x > PAD:
                x, ty = PAD, ty + line
            box["tokens"].append((tok, text, x, ty, w))
            x += w
        lanes.append(box)
        y = ty + line + 10
    return lanes, y


def _frame(races, layouts, height: int, now: float, speed: float, lang: str) -> Image.Image:
    img = Image.new("RGB", (WIDTH, height), "white")
    d = ImageDraw.Draw(img)
    f, small = font(lang), font(lang, SIZE - 4)
    clock = t("race.clock", lang).replace("{t}", f"{now:.3f} s").replace("{speed}", f"{speed:.2g}x")
    d.text((PAD, 8), clock, fill="#343a40", font=small)
    for race, (boxes, top) in zip(races, layouts):
        end = max(x.finish_s for x in race.lanes)
        d.text((PAD, top), race.question, fill="#111", font=f)
        for box in boxes:
            lane = box["lane"]
            calls = max([n for at, n in lane.calls if at <= now], default=0)
            head = f"{lane_label(lane.method, lane.rule, lang)}   " + t("race.calls", lang).replace(
                "{n}", str(calls)
            )
            if now >= lane.finish_s:
                head += "   " + t("race.finish", lang).replace("{t}", f"{lane.finish_s:.3f} s")
                if lane.method != "verifier":
                    key = "race.faster" if lane.speedup >= 1 else "race.slower"
                    x = lane.speedup if lane.speedup >= 1 else 1 / lane.speedup
                    head += " · " + t(key, lang).replace("{x}", f"{x:.2f}")
            d.text((PAD, box["label_y"]), head, fill="#111", font=small)
            ty = box["track_y"] + 4
            d.rounded_rectangle((PAD, ty, WIDTH - PAD, ty + 6), 3, fill="#e9ecef")
            span = (WIDTH - 2 * PAD) * min(now, lane.finish_s) / end
            if span > 0:
                d.rounded_rectangle((PAD, ty, PAD + span, ty + 6), 3, fill="#52b788")
            flag = PAD + (WIDTH - 2 * PAD) * lane.finish_s / end
            d.rectangle((flag - 1, ty - 4, flag + 1, ty + 10), fill="#212529")
            for tok, text, x, y, w in box["tokens"]:
                if tok.at_s > now:
                    continue
                d.rounded_rectangle((x, y, x + w - 2, y + SIZE + 8), 3,
                                    fill=KIND_COLORS.get(tok.kind, "#fff"))  # fmt: skip
                gone = tok.kind == "wasted" and lane.wasted_until is not None
                gone = gone and now >= lane.wasted_until
                d.text((x + 1, y + 2), text, fill="#868e96" if gone else "#111", font=f)
                if gone:
                    d.line((x, y + SIZE // 2 + 4, x + w - 2, y + SIZE // 2 + 4), fill="#868e96")
    return img


def race_gif(races: list[Race], lang: str) -> bytes:
    """The races, slowed so the longest lane takes SHOWN_S seconds, then held; loops."""
    layouts, y = [], 8 + int(SIZE * 1.4)
    for race in races:
        boxes, bottom = _layout(race, lang, y)
        layouts.append((boxes, y))
        y = bottom + 8
    longest = max(x.finish_s for r in races for x in r.lanes)
    speed = SHOWN_S / longest if longest > 0 else 1.0  # screen seconds per run second
    frames = [
        _frame(races, layouts, y, min(longest, i / FPS / speed), 1 / speed, lang)
        for i in range(int(SHOWN_S * FPS) + 1)
    ]
    frames += [frames[-1]] * int(HOLD_S * FPS)
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:],
                   duration=int(1000 / FPS), loop=0, optimize=True)  # fmt: skip
    return out.getvalue()

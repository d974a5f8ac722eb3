"""The race as one self-contained HTML page: lanes that write their tokens on one clock, with
play, pause, restart and slow motion. Inline CSS, script and data, no network: the race tab
shows it in a frame, and its download is the same file, which plays offline."""

from __future__ import annotations

import html
import json

from speccascade.analysis.race import Race
from speccascade.i18n import has, t
from speccascade.views.style import COLORS

# token kinds -> colours (the token strip's, so a class reads both the same way)
KIND_COLORS = {
    "kept": COLORS["accepted"],
    "taken": COLORS["resampled"],
    "bonus": COLORS["bonus"],
    "verifier": COLORS["verifier"],
    "drafter": COLORS["drafter"],
    "wasted": "#e9ecef",
    "end": "#ffffff",
}
SPEEDS = (1.0, 0.25, 0.1)
DEFAULT_SPEED = 0.1  # a 0.3 s run takes 3 s on screen: a class can follow it


def lane_label(method: str, rule: str | None, lang: str) -> str:
    """A lane's name in the page's language (the cascade names its rule)."""
    name = t(f"race.lane.{method}", lang)
    if "{rule}" not in name:
        return name
    return name.format(rule=t(f"rule.{rule}", lang) if has(f"rule.{rule}") else str(rule))


def race_data(race: Race, lang: str) -> dict:
    """What the page's script plays: each lane's tokens with their times, calls and finish."""
    return {
        "question": race.question,
        "lanes": [
            {
                "label": lane_label(x.method, x.rule, lang),
                "method": x.method,
                "tokens": [[tok.text, tok.kind, round(tok.at_s, 5)] for tok in x.tokens],
                "calls": [[round(at, 5), n] for at, n in x.calls],
                "finish": round(x.finish_s, 5),
                "speedup": round(x.speedup, 3),
                "correct": x.correct,
                "wasted_until": x.wasted_until,
            }
            for x in race.lanes
        ],
    }


def _words(lang: str, rounds: int) -> dict:
    keys = ("play", "pause", "restart", "speed", "calls", "finish", "faster", "slower",
            "same", "right", "wrong", "clock", "thrown", "legend.kept", "legend.taken",
            "legend.bonus", "legend.verifier", "legend.drafter", "legend.wasted", "end")  # fmt: skip
    words = {k: t(f"race.{k}", lang) for k in keys}
    words["note"] = t("race.note", lang, rounds=rounds)
    return words


# The app's frame takes the height its page reports (views/race.py's script posts it).
FRAME_JS = """
window.addEventListener('message', (e) => {
  const frame = element.querySelector('iframe.sc-race-frame');
  if (frame && e.source === frame.contentWindow && e.data && e.data.raceHeight)
    frame.style.height = (e.data.raceHeight + 8) + 'px';
});
"""


def race_document(races: list[Race], lang: str) -> str:
    """A whole HTML page that plays `races` (one after another on the page, each on its own
    clock, all started and slowed together)."""
    data = [race_data(r, lang) for r in races]
    words = _words(lang, races[0].rounds if races else 0)
    legend = "".join(
        f'<span class="chip" style="background:{KIND_COLORS[k]}">{html.escape(words["legend." + k])}</span>'
        for k in ("kept", "taken", "bonus", "verifier", "drafter", "wasted")
    )
    speeds = "".join(
        f'<button class="speed{" on" if s == DEFAULT_SPEED else ""}" data-speed="{s}">{s:g}x</button>'
        for s in SPEEDS
    )
    payload = json.dumps({"races": data, "words": words, "colors": KIND_COLORS,
                          "speed": DEFAULT_SPEED}, ensure_ascii=False)  # fmt: skip
    payload = payload.replace("</", "<\\/")  # no "</script>" inside the script
    return _PAGE.format(
        lang="zh-CN" if lang.startswith("zh") else "en",
        title=html.escape(t("race.title", lang)),
        play=html.escape(words["play"]),
        restart=html.escape(words["restart"]),
        speed=html.escape(words["speed"]),
        speeds=speeds,
        legend=legend,
        note=html.escape(words["note"]),
        payload=payload,
        css=_CSS,
        script=_SCRIPT,
    )


_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans CJK SC",
  "Noto Sans", sans-serif; margin: 0; padding: 10px; color: #111; background: #fff; }
.bar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 6px; }
button { font: inherit; padding: 4px 12px; border: 1px solid #495057; border-radius: 6px;
  background: #f8f9fa; cursor: pointer; }
button.on { background: #343a40; color: #fff; }
.clock { font-variant-numeric: tabular-nums; margin-left: 6px; color: #343a40; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 8px; margin: 4px 0 8px; font-size: .85em; }
.chip { padding: 1px 7px; border-radius: 4px; white-space: nowrap; }
.race h3 { margin: 12px 0 6px; font-size: 1.05em; }
.lane { border-top: 1px solid #dee2e6; padding: 6px 0; }
.head { display: flex; flex-wrap: wrap; gap: 2px 12px; align-items: baseline; }
.name { font-weight: 600; min-width: 14em; }
.calls { color: #495057; font-size: .9em; font-variant-numeric: tabular-nums; }
.done { margin-left: auto; font-weight: 600; font-variant-numeric: tabular-nums; }
.track { position: relative; height: 6px; background: #e9ecef; border-radius: 3px;
  margin: 4px 0; }
.fill { position: absolute; left: 0; top: 0; bottom: 0; background: #52b788;
  border-radius: 3px; }
.flag { position: absolute; top: -4px; bottom: -4px; width: 2px; background: #212529; }
.toks { line-height: 1.9; min-height: 1.9em; overflow-wrap: anywhere; }
.tok { padding: 0 1px; margin: 0 0 0 0; border-radius: 3px; white-space: pre-wrap; }
.tok.wasted.gone { text-decoration: line-through; color: #868e96; }
.tok.end { border: 1px solid #adb5bd; color: #6c757d; font-size: .8em; padding: 0 4px;
  margin-left: 3px; }
.note { color: #495057; font-size: .85em; margin-top: 8px; }
body.big { font-size: 22px; }
body.big .name { min-width: 12em; }
@media (max-width: 640px) { .name { min-width: 0; } .done { margin-left: 0; } }
"""

_SCRIPT = r"""
const P = JSON.parse(document.getElementById('race-data').textContent);
const W = P.words;
let speed = P.speed, playing = false, shown = 0, last = null;
const races = P.races.map((race, ri) => {
  const end = Math.max(...race.lanes.map(l => l.finish));
  const box = document.createElement('div'); box.className = 'race';
  const h = document.createElement('h3'); h.textContent = race.question; box.appendChild(h);
  const lanes = race.lanes.map(l => {
    const el = document.createElement('div'); el.className = 'lane';
    el.innerHTML = '<div class="head"><span class="name"></span><span class="calls"></span>' +
      '<span class="done"></span></div><div class="track"><div class="fill"></div>' +
      '<div class="flag"></div></div><div class="toks"></div>';
    el.querySelector('.name').textContent = l.label;
    el.querySelector('.flag').style.left = (100 * l.finish / end) + '%';
    const toks = el.querySelector('.toks');
    const spans = l.tokens.map(([text, kind]) => {
      const s = document.createElement('span'); s.className = 'tok ' + kind;
      s.textContent = kind === 'end' ? W.end : text;
      s.style.background = P.colors[kind] || '#fff';
      s.style.visibility = 'hidden'; toks.appendChild(s); return s;
    });
    box.appendChild(el);
    return {l, el, spans};
  });
  document.getElementById('races').appendChild(box);
  const ver = race.lanes.find(l => l.method === 'verifier');
  return {race, end, lanes, ver};
});
const longest = Math.max(...races.map(r => r.end));
function fmt(s) { return s.toFixed(3) + ' s'; }
function verdict(l) {
  if (l.method === 'verifier') return '';
  const x = l.speedup;
  if (Math.abs(x - 1) < 0.05) return ' · ' + W.same;
  return ' · ' + (x > 1 ? W.faster : W.slower).replace('{x}', (x > 1 ? x : 1 / x).toFixed(2));
}
function draw(t) {
  for (const r of races) {
    for (const {l, el, spans} of r.lanes) {
      l.tokens.forEach(([, kind, at], i) => {
        spans[i].style.visibility = at <= t ? 'visible' : 'hidden';
        if (kind === 'wasted') spans[i].classList.toggle('gone', l.wasted_until !== null && t >= l.wasted_until);
      });
      let n = 0; for (const [at, c] of l.calls) if (at <= t) n = c;
      el.querySelector('.calls').textContent = W.calls.replace('{n}', n);
      el.querySelector('.fill').style.width = (100 * Math.min(t, l.finish) / r.end) + '%';
      const done = el.querySelector('.done');
      if (t >= l.finish) {
        const facts = l.correct === null ? '' : ' · ' + (l.correct ? W.right : W.wrong);
        done.textContent = W.finish.replace('{t}', fmt(l.finish)) + verdict(l) + facts;
      } else done.textContent = '';
    }
  }
  document.getElementById('clock').textContent =
    W.clock.replace('{t}', fmt(Math.min(t, longest))).replace('{speed}', speed + 'x');
}
function frame(now) {
  if (!playing) return;
  if (last !== null) shown += (now - last) / 1000 * speed;
  last = now;
  if (shown >= longest) { shown = longest; playing = false; setPlay(); }
  draw(shown);
  if (playing) requestAnimationFrame(frame);
}
function setPlay() { document.getElementById('play').textContent = playing ? W.pause : W.play; }
function play() {
  if (shown >= longest) shown = 0;
  playing = !playing; last = null; setPlay();
  if (playing) requestAnimationFrame(frame);
}
function restart() { shown = 0; last = null; draw(0); if (!playing) play(); }
document.getElementById('play').onclick = play;
document.getElementById('restart').onclick = restart;
document.querySelectorAll('button.speed').forEach(b => b.onclick = () => {
  speed = parseFloat(b.dataset.speed);
  document.querySelectorAll('button.speed').forEach(x => x.classList.toggle('on', x === b));
  draw(shown);
});
// inside the app, a click on the race takes the keys: the presentation's keys go on to the page
const PAGE_KEYS = ['ArrowRight', 'ArrowLeft', 'PageDown', 'PageUp', 'Escape'];
document.addEventListener('keydown', e => {
  if (e.key === ' ') { e.preventDefault(); play(); }
  if (e.key === 'r' || e.key === 'R') restart();
  if (window.parent !== window && PAGE_KEYS.includes(e.key)) {
    e.preventDefault();
    window.parent.postMessage({raceKey: e.key}, '*');
  }
});
// presentation mode (app/present.py) enlarges the race and plays or pauses it with Space
function big(on) { document.body.classList.toggle('big', on); tellHeight(); }
try { if (window.parent.document.body.classList.contains('sc-present')) big(true); } catch (e) {}
window.addEventListener('message', (e) => {
  if (e.data && 'big' in e.data) big(Boolean(e.data.big));
  if (e.data && e.data.toggle) play();
});
window.raceState = () => ({shown, longest, playing, speed});
// inside the app's frame: tell it the page's height (tokens keep their place while hidden,
// so the height is the finished race's from the start)
function tellHeight() {
  const box = document.getElementById('wrap').getBoundingClientRect();
  if (window.parent !== window)
    window.parent.postMessage({raceHeight: Math.ceil(box.height) + 24}, '*');
}
window.addEventListener('resize', tellHeight);
window.raceSeek = (t) => { shown = t; draw(t); };
draw(0);
tellHeight();
play();
"""

_PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body><main id="wrap">
<div class="bar"><button id="play">{play}</button><button id="restart">{restart}</button>
<span>{speed}</span>{speeds}<span class="clock" id="clock"></span></div>
<div class="legend">{legend}</div>
<div id="races"></div>
<div class="note">{note}</div></main>
<script type="application/json" id="race-data">{payload}</script>
<script>{script}</script>
</body></html>
"""

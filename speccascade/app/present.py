"""Presentation mode: large type, the settings column hidden, and the arrow keys stepping
through the story's scenes (the last of which is the race); Escape leaves it. A link with
`present=1` opens the page in it. All in the browser: no model runs for it."""

from __future__ import annotations

import gradio as gr

from speccascade.app.context import label

PRESENT_KEY = "present"

# Installed once on load. The race's frame (views/race.py) is told to enlarge itself too.
PRESENT_JS = f"""() => {{
  if (window.scPresent) return;
  const scenes = () => [...document.querySelectorAll('button[id^="scene-"]')];
  const frames = () => [...document.querySelectorAll('iframe.sc-race-frame')];
  let at = -1;
  window.scPresent = (on) => {{
    const body = document.body;
    const v = on === undefined ? !body.classList.contains('sc-present') : on;
    body.classList.toggle('sc-present', v);
    frames().forEach((f) => f.contentWindow && f.contentWindow.postMessage({{big: v}}, '*'));
    const u = new URL(window.location.href);
    if (v) u.searchParams.set('{PRESENT_KEY}', '1'); else u.searchParams.delete('{PRESENT_KEY}');
    window.history.replaceState(null, '', u);
    setTimeout(() => window.dispatchEvent(new Event('resize')), 50);
  }};
  document.addEventListener('click', (e) => {{
    const b = e.target.closest && e.target.closest('button[id^="scene-"]');
    if (b) at = scenes().indexOf(b);
  }}, true);
  const step = (e) => {{
    if (!document.body.classList.contains('sc-present')) return;
    const list = scenes();
    if (e.key === 'ArrowRight' || e.key === 'PageDown') {{
      at = Math.min(at + 1, list.length - 1); list[at].click(); e.preventDefault();
    }} else if (e.key === 'ArrowLeft' || e.key === 'PageUp') {{
      at = Math.max(at - 1, 0); list[at].click(); e.preventDefault();
    }} else if (e.key === 'Escape') {{
      window.scPresent(false);
    }} else if (e.key === ' ') {{
      const f = frames().find((x) => x.offsetParent !== null);
      if (f) {{ f.contentWindow.postMessage({{toggle: true}}, '*'); e.preventDefault(); }}
    }}
  }};
  document.addEventListener('keydown', (e) => {{
    if (e.target.closest && e.target.closest('input, textarea, select, [contenteditable]')) return;
    step(e);
  }});
  // a click on the race's frame gives it the keys; it sends the presentation's keys back here
  window.addEventListener('message', (m) => {{
    if (m.data && m.data.raceKey) step({{key: m.data.raceKey, preventDefault: () => {{}}}});
  }});
  if (new URLSearchParams(window.location.search).get('{PRESENT_KEY}') === '1') window.scPresent(true);
}}"""

TOGGLE_JS = "() => { window.scPresent && window.scPresent(); }"


def parts() -> dict:
    """The masthead's button."""
    btn = gr.Button(label("ui.present"), elem_id="present", size="sm", scale=0, min_width=80)
    return dict(present_btn=btn)


def wire(page, demo: gr.Blocks) -> None:
    page.present_btn.click(None, js=TOGGLE_JS, api_name=False, queue=False)
    demo.load(None, js=PRESENT_JS, api_name=False, queue=False)

"""The page in a real browser (Debian's chromium): the guided story, Stop, token clicks, the
Compare tab, and the layout at 1440x900 and 390x844 in English and Chinese. Screenshots go to
artifacts/ on every run (named in each test)."""

from __future__ import annotations

import re
import time

import pytest
from test_app import ARTIFACTS, _launch, _playwright, launched

from speccascade.app.serving import ServeConfig
from speccascade.core import engine

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
SCENES = ("sd", "cascade", "hard", "alpha", "race")
# What may stay Latin on the Chinese page: the project's and models' names, rule and method
# names, symbols, file formats, the Gradio footer's brand, the papers cited, and the model's
# own output (removed before this), and the language switch's "English".
ALLOWED = (
    r"English|speccascade|SmolLM2|TokenV\d|BiLD\*?|OPT|Chow|Diff|D_TV|ROUGE-L|JSON|CSV|Hub|ID|Gradio|API|"
    r"owner/name|max|norm|trace|\.csv|\.json|"
    r"Narasimhan|Leviathan|Chen|Tran-Thien|Kim|Cai|Medusa|Holsman|Sun|DIVERSE|Jensen|Shannon|"
    r"assistant_ensemble_weight|transformers|weight|arXiv|ICLR|ICML"  # authors, venues, code
)
# quiet: the other xdist worker waits, so a page under load still renders in time (2026-12-06:
# a busy run of the suite timed out the first page of two tests)
pytestmark = [pytest.mark.browser, pytest.mark.quiet]
# The page's visible text, without the model's output, figures, formulas and code.
VISIBLE_TEXT = """() => {
  const skip = '#tokens, .js-plotly-plot, .katex, code, textarea, script, style';
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const parent = walk.currentNode.parentElement;
    if (!parent || parent.closest(skip) || !parent.checkVisibility({visibilityProperty: true}))
      continue;
    out.push(walk.currentNode.textContent);
  }
  return out.join(' ');
}"""


@pytest.fixture(scope="module")
def url():
    config = ServeConfig(max_new_tokens=256, max_total_tokens=4096, concurrency=2, queue_size=8)
    with launched(config) as (address, _):
        yield address


@pytest.fixture(scope="module")
def browser():
    expect, sync_playwright = _playwright()
    with sync_playwright() as p:
        b = _launch(p)
        yield b
        b.close()


def open_page(browser, url, viewport, locale="en-US", **options):
    page = browser.new_page(viewport=viewport, locale=locale, **options)
    page.goto(url, wait_until="load")
    page.wait_for_selector("#run", timeout=30_000)
    zh = locale.startswith("zh")
    # the load handler puts the page's language into the story caption
    page.wait_for_function(
        f"document.querySelector('#caption').innerText.includes('{'场景 1' if zh else 'scene 1'}')",
        timeout=30_000,
    )
    return page


def set_numbers(page, values: dict[str, str], tries: int = 3) -> None:
    """Type each value into its component's number box (a Slider's or a Number's) and make
    sure every one reads back, all at once, typing again where one did not. Right after a tab
    or an Accordion opens, Gradio may still be mounting the components inside, and a value
    typed in that instant can be replaced by the component's initial one (seen in about 1 of
    3 runs of this file under load; a person does not type within milliseconds of a click).
    Tab leaves the box, which is where a slider clamps and sends its value."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    read = "pairs => pairs.every(([s, v]) => (document.querySelector(s) || {}).value === v)"
    for attempt in range(tries):
        for elem, value in values.items():
            box = page.locator(f"{elem} input[type=number]")
            box.wait_for(state="visible", timeout=30_000)
            if box.input_value() != value:
                box.fill(value)
                box.press("Tab")
        page.wait_for_timeout(300)  # a late mount shows within a frame or two
        try:  # every box at once: one already checked could be reset while another is waited on
            pairs = [[f"{elem} input[type=number]", value] for elem, value in values.items()]
            page.wait_for_function(read, arg=pairs, timeout=5_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                reads = {e: page.locator(f"{e} input[type=number]").input_value() for e in values}
                raise AssertionError(f"typed {values}, the boxes read {reads}") from None


def token_texts(page) -> list[str]:
    """The answer's tokens as shown (not the panel's own text: while the run's verdict is being
    timed, Gradio's timer sits in the panel too)."""
    return page.locator("#tokens .sc-tok").all_inner_texts()


def wait_text(page, selector: str, text: str, timeout: int = 90_000) -> None:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
        arg=[selector, text],
        timeout=timeout,
    )


def layout_report(page) -> dict:
    """Horizontal overflow (page and every block), and where Run and the first example are."""
    return page.evaluate(
        """() => {
        const w = window.innerWidth, box = (s) => {
          const e = document.querySelector(s); if (!e) return null;
          const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom};
        };
        const wide = [...document.querySelectorAll('.block, .form, button, table')]
          .filter(e => e.checkVisibility({visibilityProperty: true}) &&
                       !e.closest('[aria-hidden=true]') &&
                       e.getBoundingClientRect().right > w + 1)
          .map(e => (e.id || e.className || e.tagName).toString().slice(0, 60));
        return {scroll: document.documentElement.scrollWidth, width: w, wide,
                run: box('#run'), example: box('#examples button, #examples .gallery-item')};
      }"""
    )


def assert_fits(page, name: str, first_screen: bool) -> dict:
    report = layout_report(page)
    assert report["scroll"] <= report["width"], (name, report)
    assert not report["wide"], (name, report["wide"])
    if first_screen:
        height = page.viewport_size["height"]
        assert report["run"]["bottom"] <= height, (name, report)
    return report


def play(page, key: str, zh: bool = False) -> str:
    number = SCENES.index(key) + 1
    label = f"场景 {number}" if zh else f"Scene {number}"
    before = page.locator("#caption").inner_text()  # the page's intro names scene 1 too
    page.locator(f"#scene-{key}").click()
    page.wait_for_function(
        "([before, label]) => { const t = document.querySelector('#caption').innerText;"
        " return t !== before && t.includes(label); }",
        arg=[before, label],
        timeout=180_000,
    )
    if key == "alpha":
        page.wait_for_selector("#story-fig .js-plotly-plot", timeout=60_000)
    if key == "race":
        page.wait_for_selector("iframe.sc-race-frame", timeout=60_000)
    else:
        page.wait_for_selector("#heatmap .js-plotly-plot", timeout=30_000)
    wait_text(page, "#caption", label)  # the caption comes with the run's last update
    return page.locator("#caption").inner_text()


def open_tab(page, name: str) -> None:
    """A tab by its label; on a phone Gradio puts the last tabs behind its "More tabs" menu
    (six tabs since the Race), where they are plain buttons."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    page.locator('#tabs button[aria-label="More tabs"]').click()
    page.locator("#tabs .overflow-dropdown button", has_text=name).first.click()


def shot(page, name: str) -> None:
    page.wait_for_timeout(400)  # cosmetic: Plotly's layout transition, for the artifact only
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_desktop_story_tokens_and_compare(url, browser):
    page = open_page(browser, url, DESKTOP)
    report = assert_fits(page, "desktop-en", first_screen=True)
    assert report["example"]["bottom"] <= DESKTOP["height"]  # the first example is on screen
    shot(page, "desktop-en.png")
    # every element id is the page's only one (Gradio's Group repeats its own inside it)
    repeated = page.evaluate(
        """() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
                   return [...new Set(ids.filter((id, i) => id && ids.indexOf(id) !== i))]; }"""
    )
    assert not repeated, repeated
    # the scene buttons look like buttons: a border, round corners, a fill of their own (in
    # the story's Group, Gradio drew them flat in its grey: they read as plain text)
    looks = page.evaluate(
        """() => [...document.querySelectorAll('.sc-scenes button')].map(b => {
          const s = getComputedStyle(b), g = getComputedStyle(b.closest('.sc-story'));
          return [parseFloat(s.borderTopWidth), parseFloat(s.borderTopLeftRadius),
                  s.backgroundColor !== g.backgroundColor]; })"""
    )
    assert len(looks) >= 4 and all(w >= 1 and r > 0 and own for w, r, own in looks), looks

    captions = {key: play(page, key) for key in SCENES[:2]}
    shot(page, "story-2-en.png")
    # the numbers quoted are the run's: scene 2's kept share is the verdict's
    kept = re.search(r"(\d+)% of the drafter's tokens kept", captions["cascade"]).group(1)
    assert f"kept {kept}% of the time" in page.locator("#verdict").inner_text()
    assert "scene 1:" in captions["cascade"]
    play(page, "hard")
    assert page.locator("#tokens .sc-resampled").count() > 0  # the verifier took the facts
    shot(page, "story-3-en.png")
    play(page, "alpha")
    assert page.locator("#tokens .sc-whatif").count() > 0
    assert page.locator("#alpha input[type=number]").input_value() == "-0.1"
    curve = page.evaluate(
        """() => {
        const fig = document.querySelector('#story-fig');
        const boxes = [...fig.querySelectorAll('.annotation .annotation-text-g')]
          .filter(e => e.textContent).map(e => e.getBoundingClientRect());
        const hit = boxes.some((a, i) => boxes.slice(i + 1).some(b => a.left < b.right &&
          b.left < a.right && a.top < b.bottom && b.top < a.bottom));
        return {border: parseFloat(getComputedStyle(fig).borderTopWidth), labels: boxes.length,
                overlap: hit, current: fig.querySelectorAll('.legendtext').length};
      }"""
    )
    # a thin frame (Gradio's Group gave it 3px of dark), α labels that do not print over each
    # other, and the run's own α on the curve (the legend's third entry)
    assert curve["border"] <= 1 and curve["labels"] >= 2 and not curve["overlap"], curve
    assert curve["current"] == 3, curve
    shot(page, "story-4-en.png")

    # a click on a token moves the inspector and the position there
    page.locator('#tokens .sc-tok[data-pos="3"]').click()
    page.wait_for_function(
        "document.querySelector('#inspector') && "
        "document.querySelector('#inspector').textContent.includes('#3 ')",
        timeout=30_000,
    )
    assert page.locator("#position input[type=number]").input_value() == "3"
    assert page.locator("#tokens .sc-selected").get_attribute("data-pos") == "3"

    # Compare from the Run tab: the Compare tab opens and reports progress, then the figure
    page.locator("#compare").click()
    wait_text(page, "#compare-status", "methods ran", timeout=120_000)
    page.wait_for_selector("#compare-fig .js-plotly-plot", timeout=30_000)
    header = page.locator("#compare-table thead tr").first.bounding_box()
    assert header["height"] <= 60, header
    scrolls = page.evaluate(
        """() => [...document.querySelectorAll('#compare-table *')]
          .filter(e => e.scrollWidth > e.clientWidth + 1 &&
                       ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)).length"""
    )
    assert scrolls == 0
    # every method's row shows, with no scroll inside the table (it hid the last row)
    hidden = page.evaluate(
        """() => [...document.querySelectorAll('#compare-table *')]
          .filter(e => e.scrollHeight > e.clientHeight + 1 &&
                       ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))
          .map(e => e.className + ' ' + e.scrollHeight + '/' + e.clientHeight)"""
    )
    assert not hidden, hidden
    # and every header reads whole (none cut at its column's edge)
    cut = page.evaluate(
        """() => [...document.querySelectorAll('#compare-table th .header')]
          .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""
    )
    assert not cut, cut
    shot(page, "compare-en.png")
    # Run pressed on the Compare tab shows the Run tab (it stayed on the old comparison)
    page.locator("#run").click()
    page.wait_for_function(
        "document.querySelector('#tabs [role=tab][aria-selected=true]')?.textContent.trim()"
        " === 'Run'",
        timeout=10_000,
    )
    wait_text(page, "#status", "Done", timeout=60_000)
    # the Learn tab opens with the loop's picture, the wide one here, with the run's numbers
    page.get_by_role("tab", name="Learn").click()
    assert_loop_picture(page, "wide", "tokens drafted")
    page.close()


def assert_loop_picture(page, kind: str, words: str) -> None:
    """The Learn tab's loop: the `kind` layout shown and drawn (the other hidden), its alt
    text holding `words`."""
    page.wait_for_selector(f"#learn .sc-loop-{kind}", state="visible", timeout=30_000)
    other = "tall" if kind == "wide" else "wide"
    assert not page.locator(f"#learn .sc-loop-{other}").is_visible()
    img = page.locator(f"#learn .sc-loop-{kind}")
    assert img.evaluate("e => e.complete && e.naturalWidth > 0")
    assert words in img.get_attribute("alt")
    box = img.bounding_box()
    assert box["width"] <= page.viewport_size["width"] and box["height"] > 100, box


RACE_STATE = "() => window.raceState()"


def race_frame(page):
    """The race's frame once its script runs (the tab's first race)."""
    page.wait_for_selector("iframe.sc-race-frame", timeout=120_000)
    frame = page.frame_locator("iframe.sc-race-frame").first
    frame.locator(".lane").first.wait_for(timeout=30_000)
    return page.locator("iframe.sc-race-frame").first.element_handle().content_frame()


def test_the_race_presentation_mode_and_its_exports(url, browser, tmp_path):
    """Presentation mode hides the settings and steps the story with the arrow keys; the last
    scene races the approaches on the easy and the hard question on one clock; the race plays,
    pauses and slows down, and its page and GIF download and play offline."""
    page = open_page(browser, url, DESKTOP)
    page.locator("#present").click()
    assert page.evaluate("document.body.classList.contains('sc-present')")
    assert "present=1" in page.url and not page.locator("#controls-col").is_visible()
    page.keyboard.press("ArrowRight")
    wait_text(page, "#caption", "Scene 1")
    page.locator("#scene-alpha").click()  # jump, then the arrow goes on from there
    wait_text(page, "#caption", "Scene 4")
    page.wait_for_selector("#story-fig .js-plotly-plot", timeout=60_000)
    page.keyboard.press("ArrowRight")
    wait_text(page, "#caption", "Scene 5", timeout=180_000)
    frame = race_frame(page)
    assert frame.evaluate("document.body.classList.contains('big')")  # large type there too
    assert frame.locator(".race").count() == 2 and frame.locator(".lane").count() == 8
    assert page.locator("#alpha input[type=number]").input_value() == "0.5"  # scene 5 restored
    # slow motion, pause and a seek: tokens appear by the clock
    frame.locator("button.speed[data-speed='0.25']").click()
    if not frame.evaluate(RACE_STATE)["playing"]:  # finished already: play it again
        frame.locator("#play").click()
    assert frame.evaluate(RACE_STATE)["playing"]
    frame.locator("#play").click()  # pause
    state = frame.evaluate(RACE_STATE)
    assert state["speed"] == 0.25 and not state["playing"]
    frame.evaluate("(t) => window.raceSeek(t)", state["longest"] * 0.4)
    shown = frame.evaluate(
        "() => [...document.querySelectorAll('.tok')].filter(s => s.style.visibility === "
        "'visible').length"
    )
    total = frame.locator(".tok").count()
    assert 0 < shown < total
    shot(page, "race-mid-en.png")
    frame.evaluate("(t) => window.raceSeek(t)", state["longest"])
    done = frame.locator(".done").all_inner_texts()
    assert len(done) == 8 and all("finished in" in x for x in done), done
    shot(page, "race-en.png")
    page.keyboard.press("Escape")  # in the race's frame after its clicks: passed on to the page
    page.wait_for_function("!document.body.classList.contains('sc-present')", timeout=10_000)
    # the downloads: the race's page plays from disk; the GIF animates
    links = page.locator("#race-files a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    html_url = next(h for h in hrefs if h and h.split("?")[0].endswith(".html"))
    gif_url = next(h for h in hrefs if h and h.split("?")[0].endswith(".gif"))
    base = url.rstrip("/")
    doc = page.request.get(html_url if html_url.startswith("http") else base + html_url)
    path = tmp_path / "race.html"
    path.write_bytes(doc.body())
    gif = page.request.get(gif_url if gif_url.startswith("http") else base + gif_url).body()
    assert gif[:6] == b"GIF89a"
    (ARTIFACTS / "race.gif").write_bytes(gif)
    offline = browser.new_page(viewport=DESKTOP)
    offline.goto(path.as_uri())
    offline.wait_for_function("window.raceState && window.raceState().shown > 0", timeout=10_000)
    offline.wait_for_timeout(1500)
    offline.screenshot(path=str(ARTIFACTS / "race-file-en.png"), full_page=True)
    offline.close()
    page.close()


def test_the_race_on_a_phone_in_chinese(url, browser):
    page = open_page(browser, url, PHONE, locale="zh-CN")
    page.locator("#tab-race-button").click()
    page.locator("#race-run").click()
    frame = race_frame(page)
    assert "仅验证模型" in frame.locator(".race").first.inner_text()
    longest = frame.evaluate(RACE_STATE)["longest"]
    frame.evaluate("(t) => window.raceSeek(t)", longest * 0.3)
    assert_fits(page, "race-phone-zh", first_screen=False)
    shot(page, "race-mid-phone-zh.png")
    frame.evaluate("(t) => window.raceSeek(t)", longest)
    assert all("完成" in x for x in frame.locator(".done").all_inner_texts())
    shot(page, "race-phone-zh.png")
    page.close()


def _streaming_long_run(browser, url):
    """A page whose 256-token run at T = 2 is streaming tokens. Stop waits for them, so the
    run is under way on the server (on a loaded machine a Stop sent right at "Running" could
    reach it before the run had begun). One more page if none stream within a minute: after
    the story test's runs a first run here sometimes streams nothing (seen 2 times in 4 runs
    of this file, 2026-12-06; not yet explained), which this test is not about."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(2):
        page = open_page(browser, url, DESKTOP)
        page.locator("#more").click()
        set_numbers(page, {"#max-new": "256", "#temperature": "2"})
        page.locator("#prompt textarea").fill("Who is Michael Collins?")
        page.locator("#run").click()
        wait_text(page, "#status", "Running")
        try:
            page.wait_for_function(
                "document.querySelectorAll('#tokens .sc-tok').length > 0", timeout=60_000
            )
            return page
        except PlaywrightTimeout:
            page.close()
            if attempt:
                raise


def test_stop_leaves_every_panel_on_the_partial_run(url, browser, monkeypatch):
    """Stop mid-run. The demo pair ends this answer at EOS after ~20 tokens, a quarter of a
    second on a fast machine: faster than a click reaches the server (this test failed there
    whenever the run ended first). The app runs in this process, so each forward is slowed
    here by 0.1 s: the run then lasts seconds, whatever the machine."""
    real = engine._LM.forward

    def slow(self, ids, keep=1):
        time.sleep(0.1)
        return real(self, ids, keep)

    monkeypatch.setattr(engine._LM, "forward", slow)
    live = "document.body.classList.contains('sc-running')"
    page = _streaming_long_run(browser, url)
    assert page.evaluate(live)  # Stop is live (red) while the run streams
    page.locator("#stop").click()
    wait_text(page, "#status", "Stopped after")
    page.wait_for_function(f"!{live}", timeout=30_000)  # and grey again once it is over
    status = page.locator("#status").inner_text()
    n = int(re.search(r"Stopped after (\d+) tokens", status).group(1))
    assert 0 < n < 256
    assert page.locator("#tokens .sc-tok").count() == n
    assert page.locator("#position input[type=range]").get_attribute("max") == str(max(1, n - 1))
    assert "stopped" in page.locator("#stats").inner_text()
    assert page.locator("#verdict").inner_text().startswith("Stopped early.")
    assert page.locator(".error, .toast-body.error").count() == 0  # no Error badges
    shot(page, "stop-en.png")
    page.close()


def test_phone_reaches_run_and_nothing_overflows(url, browser):
    page = open_page(browser, url, PHONE)
    assert_fits(page, "phone-en", first_screen=True)
    shot(page, "phone-en.png")
    play(page, "cascade")
    assert_fits(page, "phone-en after a run", first_screen=False)
    # the heatmap's token labels do not overlap on a phone (page.css shows one in three): the
    # labels are slanted at 60 degrees, so two 10 px labels touch when their ends are closer
    # than about 12 px apart
    gaps = page.evaluate(
        """() => [...document.querySelectorAll('#heatmap .x3tick text')]
          .filter(e => getComputedStyle(e).display != 'none')
          .map(e => e.getBoundingClientRect().right)
          .map((x, i, all) => i ? x - all[i - 1] : null).slice(1)"""
    )
    assert gaps and min(gaps) >= 12, gaps
    shot(page, "phone-en-run.png")
    page.close()


def test_a_phone_scene_links_to_its_answer_and_hides_chart_toolbars(url, browser):
    """Plotly shows a touch screen's chart toolbars all the time, over the chart's label and
    title (a mouse shows them on hover): page.css hides them there, and only there. A phone's
    answer lies a page of settings below the scene's caption: the caption links down to it
    (a wide screen shows it beside the caption, and no link)."""
    shown = """() => [...document.querySelectorAll('#heatmap .modebar-container')]
        .map(e => getComputedStyle(e).display)"""
    for options, hidden in (({"is_mobile": True, "has_touch": True}, True), ({}, False)):
        page = open_page(browser, url, PHONE, **options)
        play(page, "cascade")
        page.wait_for_selector("#heatmap .js-plotly-plot", timeout=30_000)
        displays = page.evaluate(shown)
        assert displays and all((d == "none") is hidden for d in displays), (options, displays)
        link = page.locator('#caption a[href="#tabs"]')
        assert link.is_visible()  # the phone's width (a desktop's: below)
        link.click()
        page.wait_for_function(
            "Math.abs(document.querySelector('#tabs').getBoundingClientRect().top) < 40"
        )
        if hidden:  # the link left "#tabs" in the address: the language switch drops it
            page.locator("#lang-switch").click()
            page.wait_for_url(re.compile(r"[?&]lang=zh"), timeout=30_000)
            assert "#" not in page.url, page.url
        page.close()
    page = open_page(browser, url, DESKTOP)
    play(page, "cascade")
    assert page.locator('#caption a[href="#tabs"]').count() == 1
    assert not page.locator('#caption a[href="#tabs"]').is_visible()
    page.close()


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop-zh"), (PHONE, "phone-zh")])
def test_chinese_page_has_no_english_ui_left(url, browser, viewport, name):
    page = open_page(browser, url, viewport, locale="zh-CN")
    assert page.locator("#prompt textarea").input_value() == "布兹·奥尔德林是谁？"
    assert_fits(page, name, first_screen=True)
    shot(page, f"{name}.png")
    caption = play(page, "sd", zh=True)
    assert "场景 1" in caption
    assert_fits(page, f"{name} after a run", first_screen=False)
    for tab in ("赛跑", "检视", "比较", "α 扫描", "原理", "运行"):
        open_tab(page, tab)
        if tab == "原理":  # the loop's picture: a column on a phone, a row on a desktop
            assert_loop_picture(page, "tall" if viewport == PHONE else "wide", "共起草")
        text = page.evaluate(VISIBLE_TEXT)
        prose = re.sub(ALLOWED, "", text)
        latin = [m for m in re.finditer(r"[A-Za-z][A-Za-z'\-]{3,}", prose)]
        assert not latin, (tab, [prose[m.start() - 30 : m.end() + 30] for m in latin[:8]])
    shot(page, f"{name}-run.png")
    page.close()


def test_the_language_switch_reloads_the_page_in_the_other_language(url, browser):
    """The masthead's switch opens the page in the other language: labels (Gradio's locale,
    though the browser's is English), values and the example; a typed prompt and the settings
    come along, and the switch back restores English."""
    page = open_page(browser, url, DESKTOP)
    assert page.locator("#lang-switch").inner_text().strip() == "中文"
    page.locator("#lang-switch").click()
    page.wait_for_url(re.compile(r"[?&]lang=zh"), timeout=30_000)
    wait_text(page, "#caption", "场景 1", timeout=30_000)
    page.wait_for_function(
        "document.querySelector('#run')?.innerText.trim() === '运行'", timeout=30_000
    )
    assert page.locator("#lang-switch").inner_text().strip() == "English"
    assert page.locator("#prompt textarea").input_value() == "布兹·奥尔德林是谁？"
    # (Gradio's own "Loading" shows for a moment after a reload)
    page.wait_for_function(f"!({VISIBLE_TEXT})().includes('Loading')", timeout=30_000)
    text = page.evaluate(VISIBLE_TEXT)
    latin = re.findall(r"[A-Za-z][A-Za-z'\-]{3,}", re.sub(ALLOWED, "", text))
    shot(page, "lang-switch-zh.png")
    assert not latin, sorted(set(latin))
    # a typed prompt and a moved setting come along to English
    page.locator("#prompt textarea").fill("埃菲尔铁塔在哪里？")
    set_numbers(page, {"#alpha": "0.3"})
    page.locator("#lang-switch").click()
    page.wait_for_url(re.compile(r"[?&]lang=en"), timeout=30_000)
    wait_text(page, "#caption", "scene 1", timeout=30_000)
    page.wait_for_function(
        "document.querySelector('#run')?.innerText.trim() === 'Run'", timeout=30_000
    )
    page.wait_for_function(
        "document.querySelector('#prompt textarea')?.value === '埃菲尔铁塔在哪里？'",
        timeout=30_000,
    )
    assert page.locator("#alpha input[type=number]").input_value() == "0.3"
    # after a run, the page in the other language runs it again: its panels come back
    page.locator("#run").click()
    wait_text(page, "#status", "Done")
    answer = token_texts(page)
    page.locator("#lang-switch").click()
    page.wait_for_url(re.compile(r"[?&]lang=zh"), timeout=30_000)
    wait_text(page, "#status", "完成", timeout=60_000)
    assert token_texts(page) == answer  # the same run, seeded
    assert "_run" not in page.url  # a reload or a copied address does not run again
    page.close()


def test_inspect_diff_link_and_trace_file(url, browser, tmp_path):
    """The views beyond one run: Inspect's decision plane and round replay, the Compare tab's
    diff, a link to the run opened in a new page, the run's own trace.json opened again; and
    the Inspect tab on a phone in Chinese."""
    page = open_page(browser, url, DESKTOP)
    page.locator("#prompt textarea").fill("Who is Michael Collins?")
    page.locator("#run").click()
    wait_text(page, "#status", "Done:")
    n = page.locator("#tokens .sc-tok").count()
    answer = token_texts(page)
    assert n > 0

    page.get_by_role("tab", name="Inspect").click()
    page.wait_for_selector("#plane .js-plotly-plot", timeout=30_000)
    assert re.search(
        r"\d+ drafts at α = 0\.5: \d+ deferred", page.locator("#plane-note").inner_text()
    )
    wait_text(page, "#replay", "round 0 (rounds 0–")
    assert "rule: p(x)" in page.locator("#replay").inner_text()  # the rule's arithmetic
    assert_fits(page, "inspect-en", first_screen=False)
    shot(page, "inspect-en.png")
    page.get_by_role("button", name="Next ▶").click()
    wait_text(page, "#replay", "round 1 (rounds 0–")
    assert page.locator("#replay-round input[type=number]").input_value() == "1"

    page.get_by_role("tab", name="Compare").click()
    page.locator("#diff-run").click()
    wait_text(page, "#diff", "drafter alone · key facts")
    diff = page.locator("#diff").inner_text()
    assert "speculative cascade · TokenV3" in diff and "verifier alone · key facts" in diff
    shot(page, "diff-en.png")
    # the projector re-prices the recorded run under the default GPU roofline
    page.locator("#proj-run").click()
    wait_text(page, "#proj-note", "re-priced")
    page.wait_for_selector("#proj-fig .js-plotly-plot", timeout=30_000)
    page.locator("#proj-fig").scroll_into_view_if_needed()
    shot(page, "project-en.png")

    page.get_by_role("tab", name="Run").click()
    page.locator("#share").click()
    wait_text(page, "#status", "Link made")
    link = page.locator("#share-link textarea").input_value()
    assert link.startswith(url) and "prompt=Who+is+Michael+Collins" in link
    assert page.url == link  # the address bar holds it too
    with page.expect_download() as download:
        page.locator('a[download="trace.json"]').click()
    trace = tmp_path / "trace.json"
    download.value.save_as(trace)
    page.close()

    # the link carries the result: a fresh page fills its controls and runs it again (seeded:
    # the same tokens), and a reload of its address does not
    assert "_run=1" in link
    linked = open_page(browser, link, DESKTOP)
    linked.wait_for_function(  # the link's values land after the page's own defaults
        "document.querySelector('#prompt textarea').value === 'Who is Michael Collins?'",
        timeout=30_000,
    )
    wait_text(linked, "#status", "Done:", timeout=120_000)
    assert linked.locator("#tokens .sc-tok").count() == n
    assert token_texts(linked) == answer
    assert "_run" not in linked.url
    # the page's own trace file restores the run's panels without a model run
    with linked.expect_file_chooser() as chooser:
        linked.locator("#open-trace").click()
    chooser.value.set_files(trace)
    wait_text(linked, "#status", f"Restored a run of {n} tokens from the file")
    assert linked.locator("#tokens .sc-tok").count() == n
    linked.wait_for_selector("#heatmap .js-plotly-plot", timeout=30_000)
    assert linked.locator(".error, .toast-body.error").count() == 0
    linked.get_by_role("tab", name="Inspect").click()  # the views follow the restored run
    wait_text(linked, "#replay", "round 0 (rounds 0–")
    linked.close()

    phone = open_page(browser, url, PHONE, locale="zh-CN")
    phone.locator("#run").click()
    wait_text(phone, "#status", "完成")
    phone.get_by_role("tab", name="检视").click()
    phone.wait_for_selector("#plane .js-plotly-plot", timeout=30_000)
    wait_text(phone, "#replay", "第 0 轮")
    assert re.search(r"共 \d+ 个草稿", phone.locator("#plane-note").inner_text())
    assert_fits(phone, "phone-inspect-zh", first_screen=False)
    shot(phone, "phone-inspect-zh.png")
    phone.close()


def test_the_rule_zoo_and_the_audit(url, browser):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = open_page(browser, url, DESKTOP)
    page.locator("#prompt textarea").fill("Who is Buzz Aldrin?")
    page.get_by_role("tab", name="Compare").click()
    page.locator("#zoo-run").click()
    wait_text(page, "#zoo-note", "runs of the questions", timeout=300_000)
    page.wait_for_selector("#zoo-fig .js-plotly-plot", timeout=30_000)
    assert "Typical acceptance" in page.locator("#zoo-table").inner_text()
    page.locator("#zoo-fig").scroll_into_view_if_needed()
    assert_fits(page, "zoo-en", first_screen=False)
    shot(page, "zoo-en.png")

    page.get_by_role("tab", name="Inspect").click()
    page.locator("#more").click()
    set_numbers(page, {"#temperature": "2", "#audit-seconds": "10"})
    page.locator("#audit-run").click()
    # Any outcome, then which: the note's text says why when it is no verdict (a CI run once
    # waited 200 s for a verdict that a refusal had replaced). The verdict may be any of the
    # three: the sample count is sized by this machine's speed, so the runs differ from machine
    # to machine, and a correct sampler is flagged in 1% of audits (its level). Exactness is
    # tests/test_audit.py's, with fixed seeds and samples (this very setting included).
    verdicts = ["Consistent with the promised law", "Differs from the promised law",
                "Nothing to test"]  # fmt: skip
    try:
        page.wait_for_function(
            "ends => ends.some(t => (document.querySelector('#audit-note') || "
            "{innerText: ''}).innerText.includes(t))",
            arg=[*verdicts, "Nothing was run"],
            timeout=200_000,
        )
    except PlaywrightTimeout as e:  # say what the page showed instead (queue, progress)
        shot(page, "audit-en.png")
        raise AssertionError(
            f"no audit outcome: {page.locator('#audit-note').inner_text()!r}"
        ) from e
    note = page.locator("#audit-note").inner_text()
    assert any(v in note for v in verdicts), note
    page.wait_for_selector("#audit-fig .js-plotly-plot", timeout=30_000)
    page.locator("#audit-fig").scroll_into_view_if_needed()
    shot(page, "audit-en.png")
    page.close()


@pytest.mark.parametrize(
    "viewport,locale,question,note,name",
    [
        (DESKTOP, "en-US", "What is the capital of France?", "Outside what", "ood-desktop-en"),
        (PHONE, "zh-CN", "法国的首都是哪里?", "超出了演示模型对", "ood-phone-zh"),
    ],
)
def test_an_out_of_domain_question_offers_the_real_pair(
    url, browser, viewport, locale, question, note, name
):
    """A question the embedded pair was not built for, typed as people type it: the answer is
    the pair's honest decline and the offer of the SmolLM2 pair appears below it."""
    page = open_page(browser, url, viewport, locale=locale)
    page.locator("#prompt textarea").fill(question)
    page.locator("#run").click()
    wait_text(page, "#switch-note", note)
    assert page.locator(".sc-switch-offer").first.is_visible()
    assert page.locator("#switch-pair").first.is_visible()
    assert_fits(page, name, first_screen=False)
    page.locator("#switch-note").first.scroll_into_view_if_needed()
    shot(page, f"{name}.png")
    # a scene shows another run: the offer about this one goes with it
    page.locator("#scene-sd").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.sc-switch-offer')].every(e => !e.offsetParent)",
        timeout=90_000,
    )
    page.close()

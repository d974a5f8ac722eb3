"""A run's link and file: the URL query that reproduces the page's settings, and a downloaded
trace file restoring every panel without running a model."""

from __future__ import annotations

import json

import gradio as gr

from speccascade.app import share
from speccascade.app.components import Page
from speccascade.app.context import (
    _USER_ERRORS,
    AppContext,
    UserError,
    _bind,
    _message,
    check_prompt,
    lang_code,
    log,
    settings_of,
)
from speccascade.app.controls import (
    alpha_update,
    examples_for,
    method_choices,
    policy_choices,
    rule_choices,
)
from speccascade.app.tabs.run import _shown, offer_event, run_inputs
from speccascade.core.engine import (
    APP_DEFAULTS,
    Settings,
)
from speccascade.core.errors import (
    SpecCascadeError,
    TraceFileError,
)
from speccascade.core.rules import SPEC_CASCADE_RULES
from speccascade.core.trace import Summary
from speccascade.core.trace_file import load_trace
from speccascade.i18n import t


def open_trace(ctx: AppContext, page: Page, path, preset, drafter, verifier, lang="en") -> dict:
    """Restore every run panel from a trace file (the app's own download) without running a
    model, and the prompt box to what the run was asked: the doubts and the switch offer read
    that question, never the one the box held before. A file from before traces kept their
    prompt says so and leaves the box empty: its answer is judged against no question. A
    wrong file changes nothing but the status line."""
    if not path:
        return {page.status: gr.skip()}
    models = [preset, drafter, verifier]
    try:
        trace = load_trace(path)
        pair = ctx.pair(*models)
        bad = [i for i in trace.new_token_ids + trace.prompt_ids if not 0 <= i < pair.vocab_size]
        if bad:
            raise UserError(t("share.other_pair", lang, id=bad[0], vocab=pair.vocab_size))
    except TraceFileError as e:
        log.warning("bad trace file: %s", e)
        return {page.status: t("share.bad_trace", lang, detail=str(e))}
    except (UserError, *_USER_ERRORS) as e:
        return {page.status: t("status.error", lang, message=_message(e, lang))}
    asked = trace.prompt or ""  # "": unknown (an older file), so no doubt is judged
    out = _shown(ctx, page, trace, models, lang, asked, measure=False)
    out.update(_run_controls(page, trace.summary, lang))  # what the restored run used
    out[page.prompt] = asked
    known = "share.restored_trace" if trace.prompt else "share.restored_trace_noprompt"
    out[page.status] = t(known, lang, n=trace.summary.new_tokens)
    return out


def _run_controls(page: Page, s: Settings | Summary, lang: str) -> dict:
    """The decoding controls set to a run's values (a shared link's Settings, or a restored
    trace's Summary): sliders widened where the run went past them."""
    out = {
        page.method: gr.update(value=s.method, choices=method_choices(lang)),
        page.alpha: alpha_update(s.method, s.rule, s.alpha, lang),
        page.gamma: gr.update(value=s.gamma, maximum=max(12, s.gamma)),
        page.temperature: gr.update(value=s.temperature, maximum=max(2, s.temperature)),
        page.draft_policy: gr.update(value=s.draft_policy, choices=policy_choices(lang)),
    }
    if s.rule in SPEC_CASCADE_RULES:
        out[page.rule] = gr.update(value=s.rule, choices=rule_choices(lang))
    if s.draft_threshold is not None:
        out[page.draft_threshold] = s.draft_threshold
    return out


def share_query(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
    lang="en",
) -> dict:
    """The query string of a link that reproduces the page's run (the browser adds its own
    address and copies it)."""
    try:
        check_prompt(prompt, ctx.config, lang)
        settings = settings_of(
            method, rule, alpha, gamma, temperature, max_new_tokens, seed, draft_policy,
            draft_threshold,
        )  # fmt: skip
        query = share.to_query(
            prompt, settings, preset, drafter or None, verifier or None, lang_code(lang)
        )
    except (UserError, SpecCascadeError) as e:
        return {page.share_link: "", page.status: t("status.error", lang, message=str(e))}
    # the link shows the result, not only the settings: the page opened from it runs again
    # (a seeded run writes the same tokens) in the tab it was made from (LINK_JS adds it)
    query += f"&{RUN_AGAIN_KEY}=1"
    return {page.share_link: "?" + query, page.status: t("share.link_made", lang)}


def other_lang_query(
    ctx: AppContext,
    page: Page,
    prompt,
    preset,
    drafter,
    verifier,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    max_new_tokens,
    seed,
    draft_policy="fixed",
    draft_threshold=APP_DEFAULTS.draft_threshold,
    lang="en",
    trace=None,
) -> str:
    """The query of this page in the other language, keeping the prompt, pair and settings
    (the labels come from the browser's locale, so a language change is a reload). The
    prompt the page started with (this language's first example) gives way to the other
    language's; a question typed or picked stays. What a link cannot carry (a prompt too long
    for one, a setting out of range) is left behind. Where the page showed a run (`trace`),
    the query asks the reloaded page to run again (RUN_AGAIN_KEY), so its panels come back
    in the new language instead of empty."""
    other = "en" if lang == "zh" else "zh"
    pair = (preset if preset != ctx.config.preset else None, drafter or None, verifier or None)
    first, theirs = (examples_for(x, preset)["samples"][0][0] for x in (lang, other))
    if prompt == first and first != theirs:
        prompt = None
    try:
        settings = settings_of(
            method, rule, alpha, gamma, temperature, max_new_tokens, seed, draft_policy,
            draft_threshold,
        ).validated()  # fmt: skip
    except SpecCascadeError:
        settings = None
    if settings == APP_DEFAULTS.validated():
        settings = None  # the page's own: the link need not name them
    again = f"&{RUN_AGAIN_KEY}=1" if trace is not None else ""
    for kept in (prompt, None):
        try:
            return "?" + share.to_query(kept, settings, *pair, other) + again
        except SpecCascadeError:
            continue
    return "?" + share.to_query(None, None, lang=other) + again


# The language switch's "run again" (a key with "_": links ignore it, share.from_query). The
# reloaded page clicks Run once its controls hold the link's values, then drops the key from
# the address (a reload or a copied address does not run again).
RUN_AGAIN_KEY = "_run"
# The tab a link was made from: the page opened from it shows that tab and presses its button
# (the race and Compare run their own; every other tab shows the Run's panels).
TAB_KEY = "_tab"
TAB_BUTTONS = {"race": "race-run", "compare": "compare"}
RUN_AGAIN_JS = f"""() => {{
  const u = new URL(window.location.href);
  if (u.searchParams.get('{RUN_AGAIN_KEY}') !== '1') return;
  const tab = u.searchParams.get('{TAB_KEY}');
  u.searchParams.delete('{RUN_AGAIN_KEY}');
  u.searchParams.delete('{TAB_KEY}');
  window.history.replaceState(null, '', u);
  if (tab) document.getElementById('tab-' + tab + '-button')?.click();
  document.getElementById({json.dumps(TAB_BUTTONS)}[tab] || 'run')?.click();
}}"""


# The switch opens the page again under its new query (a reload: Gradio sets the labels' locale
# as the page loads).
# The address's #fragment is dropped (the story's link down to the answer leaves "#tabs",
# which would open the new page scrolled past its story).
OPEN_QUERY_JS = """(q) => { if (!q) return q; const u = new URL(window.location.href);
    u.search = q; u.hash = ''; window.location.assign(u.toString()); return q; }"""


# The page's own address (the server sees only its API's): the link's query is written into the
# box, the address bar and, where the browser allows it, the clipboard.
LINK_JS = f"""(q) => {{ if (!q) return q; const u = new URL(window.location.href);
    u.search = q;
    const tab = document.querySelector('#tabs [role="tab"][aria-selected="true"]');
    const key = tab && tab.id ? tab.id.replace(/^tab-/, '').replace(/-button$/, '') : '';
    if (key && key !== 'run') u.searchParams.set('{TAB_KEY}', key);
    window.history.replaceState(null, '', u);
    if (navigator.clipboard) navigator.clipboard.writeText(u.toString()).catch(() => {{}});
    return u.toString(); }}"""


def wire(ctx: AppContext, page: Page):
    """Open a trace file (restores every run panel) and make a link to the page's settings.
    Returns the file's event, which the analysis views follow."""
    p = page
    opened = p.upload.upload(
        _bind(open_trace, ctx, p),
        [p.upload, *p.models, p.lang],
        [*p.run_outputs, p.share_link, *p.knobs, p.draft_policy, p.draft_threshold, p.prompt],
        api_name="load_trace",
        queue=False,
    )
    opened.then(**offer_event(p))  # the offer, or none, for the opened run
    p.share_btn.click(
        _bind(share_query, ctx, p),
        run_inputs(p),
        [p.share_link, p.status],
        api_name="share",
        queue=False,
    ).then(None, p.share_link, p.share_link, js=LINK_JS, api_name=False, queue=False)
    p.lang_btn.click(
        _bind(other_lang_query, ctx, p),
        [*run_inputs(p), p.trace],
        p.lang_query,
        api_name=False,
        queue=False,
    ).then(None, p.lang_query, p.lang_query, js=OPEN_QUERY_JS, api_name=False, queue=False)
    return opened

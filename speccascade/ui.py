"""Gradio Blocks: controls -> engine -> viz. Wiring only; the logic lives in the library.

API names (for gradio_client): /run, /stop, /compare, /sweep, /whatif, /inspect, /rule_info.
"""

from __future__ import annotations

import contextlib
import functools
import math
import tempfile
from pathlib import Path

import gradio as gr
import pandas as pd

from . import viz
from .compare import SWEPT, Variant, compare, compare_variants, sweep
from .engine import APP_DEFAULTS, CASCADE, METHOD_REGISTRY, RoundEvent, Settings, stream
from .errors import ModelRuntimeError, SpecCascadeError
from .evalsets import SHOWCASE, load_evalset
from .rules import RULES, SPEC_CASCADE_RULES
from .serving import (
    PRESET_CHOICES,
    PairCache,
    ServeConfig,
    check_budget,
    check_prompt,
    in_background,
)
from .trace import Trace

try:  # ZeroGPU on Hugging Face Spaces; a no-op everywhere else
    import spaces

    gpu = spaces.GPU
except ImportError:  # pragma: no cover - depends on the deployment

    def gpu(fn):
        return fn


I18N = gr.I18n(
    en={
        "title": "speccascade — watch a small and a large model decide, token by token",
        "intro": (
            "A small **drafter** proposes tokens; a large **verifier** scores them all in one "
            "pass; a **deferral rule** keeps the drafter's token or lets the verifier take over. "
            "Type a question, pick a rule, press **Run**, then hover the tokens."
        ),
        "prompt": "Prompt",
        "pair": "Model pair",
        "custom_drafter": "Custom drafter (hub id)",
        "custom_verifier": "Custom verifier (hub id)",
        "method": "Method",
        "rule": "Deferral rule",
        "alpha": "alpha",
        "gamma": "gamma (draft window)",
        "temperature": "temperature (0 = greedy)",
        "max_new_tokens": "max new tokens",
        "seed": "seed",
        "run": "Run",
        "stop": "Stop",
        "compare": "Compare all methods",
        "tab_run": "Run",
        "tab_compare": "Compare",
        "tab_sweep": "Alpha sweep",
        "tab_learn": "Learn",
        "output": "Output, token by token",
        "heatmap": "Confidence heatmap",
        "inspector": "Token inspector",
        "position": "position",
        "timeline": "Round timeline",
        "stats": "Stats",
        "downloads": "Download the trace",
        "raw_trace": "Raw trace (JSON)",
        "sweep_source": "Sweep on",
        "sweep_alphas": "alphas per rule",
        "sweep_run": "Run sweep",
        "sweep_x": "x axis",
        "status": "Status",
        "examples": "Examples (easy: the drafter knows the answer; hard: only the verifier does)",
    },
    zh={
        "title": "speccascade — 逐词观察小模型与大模型如何协作决策",
        "intro": (
            "小的**起草模型**提出词元；大的**验证模型**一次性为它们打分；**推迟规则**决定保留"
            "起草词元还是交给验证模型。输入问题，选择规则，点击**运行**，然后把鼠标悬停在词元上。"
        ),
        "prompt": "提示词",
        "pair": "模型组合",
        "custom_drafter": "自定义起草模型（Hub ID）",
        "custom_verifier": "自定义验证模型（Hub ID）",
        "method": "方法",
        "rule": "推迟规则",
        "alpha": "alpha",
        "gamma": "gamma（草稿窗口）",
        "temperature": "温度（0 = 贪心）",
        "max_new_tokens": "最大新词元数",
        "seed": "随机种子",
        "run": "运行",
        "stop": "停止",
        "compare": "比较所有方法",
        "tab_run": "运行",
        "tab_compare": "比较",
        "tab_sweep": "alpha 扫描",
        "tab_learn": "原理",
        "output": "逐词输出",
        "heatmap": "置信度热力图",
        "inspector": "词元检查器",
        "position": "位置",
        "timeline": "轮次时间线",
        "stats": "统计",
        "downloads": "下载轨迹",
        "raw_trace": "原始轨迹（JSON）",
        "sweep_source": "扫描对象",
        "sweep_alphas": "每条规则的 alpha 数",
        "sweep_run": "运行扫描",
        "sweep_x": "横轴",
        "status": "状态",
        "examples": "示例（简单：起草模型知道答案；困难：只有验证模型知道）",
    },
)

CSS = """
.sc-tokens { font-family: ui-monospace, monospace; line-height: 2.1; font-size: 15px; }
.sc-tok { padding: 2px 1px; margin: 0 1px; border-radius: 3px; white-space: pre-wrap;
          color: #111; }
.sc-legend { font-size: 13px; margin-bottom: 6px; }
.sc-legend .sc-tok { padding: 2px 6px; }
"""

_USER_ERRORS = (SpecCascadeError, ModelRuntimeError, FileNotFoundError)


def _user_error(fn):
    """Bad input becomes a clear message in the page (and for API clients), never a trace."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _USER_ERRORS as e:
            raise gr.Error(str(e)) from None

    @functools.wraps(fn)
    def call_gen(*args, **kwargs):
        try:
            yield from fn(*args, **kwargs)
        except _USER_ERRORS as e:
            raise gr.Error(str(e)) from None

    import inspect

    return call_gen if inspect.isgeneratorfunction(fn) else call


def _alpha_update(method: str, rule: str, alpha: float | None = None) -> dict:
    r = viz.rule_for(method, rule)
    if r is None or not r.has_alpha:
        return gr.update(interactive=False, label="alpha (not used by this method)")
    lo, hi = r.slider
    value = r.alpha_default if alpha is None or not lo <= alpha <= hi else alpha
    sd = "= speculative decoding" if r.alpha_sd >= lo else "→ speculative decoding"
    dr = "= drafter only" if r.alpha_drafter <= hi else "→ drafter only"
    return gr.update(
        minimum=lo,
        maximum=hi,
        value=value,
        interactive=True,
        label=f"alpha ({r.label}): {lo:g} {sd} … {hi:g} {dr}",
    )


CAPTIONS = {
    ("easy", "en"): "easy: the drafter knows this",
    ("hard", "en"): "hard: only the verifier knows",
    ("easy", "zh"): "简单：起草模型知道",
    ("hard", "zh"): "困难：只有验证模型知道",
}


def examples_for(lang: str) -> dict:
    """The showcase questions in the page's language, each captioned easy or hard."""
    lang = "zh" if (lang or "").lower().startswith("zh") else "en"
    shown = [x for x in SHOWCASE if x.lang == lang]
    return {
        "samples": [[x.question] for x in shown],
        "sample_labels": [f"{x.question} · {CAPTIONS[x.level, lang]}" for x in shown],
    }


def rule_markdown(method: str, rule: str) -> str:
    r = viz.rule_for(method, rule)
    if r is None:
        return f"**{METHOD_REGISTRY[method].label}**: one model, no deferral rule."
    return f"**{r.label}** ({r.source}): defer when $${r.formula}$$ {r.description}"


def learn_markdown() -> str:
    rows = "\n".join(
        f"| `{r.name}` | {r.label} | $${r.formula}$$ | {r.alpha_sd:g} | {r.alpha_drafter:g} | "
        f"{r.source} |"
        for r in RULES.values()
    )
    return f"""
## The story the demo pair tells
The embedded pair was trained so that the method's point is visible. **Easy** questions
(famous people, places and things: *Who is Buzz Aldrin?*, *Who is Albert Einstein?*) are ones
the small drafter knows: it writes a short, correct answer. The verifier knows them too but
would word them at more length, so lossless speculative decoding throws the drafter's words
away and rewrites the answer in the verifier's words. A speculative cascade keeps them where
the verifier finds them good enough, and is faster for it. **Hard** questions (obscure
people, e.g. *Who is Michael Collins?*) are ones only the verifier knows: the drafter's
guesses are fluent but wrong, and the rule hands the facts to the verifier. The examples
under the prompt are labelled easy or hard; the Chinese page asks them in Chinese.

## Speculative cascades in five steps
1. The **drafter** q proposes gamma tokens.
2. The **verifier** p scores all of them in **one** forward pass.
3. A **deferral rule** turns (q, p) into a target law pi at every position.
4. Each draft x is kept with probability $$\\min(1, \\pi(x)/q(x))$$; the first rejected one is
   replaced by a token from $$\\mathrm{{norm}}(\\max(0, \\pi - q))$$ (red tokens).
5. If all survive, one **bonus** token comes from pi at the next position (blue).

Every token is then distributed exactly as pi. With pi = p this is **speculative decoding**
(lossless); with pi = q it is the drafter alone. The rules sit in between:
whole-position rules use $$\\pi = (1 - r)\\,q + r\\,p$$, token rules
$$\\pi(v) = q(v)(1 - r(v)) + p(v)\\,\\eta,\\ \\eta = \\sum_{{v'}} r(v') q(v')$$.
Rule statistics (max q, max p) use T = 1 probabilities.

| name | rule | defer when | alpha = SD | alpha = drafter only | source |
|---|---|---|---|---|---|
{rows}

**What the page shows.** Green tokens are drafts the rule kept, red ones the verifier
replaced, blue ones bonus tokens. The heatmap's top rows are the two models' confidence
(max q, max p); where they part ways the rule has a decision to make (bottom row). The
inspector shows q, p and pi at one position and the tokens the rule would keep. Moving alpha
after a run re-evaluates the rule on the recorded numbers (dashed outlines, a what-if) without
running the models again. The cost of a speculative method is the number of verifier calls
per token; fact 5 of the method gives the ideal speed-up
$$\\frac{{1 - b^{{\\gamma+1}}}}{{(1 - b)(1 + \\gamma c)}}$$ for acceptance rate b and drafter/verifier
cost ratio c.
"""


def _write_exports(trace: Trace) -> list[str]:
    """Per-request temp files (never a shared location) for the download buttons."""
    folder = Path(tempfile.mkdtemp(prefix="speccascade-"))
    csv, js = folder / "trace.csv", folder / "trace.json"
    trace.to_frame().to_csv(csv, index=False)
    js.write_text(trace.to_json(indent=1))
    return [str(csv), str(js)]


def build_demo(config: ServeConfig | None = None, cache: PairCache | None = None) -> gr.Blocks:
    config = config or ServeConfig.from_env()
    cache = cache or PairCache(config)
    i18n = I18N

    def get_pair(preset, drafter, verifier, progress=None):
        if progress is not None:
            progress(0.0, desc="loading the model pair (first use only)")
        return cache.get(preset, drafter, verifier)

    def settings_of(method, rule, alpha, gamma, temperature, max_new_tokens, seed) -> Settings:
        return Settings(
            method=method,
            rule=rule,
            alpha=_num(alpha),
            gamma=_int(gamma),
            temperature=_num(temperature),
            max_new_tokens=_int(max_new_tokens),
            seed=_int(seed),
        )

    @gpu
    @_user_error
    def run(
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
        progress=gr.Progress(),
    ):
        """Run one method; streams coloured tokens, then the figures, stats and the trace."""
        prompt = check_prompt(prompt, config)
        check_budget(_int(max_new_tokens), 1, config)
        settings = settings_of(method, rule, alpha, gamma, temperature, max_new_tokens, seed)
        pair = get_pair(preset, drafter, verifier, progress)
        partial, trace = [], None
        events = in_background(
            lambda should_stop: stream(pair, prompt, settings, should_stop=should_stop)
        )
        with contextlib.closing(events):  # a Stop closes `run`, and with it the worker
            for batch in events:
                for event in batch:
                    if isinstance(event, RoundEvent):
                        partial.extend(event.tokens)
                    else:
                        trace = event
                if trace is None and partial:
                    skip = [gr.skip()] * 8
                    yield viz.token_html(partial), *skip, f"running: {len(partial)} tokens so far"
        last = max(0, len(trace.tokens) - 1)
        r = viz.rule_for(method, rule)
        yield (
            viz.token_html(trace.tokens),
            viz.heatmap(trace),
            viz.timeline(trace),
            viz.stats_frame(trace),
            trace,
            trace.to_dict(),
            gr.update(minimum=0, maximum=last, value=0, step=1, interactive=bool(trace.tokens)),
            viz.inspector(trace, 0, r, trace.summary.alpha, pair.tokenizer)
            if trace.tokens
            else None,
            _write_exports(trace),
            f"done: {trace.summary.new_tokens} tokens in {trace.summary.wall_s:.2f} s "
            f"({trace.summary.stop_reason})",
        )

    @_user_error
    def whatif(trace, method, rule, alpha):
        """Re-colour the last run for a new alpha from its recorded numbers (no model runs)."""
        if trace is None:
            return viz.token_html(None), "Run first; then move alpha to see what would change."
        r = viz.rule_for(method, rule)
        if r is None or r.defer is None:
            return viz.token_html(trace.tokens), "This method has no deferral rule to re-evaluate."
        decisions = viz.whatif_decisions(trace, r, _num(alpha))
        drafted = [d for d in decisions if d is not None]
        ran = sum(bool(t.defer) for t in trace.tokens if t.draft_id is not None)
        note = (
            f"**What-if** (no models run): at alpha = {_num(alpha):g}, {r.label} would defer "
            f"{sum(drafted)} of the {len(drafted)} drafted tokens (dashed outlines); the run "
            f"deferred {ran}. Press Run to see the output it would give."
        )
        return viz.token_html(trace.tokens, decisions), note

    @_user_error
    def inspect_position(trace, position, method, rule, alpha, preset, drafter, verifier):
        """q, p and pi at one position of the last run."""
        if trace is None or not trace.tokens:
            return None
        pos = min(max(0, _int(position)), len(trace.tokens) - 1)
        tokenizer = cache.get(preset, drafter, verifier).tokenizer
        return viz.inspector(trace, pos, viz.rule_for(method, rule), _num(alpha), tokenizer)

    @gpu
    @_user_error
    def run_compare(
        prompt,
        preset,
        drafter,
        verifier,
        rule,
        alpha,
        gamma,
        temperature,
        max_new_tokens,
        seed,
        progress=gr.Progress(),
    ):
        """Every baseline and the chosen speculative cascade on the same prompt."""
        prompt = check_prompt(prompt, config)
        variants = compare_variants(rule)
        check_budget(_int(max_new_tokens), len(variants), config)
        pair = get_pair(preset, drafter, verifier, progress)
        # every variant runs with the user's alpha; each sets its own method and rule
        settings = settings_of(CASCADE, rule, alpha, gamma, temperature, max_new_tokens, seed)
        for k, (v, _, table) in enumerate(compare(pair, prompt, variants, settings=settings)):
            progress((k + 1) / len(variants), desc=f"ran {v.label}")
            yield _compare_view(table), gr.skip()
        yield _compare_view(table), viz.latency_bars(table)

    @gpu
    @_user_error
    def run_sweep(
        prompt,
        preset,
        drafter,
        verifier,
        source,
        n_alpha,
        rule,
        alpha,
        gamma,
        temperature,
        max_new_tokens,
        seed,
        x_axis,
        progress=gr.Progress(),
    ):
        """Quality vs latency over an alpha grid for every rule (and lossy SD, BiLD*), with
        the current rule and alpha marked."""
        n_alpha = _int(n_alpha)
        if not 2 <= n_alpha <= 11:
            raise SpecCascadeError(f"alphas per rule must be in [2, 11]; got {n_alpha}")
        if source == "eval":
            items = load_evalset(limit=4)
            prompts = [(x.question, x.answer) for x in items]
        else:
            prompts = [(check_prompt(prompt, config), None)]
        variants = [Variant.cascade(r) for r in SPEC_CASCADE_RULES]
        variants += [Variant(m) for m in SWEPT if METHOD_REGISTRY[m].drafts]  # lossy SD, BiLD*
        current = (Variant.cascade(rule), round(_num(alpha), 4))
        runs = len(prompts) * (2 + n_alpha * len(variants))
        check_budget(_int(max_new_tokens), runs, config)
        pair = get_pair(preset, drafter, verifier, progress)
        table = sweep(
            pair,
            prompts,
            variants,
            n_alpha=n_alpha,
            progress=lambda f, d: progress(f, desc=d),
            extra=[current],
            # each job sets its method, rule and alpha
            settings=settings_of(CASCADE, rule, alpha, gamma, temperature, max_new_tokens, seed),
        )
        x = (
            "verifier_calls_per_token"
            if x_axis == "verifier calls per token"
            else "relative_latency"
        )
        mark = table[(table.method == current[0].label) & (table.alpha == current[1])].iloc[0]
        return viz.quality_latency(table, current=mark.to_dict(), x=x), table.round(4)

    with gr.Blocks(title="speccascade") as demo:
        gr.Markdown(f"# {i18n('title')}")
        gr.Markdown(i18n("intro"))
        trace_state = gr.State(None)
        with gr.Row():
            with gr.Column(scale=1, min_width=320):
                prompt = gr.Textbox(
                    label=i18n("prompt"),
                    value=SHOWCASE[0].question,
                    lines=2,
                    max_length=config.max_prompt_chars,
                    elem_id="prompt",
                )
                examples = gr.Dataset(
                    components=[prompt],
                    type="values",
                    label=i18n("examples"),
                    elem_id="examples",
                    **examples_for("en"),
                )
                preset = gr.Dropdown(PRESET_CHOICES, value="demo", label=i18n("pair"))
                with gr.Row(visible=config.allow_custom_models):
                    drafter = gr.Textbox(label=i18n("custom_drafter"), placeholder="owner/name")
                    verifier = gr.Textbox(label=i18n("custom_verifier"), placeholder="owner/name")
                method = gr.Dropdown(
                    [(m.label, m.name) for m in METHOD_REGISTRY.values()],
                    value=APP_DEFAULTS.method,
                    label=i18n("method"),
                )
                rule = gr.Dropdown(
                    [(RULES[r].label, r) for r in SPEC_CASCADE_RULES],
                    value=APP_DEFAULTS.rule,
                    label=i18n("rule"),
                )
                # Server-side bounds span every rule (API clients may pick any); the page load
                # and every method/rule change narrow the visible slider to the chosen rule.
                alpha = gr.Slider(
                    min(r.slider[0] for r in RULES.values()),
                    max(r.slider[1] for r in RULES.values()),
                    value=APP_DEFAULTS.alpha,
                    step=0.01,
                    label=i18n("alpha"),
                    elem_id="alpha",
                )
                rule_md = gr.Markdown(
                    rule_markdown(APP_DEFAULTS.method, APP_DEFAULTS.rule),
                    latex_delimiters=[{"left": "$$", "right": "$$", "display": False}],
                )
                gamma = gr.Slider(1, 12, value=APP_DEFAULTS.gamma, step=1, label=i18n("gamma"))
                temperature = gr.Slider(
                    0, 2, value=APP_DEFAULTS.temperature, step=0.05, label=i18n("temperature")
                )
                max_new = gr.Slider(
                    1,
                    config.max_new_tokens,
                    value=min(APP_DEFAULTS.max_new_tokens, config.max_new_tokens),
                    step=1,
                    label=i18n("max_new_tokens"),
                )
                seed = gr.Number(0, precision=0, minimum=0, label=i18n("seed"))
                with gr.Row():
                    run_btn = gr.Button(i18n("run"), variant="primary", elem_id="run")
                    stop_btn = gr.Button(i18n("stop"), variant="stop", elem_id="stop")
                compare_btn = gr.Button(i18n("compare"), elem_id="compare")
                status = gr.Markdown("", elem_id="status")
            with gr.Column(scale=2), gr.Tabs():
                with gr.Tab(i18n("tab_run")):
                    gr.HTML(viz.legend_html())
                    tokens = gr.HTML(viz.token_html(None), label=i18n("output"), elem_id="tokens")
                    heat = gr.Plot(label=i18n("heatmap"), elem_id="heatmap")
                    with gr.Row():
                        position = gr.Slider(
                            0, 1, value=0, step=1, label=i18n("position"), interactive=False
                        )
                    insp = gr.Plot(label=i18n("inspector"))
                    stats = gr.Dataframe(label=i18n("stats"), interactive=False)
                    time_fig = gr.Plot(label=i18n("timeline"))
                    files = gr.File(label=i18n("downloads"), file_count="multiple")
                    with gr.Accordion(i18n("raw_trace"), open=False):
                        trace_json = gr.JSON()
                with gr.Tab(i18n("tab_compare")):
                    compare_table = gr.Dataframe(interactive=False, wrap=True)
                    compare_fig = gr.Plot()
                with gr.Tab(i18n("tab_sweep")):
                    with gr.Row():
                        source = gr.Radio(
                            [("this prompt", "prompt"), ("eval slice (4 questions)", "eval")],
                            value="prompt",
                            label=i18n("sweep_source"),
                        )
                        n_alpha = gr.Slider(2, 11, value=5, step=1, label=i18n("sweep_alphas"))
                        x_axis = gr.Radio(
                            ["latency relative to the verifier", "verifier calls per token"],
                            value="latency relative to the verifier",
                            label=i18n("sweep_x"),
                        )
                    sweep_btn = gr.Button(i18n("sweep_run"), elem_id="sweep")
                    sweep_fig = gr.Plot()
                    sweep_table = gr.Dataframe(interactive=False)
                with gr.Tab(i18n("tab_learn")):
                    gr.Markdown(
                        learn_markdown(),
                        latex_delimiters=[{"left": "$$", "right": "$$", "display": False}],
                    )

        models = [preset, drafter, verifier]
        knobs = [gamma, temperature, max_new, seed]
        run_event = run_btn.click(
            run,
            [prompt, *models, method, rule, alpha, *knobs],
            [tokens, heat, time_fig, stats, trace_state, trace_json, position, insp, files, status],
            api_name="run",
            concurrency_limit=config.concurrency,
            concurrency_id="models",
        )
        stop_btn.click(
            lambda: "stopped", None, status, cancels=[run_event], api_name="stop", queue=False
        )
        compare_btn.click(
            run_compare,
            [prompt, *models, rule, alpha, *knobs],
            [compare_table, compare_fig],
            api_name="compare",
            concurrency_limit=config.concurrency,
            concurrency_id="models",
        )
        sweep_btn.click(
            run_sweep,
            [prompt, *models, source, n_alpha, rule, alpha, *knobs, x_axis],
            [sweep_fig, sweep_table],
            api_name="sweep",
            concurrency_limit=config.concurrency,
            concurrency_id="models",
        )
        for control in (method, rule):
            control.change(
                lambda m, r, a: (
                    _alpha_update(m, r, a),
                    rule_markdown(m, r),
                    gr.update(interactive=bool(METHOD_REGISTRY[m].rules)),
                ),
                [method, rule, alpha],
                [alpha, rule_md, rule],
                api_name=False,
                queue=False,
            )
        demo.load(
            lambda m, r, a: _alpha_update(m, r, a),
            [method, rule, alpha],
            alpha,
            api_name=False,
            queue=False,
        )
        examples.click(lambda row: row[0], examples, prompt, api_name=False, queue=False)
        lang = gr.Textbox(visible=False)
        demo.load(
            localize,
            lang,
            [examples, prompt],
            js="() => navigator.language || 'en'",
            api_name=False,
            queue=False,
        )
        alpha.release(
            whatif,
            [trace_state, method, rule, alpha],
            [tokens, status],
            api_name="whatif",
            queue=False,
        )
        position.release(
            inspect_position,
            [trace_state, position, method, rule, alpha, *models],
            insp,
            api_name="inspect",
            queue=False,
        )
        gr.api(rule_info, api_name="rule_info")
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def localize(lang: str) -> tuple:
    """On page load: Chinese examples (and the first one in the prompt) for a Chinese browser."""
    if not (lang or "").lower().startswith("zh"):
        return gr.skip(), gr.skip()
    shown = examples_for(lang)
    return gr.Dataset(**shown), shown["samples"][0][0]


def rule_info(method: str, rule: str) -> dict:
    """The rule a method runs with: formula, alpha range and the alphas that give SD and the
    drafter alone (what the alpha slider shows)."""
    r = viz.rule_for(method, rule) if method in METHOD_REGISTRY else None
    if r is None:
        return {"method": method, "rule": None}
    return {
        "method": method,
        "rule": r.name,
        "label": r.label,
        "formula": r.formula,
        "alpha_min": _finite(r.alpha_min),
        "alpha_max": _finite(r.alpha_max),
        "alpha_sd": _finite(r.alpha_sd),
        "alpha_drafter": _finite(r.alpha_drafter),
        "alpha_default": r.alpha_default,
        "slider": list(r.slider),
    }


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _num(x) -> float | None:
    """Numbers from the page or an API client; anything else is left for the engine to refuse
    with a message naming the field."""
    if x is None or isinstance(x, bool):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def _int(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            return x
    return x


def _compare_view(table: pd.DataFrame) -> pd.DataFrame:
    view = table.copy()
    for col in (
        "wall_s",
        "speedup",
        "verifier_calls_per_token",
        "acceptance_rate",
        "quality_vs_verifier",
        "quality_vs_reference",
    ):
        view[col] = pd.to_numeric(view[col], errors="coerce").round(3)
    return view


def launch(**kwargs) -> None:
    """Build and serve the app; kwargs go to `Blocks.launch` (server_name, server_port, ...)."""
    import torch

    config = ServeConfig.from_env()
    torch.set_num_threads(config.threads())
    demo = build_demo(config)
    demo.launch(i18n=I18N, css=CSS, **kwargs)

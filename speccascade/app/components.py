"""The page's components, by where they are (`Page`): what every handler reads and writes.
Built by page.layout from the controls and each tab's parts; here alone so that the tabs can
name the type without importing the page that imports them."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr


@dataclass
class Page:
    """Every component a handler reads or writes (built by `layout`), by where it is."""

    # per-session state
    lang: gr.State
    trace: gr.State  # the last run (a run, a scene, a restored file)
    asked: gr.State  # that run's prompt (the switch offer reads it, not the box's next one)
    shown_pair: gr.State  # that run's pair: [preset, drafter, verifier]
    story: gr.State  # the story's scenes played so far, with their numbers
    compared: gr.State  # the last Compare's traces by method label (the projector re-prices)
    # the masthead: presentation mode, the language switch, and the link it opens (hidden)
    present_btn: gr.Button
    lang_btn: gr.Button
    lang_query: gr.Textbox
    # the story (controls.parts is the column, tabs/*.parts each tab)
    scene_btns: list
    caption: gr.Markdown
    story_fig: gr.Plot
    # the controls column
    prompt: gr.Textbox
    run_btn: gr.Button
    stop_btn: gr.Button
    examples: gr.Dataset
    method: gr.Dropdown
    rule: gr.Dropdown
    alpha: gr.Slider
    rule_md: gr.Markdown
    compare_btn: gr.Button
    gamma: gr.Slider
    temperature: gr.Slider
    max_new: gr.Slider
    seed: gr.Number
    draft_policy: gr.Dropdown
    draft_threshold: gr.Slider
    preset: gr.Dropdown
    drafter: gr.Textbox
    verifier: gr.Textbox
    tabs: gr.Tabs
    tab_items: list  # each tab, in TABS' order (a link's language relabels them)
    # Run
    switch_box: gr.Group  # the offer of a pair that can answer what this one declined
    switch_note: gr.Markdown
    switch_btn: gr.Button
    verdict: gr.Markdown
    status: gr.Markdown
    answer_note: gr.Markdown  # the pair that answered, and whether it was another question
    legend: gr.HTML
    tokens: gr.HTML
    whatif_note: gr.Markdown
    heat: gr.Plot
    position: gr.Slider
    insp: gr.Plot
    stats: gr.Dataframe
    timeline: gr.Plot
    drafting_note: gr.Markdown
    drafting: gr.Plot
    files: gr.File
    share_btn: gr.Button
    upload: gr.UploadButton
    share_link: gr.Textbox
    trace_json: gr.JSON
    # Race: the approaches on one clock
    race_btn: gr.Button
    race_status: gr.Markdown
    race_view: gr.HTML
    race_files: gr.File
    # Inspect: decision plane, round replay, audit
    plane_fig: gr.Plot
    plane_note: gr.Markdown
    replay_round: gr.Slider
    replay_prev: gr.Button
    replay_next: gr.Button
    replay_play: gr.Button
    replay_timer: gr.Timer
    replay_html: gr.HTML
    replay_playing: gr.State
    audit_positions: gr.Slider
    audit_seconds: gr.Slider
    audit_btn: gr.Button
    audit_note: gr.Markdown
    audit_fig: gr.Plot
    audit_table: gr.Dataframe
    # Compare: every method, the diff, the projector, the rule zoo
    compare_status: gr.Markdown
    compare_fig: gr.Plot
    compare_table: gr.Dataframe
    diff_btn: gr.Button
    diff_html: gr.HTML
    proj_profile: gr.Radio
    proj_gpu: gr.Dropdown
    proj_dtype: gr.Dropdown
    proj_drafter_params: gr.Number
    proj_verifier_params: gr.Number
    proj_launch_ms: gr.Number
    proj_drafter_ms: gr.Number
    proj_verifier_fixed_ms: gr.Number
    proj_verifier_token_ms: gr.Number
    proj_round_ms: gr.Number
    proj_btn: gr.Button
    proj_note: gr.Markdown
    proj_fig: gr.Plot
    proj_table: gr.Dataframe
    proj_gamma_fig: gr.Plot
    proj_gamma_table: gr.Dataframe
    zoo_rules: gr.CheckboxGroup
    zoo_rates: gr.CheckboxGroup
    zoo_btn: gr.Button
    zoo_note: gr.Markdown
    zoo_fig: gr.Plot
    zoo_table: gr.Dataframe
    # alpha sweep and calibration
    sweep_source: gr.Radio
    sweep_n: gr.Slider
    sweep_x: gr.Radio
    sweep_btn: gr.Button
    sweep_note: gr.Markdown
    sweep_fig: gr.Plot
    sweep_table: gr.Dataframe
    cal_max_calls: gr.Number
    cal_min_share: gr.Number
    cal_rules: gr.CheckboxGroup
    cal_btn: gr.Button
    cal_note: gr.Markdown
    cal_table: gr.Dataframe
    # Learn
    learn: gr.Markdown

    @property
    def models(self) -> list:
        return [self.preset, self.drafter, self.verifier]

    @property
    def cascade_inputs(self) -> list:
        """What Compare and the race read: the chosen speculative cascade's settings (they run
        their own baselines beside it)."""
        return [self.prompt, *self.models, self.rule, self.alpha, self.gamma, self.temperature,
                self.max_new, self.seed, self.lang]  # fmt: skip

    @property
    def knobs(self) -> list:
        return [self.method, self.rule, self.alpha, self.gamma, self.temperature]

    @property
    def run_outputs(self) -> list:
        """What a run shows (the API returns them in this order, States left out)."""
        return [
            self.tokens, self.heat, self.timeline, self.stats, self.trace_json, self.position,
            self.insp, self.files, self.verdict, self.whatif_note, self.drafting,
            self.drafting_note, self.learn, self.answer_note, self.status, self.trace,
            self.asked, self.shown_pair,
        ]  # fmt: skip

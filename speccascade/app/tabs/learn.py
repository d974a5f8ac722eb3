"""The Learn tab: the story, the method in five steps, every rule with its formula and ends, a
worked example from the last run (i18n/learn.py writes it), and why a cascade can be slower
than the verifier."""

from __future__ import annotations

import gradio as gr

from speccascade.app.context import LATEX
from speccascade.views.learn import learn_markdown


def parts(lang: str = "en") -> dict:
    learn = gr.Markdown(learn_markdown(lang, None), latex_delimiters=LATEX, elem_id="learn")
    return dict(learn=learn)

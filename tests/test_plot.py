"""Every figure of the page downloads as a PNG at slide size (app/plot.py): the figure box the
app uses everywhere, and nothing else."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go

from speccascade.app.page import layout
from speccascade.app.plot import SLIDE, slide_config, slide_plot
from speccascade.app.serving import ServeConfig

APP = Path(__file__).resolve().parent.parent / "speccascade" / "app"


def test_a_figure_leaves_with_the_slide_download():
    with gr.Blocks():
        box = slide_plot(elem_id="heatmap")
        bare = slide_plot()
    data = box.postprocess(go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout={"height": 300}))
    figure = json.loads(data.plot)
    assert data.type == "plotly" and figure["data"][0]["type"] == "bar"
    assert figure["layout"]["height"] == 300  # the page's size is the figure's own
    png = figure["config"]["toImageButtonOptions"]
    assert png == {"format": "png", "width": 1920, "height": 1080, "scale": 1,
                   "filename": "speccascade-heatmap"}  # fmt: skip
    assert box.postprocess(None) is None
    assert (
        json.loads(bare.postprocess(go.Figure()).plot)["config"]["toImageButtonOptions"]["filename"]
        == "speccascade"
    )
    assert slide_config({"responsive": True}, "x") == {
        "responsive": True,
        "toImageButtonOptions": {**SLIDE, "filename": "x"},
    }
    assert type(box) is gr.Plot  # the front end draws it as gr.Plot
    # Gradio rebuilds a box from its class on a gr.update: the rebuilt one downloads the same
    again = type(box)(**{**box.constructor_args, "render": False})
    png = json.loads(again.postprocess(go.Figure()).plot)["config"]["toImageButtonOptions"]
    assert png["width"] == 1920 and png["filename"] == "speccascade-heatmap"


def test_every_figure_box_of_the_page_is_one():
    with gr.Blocks():
        page = layout(ServeConfig())
    plots = [getattr(page, f.name) for f in fields(page)]
    plots = [p for p in plots if isinstance(p, gr.Plot)]
    assert len(plots) >= 12 and all(getattr(p, "slide_download", None) for p in plots)
    # and no module makes a bare one (a new tab's figure would download at screen size)
    bare = [p.name for p in APP.rglob("*.py") if "gr.Plot(" in p.read_text(encoding="utf-8")]
    assert bare == ["plot.py"], bare
    # a subclass of a Gradio component made Gradio write a stub beside its module
    assert not list(APP.rglob("*.pyi"))

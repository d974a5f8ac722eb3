"""The page's one kind of figure box: a gr.Plot whose plotly figures download as a PNG at slide
size (the toolbar's camera: 1920 x 1080, scale 1, named after the figure), whatever their size
on the page. Every figure of the page is one (a test reads the app's modules for gr.Plot), so
a teacher can put any of them on a projected slide.

The figures stay pure (views/ builds plotly figures, and knows nothing of downloads): the
download size is the page's, set here as each figure leaves for the browser. Gradio's plotly
front end passes a figure's "config" to plotly (and adds its own `responsive`)."""

from __future__ import annotations

import json

import gradio as gr
from gradio.components.plot import PlotData

# A 16:9 slide, full HD; scale 1: the PNG is exactly this many pixels.
SLIDE = {"format": "png", "width": 1920, "height": 1080, "scale": 1}


def slide_config(config: dict | None, name: str) -> dict:
    """A plotly config with the camera button's PNG at slide size, named `name`; the rest of
    `config` kept."""
    return {**(config or {}), "toImageButtonOptions": {**SLIDE, "filename": name}}


class Plot(gr.Plot):
    """gr.Plot, its plotly figures downloading at slide size (SLIDE). A Gradio template of
    gr.Plot: the front end draws it as one."""

    is_template = True

    def postprocess(self, value) -> PlotData | None:
        data = super().postprocess(value)
        if data is None or data.type != "plotly":
            return data
        figure = json.loads(data.plot)
        figure["config"] = slide_config(figure.get("config"), self.download_name())
        return PlotData(type="plotly", plot=json.dumps(figure))

    def download_name(self) -> str:
        """The PNG's file name: the figure's element id, after the project's name."""
        elem_id = getattr(self, "elem_id", None)
        return f"speccascade-{elem_id}" if elem_id else "speccascade"


__all__ = ["SLIDE", "Plot", "slide_config"]

"""The page's figure boxes: their plotly figures download as a PNG at slide size (the
toolbar's camera: 1920 x 1080, scale 1, named after the figure), whatever their size on the
page, so a teacher can put any figure on a projected slide. Every figure box of the page comes
from `slide_plot` (a test reads the app's modules for a bare gr.Plot).

The figures stay pure (views/ builds plotly figures, and knows nothing of downloads): the
download size is the page's, set as each figure leaves for the browser, in the "config" that
Gradio's plotly front end passes to plotly. That step is gr.Plot's own postprocess, wrapped
once (`install`): Gradio rebuilds a component from its class on every gr.update, so a wrap
on one box would be lost, and a subclass of a Gradio component makes Gradio write a type stub
(.pyi) beside its module at every import (a read-only install would fail there)."""

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


def with_slide_download(data: PlotData | None, name: str) -> PlotData | None:
    """A plot as Gradio sends it, its plotly figure given the slide-sized download; other
    kinds of plot (and no plot) as they are."""
    if data is None or data.type != "plotly":
        return data
    figure = json.loads(data.plot)
    figure["config"] = slide_config(figure.get("config"), name)
    return PlotData(type="plotly", plot=json.dumps(figure))


_PLAIN = gr.Plot.postprocess


def _postprocess(self: gr.Plot, value) -> PlotData | None:
    """gr.Plot's postprocess, then the slide download, named after the box's element id
    ("speccascade-heatmap.png")."""
    elem_id = getattr(self, "elem_id", None)
    name = f"speccascade-{elem_id}" if elem_id else "speccascade"
    return with_slide_download(_PLAIN(self, value), name)


def install() -> None:
    """Wrap gr.Plot's postprocess with the slide download, once (every box of the process:
    the page's are the only ones)."""
    if gr.Plot.postprocess is not _postprocess:
        gr.Plot.postprocess = _postprocess


def slide_plot(**kwargs) -> gr.Plot:
    """A gr.Plot (same arguments) whose plotly figures download at slide size."""
    install()
    box = gr.Plot(**kwargs)
    box.slide_download = True  # what the page's test looks for
    return box


__all__ = ["SLIDE", "install", "slide_config", "slide_plot", "with_slide_download"]

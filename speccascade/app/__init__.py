"""The Gradio app: deployment settings and the shared pair cache (`serving`), links and trace
files (`share`), the guided story (`story`), the handlers' shared context (`context`), the page
(`page`: the controls and the tabs, one module per tab under `tabs/`), and start-up
(`build_demo`, `launch`).

Layer 5: may import every layer below. UI code only wires: it calls the library and the views
and returns their outputs by component."""

from speccascade.app.page import build_demo, launch

__all__ = ["build_demo", "launch"]

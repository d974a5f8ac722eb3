"""Everything people see, as pure functions of traces and analysis results: plotly figures,
HTML and tables, in English or Chinese (speccascade.i18n). Token strip and its CSS
(`tokens`), heatmap and token inspector (`heatmap`), round timeline, stats and draft windows
(`timeline`), compare and sweep figures (`compare`), and the views of the decision plane,
replay, diff, projector, rule zoo and audit (`plane`, `replay`, `diff`, `project`, `zoo`);
`style` holds the colours and helpers they share; `report` the benchmark report.

Layer 4: imports core, models, analysis and i18n. Runs no model."""

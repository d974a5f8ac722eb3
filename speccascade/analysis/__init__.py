"""What runs and recorded traces say, as numbers: eval sets and key facts (`evalsets`,
`quality`), a run's verdict and what-ifs (`verdict`), worked examples (`explain`), the
decision plane (`plane`), the round replay (`replay`), the token-aligned diff (`diff`), compare
and sweeps (`compare`), alpha calibration (`calibrate`), the rule zoo at matched deferral rates
(`zoo`), the fidelity audit (`audit`), the cost projector (`project`) and the benchmark
harness (`bench`).

Layer 2: imports speccascade.core and speccascade.models. Never formats for people."""

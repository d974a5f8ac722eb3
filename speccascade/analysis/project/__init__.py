"""Re-price a recorded run under a cost model, without running the models again.

A trace records what a run *did*: how many forwards each model made, how many tokens each
verifier call scored, how many rounds it took. A cost model says what a forward *costs* on some
hardware. Multiplying the two projects the run's latency there: on this machine (a profile
measured from the pair's own forwards), on a GPU from first principles (a memory-bound
roofline), or under numbers the user enters. Every result is a projection, never a
measurement, and says so (`Projection.kind`).

The same pricing also answers what-ifs the trace can support: the run's latency at another
draft window gamma (exactly re-simulated at T = 0 where every needed position was recorded,
else estimated from the per-position acceptance rate, and labelled which), and the acceptance
rate at which speculation stops paying (`breakeven_acceptance`).

Rounds are read through RoundRecord's fields only (drafted, accepted, emitted, drafter_calls,
verifier_calls), so a round that drafts fewer than gamma tokens is priced as it happened.

Profiles (`profiles`), pricing (`pricing`), gamma re-simulation (`resim`) and the honesty
check (`honesty`); every public name is importable from here."""

from __future__ import annotations

from speccascade.analysis.project.honesty import (  # noqa: F401
    HONESTY_METHODS,
    HonestyReport,
    HonestyRow,
    honesty_check,
)
from speccascade.analysis.project.pricing import (  # noqa: F401
    Basis,
    Projection,
    Workload,
    _is_verifier,
    breakeven_acceptance,
    price,
    profile_fields,
    project,
    project_methods,
    speedup,
    steady_speedup,
    verifier_alone,
    verifier_alone_workload,
    workload_of_rounds,
)
from speccascade.analysis.project.profiles import (  # noqa: F401
    _COMPUTE_SCALE,
    CALIBRATION_PROMPT,
    DTYPE_BYTES,
    GPUS,
    PROFILES,
    STATISTICS,
    Assumption,
    CostModel,
    ForwardCost,
    Gpu,
    Profile,
    _forward_tables,
    _gap,
    _timed_forward,
    _with_overheads,
    build_profile,
    cost_model_dict,
    count_params,
    custom_profile,
    fit_line,
    mean_profile,
    measure_overheads,
    measure_profile,
    pair_label,
    roofline_profile,
)
from speccascade.analysis.project.resim import (  # noqa: F401
    _BUDGET_STOPS,
    GammaPoint,
    Replay,
    _budget_floor,
    _estimate,
    _replay,
    acceptance_per_position,
    best_gamma,
    best_gammas,
    expected_workload,
    gamma_curve,
    outcomes_past_end,
    position_outcomes,
    project_gamma,
    resimulate,
)

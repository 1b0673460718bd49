"""Engine calibrations: EngineParams fitted to measured end-to-end benchmarks.

A calibration file `hardware/calibration/<engine>.yaml` holds the fitted parameters of one
serving engine (vllm, sglang, trtllm), where they were fitted (which measured rows, their
hash), when, and the error measured on the fitted rows and on held-out systems. Engine
parameters are properties of the software (scheduler overhead, kernel launch, how far model
shapes fall below best-shape GEMM efficiency); they apply to every hardware card.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field

from solver import catalog
from solver.perf.engine import EngineParams
from solver.schema.base import Strict
from solver.schema.yamlio import load_yaml, validate_doc


class FitError(Strict):
    rows: int
    ttft_median_abs_pct: float
    tpot_median_abs_pct: float
    ttft_bias_pct: float
    tpot_bias_pct: float


class Calibration(Strict):
    engine: str
    params: EngineParams
    fitted_on: str = Field(description="which measured rows, e.g. silicon_sample.csv h100_sxm rows")
    source_sha256: str
    fitted_at: str = Field(description="YYYY-MM-DD")
    method: str
    fit_error: FitError
    held_out_error: dict[str, FitError] = Field(default_factory=dict,
                                                description="per system, never fitted on")


@lru_cache(maxsize=16)
def load_calibration(engine: str) -> Calibration | None:
    path = catalog.data_dir("hardware") / "calibration" / f"{engine}.yaml"
    if not path.is_file():
        return None
    return validate_doc(Calibration, load_yaml(path))


def engine_params(engine: str | None) -> EngineParams:
    """The calibrated parameters of an engine, or the uncalibrated defaults."""
    if engine is None:
        return EngineParams()
    cal = load_calibration(engine)
    return cal.params if cal is not None else EngineParams()


# ---- fitting ---------------------------------------------------------------------------------

# (field, lower, upper): the engine parameters a calibration fits, with physical bounds
FIT_BOUNDS: tuple[tuple[str, float, float], ...] = (
    ("gemm_efficiency_factor", 0.3, 1.0),  # MAMF (the card) is a ceiling
    ("memory_efficiency_factor", 0.4, 1.25),
    ("step_overhead_ms", 0.0, 20.0),
    ("request_overhead_ms", 0.0, 500.0),
    ("burst_share", 0.0, 1.0),
    ("mixed_batch_slowdown", 1.0, 3.0),
)


def _to_params(x, base: EngineParams) -> EngineParams:
    import numpy as np

    vals = {}
    for (name, lo, hi), xi in zip(FIT_BOUNDS, x):
        vals[name] = float(lo + (hi - lo) / (1.0 + np.exp(-xi)))  # logistic: any x maps inside
    return base.model_copy(update=vals)


def _from_params(p: EngineParams):
    import numpy as np

    out = []
    for name, lo, hi in FIT_BOUNDS:
        u = (getattr(p, name) - lo) / (hi - lo)
        u = min(max(u, 1e-4), 1 - 1e-4)
        out.append(float(np.log(u / (1 - u))))
    return np.array(out)


def fit_engine(loss, start: EngineParams, max_evals: int = 400, seed: int = 0) -> tuple[EngineParams, float]:
    """Minimise loss(EngineParams) with Nelder-Mead over the bounded parameters of FIT_BOUNDS.

    Deterministic (fixed initial simplex); numpy only. Returns the best parameters and loss.
    """
    import numpy as np

    x0 = _from_params(start)
    n = len(x0)
    simplex = [x0] + [x0 + np.eye(n)[i] * 0.8 for i in range(n)]
    f = [loss(_to_params(x, start)) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(f)
        simplex = [simplex[i] for i in order]
        f = [f[i] for i in order]
        if abs(f[-1] - f[0]) < 1e-6:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = loss(_to_params(xr, start))
        evals += 1
        if fr < f[0]:
            xe = centroid + 2.0 * (centroid - simplex[-1])
            fe = loss(_to_params(xe, start))
            evals += 1
            simplex[-1], f[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < f[-2]:
            simplex[-1], f[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = loss(_to_params(xc, start))
            evals += 1
            if fc < f[-1]:
                simplex[-1], f[-1] = xc, fc
            else:  # shrink towards the best point
                for i in range(1, n + 1):
                    simplex[i] = simplex[0] + 0.5 * (simplex[i] - simplex[0])
                    f[i] = loss(_to_params(simplex[i], start))
                    evals += 1
    best = int(np.argmin(f))
    return _to_params(simplex[best], start), float(f[best])

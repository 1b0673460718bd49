"""Engine calibrations: EngineParams fitted to measured end-to-end benchmarks.

A calibration file `hardware/calibration/<engine>.yaml` holds the fitted parameters of one
serving engine (vllm, sglang, trtllm), where they were fitted (which measured rows, their
hash), when, and the error measured on the fitted rows and on held-out systems. Engine
parameters are properties of the software (scheduler overhead, kernel launch, how far model
shapes fall below best-shape GEMM efficiency); they apply to every hardware card.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field

from solver import catalog
from solver.perf.engine import EngineParams
from solver.profiles import OperatorProfiles, ProfileSet
from solver.schema.cards import HardwareCard
from solver.schema.base import Strict
from solver.schema.yamlio import load_yaml, validate_doc


class FitError(Strict):
    rows: int
    ttft_median_abs_pct: float
    tpot_median_abs_pct: float
    ttft_bias_pct: float
    tpot_bias_pct: float


class ValidationGroup(Strict):
    """Prediction error on one group of measured rows: one hardware card, dense or MoE models."""

    hardware: str = Field(description="fleetplan hardware card name")
    models: Literal["dense", "moe"]
    fitted: bool = Field(description="these rows were fitted on (the rest are held out)")
    rows: int
    ttft_median_abs_pct: float
    ttft_p90_abs_pct: float
    ttft_bias_pct: float
    tpot_median_abs_pct: float
    tpot_p90_abs_pct: float
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
    validation: list[ValidationGroup] = Field(
        default_factory=list,
        description="error per hardware and model kind with the fitted parameters (the "
        "uncertainty bands of a plan come from here)",
    )


def calibration_path(engine: str):
    """Where an engine's calibration file is (it may not exist: then none is used)."""
    return catalog.data_dir("hardware") / "calibration" / f"{engine}.yaml"


@lru_cache(maxsize=16)
def load_calibration(engine: str) -> Calibration | None:
    path = calibration_path(engine)
    if not path.is_file():
        return None
    return validate_doc(Calibration, load_yaml(path))


DEFAULT_ENGINE = "vllm"  # the engine assumed when a problem or a measured row names none


def engine_params(engine: str | None) -> EngineParams:
    """The calibrated parameters of an engine (default: vLLM), or the uncalibrated defaults
    when no calibration file exists."""
    cal = load_calibration(engine or DEFAULT_ENGINE)
    return cal.params if cal is not None else EngineParams()


def measured_tables(cards, engine: str | None) -> ProfileSet:
    """The engine's measured operator tables for each card (hardware without tables, or an
    engine without them, falls back to the roofline operator by operator)."""
    return ProfileSet(tuple(_tables(c, engine or DEFAULT_ENGINE) for c in cards))


@lru_cache(maxsize=64)
def _tables(card: HardwareCard, engine: str) -> OperatorProfiles:
    """Loaded once per process: reading and hash-checking the tables costs ~0.1 s."""
    return OperatorProfiles.load(card, engine)


# ---- fitting ---------------------------------------------------------------------------------

# (field, lower, upper): the engine parameters a calibration fits, with physical bounds
FIT_BOUNDS: tuple[tuple[str, float, float], ...] = (
    ("gemm_efficiency_factor", 0.3, 1.0),  # MAMF (the card) is a ceiling
    ("memory_efficiency_factor", 0.4, 1.25),
    ("step_overhead_ms", 0.0, 20.0),
    ("request_overhead_ms", 0.0, 500.0),
    ("wave_size_coefficient", 0.1, 4.0),
    ("wave_size_exponent", 0.0, 1.0),
    ("mixed_batch_slowdown", 1.0, 3.0),
)


EFFICIENCY_FIELDS = ("gemm_efficiency_factor", "memory_efficiency_factor")


def _bounds(fields: tuple[str, ...] | None):
    return [b for b in FIT_BOUNDS if fields is None or b[0] in fields]


def _to_params(x, base: EngineParams, fields: tuple[str, ...] | None = None) -> EngineParams:
    import numpy as np

    vals = {}
    for (name, lo, hi), xi in zip(_bounds(fields), x):
        vals[name] = float(lo + (hi - lo) / (1.0 + np.exp(-xi)))  # logistic: any x maps inside
    return base.model_copy(update=vals)


def _from_params(p: EngineParams, fields: tuple[str, ...] | None = None):
    import numpy as np

    out = []
    for name, lo, hi in _bounds(fields):
        u = (getattr(p, name) - lo) / (hi - lo)
        u = min(max(u, 1e-4), 1 - 1e-4)
        out.append(float(np.log(u / (1 - u))))
    return np.array(out)


def fit_engine(
    loss, start: EngineParams, max_evals: int = 400, fields: tuple[str, ...] | None = None
) -> tuple[EngineParams, float]:
    """Minimise loss(EngineParams) with Nelder-Mead over the bounded parameters of FIT_BOUNDS
    (only `fields` of them when given; the others stay as in `start`).

    Deterministic (fixed initial simplex); numpy only. Returns the best parameters and loss.
    """
    import numpy as np

    def to(x):
        return _to_params(x, start, fields)

    x0 = _from_params(start, fields)
    n = len(x0)
    simplex = [x0] + [x0 + np.eye(n)[i] * 0.8 for i in range(n)]
    f = [loss(to(x)) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(f)
        simplex = [simplex[i] for i in order]
        f = [f[i] for i in order]
        if abs(f[-1] - f[0]) < 1e-6:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = loss(to(xr))
        evals += 1
        if fr < f[0]:
            xe = centroid + 2.0 * (centroid - simplex[-1])
            fe = loss(to(xe))
            evals += 1
            simplex[-1], f[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < f[-2]:
            simplex[-1], f[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = loss(to(xc))
            evals += 1
            if fc < f[-1]:
                simplex[-1], f[-1] = xc, fc
            else:  # shrink towards the best point
                for i in range(1, n + 1):
                    simplex[i] = simplex[0] + 0.5 * (simplex[i] - simplex[0])
                    f[i] = loss(to(simplex[i]))
                    evals += 1
    best = int(np.argmin(f))
    return to(simplex[best]), float(f[best])

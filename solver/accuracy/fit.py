"""The calibration fit: EngineParams fitted to measured end-to-end benchmarks
(`benchmarks/calibrate.py` runs it; the result is a calibration file,
`solver/schema/calibration.py`)."""

from __future__ import annotations

from solver.schema.engine import EngineParams

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


Bounds = tuple[tuple[str, float, float], ...]

# TRIM_FACTOR: rows predicted more than 3x off count as 3x off in the loss; MEAN_WEIGHT: weight
# of the capped mean |log error| next to the medians (`robust_loss`)
TRIM_FACTOR = 3.0
MEAN_WEIGHT = 0.1


def robust_loss(log_ttft_err, log_tpot_err) -> float:
    """The fit's loss: the median |log error| of TTFT plus that of TPOT (least median of
    deviations, Rousseeuw 1984: unmoved by up to half the rows being outliers; the median is
    also the statistic the accuracy target is stated in), plus a tenth of the mean |log error|
    with each row capped at log 3, which keeps the surface from being flat between medians.
    Rows off by more than 3x (or not predicted: nan) show behaviour the model does not describe
    and must not pull the fit."""
    import numpy as np

    cap = np.log(TRIM_FACTOR)
    lt = np.nan_to_num(np.abs(log_ttft_err), nan=cap)
    lp = np.nan_to_num(np.abs(log_tpot_err), nan=cap)
    return float(np.median(lt) + np.median(lp)
                 + MEAN_WEIGHT * (np.mean(np.minimum(lt, cap)) + np.mean(np.minimum(lp, cap))))


def _bounds(fields: tuple[str, ...] | None, bounds: Bounds = FIT_BOUNDS):
    return [b for b in bounds if fields is None or b[0] in fields]


def _to_params(x, base: EngineParams, fields: tuple[str, ...] | None = None,
               bounds: Bounds = FIT_BOUNDS) -> EngineParams:
    import numpy as np

    vals = {}
    for (name, lo, hi), xi in zip(_bounds(fields, bounds), x):
        vals[name] = float(lo + (hi - lo) / (1.0 + np.exp(-xi)))  # logistic: any x maps inside
    return base.model_copy(update=vals)


def _from_params(p: EngineParams, fields: tuple[str, ...] | None = None, bounds: Bounds = FIT_BOUNDS):
    import numpy as np

    out = []
    for name, lo, hi in _bounds(fields, bounds):
        u = (getattr(p, name) - lo) / (hi - lo)
        u = min(max(u, 1e-4), 1 - 1e-4)
        out.append(float(np.log(u / (1 - u))))
    return np.array(out)


def fit_engine(
    loss, start: EngineParams, max_evals: int = 400, fields: tuple[str, ...] | None = None,
    bounds: Bounds = FIT_BOUNDS,
) -> tuple[EngineParams, float]:
    """Minimise loss(EngineParams) with Nelder-Mead over the bounded parameters of `bounds`
    (only `fields` of them when given; the others stay as in `start`).

    Deterministic (fixed initial simplex); numpy only. Returns the best parameters and loss.
    """
    import numpy as np

    def to(x):
        return _to_params(x, start, fields, bounds)

    x0 = _from_params(start, fields, bounds)
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

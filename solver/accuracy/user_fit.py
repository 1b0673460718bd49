"""`fleetplan calibrate`: refit an engine's physical parameters on the user's own measurements.

The parameters and their ranges are the shipped calibrations' (solver/accuracy/replay_fit.py
`REPLAY_BOUNDS`, `REQUEST_OVERHEAD_MS`): the GEMM and memory efficiency factors, the step
overhead and the request overhead; the wave law stays off and the mixed-batch slowdown at 1,
as in the shipped files. The fit sees the fitted rows only (solver/accuracy/user_rows.py
`split`); the held-out rows are predicted once, with the fitted parameters, and reported.

- `replay` (the default, the shipped files' method): `fit_replay` as `benchmarks/calibrate.py`
  runs it, on every fitted row: phase 1 without measured tables (Nelder-Mead over the two
  efficiency factors), phase 2 with them (golden section over the step overhead), the request
  overhead solved exactly inside each evaluation.
- `closed-form`: the same two phases through the closed form of solver/perf/closed_loop.py,
  where one evaluation costs milliseconds: phase 1 a Nelder-Mead over all four parameters with
  the tables off, phase 2 (only when a row's card has measured tables for the engine) one over
  the two overheads with the tables on and the efficiency factors kept. The request overhead
  shapes the closed loop's cycle there, so it is searched, not solved.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import numpy as np

from solver.accuracy.fit import fit_engine, robust_loss
from solver.accuracy.replay_fit import REPLAY_BOUNDS, REQUEST_OVERHEAD_MS, fit_replay
from solver.accuracy.user_rows import MeasuredRows
from solver.catalog import shipped
from solver.perf.operators.tables import measured_tables
from solver.schema.engine import EngineParams

BOUNDS = REPLAY_BOUNDS + (("request_overhead_ms", *REQUEST_OVERHEAD_MS),)
FITTED = tuple(name for name, _, _ in BOUNDS)
OVERHEADS = ("step_overhead_ms", "request_overhead_ms")
EFFICIENCY = ("gemm_efficiency_factor", "memory_efficiency_factor")
# the shipped files' fixed terms (hardware/calibration/README.md): no wave law, slowdown 1
BASE = EngineParams(mixed_batch_slowdown=1.0, wave_size_coefficient=1.0, wave_size_exponent=0.0)
START_GEMM = 0.85  # replay_fit.START_GEMM: inside the bounds, where MAMF-like shapes sit
# the closed form's search starts the request overhead inside its bounds (at 0, the bound, the
# simplex in fit_engine's logistic coordinates could not move it): 5 ms, a local benchmark's
# HTTP + tokenisation + streaming (replay_fit.REQUEST_OVERHEAD_MS: "milliseconds")
START_REQUEST_MS = 5.0
RESTARTS = 3  # Nelder-Mead restarts from the best point so far (a fresh simplex each)
MAX_EVALS = 2000  # a closed-form evaluation costs milliseconds per row (bound of --max-evals)
DEFAULT_EVALS = {"closed-form": 400, "replay": 30}  # replay: the shipped fit's 20 + 10

Predict = Callable[[EngineParams, bool], tuple[np.ndarray, np.ndarray]]


def predictor(m: MeasuredRows, idx: list[int], model: str) -> Predict:
    """(TTFT, TPOT) of the rows `idx` with given parameters, tables on or off, by `model`."""
    from solver.accuracy.replay_rows import replay_rows
    from solver.accuracy.validate import predict_rows

    by_file: dict[str, list[int]] = defaultdict(list)
    for j, k in enumerate(idx):
        by_file[m.files[k]].append(j)

    def run(params: EngineParams, tables: bool) -> tuple[np.ndarray, np.ndarray]:
        ttft, tpot = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
        for path, js in by_file.items():
            rows = [m.rows[idx[j]] for j in js]
            if model == "replay":
                t, p = replay_rows(path, rows, lambda _e: params, tables=tables, slowdown=1.0)
            else:
                t, p = predict_rows(path, rows, lambda _e: params, tables=tables)
            ttft[js], tpot[js] = t, p
        return ttft, tpot

    return run


def has_tables(m: MeasuredRows, engine: str) -> bool:
    """Whether any row's card has measured operator tables for the engine."""
    cards = [shipped.hardware_card(h) for h in sorted({r.hardware for r in m.rows})]
    return any(t.provenance for t in measured_tables(cards, engine).members)


def _closed_form_fit(m: MeasuredRows, fitted: list[int], tables: bool, max_evals: int) -> EngineParams:
    run = predictor(m, fitted, "closed-form")
    meas_t = np.array([m.rows[k].ttft_ms for k in fitted])
    meas_p = np.array([m.rows[k].tpot_ms for k in fitted])

    def loss_with(t: bool):
        def loss(params: EngineParams) -> float:
            ttft, tpot = run(params, t)
            return robust_loss(np.log(ttft / meas_t), np.log(tpot / meas_p))
        return loss

    params = BASE.model_copy(update={"gemm_efficiency_factor": START_GEMM,
                                     "request_overhead_ms": START_REQUEST_MS})
    evals1 = max_evals if not tables else max(max_evals * 2 // 3, 1)
    for _ in range(RESTARTS):
        params, _ = fit_engine(loss_with(False), params, max_evals=max(evals1 // RESTARTS, 1),
                               fields=FITTED, bounds=BOUNDS)
    if tables:
        params, _ = fit_engine(loss_with(True), params, max_evals=max(max_evals - evals1, 1),
                               fields=OVERHEADS, bounds=BOUNDS)
    return params


def fit_user(m: MeasuredRows, fitted: list[int], engine: str, model: str, max_evals: int,
             say: Callable[[str], None] = lambda _m: None) -> EngineParams:
    """The fitted parameters, from the rows `fitted` only (module docstring)."""
    if not 1 <= max_evals <= MAX_EVALS:
        raise ValueError(f"max_evals must be in 1..{MAX_EVALS}, got {max_evals}")
    tables = has_tables(m, engine)
    if model == "replay":
        rows = [m.rows[k] for k in fitted]
        roof = max(max_evals * 2 // 3, 1) if max_evals > 1 else 1
        params, _ = fit_replay("measured rows", rows, BASE, every=1, evals_roofline=roof,
                               evals_step=max(max_evals - roof, 2), say=say)
        return params.model_copy(update={"mixed_batch_slowdown": 1.0})
    return _closed_form_fit(m, fitted, tables, max_evals)

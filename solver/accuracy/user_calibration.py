"""`fleetplan calibrate MEASURED... --engine E --out FILE.yaml`: read the user's measurements,
split them (solver/accuracy/user_rows.py), fit (solver/accuracy/user_fit.py) and write the
calibration document (solver/schema/calibration.py) with its errors, fitted and held out side
by side per hardware card and model kind."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from solver.accuracy.fit import MEAN_WEIGHT, TRIM_FACTOR
from solver.accuracy.user_fit import BOUNDS, FITTED, fit_user, predictor
from solver.accuracy.user_rows import MeasuredRows, read_measured, split
from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.schema.calibration import Calibration, CalibrationSplit, FitError, ValidationGroup
from solver.schema.engine import EngineParams

WRITTEN = (*FITTED, "mixed_batch_slowdown")  # the parameters a calibration file carries


@dataclass
class CalibrateRun:
    calibration: Calibration
    ttft_pred: np.ndarray  # per row, with the fitted parameters
    tpot_pred: np.ndarray
    measured: MeasuredRows
    held: list[int]


def _errors(meas: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    err = (pred - meas) / meas * 100.0
    return np.abs(err), err


def fit_error(m: MeasuredRows, idx: list[int], ttft: np.ndarray, tpot: np.ndarray) -> FitError:
    a1, s1 = _errors(np.array([m.rows[k].ttft_ms for k in idx]), ttft[idx])
    a2, s2 = _errors(np.array([m.rows[k].tpot_ms for k in idx]), tpot[idx])
    return FitError(rows=len(idx), ttft_median_abs_pct=round(float(np.median(a1)), 2),
                    tpot_median_abs_pct=round(float(np.median(a2)), 2),
                    ttft_bias_pct=round(float(np.mean(s1)), 2), tpot_bias_pct=round(float(np.mean(s2)), 2))


def _kind(model: str) -> str:
    return "dense" if ModelArch.from_card(shipped.model_card(model)).moe_layers == 0 else "moe"


def validation(m: MeasuredRows, held: list[int], ttft: np.ndarray, tpot: np.ndarray) -> list[ValidationGroup]:
    """Per hardware card and model kind: a held-out group, then a fitted group (those that
    have rows)."""
    held_set = set(held)
    groups: dict[tuple[str, str, bool], list[int]] = defaultdict(list)
    for k, r in enumerate(m.rows):
        groups[(r.hardware, _kind(r.model), k not in held_set)].append(k)
    out = []
    for (hw, kind, fitted), idx in sorted(groups.items()):
        a1, s1 = _errors(np.array([m.rows[k].ttft_ms for k in idx]), ttft[idx])
        a2, s2 = _errors(np.array([m.rows[k].tpot_ms for k in idx]), tpot[idx])
        out.append(ValidationGroup(
            hardware=hw, models=kind, fitted=fitted, rows=len(idx),  # type: ignore[arg-type]
            ttft_median_abs_pct=round(float(np.median(a1)), 2),
            ttft_p90_abs_pct=round(float(np.percentile(a1, 90)), 2), ttft_bias_pct=round(float(np.mean(s1)), 2),
            tpot_median_abs_pct=round(float(np.median(a2)), 2),
            tpot_p90_abs_pct=round(float(np.percentile(a2, 90)), 2), tpot_bias_pct=round(float(np.mean(s2)), 2)))
    return out


def _sha(m: MeasuredRows) -> str:
    """sha256 over the files' own sha256 digests, in the order given."""
    digests = "".join(hashlib.sha256(t.encode()).hexdigest() for t in m.texts.values())
    return hashlib.sha256(digests.encode()).hexdigest()


def _method(model: str, max_evals: int) -> str:
    return (f"fleetplan calibrate ({model}): loss median |log(pred/measured)| of TTFT + that of TPOT "
            f"+ {MEAN_WEIGHT:g} x mean min(|log(pred/measured)|, log {TRIM_FACTOR:g}) of both, on the "
            f"fitted rows only; phase 1 without measured tables, phase 2 with them; at most "
            f"{max_evals} evaluations; bounds {[(n, lo, hi) for n, lo, hi in BOUNDS]}")


def document(m: MeasuredRows, engine: str, model: str, params: EngineParams, fitted: list[int],
             held: list[int], seed: int, fraction: float, max_evals: int) -> CalibrateRun:
    ttft, tpot = predictor(m, list(range(len(m.rows))), model)(params, True)
    fe, he = fit_error(m, fitted, ttft, tpot), fit_error(m, held, ttft, tpot)
    by_card: dict[str, list[int]] = defaultdict(list)
    for k in held:
        by_card[m.rows[k].hardware].append(k)
    files = list(m.texts)
    cal = Calibration(
        engine=engine, params=written_params(params), source_sha256=_sha(m),
        fitted_on=f"the user's measurements: {len(fitted)} of {len(m.rows)} rows of {', '.join(files)} "
                  f"(seed {seed}, {len(held)} held out)",
        fitted_at=dt.date.today().isoformat(), method=_method(model, max_evals), predictor=model,  # type: ignore[arg-type]
        fit_error=fe, held_out_error={hw: fit_error(m, idx, ttft, tpot) for hw, idx in sorted(by_card.items())},
        validation=validation(m, held, ttft, tpot),
        split=CalibrationSplit(files=files, seed=seed, held_out_fraction=fraction, fitted_rows=len(fitted),
                               held_out_rows=len(held), held_out=[m.where(k) for k in held],
                               fitted_error=fe, held_out_error=he))
    return CalibrateRun(cal, ttft, tpot, m, held)


def written_params(params: EngineParams) -> EngineParams:
    """The parameters a calibration file writes (rounded as the shipped files are)."""
    return EngineParams(**{f: round(getattr(params, f), 4) for f in WRITTEN})


def calibrate(paths: list[str], engine: str, flags: dict[str, object], model: str = "replay",
              seed: int = 0, fraction: float = 0.25, max_evals: int | None = None,
              say: Callable[[str], None] = lambda _m: None) -> CalibrateRun:
    """The whole command but the writing (module docstring)."""
    from solver.accuracy.user_fit import DEFAULT_EVALS

    m = read_measured(paths, engine, flags)
    fitted, held = split(m, seed, fraction)
    evals = DEFAULT_EVALS[model] if max_evals is None else max_evals
    params = fit_user(m, fitted, engine, model, evals, say)
    return document(m, engine, model, params, fitted, held, seed, fraction, evals)

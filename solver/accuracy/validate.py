"""`fleetplan validate`: predict measured benchmark points and report the error.

Input: a CSV with the columns model, hardware, precision, mode, input_tokens, output_tokens,
concurrency, tp, pp, ep, dp, ttft_ms, tpot_ms and optionally engine (SPEC). Each row is a
closed-loop benchmark of one colocated instance (`mode` colocated); other columns pass through.
A CSV with per-role columns instead (`prefill_tp`, ..., `decode_batch`) holds disaggregated
rows (solver/accuracy/disagg_rows.py, predicted by solver/accuracy/validate_disagg.py).
Rows are predicted in vectorised groups (one model, hardware, precision and engine at a time)
with the engine's calibrated parameters (solver/catalog/calibration.py).
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf import closed_loop as loop
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import RULES, invalid_reasons
from solver.schema.cards import PRECISIONS
from solver.schema.engine import EngineParams
from solver.schema.validation import (
    ErrorStats,
    GroupStats,
    ValidationReport,
    ValidationRow,
)

REQUIRED = ["model", "hardware", "precision", "mode", "input_tokens", "output_tokens", "concurrency",
            "tp", "pp", "ep", "dp", "ttft_ms", "tpot_ms"]
INTS = ["input_tokens", "output_tokens", "concurrency", "tp", "pp", "ep", "dp"]
ENGINES = ("vllm", "sglang", "trtllm")


@dataclass
class Row:
    line: int
    raw: dict[str, str]
    model: str
    hardware: str
    precision: str
    engine: str | None
    ints: dict[str, int]
    ttft_ms: float
    tpot_ms: float


Bad = Callable[[str, str], InputError]


def csv_records(path: str, text: str, required: list[str]) -> tuple[list[str], Iterator[tuple[int, dict, Bad]]]:
    """The header and, per data row, (line, raw values, bad(field, why) -> InputError naming
    the file, line and field) of a measured CSV; missing columns and surplus values are errors."""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}:1: missing column(s): {', '.join(missing)}")

    def records():
        for i, raw in enumerate(reader, start=2):
            def bad(field: str, why: str, i=i, raw=raw) -> InputError:
                return InputError(f"{path}:{i}: {field}: {why} (got {raw.get(field)!r})")

            if None in raw:
                raise InputError(f"{path}:{i}: more values than columns")
            yield i, raw, bad

    return list(header), records()


def whole_numbers(raw: dict, columns: list[str], bad: Bad) -> dict[str, int]:
    """Each column a whole number >= 1 (non-finite values and fractions are errors)."""
    out = {}
    for c in columns:
        try:
            v = float(raw[c])
        except (TypeError, ValueError):
            raise bad(c, "expected a whole number") from None
        if not math.isfinite(v) or v < 1 or v != int(v):
            raise bad(c, "must be a whole number >= 1")
        out[c] = int(v)
    return out


def milliseconds(raw: dict, columns: tuple[str, ...], bad: Bad) -> list[float]:
    """Each column a positive finite number of milliseconds."""
    out = []
    for c in columns:
        try:
            v = float(raw[c])
        except (TypeError, ValueError):
            raise bad(c, "expected a number of milliseconds") from None
        if not math.isfinite(v) or v <= 0:
            raise bad(c, "must be a positive finite number")
        out.append(v)
    return out


def parse_measured(path: str, text: str) -> tuple[list[str], list[Row]]:
    header, records = csv_records(path, text, REQUIRED)
    rows: list[Row] = []
    for i, raw, bad in records:
        ints = whole_numbers(raw, INTS, bad)
        measured = dict(zip(("ttft_ms", "tpot_ms"), milliseconds(raw, ("ttft_ms", "tpot_ms"), bad)))
        if raw["mode"] != "colocated":
            raise bad("mode", "only 'colocated' rows can be predicted (closed-loop benchmarks of one instance)")
        if raw["precision"] not in PRECISIONS:
            raise bad("precision", f"expected one of {', '.join(PRECISIONS)}")
        engine = (raw.get("engine") or "").strip() or None
        if engine is not None and engine not in ENGINES:
            raise bad("engine", f"expected one of {', '.join(ENGINES)} or empty")
        rows.append(Row(i, raw, raw["model"], raw["hardware"], raw["precision"], engine, ints,
                        measured["ttft_ms"], measured["tpot_ms"]))
    if not rows:
        raise InputError(f"{path}: no data rows")
    return header, rows


def _stats(pred: np.ndarray, meas: np.ndarray) -> ErrorStats:
    err = (pred - meas) / meas * 100.0
    return ErrorStats(
        rows=int(err.size),
        median_abs_pct=round(float(np.median(np.abs(err))), 3),
        mean_abs_pct=round(float(np.mean(np.abs(err))), 3),
        bias_pct=round(float(np.mean(err)), 3),
        p90_abs_pct=round(float(np.percentile(np.abs(err), 90)), 3),
    )


def _check_group(path: str, arch: ModelArch, plans: Plans, sel: list[Row], model: str) -> None:
    for rule, mask in invalid_reasons(arch, plans).items():
        # fewer requests than attention ranks is a real measurement (idle ranks)
        if rule != "batch_dp" and mask.any():
            bad = sel[int(np.flatnonzero(mask)[0])]
            raise InputError(f"{path}:{bad.line}: tp/pp/ep/dp: {RULES[rule]} ({model})")


def check_plans(path: str, rows: list[Row]) -> None:
    """Every row's plan is one fleetplan can represent (InputError naming the line otherwise)."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.model].append(r)
    for model, sel in groups.items():
        try:
            arch = ModelArch.from_card(shipped.model_card(model))
        except InputError as exc:
            raise InputError(f"{path}:{sel[0].line}: model: {exc}") from None
        col = lambda c: np.array([r.ints[c] for r in sel])  # noqa: E731
        plans = Plans.of(hw=0, tp=col("tp"), pp=col("pp"), ep=col("ep"), dp=col("dp"), batch=col("concurrency"),
                         wprec=0, kvprec=0)
        _check_group(path, arch, plans, sel, model)


def predict_rows(
    path: str,
    rows: list[Row],
    params_for: Callable[[str | None], EngineParams] = engine_params,
    tables: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (ttft_ms, tpot_ms) per row; `params_for(engine)` gives each engine's parameters
    (the shipped calibrations by default; a calibration fit passes candidates)."""
    ttft = np.full(len(rows), np.nan)
    tpot = np.full(len(rows), np.nan)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        groups[(r.model, r.hardware, r.precision, r.engine)].append(k)
    for (model, hw_name, prec, engine), idx in groups.items():
        first = rows[idx[0]]
        try:
            arch = ModelArch.from_card(shipped.model_card(model))
        except InputError as exc:
            raise InputError(f"{path}:{first.line}: model: {exc}") from None
        try:
            card = shipped.hardware_card(hw_name)
        except InputError as exc:
            raise InputError(f"{path}:{first.line}: hardware: {exc}") from None
        params = params_for(engine)
        profiles = measured_tables([card], engine) if tables else None
        hw = HardwareTable.from_cards([card], engine=params, profiles=profiles)
        sel = [rows[k] for k in idx]
        col = lambda c: np.array([r.ints[c] for r in sel])  # noqa: E731
        plans = Plans.of(hw=0, tp=col("tp"), pp=col("pp"), ep=col("ep"), dp=col("dp"),
                         batch=col("concurrency"), wprec=precision_code(prec),  # type: ignore[arg-type]
                         kvprec=precision_code(prec))  # type: ignore[arg-type]
        _check_group(path, arch, plans, sel, model)
        wl = rt.Workload(col("input_tokens").astype(float), col("output_tokens").astype(float))  # type: ignore[arg-type]
        cl = loop.closed_loop(arch, hw, plans, wl, col("concurrency"), params)
        ttft[idx] = cl.ttft_ms
        tpot[idx] = cl.tpot_ms
    return ttft, tpot


PREDICTORS = ("closed-form", "replay")


def build_report(path: str, header: list[str], out_rows: list[ValidationRow], keys: list[tuple[str, str, str]],
                 pred: tuple[np.ndarray, np.ndarray], meas: tuple[np.ndarray, np.ndarray]) -> ValidationReport:
    """The report of predicted against measured (ttft, tpot) per row, grouped by `keys`
    (hardware, model, engine) per row."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for k, key in enumerate(keys):
        groups[key].append(k)
    group_stats = [
        GroupStats(hardware=h, model=m, engine=e, ttft=_stats(pred[0][idx], meas[0][idx]),
                   tpot=_stats(pred[1][idx], meas[1][idx]))
        for (h, m, e), idx in sorted(groups.items())
    ]
    return ValidationReport(
        source=path, rows=out_rows, groups=group_stats,
        overall=GroupStats(hardware="all", model="all", engine="all",
                           ttft=_stats(pred[0], meas[0]), tpot=_stats(pred[1], meas[1])),
        columns=header,
    )


def _colocated(path: str, text: str, model: str) -> ValidationReport:
    header, rows = parse_measured(path, text)
    if model == "replay":
        from solver.accuracy.replay_rows import replay_rows

        check_plans(path, rows)
        ttft, tpot = replay_rows(path, rows)
    else:
        ttft, tpot = predict_rows(path, rows)
    out_rows = [
        ValidationRow(
            line=r.line, model=r.model, hardware=r.hardware, precision=r.precision,
            engine=r.engine, input_tokens=r.ints["input_tokens"],
            output_tokens=r.ints["output_tokens"], concurrency=r.ints["concurrency"],
            tp=r.ints["tp"], pp=r.ints["pp"], ep=r.ints["ep"], dp=r.ints["dp"],
            measured_ttft_ms=r.ttft_ms, measured_tpot_ms=r.tpot_ms,
            predicted_ttft_ms=round(float(ttft[k]), 4), predicted_tpot_ms=round(float(tpot[k]), 4),
        )
        for k, r in enumerate(rows)
    ]
    keys = [(r.hardware, r.model, r.engine or "-") for r in rows]
    meas = (np.array([r.ttft_ms for r in rows]), np.array([r.tpot_ms for r in rows]))
    return build_report(path, header, out_rows, keys, (ttft, tpot), meas)


def validate_text(path: str, text: str, model: str = "closed-form") -> ValidationReport:
    """`model`: `closed-form` (solver/perf/closed_loop.py) or `replay` (each row's benchmark
    replayed on one simulated instance: solver/accuracy/replay_rows.py). A CSV with the
    disaggregated columns (`prefill_tp`, ...) holds disaggregated rows
    (solver/accuracy/validate_disagg.py)."""
    if model not in PREDICTORS:
        raise InputError(f"validate: --model must be one of {', '.join(PREDICTORS)} (got {model!r})")
    header = next(csv.reader(io.StringIO(text)), [])
    if "prefill_tp" in header:
        from solver.accuracy.validate_disagg import validate_disagg

        return validate_disagg(path, text, model)
    return _colocated(path, text, model)


def validate_file(path: str | Path, model: str = "closed-form") -> tuple[ValidationReport, str]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read: {exc}") from None
    return validate_text(str(p), text, model), text

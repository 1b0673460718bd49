"""`fleetplan validate`: predict measured benchmark points and report the error.

Input: a CSV with the columns model, hardware, precision, mode, input_tokens, output_tokens,
concurrency, tp, pp, ep, dp, ttft_ms, tpot_ms and optionally engine (SPEC) and speculative
(METHOD:K:A, the speculative decoding the row ran: solver/accuracy/measured.py
`row_speculation`). Each row is a closed-loop benchmark of one colocated instance (`mode`
colocated); other columns pass through. A row that cannot be predicted (speculative decoding at
an unrecorded acceptance rate; any speculative row in the closed form, which does not model it in
a closed loop) is reported with the reason and counts in no error statistic.
A CSV with per-role columns instead (`prefill_tp`, ..., `decode_batch`) holds disaggregated
rows (solver/accuracy/disagg_rows.py, predicted by solver/accuracy/validate_disagg.py).
Rows are predicted in vectorised groups (one model, hardware, precision and engine at a time)
with the engine's calibrated parameters (solver/catalog/calibration.py).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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
from solver.schema.userfile import MAX_DATA_BYTES, read_user_text
from solver.schema.validation import ValidationReport, ValidationRow

from .measured import (
    ENGINES,
    GEMM_QUANT_MODES,
    RowSpeculation,
    benchmark_tool,
    build_report,
    csv_records,
    fp8_scaling,
    kv_precision,
    milliseconds,
    row_speculation,
    whole_numbers,
)

REQUIRED = ["model", "hardware", "precision", "mode", "input_tokens", "output_tokens", "concurrency",
            "tp", "pp", "ep", "dp", "ttft_ms", "tpot_ms"]
INTS = ["input_tokens", "output_tokens", "concurrency", "tp", "pp", "ep", "dp"]


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
    speculation: RowSpeculation | None = None  # the row's speculative column


CLOSED_FORM_SPEC = ("the closed form does not model speculative decoding in a closed loop (as `estimate "
                    "--concurrency`); --model replay does")


def parse_measured(path: str, text: str) -> tuple[list[str], list[Row]]:
    header, records = csv_records(path, text, REQUIRED)
    rows: list[Row] = []
    for i, raw, bad in records:
        ints = whole_numbers(raw, INTS, bad)
        measured = dict(zip(("ttft_ms", "tpot_ms"), milliseconds(raw, ("ttft_ms", "tpot_ms"), bad)))
        if raw["mode"] != "colocated":
            raise bad("mode", "expected 'colocated' (a closed-loop benchmark of one instance); disaggregated rows "
                      "go in a CSV with the prefill_/decode_ columns instead of tp, pp, ep, dp")
        if raw["precision"] not in PRECISIONS:
            raise bad("precision", f"expected one of {', '.join(PRECISIONS)}")
        label = (raw.get("gemm_quant_mode") or "").strip()
        if label not in GEMM_QUANT_MODES:
            raise bad("gemm_quant_mode", f"expected one of {', '.join(m for m in GEMM_QUANT_MODES if m)} or empty")
        engine = (raw.get("engine") or "").strip() or None
        if engine is not None and engine not in ENGINES:
            raise bad("engine", f"expected one of {', '.join(ENGINES)} or empty")
        rows.append(Row(i, raw, raw["model"], raw["hardware"], raw["precision"], engine, ints,
                        measured["ttft_ms"], measured["tpot_ms"], row_speculation(raw, bad)))
    if not rows:
        raise InputError(f"{path}: no data rows")
    return header, rows


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
    (the shipped calibrations by default; a calibration fit passes candidates). nan for a row
    that ran speculative decoding (`row_launch_speculation`), which the closed form does not model."""
    ttft = np.full(len(rows), np.nan)
    tpot = np.full(len(rows), np.nan)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        if row_launch_speculation(r) is not None:
            continue
        groups[(r.model, r.hardware, r.precision, r.engine, fp8_scaling(r.raw, benchmark_tool(r.raw), ""))].append(k)
    for (model, hw_name, prec, engine, _), idx in groups.items():
        first = rows[idx[0]]
        try:
            card_m = shipped.model_card(model)
        except InputError as exc:
            raise InputError(f"{path}:{first.line}: model: {exc}") from None
        scaling = fp8_scaling(first.raw, benchmark_tool(first.raw), card_m.fp8_scaling)
        arch = ModelArch.from_card(card_m.model_copy(update={"fp8_scaling": scaling}))
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
                         kvprec=precision_code(kv_precision(prec)))  # type: ignore[arg-type]
        _check_group(path, arch, plans, sel, model)
        wl = rt.Workload(col("input_tokens").astype(float), col("output_tokens").astype(float))  # type: ignore[arg-type]
        cl = loop.closed_loop(arch, hw, plans, wl, col("concurrency"), params)
        ttft[idx] = cl.ttft_ms
        tpot[idx] = cl.tpot_ms
    return ttft, tpot


def row_launch_speculation(r: Row) -> RowSpeculation | None:
    """The speculative decoding a row ran: its own column, else what its benchmark's launch
    script ran (solver/accuracy/replay_rows.py `launch_speculation`)."""
    from solver.accuracy.replay_rows import launch_speculation

    return launch_speculation(r)


PREDICTORS = ("closed-form", "replay")


def _colocated(path: str, text: str, model: str) -> ValidationReport:
    header, rows = parse_measured(path, text)
    if model == "replay":
        from solver.accuracy.replay_rows import replay_rows

        check_plans(path, rows)
        ttft, tpot = replay_rows(path, rows)
    else:
        ttft, tpot = predict_rows(path, rows)
    specs = [row_launch_speculation(r) for r in rows]
    reasons = [spec.why_not(model, CLOSED_FORM_SPEC) if spec else None for spec in specs]
    out_rows = [
        ValidationRow(
            line=r.line, model=r.model, hardware=r.hardware, precision=r.precision,
            engine=r.engine, input_tokens=r.ints["input_tokens"],
            output_tokens=r.ints["output_tokens"], concurrency=r.ints["concurrency"],
            tp=r.ints["tp"], pp=r.ints["pp"], ep=r.ints["ep"], dp=r.ints["dp"],
            measured_ttft_ms=r.ttft_ms, measured_tpot_ms=r.tpot_ms,
            predicted_ttft_ms=None if reasons[k] else round(float(ttft[k]), 4),
            predicted_tpot_ms=None if reasons[k] else round(float(tpot[k]), 4),
            speculative=specs[k].label if specs[k] else None, not_predicted=reasons[k],
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
    text = read_user_text(path, MAX_DATA_BYTES, "measurement CSV")
    return validate_text(str(path), text, model), text

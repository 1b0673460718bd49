"""`fleetplan validate` on disaggregated rows (solver/accuracy/disagg_rows.py): each row
predicted by the replay of its benchmark over prefill and decode pools
(solver/accuracy/replay_disagg.py) or by the planner's role formulas in its closed loop
(solver/accuracy/closed_disagg.py). A row with a `speculative` column is replayed with a
speculating decode pool at its acceptance rate; without the rate, or by the closed form (whose
role formulas, as the colocated closed loop, do not speculate), it is not predicted and says so."""

from __future__ import annotations

import csv
import io

import numpy as np

from solver.schema.validation import RolePlanRow, ValidationReport, ValidationRow

from .disagg_rows import PLAN, ROLES, DisaggRow, parse_disagg
from .measured import build_report

CLOSED_FORM_SPEC = ("the closed form does not model a speculating decode pool in a closed loop; "
                    "--model replay does")


def _row(r: DisaggRow, ttft: float, tpot: float, why: str | None) -> ValidationRow:
    plans = {role: RolePlanRow(**{k: r.ints[f"{role}_{k}"] for k in PLAN}) for role in ROLES}
    spec = r.speculation
    return ValidationRow(
        line=r.line, mode="disaggregated", model=r.raw["model"], hardware=r.raw["hardware"],
        precision=r.raw["precision"], engine=r.engine, input_tokens=r.ints["input_tokens"],
        output_tokens=r.ints["output_tokens"], concurrency=r.ints["concurrency"], **plans,
        measured_ttft_ms=r.ttft_ms, measured_tpot_ms=r.tpot_ms,
        predicted_ttft_ms=None if why else round(ttft, 4), predicted_tpot_ms=None if why else round(tpot, 4),
        speculative=spec.label if spec else None, not_predicted=why,
    )


def validate_disagg(path: str, text: str, model: str) -> ValidationReport:
    rows = parse_disagg(path, text)
    ttft, tpot = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    why = [r.speculation.why_not(model, CLOSED_FORM_SPEC) if r.speculation else None for r in rows]
    idx = [k for k in range(len(rows)) if why[k] is None]
    if idx:
        if model == "replay":
            from .replay_disagg import replay_disagg as predict
        else:
            from .closed_disagg import closed_form_disagg as predict
        ttft[idx], tpot[idx] = predict(path, [rows[k] for k in idx])
    header = next(csv.reader(io.StringIO(text)), [])
    out_rows = [_row(r, float(ttft[k]), float(tpot[k]), why[k]) for k, r in enumerate(rows)]
    keys = [(r.raw["hardware"], r.raw["model"], r.engine or "-") for r in rows]
    meas = (np.array([r.ttft_ms for r in rows]), np.array([r.tpot_ms for r in rows]))
    return build_report(path, header, out_rows, keys, (ttft, tpot), meas)


__all__ = ["validate_disagg"]

"""`fleetplan validate MEASURED`: a validate CSV or a benchmark tool's result file, detected
from its content (solver/accuracy/readers/detect.py).

Without `--plan`, a tool's points become validate rows (solver/accuracy/bench_rows.py) and are
predicted like CSV rows; with `--plan RESULT.json`, they are compared with the plan's pools
(solver/accuracy/plan_compare.py).
"""

from __future__ import annotations

from solver.accuracy.bench_rows import Known, rows_csv
from solver.accuracy.plan_compare import compare
from solver.accuracy.readers.common import read_user_file
from solver.accuracy.readers.detect import detect, read_points
from solver.accuracy.validate import validate_text
from solver.errors import InputError
from solver.schema.bench_compare import PlanComparison
from solver.schema.validation import ValidationReport


def validate_measured(path: str, model: str = "closed-form", flags: dict[str, object] | None = None,
                      plan: str | None = None, pool: int | None = None
                      ) -> tuple[ValidationReport | PlanComparison, str]:
    """The report (or, with `plan`, the comparison) and the CSV it was predicted from."""
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    text = read_user_file(path)
    fmt = detect(path, text)
    if pool is not None and plan is None:
        raise InputError("validate: --pool needs --plan RESULT.json")
    if fmt == "csv":
        if plan is not None or given:
            extra = "--plan" if plan is not None else ", ".join(f"--{k.replace('_', '-')}" for k in given)
            raise InputError(f"{path}: a validate CSV names every field in its columns; {extra} applies to "
                             "a benchmark tool's result file")
        return validate_text(path, text, model), text
    points = read_points(path, text, fmt)
    if plan is not None:
        return compare(path, fmt, points, plan, Known(given, "flags"), pool), ""
    rows = rows_csv(path, points, Known(given, "flags"))
    return validate_text(path, rows, model), rows

"""Renderings of a validation report: table, json, csv (the input's columns plus predictions)."""

from __future__ import annotations

import csv
import io
import json

from solver.report.text import table
from solver.schema.validation import GroupStats, ValidationReport, ValidationRow


def _group_row(g: GroupStats) -> list[object]:
    return [g.hardware, g.model, g.engine, g.ttft.rows,
            g.ttft.median_abs_pct, g.ttft.mean_abs_pct, g.ttft.bias_pct,
            g.tpot.median_abs_pct, g.tpot.mean_abs_pct, g.tpot.bias_pct]


HEADERS = ["hardware", "model", "engine", "rows", "TTFT med|%|", "TTFT mean|%|", "TTFT bias%",
           "TPOT med|%|", "TPOT mean|%|", "TPOT bias%"]


def _parallel(x: ValidationRow) -> str:
    """`tp8 pp1`; disaggregated: `P 2x tp8 pp1 dp1 / D 4x tp8 pp1 dp1` (workers x plan per role)."""
    if x.prefill is None or x.decode is None:
        return f"tp{x.tp} pp{x.pp}"
    p, d = x.prefill, x.decode
    return f"P {p.workers}x tp{p.tp} pp{p.pp} dp{p.dp} / D {d.workers}x tp{d.tp} pp{d.pp} dp{d.dp}"


def to_table(r: ValidationReport) -> str:
    rows = [[x.line, x.model, x.hardware, x.precision, x.engine or "-", x.input_tokens,
             x.output_tokens, x.concurrency, _parallel(x), x.measured_ttft_ms,
             x.predicted_ttft_ms, x.measured_tpot_ms, x.predicted_tpot_ms] for x in r.rows]
    out = [
        table(["line", "model", "hardware", "prec", "engine", "in", "out", "conc", "parallel",
               "TTFT meas", "TTFT pred", "TPOT meas", "TPOT pred"], rows),
    ]
    missing = [x for x in r.rows if x.not_predicted]
    if missing:
        out += ["", f"not predicted ({len(missing)} of {len(r.rows)} rows; in no error below)"]
        out += [f"  line {x.line}: {x.not_predicted}" for x in missing]
    out += [
        "",
        "error per group (percent of the measured value; bias > 0: predictions are slower)",
        table(HEADERS, [_group_row(g) for g in r.groups] + [_group_row(r.overall)]),
    ]
    return "\n".join(out) + "\n"


def to_json(r: ValidationReport) -> str:
    return json.dumps(r.model_dump(mode="json"), indent=2) + "\n"


def to_csv(r: ValidationReport, original: str) -> str:
    """The input rows, every column kept, with predicted_ttft_ms and predicted_tpot_ms added (empty
    for a row not predicted; where any is, a last column `not_predicted` says why)."""
    src = list(csv.DictReader(io.StringIO(original)))
    out = io.StringIO()
    why = any(x.not_predicted for x in r.rows)
    fields = list(r.columns) + ["predicted_ttft_ms", "predicted_tpot_ms"] + (["not_predicted"] if why else [])
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for raw, row in zip(src, r.rows):
        extra = {"not_predicted": row.not_predicted or ""} if why else {}
        w.writerow({**raw, "predicted_ttft_ms": row.predicted_ttft_ms,
                    "predicted_tpot_ms": row.predicted_tpot_ms, **extra})
    return out.getvalue()

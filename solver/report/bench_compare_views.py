"""Renderings of a plan comparison (`fleetplan validate MEASURED --plan RESULT.json`): table, json."""

from __future__ import annotations

import json

from solver.report.text import table
from solver.schema.bench_compare import MeasuredLatency, PlanComparison, PoolComparison

HEADERS = ["metric", "measured", "predicted", "band", "in band", "bound", "holds", "margin %", "pred margin %"]


def _yes(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def _num(v: float | None) -> object:
    return "-" if v is None else round(v, 2)


def _row(x: MeasuredLatency) -> list[object]:
    band = "-" if x.band_low_ms is None else f"{x.band_low_ms:.2f}-{x.band_high_ms:.2f} (±{x.band_pct:g}%)"
    return [x.metric, _num(x.measured_ms), _num(x.predicted_ms), band, _yes(x.inside_band),
            _num(x.bound_ms), _yes(x.holds), _num(x.margin_pct), _num(x.predicted_margin_pct)]


def _load(c: PoolComparison) -> str:
    load = (f"{c.measured_concurrency} concurrent" if c.measured_concurrency is not None
            else f"{c.measured_rate_qps:g} req/s" if c.measured_rate_qps is not None else "load not recorded")
    lengths = ("" if c.measured_input_tokens is None else
               f", {c.measured_input_tokens:g} in / {c.measured_output_tokens:g} out tokens")
    return load + lengths


def _pool(c: PoolComparison) -> list[str]:
    head = (f"pool {c.pool}: service '{c.service}' {c.role} on {c.hardware} tp{c.tp} pp{c.pp} ep{c.ep} dp{c.dp} "
            f"batch {c.batch} ({c.matched_by}); measured by {c.tool} ({c.where}): {_load(c)}")
    out = [head, table(HEADERS, [_row(x) for x in c.latencies]), f"band: {c.band_source}"]
    out += [f"note: {n}" for n in c.notes]
    return out


def to_table(r: PlanComparison) -> str:
    out = [f"{r.source} ({r.format}) against the plan of {r.plan}", ""]
    for c in r.pools:
        out += _pool(c) + [""]
    out.append(f"every measured latency within its bound: {_yes(r.bounds_hold)}; "
               f"inside the plan's error band: {_yes(r.inside_band)}")
    return "\n".join(out) + "\n"


def to_json(r: PlanComparison) -> str:
    return json.dumps(r.model_dump(mode="json"), indent=2) + "\n"

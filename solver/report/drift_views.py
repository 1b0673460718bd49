"""The drift section of a re-plan (`plan --current RESULT.json --measured FILES`) as table rows,
text lines, markdown and HTML (renders the document's `drift`; computes nothing)."""

from __future__ import annotations

from solver.report.html_markup import badge, bullets, para, table
from solver.schema.drift import Drift

HEADERS = ["pool", "metric", "measured", "predicted", "band", "in band", "bound", "holds", "margin %", "factor"]


def _f(v: float | None, nd: int = 1) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


def _yes(v: bool | None) -> str:
    return "-" if v is None else "yes" if v else "NO"


def drift_rows(d: Drift) -> list[list[str]]:
    rows = []
    for p in d.pools:
        name = f"{p.pool}: {p.service} {p.role} {p.hardware}"
        for x in p.latencies:
            band = f"{_f(x.band_low_ms)}-{_f(x.band_high_ms)} (±{x.band_pct:g}%)"
            rows.append([name, x.metric, _f(x.measured_ms), _f(x.predicted_ms), band, _yes(x.inside_band),
                         _f(x.bound_ms, 0), _yes(x.holds), _f(x.margin_pct), f"{p.factor:g}"])
    return rows


def drift_lines(d: Drift) -> list[str]:
    """The section's findings, one line each: violated bounds, dilations, changes."""
    out = [f"running plan {d.current} measured by {', '.join(d.measured)}: every measured latency "
           f"within its bound: {'yes' if d.bounds_hold else 'NO'}"]
    for p in d.pools:
        broken = ", ".join(p.violated) or "none"
        out.append(f"pool {p.pool} ({p.service} {p.role} on {p.hardware}): bounds broken: {broken}; outside "
                   f"the band: {', '.join(p.outside_band) or 'none'}; re-planned at {p.factor:g} x the "
                   "predicted time" if p.factor != 1 else
                   f"pool {p.pool} ({p.service} {p.role} on {p.hardware}): bounds broken: {broken}; "
                   "inside the band: re-planned as predicted")
    for c in d.changes:
        if (c.devices_before, c.instances_before) != (c.devices_after, c.instances_after):
            out.append(f"re-plan: {c.service} {c.role} on {c.hardware}: {c.devices_before} -> {c.devices_after} "
                       f"devices ({c.instances_before} -> {c.instances_after} instances)")
    out.append(f"method: {d.method}")
    return out


def drift_markdown(d: Drift, md_table) -> list[str]:
    return ["## Drift", "", *[f"- {x}" for x in drift_lines(d)], "", md_table(HEADERS, drift_rows(d)), ""]


def drift_html(d: Drift) -> str:
    rows = []
    for r in drift_rows(d):
        r = list(r)
        r[7] = badge("holds", "ok") if r[7] == "yes" else badge("broken", "bad") if r[7] == "NO" else r[7]
        rows.append(r)
    return bullets(drift_lines(d)[:-1]) + table(HEADERS, rows, "", "llrrlllrrr") + para(d.method, "note")

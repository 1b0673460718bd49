"""Renderings of a plan document: table (terminal), markdown, json, yaml, html (solver/report/
html.py). Formatting only."""

from __future__ import annotations

import json

import yaml

from solver.report.breakdown import (
    POWER_NOTE,
    POWER_NOTE_LONG,
    SITE_HEADERS,
    components_text,
    cost_breakdown,
    cost_components,
    fleet_lines,
    parallel_text,
    site_rows,
)
from solver.report.decision_views import decision_paragraph, headroom_line, record_lines
from solver.report.drift_views import drift_lines, drift_markdown
from solver.report.periods_views import (
    COMMITTED_HEADERS,
    PERIOD_HEADERS,
    committed_rows,
    period_rows,
    periods_markdown,
    summary_line,
)
from solver.report.runbook import markdown_lines as runbook_markdown
from solver.report.text import table
from solver.schema.result import PlanResult, ServiceResult


def to_json(doc: PlanResult) -> str:
    return json.dumps(doc.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"


def to_yaml(doc: PlanResult) -> str:
    return yaml.safe_dump(doc.model_dump(mode="json"), sort_keys=False, width=100)


def _vs(pred: float | None, bound: float | None) -> str:
    if pred is None:
        return "-"
    if bound is None:
        return f"{pred:.0f}"
    return f"{pred:.0f}/{bound:g}"


def _pool_rows(s: ServiceResult, sites: bool = False) -> list[list[object]]:
    rows = []
    for p in s.pools:
        rows.append([p.site] * sites + [
            p.role, p.hardware, parallel_text(p), p.batch, p.instances, p.devices,
            round(p.capacity_qps, 1), round(p.cost_per_hour, 2),
            _vs(p.predicted.ttft_ms, s.slo.ttft_p50_ms), _vs(p.predicted.ttft_p99_ms, s.slo.ttft_p99_ms),
            _vs(p.predicted.tpot_ms, s.slo.tpot_p50_ms), _vs(p.predicted.tpot_p99_ms, s.slo.tpot_p99_ms),
            round(p.predicted.memory_gib_per_device, 1),
        ])
    return rows


POOL_HEADERS = ["role", "hardware", "parallel", "batch", "inst", "devices", "QPS", "$/h",
                "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "GiB/dev"]
POOL_ALIGN = "lllrrrrrrrrrr"


def _pool_table(s: ServiceResult, sites: bool) -> tuple[list[str], list[list[object]], str]:
    return (["site"] * sites + POOL_HEADERS, _pool_rows(s, sites), "l" * sites + POOL_ALIGN)


def _fleet_lines(s: ServiceResult) -> list[str]:
    """Sites, KV routes across hardware types and failure margins of one service."""
    return [f"  {x}" for x in fleet_lines(s)]


def _hetero_lines(doc: PlanResult) -> list[str]:
    h = doc.heterogeneity
    if h is None:
        return []
    if h.homogeneous_status == "infeasible":
        return ["heterogeneous plan: no homogeneous plan (prefill and decode on one type) exists: "
                + "; ".join(h.infeasible_because)]
    ratios = {x.name: x.prefill_decode_ratio for x in h.homogeneous_services}
    moved = "; ".join(
        f"'{s.name}' prefill:decode {ratios.get(s.name) or '-'} -> {s.prefill_decode_ratio or '-'}"
        for s in doc.services if s.kv_routes)
    exact = ("both proven optimal" if h.exact else
             "not both proven optimal: compares the best plans found, not exact")
    if h.throughput_gain_pct is not None:
        head = (f"heterogeneous plan: {h.throughput_gain_pct:+.2f}% throughput against the best "
                f"homogeneous plan ({h.homogeneous_throughput_scale:g} x the mix, {exact})")
    else:
        head = (f"heterogeneous plan: saves ${h.saving_per_hour:,.2f}/h ({h.saving_pct:.2f}%) against "
                f"the best homogeneous plan (${h.homogeneous_cost_per_hour:,.2f}/h, {exact})")
    return [head + (f"; {moved}" if moved else "")]




def _transition_lines(doc: PlanResult) -> list[str]:
    t = doc.transition
    if t is None:
        return []
    payback = "never (no saving)" if t.payback_hours is None else f"{t.payback_hours:,.1f} h"
    return [
        f"transition: {t.recommendation.upper()}: {t.reason}",
        f"  current ${t.current_cost_per_hour:,.2f}/h -> plan ${t.plan_cost_per_hour:,.2f}/h: saves "
        f"${t.saving_per_hour:,.2f}/h, ${t.saving_over_horizon_usd:,.0f} over {t.horizon_hours:g} h",
        f"  switching ${t.switching_cost_usd:,.0f}: {t.devices_moved} devices moved "
        f"(${t.moved_cost_usd:,.0f}), {t.instances_resharded} instances re-sharded "
        f"(${t.resharded_cost_usd:,.0f}), {t.drained_device_hours:g} device-hours drained "
        f"(${t.drained_cost_usd:,.0f}); payback {payback}",
    ] + [f"  current deployment: {x}" for x in t.current_problems]


def headline(doc: PlanResult) -> str:
    if doc.status == "infeasible":
        return f"{doc.problem}: INFEASIBLE"
    types = ", ".join(f"{n} x {k}" for k, n in doc.devices_by_type.items())
    obj = (
        f"serves {doc.throughput_scale:g} x the demand mix"
        if doc.objective and doc.objective.kind == "max_throughput"
        else "lowest cost meeting every SLO"
    )
    return (
        f"{doc.problem}: {doc.status}, {obj}: ${doc.cost_per_hour:,.2f}/hour, "
        f"{doc.total_devices} devices ({types}), {doc.power_kw:,.1f} kW ({POWER_NOTE})"
    )


def _service_line(s: ServiceResult) -> str:
    ratio = f", prefill:decode devices {s.prefill_decode_ratio:g}" if s.prefill_decode_ratio else ""
    model = f"{s.model}, routing {s.routing}" if s.routing else s.model
    return (
        f"service '{s.name}' ({model}): {s.runtime}{ratio}; demand {s.demand_qps:g} QPS, "
        f"capacity {s.capacity_qps:.1f} QPS; {s.devices} devices, ${s.cost_per_hour:,.2f}/h"
    )


def _solver_line(doc: PlanResult) -> str:
    sv = doc.solver
    pr = sv.pruned
    wall = f"{sv.wall_s:.2f} s" if sv.wall_s is not None else "-"
    return (
        f"solver: {sv.candidates_evaluated:,} candidates evaluated; pruned {pr.invalid:,} invalid, "
        f"{pr.topology:,} topology, {pr.memory:,} memory, {pr.slo:,} SLO, {pr.dominated:,} dominated; "
        f"{sv.candidates_in_model} in the CP-SAT model; gap {sv.gap:.2%}; {wall}"
    )


def _tables_dated(a) -> str:
    """When the oldest table the plan rests on was measured (at the latest: the release of its
    source package when it carries no collection date)."""
    dated = [(p.collected_on or p.source_released_on, p.collected_on is None) for p in a.profiles]
    known = [d for d in dated if d[0]]
    if not known:
        return ""
    day, by_release = min(known)
    return (f" (oldest collected no later than {day}, the release of its source package)" if by_release
            else f" (oldest collected {day})")


def _assumption_lines(doc: PlanResult) -> list[str]:
    a = doc.assumptions
    if a is None:
        return []
    ver = f" {a.engine_version}" if a.engine_version else ""
    cal = (f"calibrated on {a.calibration.fitted_on.split(':')[0]} ({a.calibration.fitted_at}; "
           f"median error TTFT {a.calibration.ttft_median_abs_pct:g}%, TPOT "
           f"{a.calibration.tpot_median_abs_pct:g}%)" if a.calibration else "uncalibrated")
    hw = sorted({p.hardware for p in a.profiles})
    lines = [f"engine: {a.engine}{ver}, {cal}; measured operator tables for "
             f"{', '.join(hw) or 'no hardware'}{_tables_dated(a)}"
             + (f"; roofline only for {', '.join(a.hardware_without_profiles)}" if a.hardware_without_profiles else "")]
    stale = sorted({f"{p.hardware}/{p.framework}" for p in a.profiles if p.stale})
    differs = sorted({f"{p.hardware}/{p.framework} {p.framework_version}" for p in a.profiles if p.stack_differs})
    if stale:
        lines.append(f"re-measure: tables older than {a.remeasure_after_days} days or of unknown date: {', '.join(stale)}")
    if differs:
        lines.append(f"stack differs from the declared {a.engine}{ver}: {', '.join(differs)}")
    return lines


def to_table(doc: PlanResult) -> str:
    out = [headline(doc)]
    if doc.status == "infeasible":
        out.append("")
        out += [f"  - {r}" for r in doc.infeasible_because]
        out += ["", _solver_line(doc)]
        return "\n".join(out) + "\n"
    sites = doc.sites is not None
    for s in doc.services:
        out += ["", _service_line(s), *_fleet_lines(s), table(*_pool_table(s, sites))]
    if sites:
        out += ["", table(SITE_HEADERS, site_rows(doc), "lrlrrr")]
    fleet = _hetero_lines(doc) + _transition_lines(doc) + (
        [f"drift: {x}" for x in drift_lines(doc.drift)[:-1]] if doc.drift is not None else [])
    if doc.periods is not None:
        pr = doc.periods
        fleet += [summary_line(pr), table(COMMITTED_HEADERS, committed_rows(pr))] * bool(pr.committed)
        fleet += [table(PERIOD_HEADERS, period_rows(pr))]
    out += [""] + fleet * bool(fleet) + [""] * bool(fleet)
    headroom = headroom_line(doc.traffic_headroom_multiple, doc.traffic_headroom_service)
    out += ["latencies in ms: predicted / SLO bound (bound applies with the safety margin)",
            components_text(doc), *[headroom] * bool(headroom), *_assumption_lines(doc), _solver_line(doc)]
    if doc.decision is not None:
        for title, lines in record_lines(doc.decision):
            out += ["", f"{title}:", *[f"  - {x}" for x in lines]]
    return "\n".join(out) + "\n"


def _md_cell(v: object) -> str:
    return "-" if v is None else " ".join(str(v).split()).replace("|", "\\|")


def _md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _md_cost(doc: PlanResult) -> list[str]:
    cb = cost_breakdown(doc)
    rows: list[list[object]] = [
        [r.service, *[f"{r.by_type[t]:,.2f}" if r.devices_by_type[t] else "-" for t in cb.types],
         r.devices, f"{r.cost_per_hour:,.2f}"] for r in cb.rows]
    rows.append(["**total**", *[f"{cb.type_cost[t]:,.2f}" for t in cb.types], cb.devices,
                 f"{cb.cost_per_hour:,.2f}"])
    total = cb.cost_per_hour or 1.0
    types = [[t, cb.type_devices[t], f"{cb.type_cost[t]:,.2f}", f"{cb.type_cost[t] / total:.1%}",
              f"{cb.type_power_kw[t]:,.1f}"] for t in cb.types]
    parts = [[k, f"{v:,.2f}", f"{v / total:.1%}"] for k, v in cost_components(doc)]
    return ["## Cost breakdown", "", "USD per hour by service and device type:", "",
            _md_table(["service", *cb.types, "devices", "total"], rows), "",
            _md_table(["device type", "devices", "$/hour", "share", "device TDP kW"], types), "",
            f"Power: {POWER_NOTE_LONG}.", "",
            "USD per hour by component:", "", _md_table(["component", "$/hour", "share"], parts), ""]


def _md_text(text: str) -> str:
    """Plain markdown: a '<' from a name is escaped so that no viewer reads it as HTML."""
    return text.replace("<", "\\<")


def to_markdown(doc: PlanResult) -> str:
    out = [f"# Fleet plan: {doc.problem}", "", f"**{headline(doc)}**", "",
           "## Decision", "", decision_paragraph(doc), ""]
    if doc.status == "infeasible":
        out += ["## Why no plan exists", ""] + [f"- {r}" for r in doc.infeasible_because] + [""]
    else:
        out += ["## Pools", ""]
        sites = doc.sites is not None
        for s in doc.services:
            headers, rows, _ = _pool_table(s, sites)
            extra = [x.strip() for x in _fleet_lines(s)]
            out += [f"### Service '{s.name}'", "", _service_line(s), ""]
            out += [f"- {x}" for x in extra] + [""] * bool(extra)
            out += [_md_table(headers, rows), ""]
        out += ["Latencies in ms: predicted / SLO bound (bound applies with the safety margin).", ""]
        headroom = headroom_line(doc.traffic_headroom_multiple, doc.traffic_headroom_service)
        out += [f"{headroom[0].upper()}{headroom[1:]}.", ""] if headroom else []
        if sites:
            out += ["## Sites", "", _md_table(SITE_HEADERS, site_rows(doc)), ""]
        if doc.heterogeneity is not None:
            out += ["## Heterogeneous vs homogeneous", "", *[f"- {x}" for x in _hetero_lines(doc)], ""]
        if doc.transition is not None:
            out += ["## Transition", "", *[f"- {x.strip()}" for x in _transition_lines(doc)], ""]
        if doc.periods is not None:
            out += periods_markdown(doc.periods, _md_table)
        if doc.drift is not None:
            out += drift_markdown(doc.drift, _md_table)
        out += _md_cost(doc)
        out += runbook_markdown(doc)
    out += ["## Assumptions", "", *[f"- {x}" for x in _assumption_lines(doc)], ""]
    if doc.decision is not None:
        for title, lines in record_lines(doc.decision):
            out += [f"## {title[0].upper()}{title[1:]}", "", *[f"- {x}" for x in lines or ["none"]], ""]
    out += ["## Solver", "", _solver_line(doc), ""]
    return _md_text("\n".join(out))


def _html(doc: PlanResult) -> str:
    from solver.report.html import to_html  # matplotlib is imported only when drawing

    return to_html(doc)


RENDERERS = {"table": to_table, "json": to_json, "yaml": to_yaml, "markdown": to_markdown,
             "html": _html}
"""Format name -> renderer of a plan document. `html` here renders without the frontier
section; `fleetplan plan --format html` adds it (`solver/questions/report_frontier.py`)."""

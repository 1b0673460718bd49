"""The plan as one self-contained HTML report (`fleetplan plan --format html`).

One file: inline CSS, plots embedded as base64 PNG data URIs, no script, no external resource;
it prints cleanly. Every string that can come from a problem file (problem, service, model and
hardware names) is escaped where it is written.

Formatting only: everything comes from the plan document and, for the frontier section, the
`FrontierSection` the caller computed (`solver/questions/report_frontier.py`: a small
cost-vs-traffic frontier of the same problem).
"""

from __future__ import annotations

import base64
import html
from typing import Iterable, Sequence

from solver.report import plots
from solver.report.breakdown import (
    CostBreakdown,
    LatencyRow,
    cost_breakdown,
    latency_rows,
    parallel_text,
)
from solver.report.decision_views import decision_paragraph, uncertainty_lines
from solver.report.question_views import mix_text
from solver.schema.decision import DecisionRecord, Interval
from solver.schema.questions import FrontierSection
from solver.schema.result import PlanResult, Pool

FLAG = "--format html"


# ---- markup helpers ----------------------------------------------------------------------------


class Raw(str):
    """Markup made here (never user text): written as is."""


def esc(v: object) -> str:
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return html.escape(str(v), quote=True)


def _num(v: float | int | None, fmt: str = ",.2f") -> str:
    return "-" if v is None else format(v, fmt)


def _money(v: float | None) -> str:
    return "-" if v is None else f"${v:,.2f}/h"


def _badge(text: str, kind: str) -> Raw:
    return Raw(f'<span class="badge {kind}">{esc(text)}</span>')


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "",
           num: str = "") -> str:
    """`num`: one character per column, 'r' for a right-aligned (numeric) column."""
    def align(i: int) -> str:
        return ' class="num"' if i < len(num) and num[i] == "r" else ""
    head = "".join(f"<th{align(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "\n".join("<tr>" + "".join(f"<td{align(i)}>{esc(v)}</td>" for i, v in enumerate(r))
                     + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'


def _img(png: bytes, alt: str, cls: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="{cls}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}">\n<h2>{esc(title)}</h2>\n{body}\n</section>'


def _p(text: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<p{c}>{esc(text)}</p>"


def _ul(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"


# ---- sections ----------------------------------------------------------------------------------


def _vs(pred: float | None, bound: float | None) -> str:
    if pred is None:
        return "-"
    return f"{pred:,.0f}" if bound is None else f"{pred:,.0f} / {bound:,g}"


POOL_HEADERS = ["service", "role", "hardware", "parallel", "batch", "instances", "devices",
                "capacity QPS", "$/hour", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                "GiB/device", "precision"]


def _pools(doc: PlanResult) -> str:
    services = _table(
        ["service", "model", "runtime", "demand QPS", "capacity QPS", "colocated QPS",
         "disaggregated QPS", "prefill:decode devices", "devices", "$/hour", "SLO TTFT p50/p99 ms",
         "SLO TPOT p50/p99 ms"],
        [[s.name, s.model + (f" (routing {s.routing})" if s.routing else ""), s.runtime,
          _num(s.demand_qps, ",.4g"), _num(s.capacity_qps, ",.1f"), _num(s.colocated_qps, ",.1f"),
          _num(s.disaggregated_qps, ",.1f"), _num(s.prefill_decode_ratio, ".4g"), s.devices,
          _num(s.cost_per_hour), f"{_num(s.slo.ttft_p50_ms, 'g')} / {_num(s.slo.ttft_p99_ms, 'g')}",
          f"{_num(s.slo.tpot_p50_ms, 'g')} / {_num(s.slo.tpot_p99_ms, 'g')}"]
         for s in doc.services],
        "services", "lllrrrrrrrll")
    rows = []
    for s in doc.services:
        for p in s.pools:
            rows.append([s.name, p.role, p.hardware, parallel_text(p), p.batch, p.instances, p.devices,
                         _num(p.capacity_qps, ",.1f"), _num(p.cost_per_hour),
                         _vs(p.predicted.ttft_ms, s.slo.ttft_p50_ms),
                         _vs(p.predicted.ttft_p99_ms, s.slo.ttft_p99_ms),
                         _vs(p.predicted.tpot_ms, s.slo.tpot_p50_ms),
                         _vs(p.predicted.tpot_p99_ms, s.slo.tpot_p99_ms),
                         _num(p.predicted.memory_gib_per_device, ".1f"), p.precision])
    pools = _table(POOL_HEADERS, rows, "pools", "llllrrrrrrrrrrl")
    return (f"<h3>Services</h3>\n{services}\n<h3>Pools</h3>\n{pools}\n"
            + _p("Latencies in ms: predicted / SLO bound (the plan meets each bound with the "
                 "problem's safety margin).", "note"))


def _verdict(r: LatencyRow) -> Raw:
    if not r.holds:
        return _badge("over the bound", "bad")
    if r.holds_at_edge is None:
        return _badge("holds (no band)", "ok")
    return _badge("holds at the edge", "ok") if r.holds_at_edge else _badge("central only", "warn")


def _latency(doc: PlanResult) -> str:
    rows = latency_rows(doc)
    if not rows:
        return _p("No pool has a latency bound to plot (the services set no TTFT or TPOT SLO).", "note")
    out = [_img(plots.png_bytes(plots.latency_figure(rows)), "latency vs SLO per pool", "plot")]
    out.append(_table(
        ["pool", "metric", "predicted ms", "error band", "band's upper edge ms", "bound ms",
         "margin", "verdict"],
        [[r.pool, r.metric, _num(r.predicted_ms, ",.0f"),
          "-" if r.band_pct is None else f"+-{r.band_pct:g}%",
          _num(r.upper_edge_ms, ",.0f"), f"{r.bound_ms:,g}", f"{r.margin_pct:.1f}%", _verdict(r)]
         for r in rows],
        "latency", "llrrrrrl"))
    if doc.decision is not None:
        out.append("<h3>Error bands</h3>")
        out.append(_ul(f"{b.service} {b.role} on {b.hardware}: TTFT +-{b.band_ttft_pct:g}%, "
                       f"TPOT +-{b.band_tpot_pct:g}% ({b.band_source})"
                       for b in doc.decision.uncertainty.pools))
        out.append(_p(uncertainty_lines(doc.decision)[-1], "note"))
    else:
        out.append(_p("No error band: the plan carries no decision record (plan --no-record).", "note"))
    return "\n".join(out)


def _cost(cb: CostBreakdown) -> str:
    out = [_img(plots.png_bytes(plots.cost_figure(cb)), "cost by service and device type", "plot")]
    rows: list[list[object]] = [
        [r.service, *[_num(r.by_type[t]) if r.devices_by_type[t] else "-" for t in cb.types],
         r.devices, _num(r.cost_per_hour)] for r in cb.rows]
    rows.append([Raw("<strong>total</strong>"), *[_num(cb.type_cost[t]) for t in cb.types],
                 cb.devices, _num(cb.cost_per_hour)])
    out.append("<h3>By service ($/hour)</h3>")
    out.append(_table(["service", *cb.types, "devices", "total $/hour"], rows, "cost-services",
                      "l" + "r" * (len(cb.types) + 2)))
    out.append("<h3>By device type</h3>")
    total = cb.cost_per_hour or 1.0
    out.append(_table(
        ["device type", "devices", "$/device-hour", "$/hour", "share", "power kW"],
        [[t, cb.type_devices[t], _num(cb.type_cost[t] / cb.type_devices[t]) if cb.type_devices[t] else "-",
          _num(cb.type_cost[t]), f"{cb.type_cost[t] / total:.1%}", _num(cb.type_power_kw[t], ",.1f")]
         for t in cb.types],
        "cost-types", "lrrrrr"))
    return "\n".join(out)


def _plan_point(doc: PlanResult) -> tuple[float, float] | None:
    if doc.status == "infeasible":
        return None
    return (sum(s.demand_qps for s in doc.services), doc.cost_per_hour)


def _frontier(doc: PlanResult, fs: FrontierSection | None) -> str:
    if fs is None:
        return _p("Not computed (the report was rendered without its frontier).", "note")
    fr = fs.result
    if fr is None or not any(p.cost_per_hour is not None for p in fr.points):
        return _p(f"No frontier: {fs.note}.", "note")
    fig = plots.frontier_figure(fr, _plan_point(doc), dpi=plots.DPI)
    out = [_img(plots.png_bytes(fig), "cost vs served traffic", "plot"), _p(f"Frontier: {fs.note}.", "note")]
    out.append(_table(
        ["traffic (x demand mix)", "QPS", "$/hour", "devices", "devices by type", "status", "Pareto"],
        [[f"{p.traffic_scale:g}", _num(p.traffic_qps, ",.6g"), _num(p.cost_per_hour), p.total_devices,
          mix_text(p.devices_by_type), p.status + (f" (gap {p.gap:.2%})" if p.gap else ""), p.pareto]
         for p in fr.points],
        "frontier", "rrrrlll"))
    lim = fr.limit
    if lim is None:
        out.append(_p("Nothing in the problem bounds traffic (no budget, no power cap, a type "
                      "without a supply): the sweep stops at the problem's demand.", "note"))
    elif lim.max_traffic_qps is not None:
        why = "; ".join(lim.beyond.infeasible_because) if lim.beyond is not None else ""
        out.append(_p(f"The limits ({'; '.join(lim.limited_by)}) allow at most "
                      f"{lim.max_traffic_scale:g} x the demand mix ({lim.max_traffic_qps:,.6g} QPS)"
                      + (f"; one step more is infeasible: {why}" if why else "") + "."))
    sv = fr.solver
    wall = f", {sv.wall_s:.2f} s" if sv.wall_s is not None else ""
    out.append(_p(f"{sv.solves} plans, each verified{wall}.", "note"))
    return "\n".join(out)


def _pool_brief(pools: Sequence[Pool]) -> list[list[object]]:
    return [[p.role, p.hardware, parallel_text(p), p.batch, p.instances, p.devices,
             _num(p.capacity_qps, ",.1f"), _num(p.cost_per_hour)] for p in pools]


def _alternatives(r: DecisionRecord) -> str:
    out = ["<h3>Runners-up</h3>"]
    if r.runners_up:
        rows = []
        for a in r.runners_up:
            delta = (f"{a.delta_throughput_pct:+.1f}% throughput" if a.delta_throughput_pct is not None
                     else f"{a.delta_cost_pct:+.1f}%" if a.delta_cost_pct is not None else "-")
            rows.append([a.kind, a.excluded, a.status, _money(a.cost_per_hour), delta,
                         mix_text(a.devices_by_type), a.summary])
        out.append(_table(["kind", "excluded", "status", "cost", "vs the plan", "devices", "pools"],
                          rows, "runners-up", "lllrrll"))
        out.append(_p("Each runner-up is the best plan once one part of the plan's structure is "
                      "excluded (its device type, its runtime, or its exact pool configurations), "
                      "re-solved.", "note"))
    else:
        out.append(_p("None found.", "note"))
    out.append("<h3>Fallback</h3>")
    f = r.fallback
    if f is None:
        out.append(_p("None (the problem has no plan).", "note"))
    elif f.status == "infeasible":
        out.append(_p(f"{f.hardware} only ({f.why}), one configuration per role, safety margin "
                      f"{f.safety_margin:.0%}: infeasible."))
        out.append(_ul(f.infeasible_because))
    else:
        out.append(_p(f"{f.hardware} only ({f.why}), one configuration per service and role, "
                      f"planned with a safety margin of {f.safety_margin:.0%} so that every SLO "
                      f"bound holds at the error band's upper edge: {mix_text(f.devices_by_type)}, "
                      f"{_money(f.cost_per_hour)} ({f.delta_cost_pct:+.1f}% vs the plan), {f.status}."))
        out.append(_table(["role", "hardware", "parallel", "batch", "instances", "devices",
                           "capacity QPS", "$/hour"], _pool_brief(f.pools), "fallback", "lllrrrrr"))
    return "\n".join(out)


def _assumptions(doc: PlanResult) -> str:
    a = doc.assumptions
    if a is None:
        return _p("Not recorded.", "note")
    items = [f"engine: {a.engine}" + (f" {a.engine_version}" if a.engine_version else " (version not declared)")]
    if a.calibration is not None:
        c = a.calibration
        items.append(f"calibration: {c.engine}, fitted {c.fitted_at} on {c.fitted_on}; median "
                     f"absolute error TTFT {c.ttft_median_abs_pct:g}%, TPOT {c.tpot_median_abs_pct:g}% "
                     f"(source sha256 {c.source_sha256[:12]})")
    else:
        items.append("calibration: none (uncalibrated engine parameters)")
    if a.hardware_without_profiles:
        items.append("roofline only (no measured tables): " + ", ".join(a.hardware_without_profiles))
    items.append(f"measured tables are flagged stale after {a.remeasure_after_days} days or when "
                 "their date is unknown")
    out = [_ul(items)]
    if a.profiles:
        out.append("<h3>Measured operator tables</h3>")
        out.append(_table(
            ["hardware", "family", "framework", "version", "collected on", "age (days)", "stale",
             "stack differs", "content sha256", "source"],
            [[p.hardware, p.family, p.framework, p.framework_version, p.collected_on or "unknown",
              p.age_days, _badge("stale", "warn") if p.stale else "no",
              _badge("differs", "warn") if p.stack_differs else "no", p.content_sha256[:12], p.source]
             for p in a.profiles],
            "profiles", "lllllrllll"))
    return "\n".join(out)


def _interval_value(i: Interval, v: float, at_limit: bool) -> str:
    s = f"x{v:.4g}" if i.unit == "x" else f"${v:,.2f}"
    return s + (" (search limit)" if at_limit else "")


def _validity(r: DecisionRecord) -> str:
    v = r.validity
    if v is None:
        return _p("Not computed (the problem has no plan).", "note")
    out = []
    intervals = ([v.demand] if v.demand is not None else []) + list(v.prices)
    if intervals:
        out.append(_table(
            ["quantity", "low", "now", "high", "below low the plan becomes", "above high"],
            [[i.quantity, _interval_value(i, i.low, i.low_is_search_limit),
              _interval_value(i, i.current, False), _interval_value(i, i.high, i.high_is_search_limit),
              i.below, i.above] for i in intervals],
            "validity", "lrrrll"))
        out.append(_p(f"Within each interval, keeping the plan's configurations costs at most 2% "
                      f"more than re-planning ({v.solves} solves).", "note"))
    out.append("<h3>Re-measure</h3>")
    if v.remeasure:
        out.append(_table(["what", "by", "why"], [[m.what, m.by, m.why] for m in v.remeasure],
                          "remeasure", "lll"))
    else:
        out.append(_p("Nothing is due.", "note"))
    return "\n".join(out)


def _solver(doc: PlanResult) -> str:
    sv = doc.solver
    pr = sv.pruned
    items = [f"{sv.candidates_evaluated:,} candidates evaluated; pruned {pr.invalid:,} invalid, "
             f"{pr.topology:,} topology, {pr.memory:,} memory, {pr.slo:,} SLO, {pr.dominated:,} "
             f"dominated; {sv.candidates_in_model} in the CP-SAT model",
             f"gap {sv.gap:.2%}; seed {sv.seed}, {sv.workers} worker(s), time limit {sv.time_limit_s:g} s"
             + (f"; {sv.wall_s:.2f} s" if sv.wall_s is not None else ""),
             f"fleetplan {sv.version}"]
    if doc.decision is not None:
        items.append(f"input sha256 {doc.decision.input_sha256}")
    out = [_ul(items)]
    if sv.stages:
        out.append(_table(["stage", "status", "value"],
                          [[s.name, s.status, f"{s.value:g}"] for s in sv.stages], "stages", "llr"))
    return "\n".join(out)


CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --rule:#d9dee7; --band:#f4f6fa; --accent:#2456a6; }
* { box-sizing: border-box; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
header h1 { font-size: 24px; margin: 0 0 4px; }
header .sub { color: var(--muted); margin: 0; }
nav { margin: 14px 0 6px; font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 14px; }
h2 { font-size: 18px; border-bottom: 2px solid var(--rule); padding-bottom: 4px; margin: 30px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.decision { font-size: 15px; background: var(--band); border-left: 4px solid var(--accent);
             padding: 12px 16px; margin: 8px 0; }
p.note { color: var(--muted); font-size: 12.5px; }
.figures { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 10px 0; }
.figures div { min-width: 120px; }
.figures .v { font-size: 20px; font-weight: 600; }
.figures .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--rule); padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfd; }
img.plot { max-width: 100%; height: auto; display: block; margin: 8px 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11.5px; white-space: nowrap; }
.badge.ok { background: #e3f4e6; color: #1d6b2c; }
.badge.warn { background: #fff1dc; color: #8a4b00; }
.badge.bad { background: #fde4e4; color: #9b1c1c; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--rule); padding-top: 8px; }
@page { margin: 14mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav { display: none; }
  section { break-inside: auto; }
  h2, h3 { break-after: avoid; }
  tr, img { break-inside: avoid; }
  p.decision { border-left-color: #000; }
}
"""


def _figures(doc: PlanResult) -> str:
    vals = [(_money(doc.cost_per_hour), "cost"), (f"{doc.total_devices}", "devices"),
            (f"{doc.power_kw:,.1f} kW", "power"), (doc.status, "status")]
    if doc.throughput_scale is not None and doc.objective and doc.objective.kind == "max_throughput":
        vals.insert(0, (f"{doc.throughput_scale:g} x", "the demand mix served"))
    return ('<div class="figures">' + "".join(
        f'<div><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>' for v, k in vals)
        + "</div>")


def to_html(doc: PlanResult, frontier: FrontierSection | None = None) -> str:
    """The report. `frontier`: from `solver/questions/report_frontier.py` (None: the section says it was not run)."""
    plots.require_matplotlib(FLAG)
    feasible = doc.status != "infeasible"
    sections: list[tuple[str, str, str]] = []
    decision = _p(decision_paragraph(doc), "decision")
    if feasible:
        decision = _figures(doc) + "\n" + decision
    sections.append(("decision", "Decision", decision))
    if not feasible:
        sections.append(("why", "Why no plan exists", _ul(doc.infeasible_because or ["no reason recorded"])))
    else:
        sections.append(("pools", "Pools", _pools(doc)))
        sections.append(("latency", "Latency vs SLO", _latency(doc)))
        sections.append(("cost", "Cost breakdown", _cost(cost_breakdown(doc))))
        sections.append(("frontier", "Frontier: cost vs served traffic", _frontier(doc, frontier)))
    r = doc.decision
    if r is not None and (feasible or r.runners_up):
        sections.append(("alternatives", "Runners-up and fallback", _alternatives(r)))
    elif feasible:
        sections.append(("alternatives", "Runners-up and fallback",
                         _p("Not computed: the plan carries no decision record (plan --no-record).", "note")))
    sections.append(("assumptions", "Assumptions", _assumptions(doc)))
    if r is not None and r.validity is not None:
        sections.append(("validity", "Validity and re-measurement", _validity(r)))
    elif feasible:
        sections.append(("validity", "Validity and re-measurement",
                         _p("Not computed: the plan carries no decision record (plan --no-record).", "note")))
    sections.append(("solver", "Solver", _solver(doc)))
    nav = "<nav>" + "".join(f'<a href="#{sid}">{esc(title)}</a>' for sid, title, _ in sections) + "</nav>"
    obj = doc.objective.kind if doc.objective else "no objective"
    title = f"Fleet plan: {doc.problem}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<header><h1>{esc(title)}</h1>"
        f'<p class="sub">{esc(doc.status)}, {esc(obj)}; fleetplan {esc(doc.solver.version)}</p></header>',
        nav,
        *[_section(sid, t, body) for sid, t, body in sections],
        "<footer>Generated by fleetplan. Every number comes from the verified plan document"
        + ("; the frontier's plans were solved for this report" if frontier and frontier.result else "")
        + ".</footer>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"

"""The sections of the HTML report (solver/report/html.py): pools, latency against the SLO,
cost, the frontier, runners-up and fallback, assumptions, validity and the solver. Each renders
its part of the plan document (and the frontier section the caller computed) as markup."""

from __future__ import annotations

from typing import Sequence

from solver.report import plots
from solver.report.breakdown import (
    POWER_NOTE_LONG,
    SITE_HEADERS,
    CostBreakdown,
    LatencyRow,
    fleet_lines,
    latency_rows,
    parallel_text,
    site_rows,
)
from solver.report.decision_views import uncertainty_lines
from solver.report.html_markup import Raw, badge, bullets, img, money, num_text, para, table
from solver.report.question_views import mix_text
from solver.schema.decision import DecisionRecord, Interval
from solver.schema.pool import parallel_words
from solver.schema.questions import FrontierSection
from solver.schema.result import PlanResult, Pool, ProfileUse


def _vs(pred: float | None, bound: float | None) -> str:
    if pred is None:
        return "-"
    return f"{pred:,.0f}" if bound is None else f"{pred:,.0f} / {bound:,g}"


POOL_HEADERS = ["service", "role", "hardware", "parallel", "batch", "instances", "devices",
                "capacity QPS", "$/hour", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                "GiB/device", "precision"]


def pools_section(doc: PlanResult) -> str:
    services = table(
        ["service", "model", "runtime", "demand QPS", "capacity QPS", "colocated QPS",
         "disaggregated QPS", "prefill:decode devices", "devices", "$/hour", "SLO TTFT p50/p99 ms",
         "SLO TPOT p50/p99 ms"],
        [[s.name, s.model + (f" (routing {s.routing})" if s.routing else ""), s.runtime,
          num_text(s.demand_qps, ",.4g"), num_text(s.capacity_qps, ",.1f"), num_text(s.colocated_qps, ",.1f"),
          num_text(s.disaggregated_qps, ",.1f"), num_text(s.prefill_decode_ratio, ".4g"), s.devices,
          num_text(s.cost_per_hour), f"{num_text(s.slo.ttft_p50_ms, 'g')} / {num_text(s.slo.ttft_p99_ms, 'g')}",
          f"{num_text(s.slo.tpot_p50_ms, 'g')} / {num_text(s.slo.tpot_p99_ms, 'g')}"]
         for s in doc.services],
        "services", "lllrrrrrrrll")
    sites = doc.sites is not None
    rows = []
    for s in doc.services:
        for p in s.pools:
            hw = p.hardware + (f" at {p.power_cap_w:g} W" if p.power_cap_w is not None else "")
            rows.append([s.name] + [p.site] * sites + [p.role, hw, parallel_text(p), p.batch, p.instances, p.devices,
                         num_text(p.capacity_qps, ",.1f"), num_text(p.cost_per_hour),
                         _vs(p.predicted.ttft_ms, s.slo.ttft_p50_ms),
                         _vs(p.predicted.ttft_p99_ms, s.slo.ttft_p99_ms),
                         _vs(p.predicted.tpot_ms, s.slo.tpot_p50_ms),
                         _vs(p.predicted.tpot_p99_ms, s.slo.tpot_p99_ms),
                         num_text(p.predicted.memory_gib_per_device, ".1f"),
                         p.precision + (f" / {p.kv_precision} KV" if p.kv_precision else "")])
    pools = table(POOL_HEADERS[:1] + ["site"] * sites + POOL_HEADERS[1:], rows, "pools",
                  "l" + "l" * sites + "lllrrrrrrrrrrl")
    out = [f"<h3>Services</h3>\n{services}", f"<h3>Pools</h3>\n{pools}",
           para("Latencies in ms: predicted / SLO bound (the plan meets each bound with the "
                "problem's safety margin).", "note")]
    fleet = [f"{s.name}: {x}" for s in doc.services for x in fleet_lines(s)]
    if fleet:  # sites, KV routes, what each service must survive and its worst case
        out.append("<h3>Sites, KV routes and failures</h3>\n" + bullets(fleet))
    if sites:
        out.append("<h3>Sites</h3>\n" + table(SITE_HEADERS, site_rows(doc), "sites", "lrlrrr"))
    return "\n".join(out)


def _verdict(r: LatencyRow) -> Raw:
    if not r.holds:
        return badge("over the bound", "bad")
    if r.holds_at_edge is None:
        return badge("holds (no band)", "ok")
    return badge("holds at the edge", "ok") if r.holds_at_edge else badge("central only", "warn")


def latency_section(doc: PlanResult) -> str:
    rows = latency_rows(doc)
    if not rows:
        return para("No pool has a latency bound to plot (the services set no TTFT or TPOT SLO).", "note")
    out = [img(plots.png_bytes(plots.latency_figure(rows)), "latency vs SLO per pool", "plot")]
    out.append(table(
        ["pool", "metric", "predicted ms", "error band", "band's upper edge ms", "bound ms",
         "margin", "verdict"],
        [[r.pool, r.metric, num_text(r.predicted_ms, ",.0f"),
          "-" if r.band_pct is None else f"+-{r.band_pct:g}%",
          num_text(r.upper_edge_ms, ",.0f"), f"{r.bound_ms:,g}", f"{r.margin_pct:.1f}%", _verdict(r)]
         for r in rows],
        "latency", "llrrrrrl"))
    if doc.decision is not None:
        out.append("<h3>Error bands</h3>")
        out.append(bullets(f"{b.service} {b.role} on {b.hardware}: TTFT +-{b.band_ttft_pct:g}%, "
                       f"TPOT +-{b.band_tpot_pct:g}% ({b.band_source})"
                       for b in doc.decision.uncertainty.pools))
        out.append(para(uncertainty_lines(doc.decision)[-1], "note"))
        if doc.decision.uncertainty.margin_below_band:
            out.append(para("Warning: " + doc.decision.uncertainty.margin_below_band, "warn"))
    else:
        out.append(para("No error band: the plan carries no decision record (plan --no-record).", "note"))
    return "\n".join(out)


def cost_section(cb: CostBreakdown) -> str:
    out = [img(plots.png_bytes(plots.cost_figure(cb)), "cost by service and device type", "plot")]
    rows: list[list[object]] = [
        [r.service, *[num_text(r.by_type[t]) if r.devices_by_type[t] else "-" for t in cb.types],
         r.devices, num_text(r.cost_per_hour)] for r in cb.rows]
    rows.append([Raw("<strong>total</strong>"), *[num_text(cb.type_cost[t]) for t in cb.types],
                 cb.devices, num_text(cb.cost_per_hour)])
    out.append("<h3>By service ($/hour)</h3>")
    out.append(table(["service", *cb.types, "devices", "total $/hour"], rows, "cost-services",
                      "l" + "r" * (len(cb.types) + 2)))
    out.append("<h3>By device type</h3>")
    total = cb.cost_per_hour or 1.0
    out.append(table(
        ["device type", "devices", "$/device-hour", "$/hour", "share", "device TDP kW"],
        [[t, cb.type_devices[t], num_text(cb.type_cost[t] / cb.type_devices[t]) if cb.type_devices[t] else "-",
          num_text(cb.type_cost[t]), f"{cb.type_cost[t] / total:.1%}", num_text(cb.type_power_kw[t], ",.1f")]
         for t in cb.types],
        "cost-types", "lrrrrr"))
    out.append(para(f"Power: {POWER_NOTE_LONG}.", "note"))
    out.append("<h3>By component</h3>")
    out.append(table(["component", "$/hour", "share"],
                     [[k, num_text(v), f"{v / total:.1%}"] for k, v in cb.components],
                     "cost-components", "lrr"))
    return "\n".join(out)


def _plan_point(doc: PlanResult) -> tuple[float, float] | None:
    if doc.status == "infeasible":
        return None
    return (sum(s.demand_qps for s in doc.services), doc.cost_per_hour)


def frontier_section(doc: PlanResult, fs: FrontierSection | None) -> str:
    if fs is None:
        return para("Not computed (the report was rendered without its frontier).", "note")
    fr = fs.result
    if fr is None or not any(p.cost_per_hour is not None for p in fr.points):
        return para(f"No frontier: {fs.note}.", "note")
    fig = plots.frontier_figure(fr, _plan_point(doc), dpi=plots.DPI)
    out = [img(plots.png_bytes(fig), "cost vs served traffic", "plot"), para(f"Frontier: {fs.note}.", "note")]
    out.append(table(
        ["traffic (x demand mix)", "QPS", "$/hour", "devices", "devices by type", "status", "Pareto"],
        [[f"{p.traffic_scale:g}", num_text(p.traffic_qps, ",.6g"), num_text(p.cost_per_hour), p.total_devices,
          mix_text(p.devices_by_type), p.status + (f" (gap {p.gap:.2%})" if p.gap else ""), p.pareto]
         for p in fr.points],
        "frontier", "rrrrlll"))
    lim = fr.limit
    if lim is None:
        out.append(para("Nothing in the problem bounds traffic (no budget, no power cap, a type "
                      "without a supply): the sweep stops at the problem's demand.", "note"))
    elif lim.max_traffic_qps is not None:
        why = "; ".join(lim.beyond.infeasible_because) if lim.beyond is not None else ""
        out.append(para(f"The limits ({'; '.join(lim.limited_by)}) allow at most "
                      f"{lim.max_traffic_scale:g} x the demand mix ({lim.max_traffic_qps:,.6g} QPS)"
                      + (f"; one step more is infeasible: {why}" if why else "") + "."))
    sv = fr.solver
    wall = f", {sv.wall_s:.2f} s" if sv.wall_s is not None else ""
    out.append(para(f"{sv.solves} plans, each verified{wall}.", "note"))
    return "\n".join(out)


def _pool_brief(pools: Sequence[Pool], services: Sequence[str]) -> list[list[object]]:
    return [[services[i] if i < len(services) else "-", p.role, p.site, p.hardware, parallel_words(p),
             p.batch, p.instances, p.devices, num_text(p.capacity_qps, ",.1f"), num_text(p.cost_per_hour)]
            for i, p in enumerate(pools)]


def alternatives_section(r: DecisionRecord) -> str:
    out = []
    if r.choices:  # context parallelism and speculation (solver/decision/dimensions.py)
        out += ["<h3>Choices</h3>", bullets([c.effect for c in r.choices])]
    out.append("<h3>Runners-up</h3>")
    if r.runners_up:
        rows = []
        for a in r.runners_up:
            delta = (f"{a.delta_throughput_pct:+.1f}% throughput" if a.delta_throughput_pct is not None
                     else f"{a.delta_cost_pct:+.1f}%" if a.delta_cost_pct is not None else "-")
            rows.append([a.kind, a.excluded, a.status, money(a.cost_per_hour), delta,
                         mix_text(a.devices_by_type), a.summary])
        out.append(table(["kind", "excluded", "status", "cost", "vs the plan", "devices", "pools"],
                          rows, "runners-up", "lllrrll"))
        out.append(para("Each runner-up is the best plan once one part of the plan's structure is "
                      "excluded (its device type, its runtime, or its exact pool configurations), "
                      "re-solved.", "note"))
    else:
        out.append(para("None found.", "note"))
    out.append("<h3>Fallback</h3>")
    f = r.fallback
    if f is None:
        out.append(para("None (the problem has no plan).", "note"))
    elif f.status == "infeasible":
        out.append(para(f"{f.hardware} only ({f.why}), one configuration per role, safety margin "
                      f"{f.safety_margin:.0%}: infeasible."))
        out.append(bullets(f.infeasible_because))
    else:
        out.append(para(f"{f.hardware} only ({f.why}), one configuration per service and role, "
                      f"planned with a safety margin of {f.safety_margin:.0%} so that every SLO "
                      f"bound holds at the error band's upper edge: {mix_text(f.devices_by_type)}, "
                      f"{money(f.cost_per_hour)} ({f.delta_cost_pct:+.1f}% vs the plan), {f.status}."))
        out.append(table(["service", "role", "site", "hardware", "parallel", "batch", "instances", "devices",
                           "capacity QPS", "$/hour"], _pool_brief(f.pools, f.services), "fallback",
                         "lllllrrrrr"))
    return "\n".join(out)


def _collected(p: ProfileUse) -> str:
    if p.collected_on:
        return p.collected_on
    return f"by {p.source_released_on} (source release)" if p.source_released_on else "unknown"


def assumptions_section(doc: PlanResult) -> str:
    a = doc.assumptions
    if a is None:
        return para("Not recorded.", "note")
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
    out = [bullets(items)]
    if a.profiles:
        out.append("<h3>Measured operator tables</h3>")
        out.append(table(
            ["hardware", "family", "framework", "version", "collected on", "age (days)", "stale",
             "stack differs", "content sha256", "source"],
            [[p.hardware, p.family, p.framework, p.framework_version, _collected(p),
              p.age_days, badge("stale", "warn") if p.stale else "no",
              badge("differs", "warn") if p.stack_differs else "no", p.content_sha256[:12], p.source]
             for p in a.profiles],
            "profiles", "lllllrllll"))
    return "\n".join(out)


def _interval_value(i: Interval, v: float, at_limit: bool) -> str:
    s = f"x{v:.4g}" if i.unit == "x" else f"{v:.3g}" if i.unit in ("acceptance", "hit rate") else f"${v:,.2f}"
    return s + (" (search limit)" if at_limit else "")


def _interval_row(i: Interval) -> list:
    name = i.quantity + (" (partial)" if i.partial else "")
    if i.probes == 0 or (i.low_not_computed and i.high_not_computed):
        return [name, "not computed", _interval_value(i, i.current, False), "not computed", None, None]
    low = "not computed" if i.low_not_computed else _interval_value(i, i.low, i.low_is_search_limit)
    high = "not computed" if i.high_not_computed else _interval_value(i, i.high, i.high_is_search_limit)
    return [name, low, _interval_value(i, i.current, False), high, i.below, i.above]


def validity_section(r: DecisionRecord) -> str:
    v = r.validity
    if v is None:
        return para("Not computed (the problem has no plan).", "note")
    out = []
    intervals = ([v.demand] if v.demand is not None else []) + list(v.prices) + list(v.acceptance or []) + list(
        v.hit_rates or [])
    if intervals:
        out.append(table(
            ["quantity", "low", "now", "high", "below low the plan becomes", "above high"],
            [_interval_row(i) for i in intervals], "validity", "lrrrll"))
        out.append(para(f"Within each interval, keeping the plan's configurations costs at most 2% "
                      f"more than re-planning ({v.solves} solves).", "note"))
        if v.cut_short:
            out.append(para("The search was cut short by --record-seconds: the intervals marked "
                            "partial are incomplete.", "note"))
    if v.traffic_headroom_multiple is not None:
        out.append(para(f"Traffic headroom: the fleet as planned (pools and instance counts fixed) "
                        f"serves up to x{v.traffic_headroom_multiple:g} of every service's demand "
                        f"(set by '{v.traffic_headroom_service}').", "note"))
    out.append("<h3>Re-measure</h3>")
    if v.remeasure:
        out.append(table(["what", "by", "why"], [[m.what, m.by, m.why] for m in v.remeasure],
                          "remeasure", "lll"))
    else:
        out.append(para("Nothing is due.", "note"))
    return "\n".join(out)


def solver_section(doc: PlanResult) -> str:
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
    out = [bullets(items)]
    if sv.stages:
        out.append(table(["stage", "status", "value"],
                          [[s.name, s.status, f"{s.value:g}"] for s in sv.stages], "stages", "llr"))
    return "\n".join(out)

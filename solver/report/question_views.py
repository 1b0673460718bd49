"""Renderings of the what-if documents (frontier, price sweep): table and json. Formatting only."""

from __future__ import annotations

import json

from solver.report.text import table
from solver.schema.questions import (
    FrontierPoint,
    FrontierResult,
    PriceSweepResult,
    QuestionSolverInfo,
)


def to_json(doc: FrontierResult | PriceSweepResult) -> str:
    return json.dumps(doc.model_dump(mode="json"), indent=2) + "\n"


def mix_text(devices_by_type: dict[str, int]) -> str:
    return ", ".join(f"{k} x {n}" for k, n in devices_by_type.items()) or "-"


def _status(status: str, gap: float | None) -> str:
    return f"{status} (gap {gap:.2%})" if status == "feasible" and gap else status


def _money(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def _solver_line(sv: QuestionSolverInfo) -> str:
    build = f" in {sv.candidates_build_s:.2f} s" if sv.candidates_build_s is not None else ""
    wall = f"; {sv.wall_s:.2f} s in all" if sv.wall_s is not None else ""
    return (f"solver: {sv.solves} plans (each verified), candidate tables built once "
            f"({sv.candidates_evaluated:,} evaluated, {sv.candidates_in_model} in the model){build}{wall}")


def _frontier_row(p: FrontierPoint) -> list[object]:
    return [f"{p.traffic_scale:g}", f"{p.traffic_qps:,.6g}", _money(p.cost_per_hour),
            p.total_devices, mix_text(p.devices_by_type), _status(p.status, p.gap),
            "yes" if p.pareto else "no"]


def frontier_table(doc: FrontierResult) -> str:
    out = [f"{doc.problem}: cost vs served traffic, {len(doc.points)} points, each the cheapest "
           "fleet serving at least that traffic (epsilon-constraint, CP-SAT)",
           f"demand mix: {doc.demand_qps:,.6g} QPS at scale 1; swept up to scale {doc.max_scale_swept:g}"]
    if doc.limit is None:
        out.append("traffic is not bounded by the problem (no budget, no power cap, a type without "
                   "a supply): the sweep stops at --max-scale (default: the problem's demand)")
    out.append("")
    if doc.points:
        out.append(table(["scale", "QPS", "$/hour", "devices", "devices by type", "status", "pareto"],
                         [_frontier_row(p) for p in doc.points], "rrrrlll"))
        out.append("")
    for p in doc.points:
        if p.status == "infeasible":
            out.append(f"no plan at scale {p.traffic_scale:g}: " + "; ".join(p.infeasible_because))
    lim = doc.limit
    if lim is not None:
        if lim.max_traffic_scale is None:
            out.append("limit: not even 0.1% of the demand mix can be served; set by "
                       + "; ".join(lim.limited_by))
        else:
            out.append(f"limit: at most {lim.max_traffic_scale:g} x the mix ({lim.max_traffic_qps:,.6g} "
                       f"QPS), {_status(lim.status, lim.gap)}; the problem's limits: "
                       + "; ".join(lim.limited_by))
        b = lim.beyond
        if b is not None:
            why = "; ".join(b.infeasible_because) if b.status == "infeasible" else (
                f"{b.status} at ${_money(b.cost_per_hour)}/hour ("
                + ("the limit was not proven optimal" if lim.status != "optimal"
                   else "the demand rounds to whole milli-QPS per service") + ")")
            out.append(f"  at {b.traffic_scale:g} x ({b.traffic_qps:,.6g} QPS): {why}")
    out.append(_solver_line(doc.solver))
    return "\n".join(out) + "\n"


def price_table(doc: PriceSweepResult) -> str:
    out = [f"{doc.problem} ({doc.objective}): {doc.hardware} priced ${doc.price_from_per_hour:g} to "
           f"${doc.price_to_per_hour:g} per device-hour (the problem's price: "
           f"${doc.base_price_per_hour:g}); {doc.steps + 1} grid prices, bisection to "
           f"${doc.tolerance_per_hour:g}; a change of mix: "
           + ("another device count of some type" if doc.compare == "devices" else "another set of types used"), ""]
    rows = []
    for r in doc.ranges:
        cost = (_money(r.cost_from_per_hour) if r.cost_from_per_hour == r.cost_to_per_hour
                else f"{_money(r.cost_from_per_hour)} - {_money(r.cost_to_per_hour)}")
        same = r.devices_by_type_from == r.devices_by_type_to
        mix = (mix_text(r.devices_by_type_from) if same else
               f"{mix_text(r.devices_by_type_from)} .. {mix_text(r.devices_by_type_to)}")
        devices = (r.total_devices_from if r.total_devices_from == r.total_devices_to
                   else f"{r.total_devices_from} .. {r.total_devices_to}")
        row = [f"{r.price_from_per_hour:.4f} - {r.price_to_per_hour:.4f}",
               mix if r.status != "infeasible" else "no plan", devices, cost, r.status]
        if doc.objective == "max_throughput":
            row.insert(4, "-" if r.throughput_scale_from is None else
                       f"{r.throughput_scale_from:g} - {r.throughput_scale_to:g}")
        rows.append(row)
    headers = ["price range ($/h)", "devices by type", "devices", "cost ($/hour)", "status"]
    if doc.objective == "max_throughput":
        headers.insert(4, "x mix")
    out += [table(headers, rows, "llrr" + ("r" if doc.objective == "max_throughput" else "") + "l"), ""]
    if not doc.changes:
        out.append(f"the mix does not change between ${doc.price_from_per_hour:g} and "
                   f"${doc.price_to_per_hour:g}")
    for c in doc.changes:
        note = "" if c.resolved else " (not narrowed to the tolerance: plan limit reached)"
        out.append(f"mix changes at {doc.hardware} ${c.price_per_hour:.4f}/h ({c.how}; between "
                   f"${c.below_per_hour:.4f} and ${c.above_per_hour:.4f}){note}")
    out.append(_solver_line(doc.solver))
    return "\n".join(out) + "\n"

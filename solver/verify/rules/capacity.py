"""Rules on what each service serves: the demand, the prefill:decode ratio, the KV routes
between its pools, and what is left after losing a failure domain."""

from __future__ import annotations

from solver.problem.load import ResolvedProblem
from solver.schema.result import KvRoute, PlanResult, ServiceResult
from solver.verify.recount import Unit, shared_link, worst_instance_loss, worst_site_loss
from solver.verify.tally import ServiceFigures, Tally, eq, le


def check_demand_served(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Each service's pools serve its demand, and the reported capacity and demand are the
    recounted ones."""
    out: list[str] = []
    for sf in t.services:
        name, served, need = sf.result.name, sf.served, sf.need
        if not le(need, served):
            out.append(f"service '{name}': capacity {served:.4f} QPS is below the demand {need:.4f} QPS")
        if not eq(sf.result.capacity_qps, served):
            out.append(f"service '{name}': capacity_qps {sf.result.capacity_qps} != pools' {served:.6f}")
        if not eq(sf.result.demand_qps, need):
            out.append(f"service '{name}': demand_qps {sf.result.demand_qps} != problem's {need:.6f}")
    return out


def check_headroom(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """The stated traffic headroom is the recounted one: the least servable / qps over the
    services, rounded down to 4 decimals (never above the recount, at most 1e-4 below)."""
    h = doc.traffic_headroom_multiple
    qps = {s.name: s.workload.qps for s in rp.problem.services}
    if not t.services:
        return [] if h is None else [f"traffic_headroom_multiple {h} stated for a plan without services"]
    least = min(sf.served / qps[sf.result.name] for sf in t.services)
    if h is None or not (le(h, least) and least - h <= 1e-4 * (1 + 1e-6) + 1e-9):
        return [f"traffic_headroom_multiple {h} != the pools' {least:.6f} (rounded down to 4 decimals)"]
    return []


def _ratio_of(sf: ServiceFigures) -> list[str]:
    sr, dev = sf.result, sf.dev
    out = []
    ratio_now = dev["prefill"] / dev["decode"] if dev["prefill"] and dev["decode"] else None
    if (ratio_now is None) != (sr.prefill_decode_ratio is None) or (
        ratio_now is not None and abs(sr.prefill_decode_ratio - ratio_now) > 1e-4  # type: ignore[operator]
    ):
        out.append(f"service '{sr.name}': prefill_decode_ratio {sr.prefill_decode_ratio} != "
                   f"pools' {ratio_now}")
    if (sf.cap["prefill"] > 0) != (sf.cap["decode"] > 0):
        out.append(f"service '{sr.name}': a prefill pool needs a decode pool and vice versa")
    return out


def check_ratio(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Prefill comes with decode, the reported P:D device ratio is the pools', and it keeps
    within the problem's bounds."""
    bounds = rp.problem.constraints.prefill_decode_ratio
    out: list[str] = []
    for sf in t.services:
        out += _ratio_of(sf)
        if not (sf.dev["prefill"] and sf.dev["decode"]):
            continue
        r = sf.dev["prefill"] / sf.dev["decode"]
        if bounds.min is not None and not le(bounds.min, r):
            out.append(f"service '{sf.result.name}': prefill:decode ratio {r:.4f} below {bounds.min}")
        if bounds.max is not None and not le(r, bounds.max):
            out.append(f"service '{sf.result.name}': prefill:decode ratio {r:.4f} above {bounds.max}")
    return out


def _route(rp: ResolvedProblem, sr: ServiceResult, units: list[Unit], r: KvRoute) -> list[str]:
    """One KV route: it joins pools at its site that its link serves, at the cards' link."""
    out = []
    name = f"service '{sr.name}': KV route {r.prefill_hardware} -> {r.decode_hardware}"
    at = [u for u in units if (u.site or None) == r.site]
    pre = [u for u in at if u.role == "prefill" and u.hw == r.prefill_hardware]
    if not pre or not any(u.role == "decode" and u.hw == r.decode_hardware for u in at):
        out.append(f"{name} joins pools the plan does not have there")
    elif not any(r.decode_hardware in u.reach for u in pre):
        out.append(f"{name}: no prefill pool was sized for that link")
    if r.prefill_hardware in rp.hardware_names and r.decode_hardware in rp.hardware_names:
        link = shared_link(rp, r.prefill_hardware, r.decode_hardware)
        if not (eq(r.link_gb_s, link[0]) and eq(r.link_latency_us, link[1])):
            out.append(f"{name} link {r.link_gb_s} GB/s {r.link_latency_us} us, the cards give {link}")
    return out


def check_kv_routes(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """KV routes join pools that exist at their site and a link the prefill pool reaches;
    they carry the service's disaggregated traffic; a cross-type route is reported exactly
    when the service is heterogeneous."""
    out: list[str] = []
    for sf in t.services:
        sr, routes = sf.result, sf.result.kv_routes or []
        for r in routes:
            out += _route(rp, sr, sf.units, r)
        if routes and not eq(sum(r.qps for r in routes), sr.disaggregated_qps):
            out.append(f"service '{sr.name}': KV routes carry {sum(r.qps for r in routes):.4f} QPS, "
                       f"the disaggregated traffic is {sr.disaggregated_qps}")
        if routes and not any(r.prefill_hardware != r.decode_hardware and r.qps > 0 for r in routes):
            out.append(f"service '{sr.name}': kv_routes listed for a service without cross-type routes")
    return out


def _loss(sf: ServiceFigures, what: str, worst: float, field: str, reported: float | None) -> list[str]:
    """The service serves its demand after losing `what`, and reports that worst case."""
    name, need = sf.result.name, sf.need
    out = []
    if not le(need, worst):
        out.append(f"service '{name}': after losing {what} it serves {worst:.4f} QPS, "
                   f"below the demand {need:.4f} QPS")
    if reported is None or not eq(reported, worst):
        out.append(f"service '{name}': {field} {reported} != {worst:.6f}")
    return out


def _survives(rp: ResolvedProblem, sf: ServiceFigures) -> list[str]:
    survive, rep = rp.problem.constraints.survive, sf.result.survive
    out = []
    if survive.lose_instances:
        worst, hw = worst_instance_loss(sf.units, survive.lose_instances)
        out += _loss(sf, f"{survive.lose_instances} {hw} instance(s)", worst, "worst_instances_loss_qps",
                     rep.worst_instances_loss_qps)
    if survive.lose_site:
        worst, site = worst_site_loss(sf.units, rp.site_names)
        out += _loss(sf, f"site '{site}'", worst, "worst_site_loss_qps", rep.worst_site_loss_qps)
    return out


def check_survive(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Each service still serves its demand after the worst loss of every failure domain the
    problem asks to survive, and reports that worst case; no report when none is asked."""
    asked = rp.problem.constraints.survive is not None
    out: list[str] = []
    for sf in t.services:
        name = sf.result.name
        if not asked and sf.result.survive is not None:
            out.append(f"service '{name}': survive reported, the problem asks none")
        elif asked and sf.result.survive is None:
            out.append(f"service '{name}': the problem asks to survive failures; no survive report")
        elif asked:
            out += _survives(rp, sf)
    return out

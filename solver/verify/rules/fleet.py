"""Rules on the whole fleet: the services listed, sites, supply, power, budget and the totals
the document reports."""

from __future__ import annotations

from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult
from solver.verify.tally import PoolFigures, Tally, demand_scale, eq, le, where


def check_listing(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """A max_throughput plan states a positive scale, and the plan lists the problem's services."""
    out = []
    if demand_scale(rp, doc) is None:
        out.append("max_throughput result without a positive throughput_scale")
    if sorted(s.name for s in rp.problem.services) != sorted(s.name for s in doc.services):
        out.append("the plan's services differ from the problem's")
    return out


def _pool_site(rp: ResolvedProblem, f: PoolFigures) -> list[str]:
    pool, w, pins = f.pool, where(f.result, f.pool), f.spec.sites
    if not rp.site_names:
        return [f"{w}: site '{pool.site}' given, but the problem has no sites"] if pool.site is not None else []
    if pool.site not in rp.site_names:
        return [f"{w}: site {pool.site!r} is not one of the problem's sites"]
    if pins is not None and pool.site not in pins:
        return [f"{w}: at site '{pool.site}', but the service is pinned to {pins}"]
    return []


def _sites_summary(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    if not rp.site_names:
        return ["sites summary given, the problem has no sites"] if doc.sites is not None else []
    if doc.sites is None or [x.name for x in doc.sites] != list(rp.site_names):
        return ["the sites summary does not list the problem's sites"]
    out = []
    for x in doc.sites:
        by_type = {h: n for (k, h), n in sorted(t.at_site.items()) if k == x.name and n}
        if dict(x.devices_by_type) != by_type or x.devices != sum(by_type.values()):
            out.append(f"site '{x.name}': devices {dict(x.devices_by_type)} != pools' {by_type}")
        cost = sum(f.cost or 0.0 for f in t.pools if f.pool.site == x.name)
        if abs(cost - x.cost_per_hour) > 1e-6 * max(1.0, cost):
            out.append(f"site '{x.name}': cost_per_hour {x.cost_per_hour} != pools' {cost:.6f}")
    return out


def check_sites(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Pools sit at the problem's sites (within their service's pins), and the sites summary
    is the pools' devices and cost per site."""
    out: list[str] = []
    for f in t.pools:
        out += _pool_site(rp, f)
    return out + _sites_summary(rp, doc, t)


def check_supply(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Devices of each type, overall and at each site, stay within the supply."""
    out = []
    for name, used in t.used_devices.items():
        s = rp.supplies[rp.hardware_names.index(name)]
        if s is not None and used > s:
            out.append(f"{name}: {used} devices used, supply {s}")
    for i, site in enumerate(rp.site_names):
        for j, name in enumerate(rp.hardware_names):
            limit, used = rp.site_supplies[i][j], t.at_site[(site, name)]
            if limit is not None and used > limit:
                out.append(f"{name} at site '{site}': {used} devices used, supply {limit}")
    return out


def check_power(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """Each site's draw stays within its cap, the fleet's within the problem's, and the
    reported power is the pools'."""
    out = []
    for i, site in enumerate(rp.site_names):
        cap_kw = rp.site_power_kw[i]
        if cap_kw is not None and not le(t.site_power[site] / 1000, cap_kw):
            out.append(f"site '{site}': power {t.site_power[site] / 1000:.2f} kW exceeds its cap {cap_kw} kW")
    cap = rp.problem.constraints.power_kw
    if cap is not None and not le(t.total_power / 1000, cap):
        out.append(f"power {t.total_power / 1000:.2f} kW exceeds the cap {cap} kW")
    if not eq(doc.power_kw, t.total_power / 1000):
        out.append(f"power_kw {doc.power_kw} != sum of pools {t.total_power / 1000:.6f}")
    return out


def check_budget(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """The fleet's hourly cost stays within the budget, and the reported cost is the pools'."""
    out = []
    budget = rp.problem.budget_per_hour
    if budget is not None and not le(t.total_cost, budget):
        out.append(f"cost ${t.total_cost:,.2f}/h exceeds the budget ${budget:,.2f}/h")
    if abs(doc.cost_per_hour - t.total_cost) > 1e-6 * max(1.0, t.total_cost):
        out.append(f"cost_per_hour {doc.cost_per_hour} != sum of pools {t.total_cost}")
    return out


def check_objective(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """The objective is the problem's, at the plan's cost or throughput scale, and a feasible
    plan lists no reasons for infeasibility."""
    out = []
    kind = rp.problem.objective
    if doc.objective is None or doc.objective.kind != kind:
        out.append(f"objective {doc.objective} does not match the problem's {kind}")
    else:
        target = doc.cost_per_hour if kind == "min_cost" else (doc.throughput_scale or 0.0)
        if not eq(doc.objective.value, target):
            out.append(f"objective.value {doc.objective.value} != {target}")
    if doc.infeasible_because:
        out.append("a feasible result lists reasons for infeasibility")
    return out


def check_totals(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """The reported device totals are the pools'."""
    out = []
    if doc.total_devices != sum(t.used_devices.values()):
        out.append("total_devices != sum of pools")
    if dict(doc.devices_by_type) != {k: v for k, v in t.used_devices.items() if v}:
        out.append("devices_by_type != sum of pools")
    return out

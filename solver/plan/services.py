"""A service's and a site's results in the plan document: capacity, runtime, ratio, sites,
and what is left after each failure the problem asks to survive."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from solver.candidates.table import CandidateSet
from solver.fleet.instance import FleetInstance
from solver.fleet.solve import FleetSolution
from solver.plan.pools import kv_routes_of, pools_of, site_capacity
from solver.problem.load import ResolvedProblem
from solver.schema.problem import Service
from solver.schema.result import Pool, ServiceResult, ServiceSurvival, SiteResult, SiteShare, SloBounds
from solver.schema.roles import PREFILL
from solver.verify.recount import units_of, worst_instance_loss, worst_site_loss


def slo_bounds(svc: Service) -> SloBounds:
    """The service's latency bounds as the document states them."""
    t, o = svc.slo.ttft_ms, svc.slo.tpot_ms
    return SloBounds(
        ttft_p50_ms=t.p50 if t else None, ttft_p99_ms=t.p99 if t else None,
        tpot_p50_ms=o.p50 if o else None, tpot_p99_ms=o.p99 if o else None,
    )


def service_result(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, sol: FleetSolution,
                   si: int) -> ServiceResult:
    """Service si's result: its pools, routes, capacity, runtime, sites and survival."""
    svc = rp.problem.services[si]
    kv_routes = kv_routes_of(rp, cs, inst, sol, si)
    pools = pools_of(rp, cs, inst, sol, si, bool(kv_routes))
    cap = Counter()
    dev = Counter()
    for p in pools:
        cap[p.role] += p.capacity_qps
        dev[p.role] += p.devices
    has_col, has_dis = cap["colocated"] > 0, dev["prefill"] > 0
    runtime = "mixed" if has_col and has_dis else ("disaggregated" if has_dis else "colocated")
    scale = sol.scale if rp.problem.objective == "max_throughput" else 1.0
    prefill = np.flatnonzero((inst.service == si) & (inst.role == PREFILL))
    if inst.n_sites == 1 and inst.reach[prefill].all():
        # one place, every prefill pool may feed every decode pool: colocated + min(P, D)
        capacity = round(cap["colocated"] + min(cap["prefill"], cap["decode"]), 6)
        shares = None
    else:
        per_site = [site_capacity(inst, sol, cs, si, k) for k in range(inst.n_sites)]
        capacity = round(sum(per_site), 6)
        shares = None if not rp.site_names else [
            SiteShare(site=name, qps=round(float(sol.site_colocated[si, k] + sol.site_disaggregated[si, k]), 6),
                      capacity_qps=round(per_site[k], 6))
            for k, name in enumerate(rp.site_names) if inst.allowed(si, k)
        ]
    return ServiceResult(
        name=svc.name, model=rp.models[si].name,
        demand_qps=round(svc.workload.qps * (scale or 0.0), 6),
        capacity_qps=capacity,
        runtime=runtime,
        prefill_decode_ratio=round(dev["prefill"] / dev["decode"], 4) if has_dis and dev["decode"] else None,
        pools=pools,
        colocated_qps=round(float(sol.colocated_share[si]), 6),
        disaggregated_qps=round(float(sol.disaggregated_share[si]), 6),
        slo=slo_bounds(svc),
        cost_per_hour=round(sum(p.cost_per_hour for p in pools), 6),
        devices=sum(p.devices for p in pools),
        routing=rp.archs[si].expert_routing.description if rp.archs[si].moe_layers else None,
        kv_routes=kv_routes or None,
        sites=shares,
        survive=_survival(rp, pools),
    )


def _survival(rp: ResolvedProblem, pools: list[Pool]) -> ServiceSurvival | None:
    """Capacity left in the worst case of each failure the problem asks to survive (the
    verifier's enumeration of every loss; the verifier then checks it covers the demand)."""
    survive = rp.problem.constraints.survive
    if survive is None:
        return None
    units = units_of(rp, pools)
    out = ServiceSurvival(lose_site=survive.lose_site)
    if survive.lose_instances:
        worst, hw = worst_instance_loss(units, survive.lose_instances)
        out = out.model_copy(update={"lose_instances": survive.lose_instances,
                                     "worst_instances_loss_qps": round(worst, 6),
                                     "worst_instances_loss_hardware": hw})
    if survive.lose_site:
        worst, site = worst_site_loss(units, rp.site_names)
        out = out.model_copy(update={"worst_site_loss_qps": round(worst, 6), "worst_site_loss_site": site})
    return out


def sites_summary(rp: ResolvedProblem, services: list[ServiceResult]) -> list[SiteResult] | None:
    """Devices, cost and power per site (None when the problem has no sites)."""
    if not rp.site_names:
        return None
    out = []
    for k, name in enumerate(rp.site_names):
        by_type: Counter[str] = Counter()
        cost = power = 0.0
        for s in services:
            for p in s.pools:
                if p.site == name:
                    by_type[p.hardware] += p.devices
                    cost += p.cost_per_hour
                    power += p.power_kw
        out.append(SiteResult(
            name=name, devices=sum(by_type.values()),
            devices_by_type={h: by_type[h] for h in sorted(by_type)},
            cost_per_hour=round(cost, 6), power_kw=round(power, 6), power_cap_kw=rp.site_power_kw[k],
        ))
    return out


def traffic_headroom(rp: ResolvedProblem, services: list[ServiceResult]) -> tuple[float | None, str | None]:
    """(the largest multiple of every service's demand the fleet serves with its pools fixed,
    the service that sets it): the least capacity / the problem's qps, rounded down to 4
    decimals (the safe direction). (None, None) without services."""
    qps = {s.name: s.workload.qps for s in rp.problem.services}
    best: tuple[float, str] | None = None
    for s in services:
        x = s.capacity_qps / qps[s.name]
        if best is None or x < best[0]:
            best = (x, s.name)
    if best is None:
        return None, None
    return math.floor(round(best[0] * 1e4, 6)) / 1e4, best[1]

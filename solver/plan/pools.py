"""The pools of a plan from the fleet solution: each used candidate column as a pool document,
and the KV routes that carry a service's disaggregated traffic between its pools."""

from __future__ import annotations

import numpy as np

from solver.candidates.table import CandidateSet
from solver.fleet import routes
from solver.fleet.instance import FleetInstance
from solver.fleet.solve import FleetSolution
from solver.problem.load import ResolvedProblem
from solver.problem.tco import COMPONENTS
from solver.schema.cards import PRECISIONS
from solver.schema.pool import LATENCY_DECIMALS, MEMORY_DECIMALS, CostComponents
from solver.schema.result import KvRoute, Pool, Predicted
from solver.schema.roles import COLOCATED, DECODE, PREFILL, ROLES


def rounded(x: float | None, nd: int = LATENCY_DECIMALS) -> float | None:
    """x rounded to nd decimals; None when missing or not finite."""
    if x is None or not np.isfinite(x):
        return None
    return round(float(x), nd)


def unit_cost(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, c: int) -> float:
    """USD per hour of one instance of column c (at its site's price)."""
    r = int(inst.row[c])
    if not rp.site_names:
        return float(cs.table.cost_per_hour[r])
    t = cs.table
    return int(t.devices[r]) * rp.device_cost(int(inst.site[c]), int(t.hw[r]), float(t.power_cap_w[r]))


def _precision(code, default: str) -> str:
    return PRECISIONS[int(code)] if int(code) >= 0 else default


def _choices(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, c: int, n: int) -> dict:
    """The pool's fields for the choices the problem offers: its power cap (types with
    power_caps_w), its KV precision (services with kv_precision or a list of precisions) and
    its cost by component
    (problems with `cost:` entries)."""
    t, r = cs.table, int(inst.row[c])
    hw, svc = int(t.hw[r]), rp.problem.services[int(t.service[r])]
    out: dict = {}
    if rp.problem.hardware[hw].power_caps_w is not None:
        out["power_cap_w"] = float(t.power_cap_w[r])
    if svc.kv_precisions is not None or len(svc.precisions) > 1:
        out["kv_precision"] = _precision(t.kvprec[r], (svc.kv_precisions or svc.precisions)[0])
    if any(x is not None for x in rp.entry_costs):
        parts = rp.cost_parts(int(inst.site[c]), hw, float(t.power_cap_w[r])).scaled(n * int(t.devices[r]))
        out["cost_components"] = CostComponents(**{k: round(getattr(parts, k), 6) for k in COMPONENTS})
    return out


def pools_of(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, sol: FleetSolution, si: int,
             hetero: bool) -> list[Pool]:
    """Service si's pools (a prefill pool states its KV link when the service is heterogeneous),
    in the document's order: colocated, prefill, decode; then site, type and layout."""
    t = cs.table
    svc = rp.problem.services[si]
    pools = []
    for c in np.flatnonzero((inst.service == si) & (sol.counts > 0)):
        r = int(inst.row[c])
        n = int(sol.counts[c])
        role = int(t.role[r])
        name = rp.hardware_names[int(t.hw[r])]
        per_inst = float(t.capacity_qps[r])
        kv = hetero and role == PREFILL
        pools.append(Pool(
            role=ROLES[role], hardware=name, tp=int(t.tp[r]), pp=int(t.pp[r]), ep=int(t.ep[r]),
            dp=int(t.dp[r]), devices_per_instance=int(t.devices[r]), instances=n,
            devices=n * int(t.devices[r]), batch=int(t.batch[r]),
            capacity_qps=round(n * round(per_inst, 6), 6),
            cost_per_hour=round(n * unit_cost(rp, cs, inst, int(c)), 6),
            predicted=Predicted(
                ttft_ms=rounded(t.ttft_p50_ms[r]), tpot_ms=rounded(t.tpot_p50_ms[r]),
                memory_gib_per_device=round(float(t.memory_gib[r]), MEMORY_DECIMALS),
                ttft_p99_ms=rounded(t.ttft_p99_ms[r]), tpot_p99_ms=rounded(t.tpot_p99_ms[r]),
            ),
            precision=_precision(t.wprec[r], svc.precisions[0]),
            chunk_tokens=int(t.chunk[r]) if role == COLOCATED else None,
            power_kw=round(n * float(t.power_w[r]) / 1000, 6),
            capacity_qps_per_instance=round(per_inst, 6),
            site=rp.site_names[int(inst.site[c])] if rp.site_names else None,
            kv_link_gb_s=round(float(t.kv_bw[r]) / 1e9, 6) if kv else None,
            kv_link_latency_us=round(float(t.kv_lat[r]) * 1e6, 6) if kv else None,
            kv_transfer_ms=rounded(t.kv_ms[r]) if kv else None,
            cp=int(t.cp[r]) if t.cp[r] > 1 else None,
            speculative=svc.speculative.method if t.spec[r] and svc.speculative else None,
            **_choices(rp, cs, inst, int(c), n),
        ))
    order = {"colocated": 0, "prefill": 1, "decode": 2}
    pools.sort(key=lambda p: (order[p.role], rp.site_of(p.site), p.hardware, p.tp, p.pp, p.ep,
                              p.dp, p.cp or 1, p.speculative or "", p.batch, -(p.kv_link_gb_s or 0.0)))
    return pools


def route_groups(inst: FleetInstance, sol: FleetSolution, si: int, k: int, weight: np.ndarray):
    """Prefill groups (type, reach) and decode capacity per type of service si at site k, each
    column weighted by `weight` (integer milli-QPS capacities, or float QPS)."""
    used = (inst.service == si) & (inst.site == k) & (sol.counts > 0)
    pre = np.flatnonzero(used & (inst.role == PREFILL))
    dec = np.flatnonzero(used & (inst.role == DECODE))
    types = sorted({int(h) for h in inst.hw[dec]})
    decode = {d: sum(weight[c] * sol.counts[c] for c in dec[inst.hw[dec] == d]) for d in types}
    groups: dict[tuple[int, tuple[int, ...]], float] = {}
    for c in pre:
        reach = tuple(d for d in types if inst.reach[c, d])
        if reach:
            key = (int(inst.hw[c]), reach)
            groups[key] = groups.get(key, 0) + weight[c] * sol.counts[c]
    return [routes.Group(p, r, cap) for (p, r), cap in sorted(groups.items())], decode


def kv_routes_of(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, sol: FleetSolution,
                 si: int) -> list[KvRoute]:
    """The disaggregated traffic of service si per (site, prefill type, decode type), split so
    that as little as possible crosses types; empty when nothing has to cross."""
    out: list[KvRoute] = []
    cross = False
    for k in range(inst.n_sites):
        scale = inst.services[si].qps_scale
        amount = int(round(float(sol.site_disaggregated[si, k]) * scale))
        if amount <= 0:
            continue
        groups, decode = route_groups(inst, sol, si, k, inst.cap)
        flows: dict[tuple[int, int], int] = {}
        for gi, d, units in routes.min_cost_routes(groups, {d: int(v) for d, v in decode.items()}, amount):
            key = (groups[gi].hw, d)
            flows[key] = flows.get(key, 0) + units
        for (p, d), units in sorted(flows.items()):
            cross |= p != d
            bw, lat = cs.links[p, d]
            out.append(KvRoute(
                site=rp.site_names[k] if rp.site_names else None,
                prefill_hardware=rp.hardware_names[p], decode_hardware=rp.hardware_names[d],
                qps=round(units / scale, 6),
                link_gb_s=round(float(bw) / 1e9, 6), link_latency_us=round(float(lat) * 1e6, 6),
            ))
    return out if cross else []


def site_capacity(inst: FleetInstance, sol: FleetSolution, cs: CandidateSet, si: int, k: int) -> float:
    """What service si's pools at site k can serve: colocated + the max flow through KV routes."""
    qps = np.array([round(float(cs.table.capacity_qps[int(r)]), 6) for r in inst.row])
    used = (inst.service == si) & (inst.site == k) & (sol.counts > 0)
    col = float(sum(qps[c] * sol.counts[c] for c in np.flatnonzero(used & (inst.role == COLOCATED))))
    groups, decode = route_groups(inst, sol, si, k, qps)
    return col + routes.max_flow(groups, decode)


def cost_components(services) -> CostComponents | None:
    """The plan's hourly cost by component: the sum of its pools' (None when no pool has any)."""
    pools = [p for s in services for p in s.pools if p.cost_components is not None]
    if not pools:
        return None
    return CostComponents(**{k: round(sum(getattr(p.cost_components, k) for p in pools), 6)
                             for k in COMPONENTS})

"""Independent re-check of a plan document against the problem, in plain floats.

This module does not import the fleet model: it recomputes capacity, cost, power, supply use,
ratios and SLO margins from the result document and the problem (prices and supplies from the
resolved cards) and lists every violation. `plan` refuses to print a plan that fails here.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from solver.errors import PlanVerificationError
from solver.problem import ResolvedProblem
from solver.schema.result import PlanResult

REL_TOL = 1e-6  # documents round values to 4-6 decimals; this covers that rounding only


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + REL_TOL) + 1e-9


def _eq(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(b))


def violations(rp: ResolvedProblem, doc: PlanResult) -> list[str]:
    out: list[str] = []
    p = rp.problem
    if doc.status == "infeasible":
        if doc.services or doc.total_devices:
            out.append("an infeasible result lists pools")
        return out
    price = dict(zip(rp.hardware_names, rp.prices))
    supply = dict(zip(rp.hardware_names, rp.supplies))
    power_w = dict(zip(rp.hardware_names, rp.power_w))
    usable_gib = {c.name: c.memory_gib * rp.engine.gpu_memory_utilization for c in rp.hardware}
    margin = p.constraints.safety_margin
    scale = doc.throughput_scale if p.objective == "max_throughput" else 1.0
    if p.objective == "max_throughput" and (scale is None or scale <= 0):
        out.append("max_throughput result without a positive throughput_scale")
        scale = 0.0
    by_name = {s.name: s for s in p.services}
    if sorted(by_name) != sorted(s.name for s in doc.services):
        out.append("the plan's services differ from the problem's")
    used_devices: Counter[str] = Counter()
    total_cost = total_power = 0.0
    for sr in doc.services:
        svc = by_name.get(sr.name)
        if svc is None:
            continue
        cap = defaultdict(float)
        dev = defaultdict(int)
        configs = defaultdict(set)
        for pool in sr.pools:
            where = f"service '{sr.name}' {pool.role} pool on {pool.hardware} tp{pool.tp} pp{pool.pp}"
            if pool.hardware not in price:
                out.append(f"{where}: hardware not in the problem")
                continue
            if pool.instances < 1:
                out.append(f"{where}: {pool.instances} instances")
            if pool.devices_per_instance != pool.tp * pool.pp * pool.dp:
                out.append(f"{where}: devices_per_instance != tp x pp x dp")
            if pool.devices != pool.instances * pool.devices_per_instance:
                out.append(f"{where}: devices != instances x devices_per_instance")
            if abs(pool.capacity_qps - pool.instances * pool.capacity_qps_per_instance) > 1e-6 * max(1, pool.capacity_qps):
                out.append(f"{where}: capacity_qps != instances x capacity per instance")
            cost = pool.devices * price[pool.hardware]
            if abs(cost - pool.cost_per_hour) > 1e-6 * max(1.0, cost):
                out.append(f"{where}: cost ${pool.cost_per_hour:.4f}/h, recomputed ${cost:.4f}/h")
            if svc.runtime == "colocated" and pool.role != "colocated":
                out.append(f"{where}: service is pinned to colocated")
            if svc.runtime == "disaggregated" and pool.role == "colocated":
                out.append(f"{where}: service is pinned to disaggregated")
            pr = pool.predicted
            checks = []
            if svc.slo.ttft_ms and pool.role in ("prefill", "colocated"):
                checks += [("TTFT p50", pr.ttft_ms, svc.slo.ttft_ms.p50), ("TTFT p99", pr.ttft_p99_ms, svc.slo.ttft_ms.p99)]
            if svc.slo.tpot_ms and pool.role in ("decode", "colocated"):
                checks += [("TPOT p50", pr.tpot_ms, svc.slo.tpot_ms.p50), ("TPOT p99", pr.tpot_p99_ms, svc.slo.tpot_ms.p99)]
            for label, value, bound in checks:
                if bound is None:
                    continue
                if value is None or not _le(value * (1 + margin), bound):
                    out.append(f"{where}: predicted {label} {value} ms x (1 + {margin}) exceeds {bound} ms")
            if not _le(pr.memory_gib_per_device, usable_gib[pool.hardware]):
                out.append(f"{where}: {pr.memory_gib_per_device:.2f} GiB per device exceeds usable "
                           f"{usable_gib[pool.hardware]:.2f} GiB")
            cap[pool.role] += pool.capacity_qps
            dev[pool.role] += pool.devices
            configs[pool.role].add((pool.hardware, pool.tp, pool.pp, pool.ep, pool.dp, pool.batch, pool.chunk_tokens))
            used_devices[pool.hardware] += pool.devices
            total_cost += cost
            total_power += pool.devices * power_w[pool.hardware]
        served = cap["colocated"] + min(cap["prefill"], cap["decode"])
        need = svc.workload.qps * (scale or 0.0)
        if not _le(need, served):
            out.append(f"service '{sr.name}': capacity {served:.4f} QPS is below the demand {need:.4f} QPS")
        if not _eq(sr.capacity_qps, served):
            out.append(f"service '{sr.name}': capacity_qps {sr.capacity_qps} != pools' {served:.6f}")
        if not _eq(sr.demand_qps, need):
            out.append(f"service '{sr.name}': demand_qps {sr.demand_qps} != problem's {need:.6f}")
        implied = (
            "mixed" if cap["colocated"] > 0 and dev["prefill"]
            else "disaggregated" if dev["prefill"] else "colocated"
        )
        if sr.runtime != implied:
            out.append(f"service '{sr.name}': runtime '{sr.runtime}' but the pools are {implied}")
        ratio_now = dev["prefill"] / dev["decode"] if dev["prefill"] and dev["decode"] else None
        if (ratio_now is None) != (sr.prefill_decode_ratio is None) or (
            ratio_now is not None and abs(sr.prefill_decode_ratio - ratio_now) > 1e-4  # type: ignore[operator]
        ):
            out.append(f"service '{sr.name}': prefill_decode_ratio {sr.prefill_decode_ratio} != "
                       f"pools' {ratio_now}")
        if (cap["prefill"] > 0) != (cap["decode"] > 0):
            out.append(f"service '{sr.name}': a prefill pool needs a decode pool and vice versa")
        ratio = p.constraints.prefill_decode_ratio
        if dev["prefill"] and dev["decode"]:
            r = dev["prefill"] / dev["decode"]
            if ratio.min is not None and not _le(ratio.min, r):
                out.append(f"service '{sr.name}': prefill:decode ratio {r:.4f} below {ratio.min}")
            if ratio.max is not None and not _le(r, ratio.max):
                out.append(f"service '{sr.name}': prefill:decode ratio {r:.4f} above {ratio.max}")
        k = p.search.max_distinct_configs
        if k is not None:
            for role, cfgs in configs.items():
                if len(cfgs) > k:
                    out.append(f"service '{sr.name}': {len(cfgs)} distinct {role} configurations, limit {k}")
    for name, used in used_devices.items():
        s = supply.get(name)
        if s is not None and used > s:
            out.append(f"{name}: {used} devices used, supply {s}")
    if p.budget_per_hour is not None and not _le(total_cost, p.budget_per_hour):
        out.append(f"cost ${total_cost:,.2f}/h exceeds the budget ${p.budget_per_hour:,.2f}/h")
    if p.constraints.power_kw is not None and not _le(total_power / 1000, p.constraints.power_kw):
        out.append(f"power {total_power / 1000:.2f} kW exceeds the cap {p.constraints.power_kw} kW")
    if abs(doc.cost_per_hour - total_cost) > 1e-6 * max(1.0, total_cost):
        out.append(f"cost_per_hour {doc.cost_per_hour} != sum of pools {total_cost}")
    if not _eq(doc.power_kw, total_power / 1000):
        out.append(f"power_kw {doc.power_kw} != sum of pools {total_power / 1000:.6f}")
    if doc.objective is None or doc.objective.kind != p.objective:
        out.append(f"objective {doc.objective} does not match the problem's {p.objective}")
    else:
        target = doc.cost_per_hour if p.objective == "min_cost" else (doc.throughput_scale or 0.0)
        if not _eq(doc.objective.value, target):
            out.append(f"objective.value {doc.objective.value} != {target}")
    if doc.infeasible_because:
        out.append("a feasible result lists reasons for infeasibility")
    if doc.total_devices != sum(used_devices.values()):
        out.append("total_devices != sum of pools")
    if dict(doc.devices_by_type) != {k: v for k, v in used_devices.items() if v}:
        out.append("devices_by_type != sum of pools")
    return out


def verify(rp: ResolvedProblem, doc: PlanResult) -> None:
    bad = violations(rp, doc)
    if bad:
        raise PlanVerificationError(
            "the solved plan failed independent verification (a fleetplan bug; nothing printed):\n  "
            + "\n  ".join(bad)
        )

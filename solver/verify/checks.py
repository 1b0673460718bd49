"""Independent re-check of a plan document against the problem, in plain floats.

This module does not import the fleet model: it recomputes capacity, cost, power, supply use,
ratios and SLO margins from the result document and the problem (prices and supplies from the
resolved cards) and lists every violation. `plan` refuses to print a plan that fails here.

What a service can serve is recomputed here by enumerating cuts of each site's prefill ->
decode network (the model's `routes.max_flow` uses augmenting paths instead), with each prefill
pool's KV reach derived from the cards' scale-out links. Failure domains are checked by
enumerating the adversary: every way to remove k instances of one hardware type from a
service's pools, and every site.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from solver.errors import PlanVerificationError
from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult, Pool

REL_TOL = 1e-6  # documents round values to 4-6 decimals; this covers that rounding only
MAX_CUT_GROUPS = 16  # prefill reach groups per site enumerated (2^16 subsets)


# ---- what pools can serve (floats, by cut enumeration) ------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A pool reduced to what serving needs: role, type, site, capacity and KV reach."""

    role: str
    hw: str
    site: str | None
    cap_per_instance: float
    instances: int
    reach: frozenset[str]  # prefill: decode types its KV link is at least as fast to

    @property
    def cap(self) -> float:
        return self.cap_per_instance * self.instances


def _card_link(rp: ResolvedProblem, name: str) -> tuple[float, float]:
    c = rp.hardware[rp.hardware_names.index(name)]
    return c.scale_out.bandwidth_gb_s * c.efficiency.scale_out, c.scale_out.latency_us


def shared_link(rp: ResolvedProblem, p: str, d: str) -> tuple[float, float]:
    """(GB/s per device, latency us) of the KV link from a prefill card to a decode card: the
    card's own scale-out link for the same type, else the slower of the two."""
    bp, lp = _card_link(rp, p)
    if p == d:
        return bp, lp
    bd, ld = _card_link(rp, d)
    return min(bp, bd), max(lp, ld)


def units_of(rp: ResolvedProblem, pools: list[Pool]) -> list[Unit]:
    """The pools as flow units; a prefill pool reaches the decode types its KV link serves (its
    own type only when the problem forbids heterogeneous prefill/decode)."""
    same_type_only = not rp.problem.constraints.heterogeneous_prefill_decode
    out = []
    for p in pools:
        if p.hardware not in rp.hardware_names:
            continue
        reach: frozenset[str] = frozenset()
        if p.role == "prefill":
            own = _card_link(rp, p.hardware)
            bw = p.kv_link_gb_s if p.kv_link_gb_s is not None else own[0]
            lat = p.kv_link_latency_us if p.kv_link_latency_us is not None else own[1]
            reach = frozenset(
                d for d in rp.hardware_names
                if (d == p.hardware or not same_type_only)
                and shared_link(rp, p.hardware, d)[0] >= bw * (1 - REL_TOL)
                and shared_link(rp, p.hardware, d)[1] <= lat * (1 + REL_TOL) + 1e-9
            )
        out.append(Unit(p.role, p.hardware, p.site, p.capacity_qps_per_instance, p.instances, reach))
    return out


def _site_servable(units: list[Unit]) -> float:
    """Colocated capacity + the max flow from prefill to decode, as the smallest cut."""
    col = sum(u.cap for u in units if u.role == "colocated")
    dec: dict[str, float] = defaultdict(float)
    for u in units:
        if u.role == "decode":
            dec[u.hw] += u.cap
    groups: dict[frozenset[str], float] = defaultdict(float)
    for u in units:
        if u.role == "prefill":
            r = u.reach & frozenset(dec)
            if r:
                groups[r] += u.cap
    keys = sorted(groups, key=sorted)
    if len(keys) > MAX_CUT_GROUPS:
        raise PlanVerificationError(f"{len(keys)} prefill reach groups at one site: too many to verify")
    best = float("inf") if keys else 0.0
    for bits in itertools.product((0, 1), repeat=len(keys)):
        # bits[i] = 1: group i is cut (its capacity counts); otherwise its decode types are cut
        uncut = [g for g, b in zip(keys, bits) if not b]
        need = frozenset().union(*uncut) if uncut else frozenset()
        value = sum(groups[g] for g, b in zip(keys, bits) if b) + sum(dec[d] for d in need)
        best = min(best, value)
    return col + best


def servable(units: list[Unit]) -> float:
    """What a service's pools can serve: the sum over sites."""
    sites = sorted({u.site or "" for u in units})
    return sum(_site_servable([u for u in units if (u.site or "") == k]) for k in sites)


def worst_instance_loss(units: list[Unit], k: int) -> tuple[float, str | None]:
    """The least a service can serve after losing k instances of one hardware type (every way
    to take them from its pools of that type), and the type."""
    worst, which = float("inf"), None
    for hw in sorted({u.hw for u in units}):
        idx = [i for i, u in enumerate(units) if u.hw == hw]
        lose = min(k, sum(units[i].instances for i in idx))
        for taken in itertools.product(*[range(min(units[i].instances, lose) + 1) for i in idx]):
            if sum(taken) != lose:
                continue
            left = list(units)
            for i, t in zip(idx, taken):
                left[i] = replace(units[i], instances=units[i].instances - t)
            v = servable(left)
            if v < worst:
                worst, which = v, hw
    return (worst, which) if which is not None else (servable(units), None)


def worst_site_loss(units: list[Unit], sites: tuple[str, ...]) -> tuple[float, str | None]:
    worst, which = float("inf"), None
    for k in sites:
        v = servable([u for u in units if u.site != k])
        if v < worst:
            worst, which = v, k
    return worst, which


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + REL_TOL) + 1e-9


def _eq(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(b))


def violations(rp: ResolvedProblem, doc: PlanResult, compared: bool = True) -> list[str]:
    out: list[str] = []
    p = rp.problem
    if doc.status == "infeasible":
        if doc.services or doc.total_devices:
            out.append("an infeasible result lists pools")
        return out
    price = dict(zip(rp.hardware_names, rp.prices))
    site_price = {(k, h): rp.site_prices[i][j] for i, k in enumerate(rp.site_names)
                  for j, h in enumerate(rp.hardware_names)}
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
    at_site: Counter[tuple[str, str]] = Counter()
    site_power: defaultdict[str, float] = defaultdict(float)
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
            if rp.site_names:
                if pool.site not in rp.site_names:
                    out.append(f"{where}: site {pool.site!r} is not one of the problem's sites")
                    continue
                if svc.sites is not None and pool.site not in svc.sites:
                    out.append(f"{where}: at site '{pool.site}', but the service is pinned to {svc.sites}")
                at_site[(pool.site, pool.hardware)] += pool.devices
                site_power[pool.site] += pool.devices * power_w[pool.hardware]
            elif pool.site is not None:
                out.append(f"{where}: site '{pool.site}' given, but the problem has no sites")
            if pool.devices_per_instance != pool.tp * pool.pp * pool.dp:
                out.append(f"{where}: devices_per_instance != tp x pp x dp")
            if pool.devices != pool.instances * pool.devices_per_instance:
                out.append(f"{where}: devices != instances x devices_per_instance")
            if abs(pool.capacity_qps - pool.instances * pool.capacity_qps_per_instance) > 1e-6 * max(1, pool.capacity_qps):
                out.append(f"{where}: capacity_qps != instances x capacity per instance")
            cost = pool.devices * (site_price[(pool.site, pool.hardware)] if rp.site_names else price[pool.hardware])
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
        units = units_of(rp, sr.pools)
        served = servable(units)
        need = svc.workload.qps * (scale or 0.0)
        out += _route_violations(rp, sr, units)
        out += _survive_violations(rp, sr, units, need)
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
    for i, site in enumerate(rp.site_names):
        for j, name in enumerate(rp.hardware_names):
            limit, used = rp.site_supplies[i][j], at_site[(site, name)]
            if limit is not None and used > limit:
                out.append(f"{name} at site '{site}': {used} devices used, supply {limit}")
        cap_kw = rp.site_power_kw[i]
        if cap_kw is not None and not _le(site_power[site] / 1000, cap_kw):
            out.append(f"site '{site}': power {site_power[site] / 1000:.2f} kW exceeds its cap {cap_kw} kW")
    out += _sites_summary_violations(rp, doc, at_site, site_price)
    out += _hetero_violations(doc, compared)
    out += _transition_violations(rp, doc)
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


def _route_violations(rp: ResolvedProblem, sr, units: list[Unit]) -> list[str]:
    """KV routes join pools that exist at their site and a link the prefill pool reaches;
    they carry the service's disaggregated traffic; a cross-type route is reported exactly
    when the service is heterogeneous."""
    out: list[str] = []
    routes = sr.kv_routes or []
    for r in routes:
        at = [u for u in units if (u.site or None) == r.site]
        pre = [u for u in at if u.role == "prefill" and u.hw == r.prefill_hardware]
        if not pre or not any(u.role == "decode" and u.hw == r.decode_hardware for u in at):
            out.append(f"service '{sr.name}': KV route {r.prefill_hardware} -> {r.decode_hardware} "
                       "joins pools the plan does not have there")
        elif not any(r.decode_hardware in u.reach for u in pre):
            out.append(f"service '{sr.name}': KV route {r.prefill_hardware} -> {r.decode_hardware}: "
                       "no prefill pool was sized for that link")
        link = shared_link(rp, r.prefill_hardware, r.decode_hardware) if r.prefill_hardware in rp.hardware_names \
            and r.decode_hardware in rp.hardware_names else None
        if link is not None and not (_eq(r.link_gb_s, link[0]) and _eq(r.link_latency_us, link[1])):
            out.append(f"service '{sr.name}': KV route {r.prefill_hardware} -> {r.decode_hardware} "
                       f"link {r.link_gb_s} GB/s {r.link_latency_us} us, the cards give {link}")
    if routes and not _eq(sum(r.qps for r in routes), sr.disaggregated_qps):
        out.append(f"service '{sr.name}': KV routes carry {sum(r.qps for r in routes):.4f} QPS, "
                   f"the disaggregated traffic is {sr.disaggregated_qps}")
    if routes and not any(r.prefill_hardware != r.decode_hardware and r.qps > 0 for r in routes):
        out.append(f"service '{sr.name}': kv_routes listed for a service without cross-type routes")
    return out


def _survive_violations(rp: ResolvedProblem, sr, units: list[Unit], need: float) -> list[str]:
    out: list[str] = []
    survive = rp.problem.constraints.survive
    rep = sr.survive
    if survive is None:
        if rep is not None:
            out.append(f"service '{sr.name}': survive reported, the problem asks none")
        return out
    if rep is None:
        return [f"service '{sr.name}': the problem asks to survive failures; no survive report"]
    if survive.lose_instances:
        worst, hw = worst_instance_loss(units, survive.lose_instances)
        if not _le(need, worst):
            out.append(f"service '{sr.name}': after losing {survive.lose_instances} {hw} instance(s) "
                       f"it serves {worst:.4f} QPS, below the demand {need:.4f} QPS")
        if rep.worst_instances_loss_qps is None or not _eq(rep.worst_instances_loss_qps, worst):
            out.append(f"service '{sr.name}': worst_instances_loss_qps {rep.worst_instances_loss_qps} "
                       f"!= {worst:.6f}")
    if survive.lose_site:
        worst, site = worst_site_loss(units, rp.site_names)
        if not _le(need, worst):
            out.append(f"service '{sr.name}': after losing site '{site}' it serves {worst:.4f} QPS, "
                       f"below the demand {need:.4f} QPS")
        if rep.worst_site_loss_qps is None or not _eq(rep.worst_site_loss_qps, worst):
            out.append(f"service '{sr.name}': worst_site_loss_qps {rep.worst_site_loss_qps} != {worst:.6f}")
    return out


def _sites_summary_violations(rp: ResolvedProblem, doc: PlanResult, at_site, site_price) -> list[str]:
    if not rp.site_names:
        return ["sites summary given, the problem has no sites"] if doc.sites is not None else []
    if doc.sites is None or [x.name for x in doc.sites] != list(rp.site_names):
        return ["the sites summary does not list the problem's sites"]
    out = []
    for x in doc.sites:
        by_type = {h: n for (k, h), n in sorted(at_site.items()) if k == x.name and n}
        if dict(x.devices_by_type) != by_type or x.devices != sum(by_type.values()):
            out.append(f"site '{x.name}': devices {dict(x.devices_by_type)} != pools' {by_type}")
        cost = sum(n * site_price[(x.name, h)] for h, n in by_type.items())
        if abs(cost - x.cost_per_hour) > 1e-6 * max(1.0, cost):
            out.append(f"site '{x.name}': cost_per_hour {x.cost_per_hour} != pools' {cost:.6f}")
    return out


def _hetero_violations(doc: PlanResult, compared: bool = True) -> list[str]:
    hetero = any(s.kv_routes for s in doc.services)
    h = doc.heterogeneity
    if not hetero:
        return ["a homogeneous plan carries a heterogeneity comparison"] if h is not None else []
    if h is None:
        if not compared:  # a what-if solve that asked for the plan only
            return []
        return ["a heterogeneous plan does not state its saving against the best homogeneous plan"]
    out = []
    if h.homogeneous_status == "infeasible":
        if h.homogeneous_cost_per_hour is not None or h.saving_per_hour is not None:
            out.append("heterogeneity: an infeasible homogeneous plan with a cost or saving")
        return out
    if doc.objective is not None and doc.objective.kind == "min_cost":
        if h.homogeneous_cost_per_hour is None or h.saving_per_hour is None or h.saving_pct is None:
            return ["heterogeneity: the homogeneous cost or the saving is missing"]
        if not _eq(h.saving_per_hour, h.homogeneous_cost_per_hour - doc.cost_per_hour):
            out.append(f"heterogeneity: saving {h.saving_per_hour} != homogeneous "
                       f"{h.homogeneous_cost_per_hour} - plan {doc.cost_per_hour}")
        pct = 100 * h.saving_per_hour / h.homogeneous_cost_per_hour if h.homogeneous_cost_per_hour else 0.0
        if abs(h.saving_pct - pct) > 1e-3:
            out.append(f"heterogeneity: saving_pct {h.saving_pct} != {pct:.4f}")
        if h.exact and h.saving_per_hour < -1e-6:
            out.append("heterogeneity: the heterogeneous optimum costs more than the homogeneous one")
    return out


def transition_counts(rp: ResolvedProblem, pools: list[Pool]) -> tuple[int, int, float, float]:
    """(devices moved, instances re-sharded, drained device-hours, drained cost USD) of going
    from the problem's current deployment to `pools` (see solver/transition.py for the rules)."""
    tr = rp.problem.transition
    assert tr is not None and rp.problem.current is not None
    cur_cfg: Counter[tuple] = Counter()
    cur_dev: Counter[tuple] = Counter()
    for c in rp.problem.current:
        hw = rp.hardware_names[rp.hw_index(c.hardware)]
        cur_cfg[(c.service, c.role, c.site, hw, c.tp, c.pp, c.ep, c.dp)] += c.instances
        cur_dev[(c.service, c.role, c.site, hw)] += c.instances * c.devices_per_instance
    new_cfg: Counter[tuple] = Counter()
    new_dev: Counter[tuple] = Counter()
    per_inst: dict[tuple, tuple[int, float]] = {}
    for sname, p in pools:
        key = (sname, p.role, p.site, p.hardware, p.tp, p.pp, p.ep, p.dp)
        new_cfg[key] += p.instances
        new_dev[key[:4]] += p.devices
        per_inst[key] = (p.devices_per_instance, p.cost_per_hour / p.instances)
    resharded = drained_dev = 0
    drained_cost = 0.0
    for key, n in new_cfg.items():
        extra = max(0, n - cur_cfg.get(key, 0))
        resharded += extra
        drained_dev += extra * per_inst[key][0]
        drained_cost += extra * per_inst[key][1] * tr.drained_hours_per_change
    moved = sum(max(0, n - cur_dev.get(g, 0)) for g, n in new_dev.items())
    return moved, resharded, drained_dev * tr.drained_hours_per_change, drained_cost


def _transition_violations(rp: ResolvedProblem, doc: PlanResult) -> list[str]:
    tr, rep = rp.problem.transition, doc.transition
    if tr is None or doc.status == "infeasible":
        return ["a transition report without a transition in the problem"] if rep is not None and tr is None else []
    if rep is None:
        return ["the problem describes a current deployment; the plan reports no transition"]
    out = []
    pools = [(s.name, p) for s in doc.services for p in s.pools]
    moved, resharded, drained_h, drained_cost = transition_counts(rp, pools)
    if (rep.devices_moved, rep.instances_resharded) != (moved, resharded):
        out.append(f"transition: moved/re-sharded {rep.devices_moved}/{rep.instances_resharded}, "
                   f"recounted {moved}/{resharded}")
    checks = [
        ("drained_device_hours", rep.drained_device_hours, drained_h),
        ("moved_cost_usd", rep.moved_cost_usd, moved * tr.per_device_moved_usd),
        ("resharded_cost_usd", rep.resharded_cost_usd, resharded * tr.per_instance_resharded_usd),
        ("drained_cost_usd", rep.drained_cost_usd, drained_cost),
        ("switching_cost_usd", rep.switching_cost_usd,
         rep.moved_cost_usd + rep.resharded_cost_usd + rep.drained_cost_usd),
        ("plan_cost_per_hour", rep.plan_cost_per_hour, doc.cost_per_hour),
        ("saving_per_hour", rep.saving_per_hour, rep.current_cost_per_hour - rep.plan_cost_per_hour),
        ("saving_over_horizon_usd", rep.saving_over_horizon_usd, rep.saving_per_hour * tr.horizon_hours),
    ]
    cur_cost = sum(c.cost_per_hour for c in rep.current_pools)
    checks.append(("current_cost_per_hour", rep.current_cost_per_hour, cur_cost))
    for name, got, want in checks:
        if abs(got - want) > 1e-6 * max(1.0, abs(want)):
            out.append(f"transition: {name} {got} != {want:.6f}")
    if rep.saving_per_hour > 0:
        payback = rep.switching_cost_usd / rep.saving_per_hour
        if rep.payback_hours is None or abs(rep.payback_hours - payback) > 1e-6 * max(1.0, payback):
            out.append(f"transition: payback_hours {rep.payback_hours} != {payback:.6f}")
    elif rep.payback_hours is not None:
        out.append("transition: a payback time without a saving")
    move = (not rep.current_meets_problem) or rep.saving_over_horizon_usd > rep.switching_cost_usd
    if rep.recommendation != ("move" if move else "stay"):
        out.append(f"transition: recommends '{rep.recommendation}', the figures say "
                   f"'{'move' if move else 'stay'}'")
    return out


def verify(rp: ResolvedProblem, doc: PlanResult, compared: bool = True) -> None:
    """Raise when the plan breaks any constraint. `compared=False`: the caller asked `plan` not
    to solve the homogeneous comparison, so its absence is not a violation."""
    bad = violations(rp, doc, compared)
    if bad:
        raise PlanVerificationError(
            "the solved plan failed independent verification (a fleetplan bug; nothing printed):\n  "
            + "\n  ".join(bad)
        )

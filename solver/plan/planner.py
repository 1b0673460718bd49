"""The planning flow: problem -> candidates -> CP-SAT fleet model -> verify -> result document."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from pathlib import Path

import numpy as np

from solver import __version__
from solver.candidates.build import build_candidates
from solver.candidates.table import CandidateSet
from solver.catalog.calibration import DEFAULT_ENGINE, load_calibration
from solver.fleet import integerize as ints
from solver.fleet import routes
from solver.fleet.instance import FleetInstance, build_instance
from solver.fleet.solve import FleetSolution, SolveOptions, solve
from solver.perf.operators.tables import measured_tables
from solver.plan.transition import transition_report
from solver.problem.load import ResolvedProblem, load_problem
from solver.schema.result import (
    Assumptions,
    CalibrationUse,
    HardwareAssumption,
    HeteroComparison,
    HomogeneousService,
    KvRoute,
    Objective,
    PlanResult,
    Pool,
    Predicted,
    ProfileUse,
    PruneCounts,
    ServiceResult,
    ServiceSurvival,
    SiteResult,
    SiteShare,
    SloBounds,
    SolverInfo,
    StageInfo,
    WorkloadAssumption,
)
from solver.schema.roles import COLOCATED, DECODE, PREFILL, ROLES
from solver.verify.checks import units_of, verify, worst_instance_loss, worst_site_loss


def _f(x: float | None, nd: int = 4) -> float | None:
    if x is None or not np.isfinite(x):
        return None
    return round(float(x), nd)


def _slo_bounds(svc) -> SloBounds:
    t, o = svc.slo.ttft_ms, svc.slo.tpot_ms
    return SloBounds(
        ttft_p50_ms=t.p50 if t else None, ttft_p99_ms=t.p99 if t else None,
        tpot_p50_ms=o.p50 if o else None, tpot_p99_ms=o.p99 if o else None,
    )


def _unit_cost(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, c: int) -> float:
    """USD per hour of one instance of column c (at its site's price)."""
    r = int(inst.row[c])
    if not rp.site_names:
        return float(cs.table.cost_per_hour[r])
    return int(cs.table.devices[r]) * rp.price_at(int(inst.site[c]), int(cs.table.hw[r]))


def _pools(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, sol: FleetSolution, si: int,
           hetero: bool) -> list[Pool]:
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
            cost_per_hour=round(n * _unit_cost(rp, cs, inst, int(c)), 6),
            predicted=Predicted(
                ttft_ms=_f(t.ttft_p50_ms[r]), tpot_ms=_f(t.tpot_p50_ms[r]),
                memory_gib_per_device=round(float(t.memory_gib[r]), 3),
                ttft_p99_ms=_f(t.ttft_p99_ms[r]), tpot_p99_ms=_f(t.tpot_p99_ms[r]),
            ),
            precision=svc.precision,
            chunk_tokens=int(t.chunk[r]) if role == COLOCATED else None,
            power_kw=round(n * float(t.power_w[r]) / 1000, 6),
            capacity_qps_per_instance=round(per_inst, 6),
            site=rp.site_names[int(inst.site[c])] if rp.site_names else None,
            kv_link_gb_s=round(float(t.kv_bw[r]) / 1e9, 6) if kv else None,
            kv_link_latency_us=round(float(t.kv_lat[r]) * 1e6, 6) if kv else None,
            kv_transfer_ms=_f(t.kv_ms[r]) if kv else None,
        ))
    order = {"colocated": 0, "prefill": 1, "decode": 2}
    pools.sort(key=lambda p: (order[p.role], rp.site_of(p.site), p.hardware, p.tp, p.pp, p.ep,
                              p.dp, p.batch, -(p.kv_link_gb_s or 0.0)))
    return pools


def _route_groups(inst: FleetInstance, sol: FleetSolution, si: int, k: int, weight: np.ndarray):
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


def _kv_routes(rp, cs, inst, sol, si) -> list[KvRoute]:
    """The disaggregated traffic of service si per (site, prefill type, decode type), split so
    that as little as possible crosses types; empty when nothing has to cross."""
    out: list[KvRoute] = []
    cross = False
    for k in range(inst.n_sites):
        amount = int(round(float(sol.site_disaggregated[si, k]) * ints.QPS_SCALE))
        if amount <= 0:
            continue
        groups, decode = _route_groups(inst, sol, si, k, inst.cap)
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
                qps=round(units / ints.QPS_SCALE, 6),
                link_gb_s=round(float(bw) / 1e9, 6), link_latency_us=round(float(lat) * 1e6, 6),
            ))
    return out if cross else []


def _site_capacity(inst: FleetInstance, sol: FleetSolution, cs: CandidateSet, si: int, k: int) -> float:
    """What service si's pools at site k can serve: colocated + the max flow through KV routes."""
    qps = np.array([round(float(cs.table.capacity_qps[int(r)]), 6) for r in inst.row])
    used = (inst.service == si) & (inst.site == k) & (sol.counts > 0)
    col = float(sum(qps[c] * sol.counts[c] for c in np.flatnonzero(used & (inst.role == COLOCATED))))
    groups, decode = _route_groups(inst, sol, si, k, qps)
    return col + routes.max_flow(groups, decode)


def _service_result(rp, cs, inst, sol, si) -> ServiceResult:
    svc = rp.problem.services[si]
    kv_routes = _kv_routes(rp, cs, inst, sol, si)
    pools = _pools(rp, cs, inst, sol, si, bool(kv_routes))
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
        per_site = [_site_capacity(inst, sol, cs, si, k) for k in range(inst.n_sites)]
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
        slo=_slo_bounds(svc),
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


def _sites_summary(rp: ResolvedProblem, services: list[ServiceResult]) -> list[SiteResult] | None:
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


def _homogeneous(rp: ResolvedProblem, cs: CandidateSet, opts: SolveOptions, status: str,
                 cost: float, scale: float | None) -> HeteroComparison:
    """Solve the problem again with every KV route kept within one hardware type (the cost,
    then the fewest devices; the distinct-configuration tie-break does not change either)."""
    inst = build_instance(rp, cs, heterogeneous=False)
    sol = solve(inst, opts.follow_up(max_stages=2))
    if sol.status == "infeasible":
        return HeteroComparison(
            homogeneous_status="infeasible", homogeneous_cost_per_hour=None,
            homogeneous_devices_by_type={}, homogeneous_services=[], saving_per_hour=None,
            saving_pct=None, exact=status == "optimal", infeasible_because=sol.infeasible_groups,
        )
    by_type: Counter[str] = Counter()
    services = []
    for si, svc in enumerate(rp.problem.services):
        dev: Counter[str] = Counter()
        svc_cost = 0.0
        for c in np.flatnonzero((inst.service == si) & (sol.counts > 0)):
            n = int(sol.counts[c])
            d = n * int(inst.devices[c])
            dev[ROLES[int(inst.role[c])]] += d
            by_type[rp.hardware_names[int(inst.hw[c])]] += d
            svc_cost += n * _unit_cost(rp, cs, inst, int(c))
        has_col, has_dis = dev["colocated"] > 0, dev["prefill"] > 0
        services.append(HomogeneousService(
            name=svc.name,
            runtime="mixed" if has_col and has_dis else ("disaggregated" if has_dis else "colocated"),
            prefill_decode_ratio=round(dev["prefill"] / dev["decode"], 4) if has_dis and dev["decode"] else None,
            devices=sum(dev.values()), cost_per_hour=round(svc_cost, 6),
        ))
    h_cost = round(sum(s.cost_per_hour for s in services), 6)
    exact = status == "optimal" and sol.status == "optimal"
    types = {k: by_type[k] for k in sorted(by_type)}
    if rp.problem.objective == "max_throughput":
        gain = 100 * ((scale or 0.0) - sol.scale) / sol.scale if sol.scale else None
        return HeteroComparison(
            homogeneous_status=sol.status, homogeneous_cost_per_hour=h_cost,
            homogeneous_throughput_scale=sol.scale, homogeneous_devices_by_type=types,
            homogeneous_services=services, saving_per_hour=None, saving_pct=None,
            throughput_gain_pct=None if gain is None else round(gain, 4), exact=exact,
            infeasible_because=[],
        )
    saving = round(h_cost - cost, 6)
    return HeteroComparison(
        homogeneous_status=sol.status, homogeneous_cost_per_hour=h_cost,
        homogeneous_devices_by_type=types, homogeneous_services=services, saving_per_hour=saving,
        saving_pct=round(100 * saving / h_cost, 4) if h_cost else 0.0, exact=exact,
        infeasible_because=[],
    )


def _solver_info(cs: CandidateSet, sol: FleetSolution | None, opts: SolveOptions, wall: float | None, in_model: int) -> SolverInfo:
    return SolverInfo(
        wall_s=round(wall, 3) if wall is not None else None,
        candidates_evaluated=cs.stats.evaluated,
        candidates_in_model=in_model,
        gap=round(sol.gap, 6) if sol else 0.0,
        pruned=PruneCounts(**cs.stats.pruned),
        stages=[StageInfo(name=s.name, status=s.status, value=s.value) for s in (sol.stages if sol else [])],
        seed=opts.seed, workers=opts.workers, time_limit_s=opts.time_limit_s, version=__version__,
    )


def _no_runtime_left(rp: ResolvedProblem, cs: CandidateSet) -> list[str]:
    """Services whose every allowed runtime lost all candidates in pruning: the closest misses."""
    reasons: list[str] = []
    for si in range(len(rp.problem.services)):
        roles = cs.roles[si]
        col_ok = COLOCATED in roles and (si, COLOCATED) not in cs.misses
        dis_ok = PREFILL in roles and (si, PREFILL) not in cs.misses and (si, DECODE) not in cs.misses
        if col_ok or dis_ok:
            continue
        for role in roles:
            reasons += cs.misses.get((si, role), [])
    return reasons


def _infeasible(rp, cs, opts, wall, reasons, sol=None) -> PlanResult:
    return PlanResult(
        problem=rp.name, status="infeasible", objective=None, cost_per_hour=0.0, total_devices=0,
        devices_by_type={}, services=[], infeasible_because=reasons,
        solver=_solver_info(cs, sol, opts, wall, len(cs.table)), power_kw=0.0,
        assumptions=assumptions(rp),
    )


REMEASURE_AFTER_DAYS = 180  # profiles older than this are flagged for re-measurement


def assumptions(rp: ResolvedProblem, today: dt.date | None = None) -> Assumptions:
    """Which engine, calibration and measured tables the predictions rest on, and which of the
    tables are stale or were measured on another engine version than the one declared."""
    engine = rp.problem.software.engine or DEFAULT_ENGINE
    declared = rp.problem.software.version
    today = today or dt.date.today()
    cal = load_calibration(engine)
    uses: list[ProfileUse] = []
    missing: list[str] = []
    for card, tables in zip(rp.hardware, measured_tables(rp.hardware, engine).members):
        if not tables.provenance:
            missing.append(card.name)
        for family, prov in sorted(tables.provenance.items()):
            age = (today - dt.date.fromisoformat(prov.collected_on)).days if prov.collected_on else None
            uses.append(ProfileUse(
                hardware=card.name, family=family, framework=prov.framework,
                framework_version=prov.framework_version, collected_on=prov.collected_on,
                age_days=age, content_sha256=prov.content_sha256,
                source=prov.source.name if prov.source else "local measurement",
                stale=age is None or age > REMEASURE_AFTER_DAYS,
                stack_differs=declared is not None and declared != prov.framework_version,
            ))
    return Assumptions(
        engine=engine, engine_version=declared,
        calibration=None if cal is None else CalibrationUse(
            engine=cal.engine, fitted_on=cal.fitted_on, fitted_at=cal.fitted_at,
            source_sha256=cal.source_sha256, ttft_median_abs_pct=cal.fit_error.ttft_median_abs_pct,
            tpot_median_abs_pct=cal.fit_error.tpot_median_abs_pct),
        profiles=uses, hardware_without_profiles=missing, remeasure_after_days=REMEASURE_AFTER_DAYS,
        workloads=[
            WorkloadAssumption(
                service=s.name, model=rp.models[i].name, qps=s.workload.qps,
                input_tokens_mean=s.workload.input_tokens.mean_tokens,
                input_tokens_p99=s.workload.input_tokens.p99_tokens,
                output_tokens_mean=s.workload.output_tokens.mean_tokens,
                output_tokens_p99=s.workload.output_tokens.p99_tokens,
                slo=_slo_bounds(s),
                routing=rp.archs[i].expert_routing.description if rp.archs[i].moe_layers else None,
            )
            for i, s in enumerate(rp.problem.services)
        ],
        hardware=[
            HardwareAssumption(
                name=c.name, price_per_hour=rp.prices[j],
                price_source="problem file" if h.price_per_hour is not None else c.price_source,
                supply=rp.supplies[j], power_w=rp.power_w[j],
            )
            for j, (h, c) in enumerate(zip(rp.problem.hardware, rp.hardware))
        ],
        safety_margin=rp.problem.constraints.safety_margin,
        fleetplan_version=__version__,
    )


def plan(
    rp: ResolvedProblem, opts: SolveOptions = SolveOptions(), timings: bool = True,
    candidates: CandidateSet | None = None, compare: bool = True,
) -> PlanResult:
    """Plan a resolved problem; the returned document has passed `verify`.

    `candidates`: the problem's candidate tables when the caller already has them (what-if
    sweeps reuse one build across variants that change only demand or prices: see
    `problem.derive` and `candidates.reprice`); built here otherwise. `compare`: solve a
    heterogeneous plan again with every KV route inside one type to state its saving; the
    decision record's what-if solves, which only need the plan, pass False."""
    t0 = time.perf_counter()
    cs = candidates if candidates is not None else build_candidates(rp)
    reasons = _no_runtime_left(rp, cs)
    if reasons:
        doc = _infeasible(rp, cs, opts, time.perf_counter() - t0 if timings else None, reasons)
        verify(rp, doc)
        return doc
    inst = build_instance(rp, cs)
    sol = solve(inst, opts)
    if sol.status == "infeasible":
        doc = _infeasible(rp, cs, opts, time.perf_counter() - t0 if timings else None,
                          sol.infeasible_groups, sol)
        verify(rp, doc)
        return doc
    services = [_service_result(rp, cs, inst, sol, si) for si in range(len(rp.problem.services))]
    by_type: Counter[str] = Counter()
    for s in services:
        for p in s.pools:
            by_type[p.hardware] += p.devices
    cost = round(sum(s.cost_per_hour for s in services), 6)
    objective = (
        Objective(kind="min_cost", value=cost)
        if rp.problem.objective == "min_cost"
        else Objective(kind="max_throughput", value=float(sol.scale or 0.0))
    )
    hetero = (_homogeneous(rp, cs, opts, sol.status, cost, sol.scale)
              if compare and any(s.kv_routes for s in services) else None)
    doc = PlanResult(
        problem=rp.name, status=sol.status, objective=objective, cost_per_hour=cost,
        total_devices=sum(by_type.values()),
        devices_by_type={k: by_type[k] for k in sorted(by_type)},
        services=services, infeasible_because=[],
        solver=_solver_info(cs, sol, opts, None, len(inst)),
        power_kw=round(sum(p.power_kw for s in services for p in s.pools), 6),
        throughput_scale=sol.scale,
        assumptions=assumptions(rp),
        sites=_sites_summary(rp, services),
        heterogeneity=hetero,
    )
    if rp.problem.transition is not None:
        doc = doc.model_copy(update={"transition": transition_report(rp, doc)})
    if timings:
        doc = doc.model_copy(update={"solver": doc.solver.model_copy(
            update={"wall_s": round(time.perf_counter() - t0, 3)})})
    verify(rp, doc, compared=compare)
    return doc


def plan_file(path: str | Path, opts: SolveOptions = SolveOptions(), timings: bool = True) -> PlanResult:
    return plan(load_problem(path), opts, timings)

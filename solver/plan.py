"""The planning flow: problem -> candidates -> CP-SAT fleet model -> verify -> result document."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from pathlib import Path

import numpy as np

from solver import __version__
from solver.candidates import COLOCATED, DECODE, PREFILL, ROLES, CandidateSet, build_candidates
from solver.fleet.instance import build_instance
from solver.fleet.solve import FleetSolution, SolveOptions, solve
from solver.perf.calibration import DEFAULT_ENGINE, load_calibration, measured_tables
from solver.problem import ResolvedProblem, load_problem
from solver.schema.result import (
    Assumptions,
    CalibrationUse,
    Objective,
    PlanResult,
    Pool,
    Predicted,
    ProfileUse,
    PruneCounts,
    ServiceResult,
    SloBounds,
    SolverInfo,
    StageInfo,
)
from solver.verify import verify


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


def _pools(rp: ResolvedProblem, cs: CandidateSet, sol: FleetSolution, si: int) -> list[Pool]:
    t = cs.table
    svc = rp.problem.services[si]
    pools = []
    for r in np.flatnonzero((t.service == si) & (sol.counts > 0)):
        n = int(sol.counts[r])
        role = int(t.role[r])
        name = rp.hardware_names[int(t.hw[r])]
        per_inst = float(t.capacity_qps[r])
        pools.append(Pool(
            role=ROLES[role], hardware=name, tp=int(t.tp[r]), pp=int(t.pp[r]), ep=int(t.ep[r]),
            dp=int(t.dp[r]), devices_per_instance=int(t.devices[r]), instances=n,
            devices=n * int(t.devices[r]), batch=int(t.batch[r]),
            capacity_qps=round(n * round(per_inst, 6), 6),
            cost_per_hour=round(n * float(t.cost_per_hour[r]), 6),
            predicted=Predicted(
                ttft_ms=_f(t.ttft_p50_ms[r]), tpot_ms=_f(t.tpot_p50_ms[r]),
                memory_gib_per_device=round(float(t.memory_gib[r]), 3),
                ttft_p99_ms=_f(t.ttft_p99_ms[r]), tpot_p99_ms=_f(t.tpot_p99_ms[r]),
            ),
            precision=svc.precision,
            chunk_tokens=int(t.chunk[r]) if role == COLOCATED else None,
            power_kw=round(n * float(t.power_w[r]) / 1000, 6),
            capacity_qps_per_instance=round(per_inst, 6),
        ))
    order = {"colocated": 0, "prefill": 1, "decode": 2}
    pools.sort(key=lambda p: (order[p.role], p.hardware, p.tp, p.pp, p.ep, p.dp, p.batch))
    return pools


def _service_result(rp, cs, sol, si) -> ServiceResult:
    svc = rp.problem.services[si]
    pools = _pools(rp, cs, sol, si)
    cap = Counter()
    dev = Counter()
    for p in pools:
        cap[p.role] += p.capacity_qps
        dev[p.role] += p.devices
    has_col, has_dis = cap["colocated"] > 0, dev["prefill"] > 0
    runtime = "mixed" if has_col and has_dis else ("disaggregated" if has_dis else "colocated")
    scale = sol.scale if rp.problem.objective == "max_throughput" else 1.0
    return ServiceResult(
        name=svc.name, model=rp.models[si].name,
        demand_qps=round(svc.workload.qps * (scale or 0.0), 6),
        capacity_qps=round(cap["colocated"] + min(cap["prefill"], cap["decode"]), 6),
        runtime=runtime,
        prefill_decode_ratio=round(dev["prefill"] / dev["decode"], 4) if has_dis and dev["decode"] else None,
        pools=pools,
        colocated_qps=round(float(sol.colocated_share[si]), 6),
        disaggregated_qps=round(float(sol.disaggregated_share[si]), 6),
        slo=_slo_bounds(svc),
        cost_per_hour=round(sum(p.cost_per_hour for p in pools), 6),
        devices=sum(p.devices for p in pools),
        routing=rp.archs[si].expert_routing.description if rp.archs[si].moe_layers else None,
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
    )


def plan(
    rp: ResolvedProblem, opts: SolveOptions = SolveOptions(), timings: bool = True,
    candidates: CandidateSet | None = None,
) -> PlanResult:
    """Plan a resolved problem; the returned document has passed `verify`.

    `candidates`: the problem's candidate tables when the caller already has them (what-if
    sweeps reuse one build across variants that change only demand or prices: see
    `problem.derive` and `candidates.reprice`); built here otherwise."""
    t0 = time.perf_counter()
    cs = candidates if candidates is not None else build_candidates(rp)
    reasons = _no_runtime_left(rp, cs)
    if reasons:
        doc = _infeasible(rp, cs, opts, time.perf_counter() - t0 if timings else None, reasons)
        verify(rp, doc)
        return doc
    inst = build_instance(rp, cs)
    sol = solve(inst, opts)
    wall = time.perf_counter() - t0 if timings else None
    if sol.status == "infeasible":
        doc = _infeasible(rp, cs, opts, wall, sol.infeasible_groups, sol)
        verify(rp, doc)
        return doc
    services = [_service_result(rp, cs, sol, si) for si in range(len(rp.problem.services))]
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
    doc = PlanResult(
        problem=rp.name, status=sol.status, objective=objective, cost_per_hour=cost,
        total_devices=sum(by_type.values()),
        devices_by_type={k: by_type[k] for k in sorted(by_type)},
        services=services, infeasible_because=[],
        solver=_solver_info(cs, sol, opts, wall, len(cs.table)),
        power_kw=round(sum(p.power_kw for s in services for p in s.pools), 6),
        throughput_scale=sol.scale,
        assumptions=assumptions(rp),
    )
    verify(rp, doc)
    return doc


def plan_file(path: str | Path, opts: SolveOptions = SolveOptions(), timings: bool = True) -> PlanResult:
    return plan(load_problem(path), opts, timings)

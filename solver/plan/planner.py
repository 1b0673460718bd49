"""The planning flow: problem -> candidates -> CP-SAT fleet model -> verify -> result document.

The document's parts are built in solver/plan/pools.py, services.py, homogeneous.py,
assumptions.py and transition.py; this module runs the flow."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from solver import __version__
from solver.candidates.build import build_candidates
from solver.candidates.table import CandidateSet
from solver.fleet.instance import FleetInstance, build_instance
from solver.fleet.periods import build_period_instance
from solver.fleet.periods_solve import solve_periods
from solver.fleet.solve import FleetSolution, SolveOptions, solve
from solver.fleet.standalone import Memo
from solver.plan.assumptions import assumptions, families_considered, families_drawn
from solver.plan.homogeneous import homogeneous
from solver.plan.periods import busiest, period_problem, period_solution, periods_result
from solver.plan.pools import cost_components
from solver.plan.services import service_result, sites_summary, traffic_headroom
from solver.plan.transition import transition_report
from solver.problem.load import ResolvedProblem, load_problem
from solver.schema.result import Objective, PlanResult, PruneCounts, SolverInfo, StageInfo
from solver.schema.roles import COLOCATED, DECODE, PREFILL
from solver.verify.checks import verify


def _solver_info(cs: CandidateSet, sol: FleetSolution | None, opts: SolveOptions, wall: float | None,
                 in_model: int) -> SolverInfo:
    """How the plan was searched: candidates, pruning, the solve's stages and settings."""
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


def _infeasible(rp: ResolvedProblem, cs: CandidateSet, opts: SolveOptions, wall: float | None,
                reasons: list[str], sol: FleetSolution | None = None) -> PlanResult:
    """The document of a problem without a plan, and why."""
    return PlanResult(
        problem=rp.name, status="infeasible", objective=None, cost_per_hour=0.0, total_devices=0,
        devices_by_type={}, services=[], infeasible_because=reasons,
        solver=_solver_info(cs, sol, opts, wall, len(cs.table)), power_kw=0.0,
        assumptions=assumptions(rp, families_considered(rp)),
    )


def _feasible(rp: ResolvedProblem, cs: CandidateSet, inst: FleetInstance, sol: FleetSolution,
              opts: SolveOptions, compare: bool) -> PlanResult:
    """The document of a solved fleet (without the wall time), with its comparison against the
    best homogeneous plan when `compare` and its routes cross types, and its transition."""
    services = [service_result(rp, cs, inst, sol, si) for si in range(len(rp.problem.services))]
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
    hetero = (homogeneous(rp, cs, opts, sol.status, cost, sol.scale)
              if compare and any(s.kv_routes for s in services) else None)
    headroom, binding = traffic_headroom(rp, services)
    doc = PlanResult(
        problem=rp.name, status=sol.status, objective=objective, cost_per_hour=cost,
        total_devices=sum(by_type.values()),
        devices_by_type={k: by_type[k] for k in sorted(by_type)},
        services=services, infeasible_because=[],
        solver=_solver_info(cs, sol, opts, None, len(inst)),
        power_kw=round(sum(p.power_kw for s in services for p in s.pools), 6),
        throughput_scale=sol.scale,
        assumptions=assumptions(rp, families_drawn(rp, services)),
        sites=sites_summary(rp, services),
        heterogeneity=hetero,
        cost_components=cost_components(services),
        traffic_headroom_multiple=headroom, traffic_headroom_service=binding,
    )
    if rp.problem.transition is not None:
        doc = doc.model_copy(update={"transition": transition_report(rp, rp.problem.transition, doc)})
    return doc


def plan(
    rp: ResolvedProblem, opts: SolveOptions = SolveOptions(), timings: bool = True,
    candidates: CandidateSet | None = None, compare: bool = True, memo: Memo | None = None,
    hint: np.ndarray | None = None,
) -> PlanResult:
    """Plan a resolved problem; the returned document has passed `verify`.

    `candidates`: the problem's candidate tables when the caller already has them (what-if
    sweeps reuse one build across variants that change only demand or prices: see
    `problem.derive` and `candidates.reprice`); built here otherwise. `compare`: solve a
    heterogeneous plan again with every KV route inside one type to state its saving; the
    decision record's what-if solves, which only need the plan, pass False. `memo`: the
    services' proven own plans to reuse (solver/fleet/standalone.py; a probe's plan beyond an
    interval's end has them from its own probe). `hint`: a known plan's instance counts on
    the problem's fleet instance to start from (solver/fleet/solve.py `solve`)."""
    t0 = time.perf_counter()
    cs = candidates if candidates is not None else build_candidates(rp)
    reasons = _no_runtime_left(rp, cs)
    if reasons:
        doc = _infeasible(rp, cs, opts, time.perf_counter() - t0 if timings else None, reasons)
        verify(rp, doc)
        return doc
    if rp.horizon is not None:
        return _plan_periods(rp, cs, opts, t0 if timings else None)
    inst = build_instance(rp, cs)
    sol = solve(inst, opts, memo, hint)
    if sol.status == "infeasible":
        doc = _infeasible(rp, cs, opts, time.perf_counter() - t0 if timings else None,
                          sol.infeasible_groups, sol)
        verify(rp, doc)
        return doc
    doc = _feasible(rp, cs, inst, sol, opts, compare)
    if timings:
        doc = doc.model_copy(update={"solver": doc.solver.model_copy(
            update={"wall_s": round(time.perf_counter() - t0, 3)})})
    verify(rp, doc, compared=compare)
    return doc


def _plan_periods(rp: ResolvedProblem, cs: CandidateSet, opts: SolveOptions, t0: float | None) -> PlanResult:
    """The fleet over periods: every period's fleet verified against its own demand; the
    document shows the busiest period's fleet and, under `periods:`, the whole horizon."""
    pi = build_period_instance(rp, cs)
    sol = solve_periods(pi, opts)
    if sol is None:
        peak = max(range(pi.n_periods), key=lambda p: sum(s.demand for s in pi.periods[p].services))
        alone = solve(pi.periods[peak], opts)
        reasons = alone.infeasible_groups or [
            f"no plan over the {pi.n_periods} periods within the time limit of {opts.time_limit_s:g} s "
            "(not proven infeasible; raise --time-limit)"]
        doc = _infeasible(rp, cs, opts, None if t0 is None else time.perf_counter() - t0, reasons)
        verify(rp, doc)
        return doc
    docs = {}
    for p in range(pi.n_periods):
        rpp = period_problem(rp, p)
        docs[p] = _feasible(rpp, cs, pi.periods[p], period_solution(sol, p), opts, compare=False)
        verify(rpp, docs[p], compared=False)
    doc = docs[busiest(pi, sol)].model_copy(update={"periods": periods_result(rp, cs, pi, sol)})
    if t0 is not None:
        doc = doc.model_copy(update={"solver": doc.solver.model_copy(
            update={"wall_s": round(time.perf_counter() - t0, 3)})})
    return doc


def with_comparison(rp: ResolvedProblem, cs: CandidateSet, doc: PlanResult, opts: SolveOptions,
                    solved: Callable[[], tuple[FleetInstance, FleetSolution]] | None = None) -> PlanResult:
    """`doc`, planned with compare=False, with the comparison `plan(compare=True)` would have
    given it (the same solve: solver/plan/homogeneous.py), verified as such; the decision
    record runs it beside its own searches (solver/decision/record.py). `solved`: the getter of
    `solve_homogeneous`'s result when it was started already (same options)."""
    if doc.status != "infeasible" and any(s.kv_routes for s in doc.services):
        hetero = homogeneous(rp, cs, opts, doc.status, doc.cost_per_hour, doc.throughput_scale,
                             solved() if solved is not None else None)
        doc = doc.model_copy(update={"heterogeneity": hetero})
    verify(rp, doc, compared=True)
    return doc


def plan_file(path: str | Path, opts: SolveOptions = SolveOptions(), timings: bool = True) -> PlanResult:
    """Load a problem file and plan it."""
    return plan(load_problem(path), opts, timings)

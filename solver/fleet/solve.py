"""`solve()`: lexicographic CP-SAT stages over the fleet model, and infeasibility explanation.

Stages (each freezes the previous optimum with an inequality and warm-starts from it):
- min_cost: cost -> devices -> distinct configurations;
- max_throughput: scale factor -> devices -> distinct configurations -> cost.
The primary stage gets the whole --time-limit and decides the status (optimal or feasible).
Tie-break stages run under a deterministic-time budget (CP-SAT's work measure, independent of
machine speed): proving that no equal-cost plan uses fewer configurations can take far longer
than finding the optimum, and a tie-break that is not proven leaves a plan that is still
optimal for the objective; its status is reported per stage. With one worker and a fixed seed
CP-SAT is deterministic (reference/cpsat.md 1.2), so the same input gives the same plan.

Infeasibility: a deletion filter over the named constraint groups (rebuild with a subset, solve
for feasibility) leaves an irreducible set of groups that cannot hold together.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.errors import ModelInvalidError
from solver.fleet import integerize as ints
from solver.fleet.instance import FleetInstance
from solver.fleet.model import FleetModel

LINEARIZATION = 2


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float = 60.0
    seed: int = 0
    workers: int = 1
    tiebreak_work: float = 5.0  # CP-SAT deterministic time per tie-break stage (~seconds)
    max_stages: int | None = None  # run only the first stages (None: all)


@dataclass(frozen=True)
class Stage:
    name: str
    status: str
    value: float


@dataclass
class FleetSolution:
    status: str  # optimal | feasible | infeasible
    counts: np.ndarray
    colocated_share: np.ndarray  # milli-QPS per service
    disaggregated_share: np.ndarray
    scale: float | None  # max_throughput: multiple of the demand mix served
    gap: float
    wall_s: float
    stages: list[Stage] = field(default_factory=list)
    infeasible_groups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # per (service, site): QPS shares
    site_colocated: np.ndarray | None = None
    site_disaggregated: np.ndarray | None = None


def _solver(opts: SolveOptions, time_left: float, work: float | None = None,
            sites: bool = False) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.num_workers = opts.workers
    s.parameters.random_seed = opts.seed
    s.parameters.max_time_in_seconds = max(time_left, 0.05)
    # Covering rows with large capacity coefficients: level 2 adds cuts (knapsack covers, MIR)
    # that close the bound; on the 10-service benchmark it turned a 7% gap after 60 s into a
    # proof (reference/cpsat.md 2.2 also needs it for explanations with enforced rows).
    s.parameters.linearization_level = LINEARIZATION
    if work is not None:
        s.parameters.max_deterministic_time = work
    if sites and opts.workers == 1:
        # Several sites multiply near-equivalent columns under per-site supply: branching on
        # the LP solution proved the shipped multi-site problem in 3.1 s instead of 10.3 s and
        # halved the 60-s gap of benchmarks/bench_fleet_sites.py on one worker (with more
        # workers CP-SAT's portfolio does better left alone).
        s.parameters.search_branching = cp_model.LP_SEARCH
    return s


def _check_status(status: int, fm: FleetModel) -> None:
    if status == cp_model.MODEL_INVALID:
        raise ModelInvalidError(f"CP-SAT rejected the fleet model: {fm.m.validate()}")


def _feasible(inst: FleetInstance, enabled: set[str], opts: SolveOptions, limit: float) -> bool:
    fm = FleetModel(inst, enabled)
    s = _solver(opts, limit)
    status = s.solve(fm.m)
    _check_status(status, fm)
    return status != cp_model.INFEASIBLE  # UNKNOWN counts as feasible: keep the group


def _assumption_core(inst: FleetInstance, opts: SolveOptions, limit: float) -> list[str] | None:
    """Groups in an infeasible core from CP-SAT's assumption literals (not always minimal)."""
    fm = FleetModel(inst, assumptions=True)
    by_index = {lit.index: key for key, lit in fm.literals.items()}
    fm.m.add_assumptions(list(fm.literals.values()))
    s = _solver(dataclasses.replace(opts, workers=1), limit)  # core extraction is single-worker
    status = s.solve(fm.m)
    _check_status(status, fm)
    if status != cp_model.INFEASIBLE:
        return None
    # filter indices that are not our literals (google/or-tools#5141)
    core = [by_index[i] for i in s.sufficient_assumptions_for_infeasibility() if i in by_index]
    return sorted(set(core)) or None


def explain(inst: FleetInstance, opts: SolveOptions, limit_per_solve: float = 5.0) -> list[str]:
    """An irreducible set of constraint groups that cannot hold together.

    CP-SAT's assumption core (each group behind one enforcement literal) narrows the groups; a
    deletion filter (drop a group, re-solve for feasibility, keep it out if still infeasible)
    then makes the set irreducible, since assumption cores are not guaranteed minimal.
    Row bounds are widened to the demand-based ones, so that dropping a supply, budget or power
    group really relaxes it (the solving bounds already build those limits in)."""
    inst = dataclasses.replace(inst, ub=np.maximum(inst.ub, inst.demand_ub))
    groups = FleetModel(inst).groups
    core = _assumption_core(inst, opts, limit_per_solve) or sorted(groups)
    for g in list(core):
        trial = [k for k in core if k != g]
        if not _feasible(inst, set(trial), opts, limit_per_solve):
            core = trial
    return [groups[k].text for k in core]


def sub_instance(inst: FleetInstance, s: int) -> FleetInstance:
    """Service s alone, with the fleet's supply, budget and power limits."""
    rows = np.flatnonzero(inst.service == s)
    return dataclasses.replace(
        inst,
        service=np.zeros(rows.size, dtype=inst.service.dtype),
        role=inst.role[rows], hw=inst.hw[rows], devices=inst.devices[rows], cap=inst.cap[rows],
        cost=inst.cost[rows], power=inst.power[rows], ub=inst.ub[rows],
        demand_ub=inst.demand_ub[rows],
        services=(inst.services[s],),
        site=inst.site[rows], reach=inst.reach[rows], row=inst.row[rows],
    )


@dataclass
class Standalone:
    """Each service planned alone: bounds (None where a sub-solve found nothing) and, where
    every sub-solve found a plan, their union as instance counts of the full instance."""

    bounds: list[float | None]
    counts: np.ndarray | None


def _standalone(inst: FleetInstance, opts: SolveOptions, limit: float) -> Standalone | None:
    """Each service planned alone: a lower bound on its cost (min_cost) or an upper bound on the
    scale (max_throughput). CP-SAT's best bound is valid even when a sub-solve is not finished.
    Together the services' own plans also make a starting point for the shared fleet (a hint):
    when they fit the shared limits, they are its optimum."""
    if len(inst.services) < 2:
        return None
    out: list[float | None] = []
    counts: np.ndarray | None = np.zeros(len(inst), dtype=np.int64)
    for s in range(len(inst.services)):
        fm = FleetModel(sub_instance(inst, s))
        if inst.objective == "max_throughput":
            fm.m.maximize(fm.scale)
        else:
            fm.m.minimize(fm.cost_expr())
        sv = _solver(opts, limit, sites=inst.n_sites > 1)
        status = sv.solve(fm.m)
        _check_status(status, fm)
        if status == cp_model.INFEASIBLE:
            return None  # the main solve will find and explain it
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            out.append(None)
            counts = None
            continue
        out.append(sv.best_objective_bound)
        if counts is not None:
            counts[np.flatnonzero(inst.service == s)] = [sv.value(v) for v in fm.n]
    return Standalone(out, counts)


def _no_plan(inst: FleetInstance, t0: float, reasons: list[str]) -> FleetSolution:
    n = len(inst.services)
    return FleetSolution(
        status="infeasible", counts=np.zeros(len(inst), dtype=np.int64),
        colocated_share=np.zeros(n), disaggregated_share=np.zeros(n), scale=None, gap=0.0,
        wall_s=time.perf_counter() - t0, infeasible_groups=reasons,
    )


def solve(inst: FleetInstance, opts: SolveOptions = SolveOptions()) -> FleetSolution:
    t0 = time.perf_counter()
    fm = FleetModel(inst)
    alone = _standalone(inst, opts, max(1.0, opts.time_limit_s / (4 * max(len(inst.services), 1))))
    if alone is not None and alone.counts is not None and inst.objective == "min_cost":
        for v, x in zip(fm.n, alone.counts):
            fm.m.add_hint(v, int(x))
    for s, b in enumerate(alone.bounds if alone is not None else []):
        if b is None:
            continue
        if inst.objective == "max_throughput":
            fm.scale_ceiling(int(math.floor(b + 1e-6)))
        else:
            fm.service_cost_floor(s, int(math.ceil(b - 1e-6)))
    m = fm.m
    maximize = inst.objective == "max_throughput"
    stages_spec = (
        [("scale", fm.scale, True), ("devices", fm.devices_expr(), False),
         ("configs", fm.configs_expr(), False), ("cost", fm.cost_expr(), False)]
        if maximize
        else [("cost", fm.cost_expr(), False), ("devices", fm.devices_expr(), False),
              ("configs", fm.configs_expr(), False)]
    )
    stages: list[Stage] = []
    gap = 0.0
    overall = "optimal"
    hint_vars = fm.hint_vars()
    for k, (name, expr, is_max) in enumerate(stages_spec[:opts.max_stages]):
        (m.maximize if is_max else m.minimize)(expr)
        left = opts.time_limit_s - (time.perf_counter() - t0)
        solver = _solver(opts, left, None if k == 0 else opts.tiebreak_work, sites=inst.n_sites > 1)
        status = solver.solve(m)
        _check_status(status, fm)
        if k == 0 and status == cp_model.INFEASIBLE:
            return _no_plan(inst, t0, explain(inst, opts))
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            if k == 0:
                return _no_plan(inst, t0, [
                    f"no plan found within the time limit of {opts.time_limit_s:g} s "
                    "(not proven infeasible; raise --time-limit)"
                ])
            break  # keep the previous stage's solution
        value = int(round(solver.objective_value))
        unit = {"cost": ints.COST_SCALE, "scale": ints.SCALE_UNIT}.get(name, 1)
        stages.append(Stage(name, solver.status_name(status).lower(), value / unit))
        if k == 0:
            bound = solver.best_objective_bound
            gap = abs(value - bound) / max(abs(value), 1e-9)
        if k == 0 and status != cp_model.OPTIMAL:
            overall = "feasible"
        values = [solver.value(v) for v in hint_vars]
        m.clear_hints()
        for v, x in zip(hint_vars, values):
            m.add_hint(v, x)
        # freeze this stage's achievement before the next one
        if is_max:
            m.add(expr >= value)
        else:
            m.add(expr <= value)
        counts = np.array([solver.value(v) for v in fm.n], dtype=np.int64)
        site_col = np.array([[solver.value(v) for v in vs] for vs in fm.col], dtype=float)
        site_dis = np.array([[solver.value(v) for v in vs] for vs in fm.dis], dtype=float)
        scale = solver.value(fm.scale) / ints.SCALE_UNIT if fm.scale is not None else None
    col, dis = site_col.sum(axis=1), site_dis.sum(axis=1)
    return FleetSolution(
        status=overall, counts=counts, colocated_share=col / ints.QPS_SCALE,
        disaggregated_share=dis / ints.QPS_SCALE, scale=scale, gap=gap,
        wall_s=time.perf_counter() - t0, stages=stages,
        site_colocated=site_col / ints.QPS_SCALE, site_disaggregated=site_dis / ints.QPS_SCALE,
    )

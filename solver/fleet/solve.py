"""`solve()`: lexicographic CP-SAT stages over the fleet model (the facade the plan calls).

The stages are in solver/fleet/objective.py; each freezes the previous optimum with an
inequality and warm-starts from it. The primary stage gets the whole --time-limit and decides
the status (optimal or feasible). Tie-break stages run under a deterministic-time budget
(CP-SAT's work measure, independent of machine speed): proving that no equal-cost plan uses
fewer configurations can take far longer than finding the optimum, and a tie-break that is not
proven leaves a plan that is still optimal for the objective; its status is reported per stage.
With one worker and a fixed seed CP-SAT is deterministic, so the same input gives the same plan.

Before the stages, each service is planned alone (solver/fleet/standalone.py) for bounds and a
hint. Without a plan, solver/fleet/explain.py names the constraint groups that cannot hold
together. `SolveOptions.export_model` writes the primary stage's model (with its hint and
bounds) just before it is solved.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, export_model, make_solver
from solver.fleet.explain import explain
from solver.fleet.instance import FleetInstance
from solver.fleet.lagrange import has_priced_rows, lagrangian_bound
from solver.fleet.model import FleetModel
from solver.fleet.objective import ObjectiveStage, scale_ceiling, service_cost_floor, stages
from solver.fleet.options import SolveOptions
from solver.fleet.repair import fits, repaired
from solver.fleet.standalone import Memo, Standalone, standalone
from solver.fleet.status import SolveStatus, found

# a reach question's short first try, branching on the own plans' hint (CP-SAT deterministic
# time): three-services' "yes" questions found their plan within 0.01 this way, against up to
# 1.3 with the default search (benchmarks/plan_speed.md); a "no" spends it for nothing
REACH_HINT_WORK = 0.05


@dataclass(frozen=True)
class Stage:
    name: str
    status: SolveStatus
    value: float


@dataclass
class FleetSolution:
    status: SolveStatus
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


@dataclass(frozen=True)
class _Values:
    """The variable values of the last stage that found a solution."""

    counts: np.ndarray
    site_col: np.ndarray  # milli-QPS per (service, site)
    site_dis: np.ndarray
    scale: float | None


def _read_values(fm: FleetModel, solver: cp_model.CpSolver) -> _Values:
    return _Values(
        counts=np.array([solver.value(v) for v in fm.v.n], dtype=np.int64),
        site_col=np.array([[solver.value(v) for v in vs] for vs in fm.v.col], dtype=float),
        site_dis=np.array([[solver.value(v) for v in vs] for vs in fm.v.dis], dtype=float),
        scale=solver.value(fm.v.scale) / ints.SCALE_UNIT if fm.v.scale is not None else None,
    )


def _use_standalone(fm: FleetModel, opts: SolveOptions, memo: Memo | None = None) -> Standalone | None:
    """Hint the services' own plans (min_cost) and bound the objective by their optima (what
    it found, for the caller; `memo`: solver/fleet/standalone.py)."""
    inst = fm.inst
    # a solve under deterministic work (the record's what-ifs and probes) bounds its sub-solves
    # by the same work, the wall clock only by the whole solve's safety net: a share of it
    # would cut them on a slow or loaded machine and change the answer unreported
    limit = (opts.time_limit_s if opts.primary_work is not None
             else max(1.0, opts.time_limit_s / (4 * max(len(inst.services), 1))))
    alone = standalone(inst, opts, limit, memo)
    if alone is None:
        return None
    if alone.counts is not None and inst.objective == "min_cost":
        hint = repaired(inst, alone.counts, opts, limit) if opts.repair_hint else alone.counts
        for v, x in zip(fm.v.n, hint):
            fm.m.add_hint(v, int(x))
    for s, b in enumerate(alone.bounds):
        if b is None:
            continue
        if inst.objective == "max_throughput":
            scale_ceiling(fm, int(math.floor(b + 1e-6)))
        else:
            service_cost_floor(fm, s, int(math.ceil(b - 1e-6)))
    return alone


def decided_by_standalone(inst: FleetInstance, alone: Standalone | None,
                          target: int) -> tuple[bool | None, np.ndarray | None]:
    """What the services' own plans alone say about `reaches(inst, target)`, as the model with
    their cuts (`_use_standalone`) would conclude it: False when the cuts already exclude the
    target (the sum of the cost floors above it; a scale ceiling below it), True (with the
    counts) when the union of the own plans is a plan of the shared fleet reaching it (it keeps
    every shared limit: solver/fleet/repair.py `fits`), (None, None) otherwise."""
    if alone is None:
        return None, None
    bounds = [b for b in alone.bounds if b is not None]
    if inst.objective == "max_throughput":
        if bounds and min(int(math.floor(b + 1e-6)) for b in bounds) < target:
            return False, None
        return None, None
    if sum(int(math.ceil(b - 1e-6)) for b in bounds) > target:
        return False, None
    c = alone.counts
    if c is not None and int((c * inst.cost).sum()) <= target and fits(inst, c):
        return True, c
    return None, None


def _no_plan(inst: FleetInstance, t0: float, reasons: list[str]) -> FleetSolution:
    n = len(inst.services)
    return FleetSolution(
        status=SolveStatus.INFEASIBLE, counts=np.zeros(len(inst), dtype=np.int64),
        colocated_share=np.zeros(n), disaggregated_share=np.zeros(n), scale=None, gap=0.0,
        wall_s=time.perf_counter() - t0, infeasible_groups=reasons,
    )


def _why_no_plan(inst: FleetInstance, opts: SolveOptions, status) -> list[str]:
    """The primary stage found nothing: proven infeasible (explain it) or out of time."""
    if status == cp_model.INFEASIBLE:
        return explain(inst, opts)
    return [f"no plan found within the time limit of {opts.time_limit_s:g} s "
            "(not proven infeasible; raise --time-limit)"]


def _solve_stage(fm: FleetModel, stage: ObjectiveStage, primary: bool, opts: SolveOptions,
                 t0: float) -> tuple[cp_model.CpSolver, object]:
    """Set the stage's objective and solve: the primary stage with the time left (and exported
    first when asked), a tie-break stage under the deterministic-time budget too."""
    (fm.m.maximize if stage.maximize else fm.m.minimize)(stage.expr)
    if primary and opts.export_model is not None:
        export_model(fm.m, opts.export_model)
    left = opts.time_limit_s - (time.perf_counter() - t0)
    work = opts.primary_work if primary else opts.tiebreak_work
    solver = make_solver(opts, left, work, sites=fm.inst.n_sites > 1)
    status = solver.solve(fm.m)
    check_status(status, fm.m)
    return solver, status


def _warm_start_and_freeze(fm: FleetModel, stage: ObjectiveStage, hint_vars: list,
                           solver: cp_model.CpSolver, value: int) -> None:
    """Hint this stage's solution and freeze its achievement before the next stage."""
    values = [solver.value(v) for v in hint_vars]
    fm.m.clear_hints()
    for v, x in zip(hint_vars, values):
        fm.m.add_hint(v, x)
    fm.m.add(stage.expr >= value if stage.maximize else stage.expr <= value)


@dataclass(frozen=True)
class Primary:
    """The primary stage's outcome alone: found (a solution), proven (optimal, or infeasible
    when nothing was found), and its value in the stage's integer units (min_cost: 1e-4 USD/h,
    each instance's cost rounded up as the model counts it; max_throughput: 1/1000 of the
    demand mix); None when nothing was found."""

    found: bool
    proven: bool
    value: int | None


def solve_primary(inst: FleetInstance, opts: SolveOptions = SolveOptions(), memo: Memo | None = None) -> Primary:
    """The primary objective's optimum only: the model, the standalone bounds and the first
    stage of `solve`, without the tie-breaks, the explanation of an infeasible fleet or the
    solution itself (what a what-if probe that compares optima needs). `memo`: proven
    standalone sub-solves to reuse (solver/fleet/standalone.py)."""
    t0 = time.perf_counter()
    fm = build_model(inst)
    _use_standalone(fm, opts, memo)
    solver, status = _solve_stage(fm, stages(fm)[0], True, opts, t0)
    if not found(status):
        return Primary(found=False, proven=status == cp_model.INFEASIBLE, value=None)
    return Primary(found=True, proven=status == cp_model.OPTIMAL, value=int(round(solver.objective_value)))


def reaches(inst: FleetInstance, target: int, opts: SolveOptions = SolveOptions()) -> bool | None:
    """Whether some plan's primary objective is at least as good as `target` (in its integer
    units: a cost at most it, a scale at least it): the decision version of `solve_primary`,
    which stops at the first such plan. None: undecided within the limits."""
    return reach_plan(inst, target, opts)[0]


def reach_plan(inst: FleetInstance, target: int, opts: SolveOptions = SolveOptions(),
               memo: Memo | None = None, own_plans: bool = True) -> tuple[bool | None, np.ndarray | None]:
    """`reaches`, and the instance counts of the plan it found (None when it found none). Two
    kinds of question are answered without the shared model's solve, with its answer: those the
    services' own plans decide (`decided_by_standalone`), and a "no" that the Lagrangian bound
    on the shared supply rows proves (solver/fleet/lagrange.py: no plan costs less than it).
    `memo`: as `solve_primary`. `own_plans=False`: the shared model alone, without the own
    plans' hint and cuts (a quick first try: where its LP already excludes the target, the own
    plans cost more than the whole question)."""
    t0 = time.perf_counter()
    fm = build_model(inst)
    alone = None
    if own_plans:
        alone = _use_standalone(fm, opts, memo)
        got = decided_by_standalone(inst, alone, target)
        if got[0] is not None:
            return got
    stage = stages(fm)[0]
    fm.m.add(stage.expr >= target if stage.maximize else stage.expr <= target)
    if alone is not None and alone.counts is not None and inst.n_sites == 1:
        # a "yes" is most often the own plans' union repaired by a few changes: a short search
        # that branches on the hint's values first finds it (three-services' validity search:
        # 10.5 -> 8.2 units of work, the same answers; benchmarks/plan_speed.md), where the
        # default search took up to 1.3 units. Over several sites the shared model's quick try
        # (solver/decision/probe.py) has answered those before, and this try only added work
        # (multi-site's validity +0.15 units)
        short = REACH_HINT_WORK if opts.primary_work is None else min(opts.primary_work, REACH_HINT_WORK)
        got = _solve_reach(fm, opts, t0, short, hinted=True)
        if got[0] is not None:
            return got
    if alone is not None and inst.n_sites == 1 and has_priced_rows(inst):
        # what the short try leaves undecided may be a "no" the bound proves (no bound decides
        # a "yes"). One site only: over several, each priced own plan is a hard sub-solve
        # (multi-site's record: 20.8 -> 25.7 s of CPU with the bound; benchmarks/plan_speed.md)
        bound = lagrangian_bound(inst, target, opts, alone, memo)
        if bound is not None and bound > target:  # a valid lower bound above it: no plan reaches it
            return False, None
    return _solve_reach(fm, opts, t0, opts.primary_work)


def _solve_reach(fm: FleetModel, opts: SolveOptions, t0: float, work: float,
                 hinted: bool = False) -> tuple[bool | None, np.ndarray | None]:
    """Solve the reach model (its target posted) under `work`: (answer, the plan's counts);
    `hinted`: branch on the hint's values first (CP-SAT's hint search)."""
    left = opts.time_limit_s - (time.perf_counter() - t0)
    solver = make_solver(opts, left, work, sites=fm.inst.n_sites > 1, hinted=hinted)
    status = solver.solve(fm.m)
    check_status(status, fm.m)
    if found(status):
        return True, np.array([solver.value(v) for v in fm.v.n], dtype=np.int64)
    return (False if status == cp_model.INFEASIBLE else None), None


def solve(inst: FleetInstance, opts: SolveOptions = SolveOptions(), memo: Memo | None = None,
          hint: np.ndarray | None = None) -> FleetSolution:
    """The staged solve (cost or throughput, then the tie-breaks); `memo`: as `solve_primary`;
    `hint`: instance counts of a known plan of `inst` to start from instead of the own plans'."""
    t0 = time.perf_counter()
    fm = build_model(inst)
    _use_standalone(fm, opts, memo)
    if hint is not None:
        fm.m.clear_hints()
        for v, x in zip(fm.v.n, hint):
            fm.m.add_hint(v, int(x))
    spec = stages(fm)
    hint_vars = fm.v.all()
    done: list[Stage] = []
    gap, overall = 0.0, SolveStatus.OPTIMAL
    for k, stage in enumerate(spec[:opts.max_stages]):
        solver, status = _solve_stage(fm, stage, k == 0, opts, t0)
        if not found(status):
            if k == 0:
                return _no_plan(inst, t0, _why_no_plan(inst, opts, status))
            break  # keep the previous stage's solution
        value = int(round(solver.objective_value))
        done.append(Stage(stage.name, SolveStatus.of_stage(status), value / stage.unit))
        if k == 0:
            gap = abs(value - solver.best_objective_bound) / max(abs(value), 1e-9)
            overall = SolveStatus.of_stage(status)
        _warm_start_and_freeze(fm, stage, hint_vars, solver, value)
        got = _read_values(fm, solver)
    per = np.array([[s.qps_scale] for s in inst.services], dtype=float).reshape(-1, 1)
    site_col, site_dis = got.site_col / per, got.site_dis / per
    return FleetSolution(
        status=overall, counts=got.counts, colocated_share=site_col.sum(axis=1),
        disaggregated_share=site_dis.sum(axis=1), scale=got.scale, gap=gap,
        wall_s=time.perf_counter() - t0, stages=done,
        site_colocated=site_col, site_disaggregated=site_dis,
    )

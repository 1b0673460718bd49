"""`solve_periods()`: the fleet over periods (solver/fleet/periods.py), staged as `solve()`:
cost over the horizon -> devices summed over periods -> distinct configurations summed over
periods, each stage frozen and warm-started from the previous one.

What makes it fast: the candidate columns are built and integerized once and shared by every
period (only demand and the demand bounds change); the first stage is warm-started from each
period planned alone (`period_hints`: one solve per distinct demand, within a quarter of the time
limit; a period left unsolved borrows the plan of a solved period whose demand covers its own),
with the committed level that is cheapest for those usages; and a period's instance bounds come
from its own demand, so quiet periods have small domains.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.objective import ObjectiveStage, configs_expr, devices_expr
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, PeriodModel
from solver.fleet.solve import Stage, solve
from solver.fleet.status import SolveStatus, found

LinearExpr = cp_model.LinearExpr
HINT_SHARE = 0.25  # of the time limit for the per-period hint solves (the rest: the model itself)


@dataclass
class PeriodSolution:
    status: SolveStatus
    counts: np.ndarray  # [period][column] instances
    colocated_share: np.ndarray  # [period][service] QPS
    disaggregated_share: np.ndarray
    committed: dict[int, int]  # per termed type
    on_demand: list[dict[int, int]]  # [period][termed type]
    started: np.ndarray  # [period] devices started (0 without a start cost)
    cost_usd: float  # over the horizon, as the model counts it
    gap: float
    wall_s: float
    stages: list[Stage] = field(default_factory=list)
    hint_solves: int = 0


def cost_expr(pm: PeriodModel):
    pi = pm.pi
    plain = np.array([not pi.termed[int(h)] for h in pi.base.hw])
    terms = []
    for p, fm in enumerate(pm.fms):
        coeffs = (pi.base.cost * plain * pi.seconds[p]).tolist()
        terms.append(LinearExpr.weighted_sum(fm.v.n, coeffs))
    for h, v in pm.commit.committed.items():
        terms.append(v * int(pi.committed_price[h] or 0) * pi.horizon_s)
    for p, d in enumerate(pm.commit.on_demand):
        for h, v in d.items():
            terms.append(v * int(pi.on_demand_price[h] or 0) * pi.seconds[p])
    for vs in pm.started:
        terms.append(LinearExpr.weighted_sum(vs, (pi.base.devices * pi.start_cost).tolist()))
    return sum(terms)


def stages(pm: PeriodModel) -> list[ObjectiveStage]:
    return [ObjectiveStage("cost", cost_expr(pm), False, COST_UNIT),
            ObjectiveStage("devices", sum(devices_expr(fm) for fm in pm.fms), False, 1),
            ObjectiveStage("configs", sum(configs_expr(fm) for fm in pm.fms), False, 1)]


def _dominates(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(a >= b))


def period_hints(pi: PeriodInstance, opts: SolveOptions, budget_s: float) -> tuple[list, int]:
    """Instance counts per period from each period planned alone (None where nothing was found),
    highest demand first, one solve per distinct demand, while `budget_s` lasts."""
    t0 = time.perf_counter()
    demand = np.array([[s.demand for s in inst.services] for inst in pi.periods])
    order = sorted(range(pi.n_periods), key=lambda p: -int(demand[p].sum()))
    solved: dict[tuple, np.ndarray] = {}
    counts: list = [None] * pi.n_periods
    for p in order:
        key = tuple(demand[p])
        if key not in solved and (not solved or time.perf_counter() - t0 < budget_s):
            left = max(0.5, budget_s - (time.perf_counter() - t0))
            sol = solve(pi.periods[p], opts.follow_up(max_stages=1, time_limit_s=left))
            if sol.status != SolveStatus.INFEASIBLE:
                solved[key] = sol.counts
        if key in solved:
            counts[p] = solved[key]
            continue
        cover = [np.array(k) for k in solved if _dominates(np.array(k), demand[p])]
        if cover:  # the least demand that covers this period's
            counts[p] = solved[tuple(min(cover, key=lambda k: int(k.sum())))]
    return counts, len(solved)


def _best_commitment(pi: PeriodInstance, h: int, usage: np.ndarray) -> int:
    """The committed level of type h cheapest for these per-period usages (within supply)."""
    cp, op = pi.committed_price[h], pi.on_demand_price[h]
    if cp is None:
        return 0
    if op is None:
        return int(usage.max())
    secs = np.array(pi.seconds)
    levels = sorted({0, *map(int, usage)})
    if pi.committed_supply[h] is not None:
        levels = [x for x in levels if x <= pi.committed_supply[h]] or [0]
    cost = [cp * pi.horizon_s * c + op * int(np.sum(secs * np.maximum(usage - c, 0))) for c in levels]
    return levels[int(np.argmin(cost))]


def apply_hints(pm: PeriodModel, counts: list) -> None:
    """Hint every period's counts where known, and the commitment cheapest for their usage."""
    pi = pm.pi
    for fm, c in zip(pm.fms, counts):
        if c is not None:
            for v, x in zip(fm.v.n, c):
                pm.m.add_hint(v, int(x))
            for v, x in zip(fm.v.used, c):
                pm.m.add_hint(v, int(x > 0))
    if any(c is None for c in counts):
        return
    for h, var in pm.commit.committed.items():
        rows = pi.base.hw == h
        usage = np.array([int(np.sum(c[rows] * pi.base.devices[rows])) for c in counts])
        level = _best_commitment(pi, h, usage)
        pm.m.add_hint(var, level)
        for p, d in enumerate(pm.commit.on_demand):
            pm.m.add_hint(d[h], max(int(usage[p]) - level, 0))


def _read(pm: PeriodModel, solver: cp_model.CpSolver) -> dict:
    pi = pm.pi
    counts = np.array([[solver.value(v) for v in fm.v.n] for fm in pm.fms], dtype=np.int64)
    col = np.array([[sum(solver.value(v) for v in vs) for vs in fm.v.col] for fm in pm.fms], dtype=float)
    dis = np.array([[sum(solver.value(v) for v in vs) for vs in fm.v.dis] for fm in pm.fms], dtype=float)
    started = np.zeros(pi.n_periods, dtype=np.int64)
    for p, vs in enumerate(pm.started, start=1):
        started[p] = sum(solver.value(v) * int(d) for v, d in zip(vs, pi.base.devices))
    return dict(
        counts=counts, colocated_share=col / ints.QPS_SCALE, disaggregated_share=dis / ints.QPS_SCALE,
        committed={h: int(solver.value(v)) for h, v in pm.commit.committed.items()},
        on_demand=[{h: int(solver.value(v)) for h, v in d.items()} for d in pm.commit.on_demand],
        started=started,
    )


def _run_stage(pm: PeriodModel, stage: ObjectiveStage, primary: bool, opts: SolveOptions, t0: float):
    pm.m.minimize(stage.expr)
    left = opts.time_limit_s - (time.perf_counter() - t0)
    solver = make_solver(opts, left, opts.primary_work if primary else opts.tiebreak_work)
    if primary and opts.relative_gap is not None:
        solver.parameters.relative_gap_limit = opts.relative_gap
    status = solver.solve(pm.m)
    check_status(status, pm.m)
    return solver, status


def _freeze(pm: PeriodModel, stage: ObjectiveStage, solver: cp_model.CpSolver, value: int) -> None:
    hint_vars = pm.all_vars()
    values = [solver.value(v) for v in hint_vars]
    pm.m.clear_hints()
    for v, x in zip(hint_vars, values):
        pm.m.add_hint(v, x)
    pm.m.add(stage.expr <= value)


def solve_periods(pi: PeriodInstance, opts: SolveOptions = SolveOptions()) -> PeriodSolution | None:
    """The cheapest fleet over the horizon; None when no plan was found (infeasible or out of time)."""
    t0 = time.perf_counter()
    counts, n_hint = period_hints(pi, opts, HINT_SHARE * opts.time_limit_s)
    pm = PeriodModel(pi)
    apply_hints(pm, counts)
    done: list[Stage] = []
    gap, overall, got, cost = 0.0, SolveStatus.OPTIMAL, None, 0.0
    for k, stage in enumerate(stages(pm)[:opts.max_stages]):
        solver, status = _run_stage(pm, stage, k == 0, opts, t0)
        if not found(status):
            if k == 0:
                return None
            break
        value = int(round(solver.objective_value))
        done.append(Stage(stage.name, SolveStatus.of_stage(status), value / stage.unit))
        if k == 0:
            gap = abs(value - solver.best_objective_bound) / max(abs(value), 1e-9)
            overall, cost = SolveStatus.of_stage(status), value / COST_UNIT
        _freeze(pm, stage, solver, value)
        got = _read(pm, solver)
    return PeriodSolution(status=overall, cost_usd=cost, gap=gap, wall_s=time.perf_counter() - t0,
                          stages=done, hint_solves=n_hint, **got)  # type: ignore[arg-type]

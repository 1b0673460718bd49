"""`solve_periods()`: the fleet over periods (solver/fleet/periods.py), staged as `solve()`:
cost over the horizon -> devices summed over periods -> distinct configurations summed over
periods, each stage frozen and warm-started from the previous one.

The candidate columns are built and integerized once and shared by every period (only demand
and the demand bounds change); each period planned alone (`period_hints`: one solve per distinct
demand, within a quarter of the time limit; a period left unsolved borrows the plan of a solved
period whose demand covers its own) is the warm start and a cut. The committed vector is then
searched: listed when few (solver/fleet/periods_commit.py), by boxes when many
(solver/fleet/periods_box.py); the tie-breaks run at the best vector.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet import periods_box as box
from solver.fleet import periods_commit as commit
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.objective import ObjectiveStage, configs_expr, devices_expr
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, PeriodModel
from solver.fleet.periods_hints import Hints, floor_sum, period_hints, post_floors, service_hints
from solver.fleet.periods_lagrange import Lagrange, decomposes
from solver.fleet.pool import PROCESSES, Pool
from solver.fleet.solve import Stage
from solver.fleet.status import SolveStatus, found
from solver.schema.roles import COLOCATED, DECODE, PREFILL

LinearExpr = cp_model.LinearExpr
HINT_SHARE = 0.25  # of the time limit for the per-period hint solves (the rest: the model itself)
PRIMARY_WORKERS = 2  # the primary stage's workers (benchmarks/multiperiod.md: 2 cores)
PRIMARY_SUBSOLVERS = ("core", "max_lp")  # CP-SAT subsolver names (sat_parameters.proto `subsolvers`)
# many committed vectors: by boxes (periods_box.py), not the one model (6-8% gap on the
# three-service benchmark, benchmarks/multiperiod.md); off in tests comparing with the one model
BOX_SEARCH = True
FINAL_WORK = 2.0  # deterministic time per 24 periods of the model at the boxes' best vector (hinted)
# periods x columns from which the box search's solves run in worker processes (the
# three-service day: 24 x 137; the tests' instances stay in this process)
POOL_SIZE = 1000


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


def _hint_shares(pm: PeriodModel, fm, c: np.ndarray) -> None:
    """The colocated and disaggregated shares the counts c serve (colocated first), so that a
    hint of every period is complete: CP-SAT then loads it as its first solution."""
    inst = fm.inst
    for s, spec in enumerate(inst.services):
        cap = {r: int(np.sum(inst.cap[inst.rows(s, r)] * c[inst.rows(s, r)])) for r in (COLOCATED, PREFILL, DECODE)}
        col = min(spec.demand, cap[COLOCATED]) if spec.colocated else 0
        dis = min(spec.demand - col, cap[PREFILL], cap[DECODE]) if spec.disaggregated else 0
        pm.m.add_hint(fm.v.col[s][0], col)
        pm.m.add_hint(fm.v.dis[s][0], dis)


def apply_hints(pm: PeriodModel, counts: list, levels: dict[int, int] | None = None) -> None:
    """Hint every period's counts where known, and the commitment cheapest for their usage
    (or `levels`, the committed levels a model is fixed at)."""
    pi = pm.pi
    for fm, c in zip(pm.fms, counts):
        if c is not None:
            for v, x in zip(fm.v.n, c):
                pm.m.add_hint(v, int(x))
            for v, x in zip(fm.v.used, c):
                pm.m.add_hint(v, int(x > 0))
            if fm.inst.n_sites == 1:
                _hint_shares(pm, fm, c)
    if any(c is None for c in counts):
        return
    for p, vs in enumerate(pm.started, start=1):
        for v, now, before in zip(vs, counts[p], counts[p - 1]):
            pm.m.add_hint(v, max(int(now) - int(before), 0))
    for h, var in pm.commit.committed.items():
        rows = pi.base.hw == h
        usage = np.array([int(np.sum(c[rows] * pi.base.devices[rows])) for c in counts])
        level = _best_commitment(pi, h, usage) if levels is None else levels[h]
        pm.m.add_hint(var, level)
        for p, d in enumerate(pm.commit.on_demand):
            pm.m.add_hint(d[h], max(int(usage[p]) - level, 0))


def hinted_levels(pi: PeriodInstance, counts: list) -> dict[int, int] | None:
    """The committed levels cheapest for the hinted usages (None when a period has no hint)."""
    if any(c is None for c in counts):
        return None
    rows = {h: pi.base.hw == h for h in range(len(pi.base.hw_names)) if pi.termed[h]}
    return {h: _best_commitment(pi, h, np.array([int(np.sum(c[r] * pi.base.devices[r])) for c in counts]))
            for h, r in rows.items()}


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
    if primary and opts.workers <= PRIMARY_WORKERS:
        # the committed levels couple every period: one sequential search did not prove the
        # shipped daily-demand problem in 60 s (gap 4%), the core-based search beside the
        # max-LP one proves it in about 12 s of CPU (benchmarks/multiperiod.md)
        solver.parameters.num_workers = PRIMARY_WORKERS
        solver.parameters.subsolvers.extend(PRIMARY_SUBSOLVERS)
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


def _tiebreaks(pm: PeriodModel, spec: list[ObjectiveStage], opts: SolveOptions, t0: float,
               done: list[Stage], got: dict) -> dict:
    """The stages after the cost one, each frozen in turn; a stage without a solution keeps the
    previous stage's values."""
    for stage in spec:
        solver, status = _run_stage(pm, stage, False, opts, t0)
        if not found(status):
            break
        value = int(round(solver.objective_value))
        done.append(Stage(stage.name, SolveStatus.of_stage(status), value / stage.unit))
        _freeze(pm, stage, solver, value)
        got = _read(pm, solver)
    return got


def _finish(pm: PeriodModel, solver: cp_model.CpSolver, value: int, bound: float, opts: SolveOptions,
            hints: Hints, t0: float) -> PeriodSolution:
    """The cost stage's answer (`value`, proven >= `bound`) frozen, then the tie-breaks."""
    spec = stages(pm)
    gap = (value - min(bound, value)) / max(value, 1e-9)
    proven = SolveStatus.OPTIMAL if gap <= 1e-9 else SolveStatus.FEASIBLE
    done = [Stage(spec[0].name, proven, value / spec[0].unit)]
    _freeze(pm, spec[0], solver, value)
    got = _tiebreaks(pm, spec[1:opts.max_stages], opts, t0, done, _read(pm, solver))
    return PeriodSolution(status=proven, cost_usd=value / COST_UNIT, gap=gap,
                          wall_s=time.perf_counter() - t0, stages=done, hint_solves=hints.solves, **got)


def _by_levels(pi: PeriodInstance, ranges: dict[int, range], opts: SolveOptions, hints: Hints,
               t0: float) -> PeriodSolution | None:
    """The committed levels searched exactly (solver/fleet/periods_commit.py), then the
    tie-breaks at the best levels."""
    def prepare(pm: PeriodModel, levels: dict[int, int]) -> None:
        apply_hints(pm, hints.counts, levels)
        post_floors(pm, hints)

    best = commit.search(pi, ranges, opts, hinted_levels(pi, hints.counts) or {}, prepare, cost_expr, t0)
    if best is None:
        return None
    return _finish(best.pm, best.solver, best.value, best.bound, opts, hints, t0)


def _fixed(pi: PeriodInstance, levels: dict[int, int], counts: list, cut: float, work: float,
           opts: SolveOptions, hints: Hints, t0: float):
    """The model over periods at committed `levels`, hinted with `counts` (the period hints
    where incomplete), its cost below `cut`: (model, solver, status)."""
    pm = PeriodModel(pi)
    commit.fix(pm, levels)
    apply_hints(pm, counts if all(c is not None for c in counts) else hints.counts, levels)
    post_floors(pm, hints)
    expr = cost_expr(pm)
    if math.isfinite(cut):
        pm.m.add(expr <= int(cut) - 1)
    pm.m.minimize(expr)
    # its deterministic `work` bounds it; the wall clock only as a safety net (at least 4 s a unit)
    solver = make_solver(opts, max(opts.time_limit_s - (time.perf_counter() - t0), 4 * work), work)
    status = solver.solve(pm.m)
    check_status(status, pm.m)
    return pm, solver, status


def _by_boxes(pi: PeriodInstance, opts: SolveOptions, hints: Hints, t0: float, pool: Pool,
              lg: Lagrange | None) -> PeriodSolution | None:
    """The committed vector searched by boxes (solver/fleet/periods_box.py); its best plan is
    the hint of the model over periods at its levels (cut at its cost), which then runs the
    tie-breaks. None when the boxes found no plan."""
    def leaf(levels: dict[int, int], counts: list, cut: float, work: float):
        pm, solver, status = _fixed(pi, levels, counts, cut, work, opts, hints, t0)
        det = float(solver.response_proto.deterministic_time)
        if not found(status):
            return status, None, 0.0, None, det
        return (status, solver.objective_value, solver.best_objective_bound, list(_read(pm, solver)["counts"]), det)

    got = box.search_boxes(pi, commit.all_level_ranges(pi), opts, hinted_levels(pi, hints.counts) or {},
                           (hints.floors, hints.high_floors), cost_expr, t0, leaf, pool, lg, hints.counts)
    if got is None:
        return None
    work = FINAL_WORK * max(1.0, pi.n_periods / 24)
    pm, solver, status = _fixed(pi, got.best.levels, got.best.counts, got.best.value + 1, work, opts, hints, t0)
    if not found(status):
        return None
    bound = max(got.bound, floor_sum(pi, hints))
    return _finish(pm, solver, int(round(solver.objective_value)), bound, opts, hints, t0)


def solve_periods(pi: PeriodInstance, opts: SolveOptions = SolveOptions()) -> PeriodSolution | None:
    """The cheapest fleet over the horizon; None when no plan was found (infeasible or out of
    time). Few committed vectors: searched exactly (`_by_levels`); more: by boxes (`_by_boxes`,
    the committed price split across the periods first where the services plan apart);
    without a plan from them (or with BOX_SEARCH off), one model over periods."""
    t0 = time.perf_counter()
    ranges = commit.level_ranges(pi)
    boxes = ranges is None and BOX_SEARCH
    big = pi.n_periods * len(pi.base) >= POOL_SIZE
    with Pool(PROCESSES if boxes and big else 1) as pool:
        lg = None
        if boxes and decomposes(pi.base):
            lg = Lagrange(pi, sorted(commit.all_level_ranges(pi)), commit.period_groups(pi), opts, pool)
            hints = service_hints(pi, lg)
        else:
            hints = period_hints(pi, opts, HINT_SHARE * opts.time_limit_s)
        if ranges is not None:
            return _by_levels(pi, ranges, opts, hints, t0)
        if boxes:
            got = _by_boxes(pi, opts, hints, t0, pool, lg)
            if got is not None:
                return got
    return _one_model(pi, opts, hints, t0)


def _one_model(pi: PeriodInstance, opts: SolveOptions, hints: Hints, t0: float) -> PeriodSolution | None:
    """The one model over periods (core-based search beside max-LP), hinted and cut."""
    pm = PeriodModel(pi)
    apply_hints(pm, hints.counts)
    post_floors(pm, hints)
    solver, status = _run_stage(pm, stages(pm)[0], True, opts, t0)
    if not found(status):
        return None
    # a relative_gap stop reports OPTIMAL to CP-SAT; the plan says feasible unless proven
    bound = max(solver.best_objective_bound, floor_sum(pi, hints))
    return _finish(pm, solver, int(round(solver.objective_value)), bound, opts, hints, t0)

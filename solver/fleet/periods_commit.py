"""The committed levels searched exactly (issue 17): the fleet over periods solved as a
branch-and-bound over the committed vector C instead of one model where C couples every period.

For a fixed C the model's cost is T(C) = H * sum_h cp_h C_h + (each period at its demand, paying
the on-demand price only for the usage above C) + starts. Dropping the starts (>= 0) leaves the
periods independent: T(C) >= LB(C) = H * cp.C + sum_p s_p g_p(C), with g_p(C) the proven bound
of period p planned alone per second with its termed devices up to C free (one small model per
distinct period and level, memoised: periods of equal demand and supply are solved once). Every
C is bounded that way; then the C of the period hints first and the others by rising LB are
solved exactly with C fixed (the whole horizon, start costs included, cut at the best cost so
far) until LB(C) reaches the best. A result is proven only when every C is pruned or solved to
optimality; otherwise its bound is the least bound left.

Only when the committed vectors are few (`MAX_VECTORS`); else `solve_periods` searches them by
boxes (solver/fleet/periods_box.py).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.options import SolveOptions
from solver.fleet.periods import PeriodInstance, PeriodModel, device_bound

# committed vectors enumerated at most (the product of the levels of the types with both terms):
# daily-demand has 31 (one type, 0..30 devices); two types of ~50 levels each would need 2,500
# bounds of 24 periods each, more than the monolithic model costs
MAX_VECTORS = 256


def level_ranges(pi: PeriodInstance) -> dict[int, range] | None:
    """`all_level_ranges`, or None when their product exceeds MAX_VECTORS."""
    out = all_level_ranges(pi)
    return out if math.prod(len(r) for r in out.values()) <= MAX_VECTORS else None


def all_level_ranges(pi: PeriodInstance) -> dict[int, range]:
    """Per type with terms, the committed levels to try: 0 to the most devices of the type a
    period can use, within its committed supply (0 only without a committed price)."""
    out: dict[int, range] = {}
    for h in range(len(pi.base.hw_names)):
        if not pi.termed[h]:
            continue
        if pi.committed_price[h] is None:
            out[h] = range(1)
            continue
        top = device_bound(pi, h)
        cap = top if pi.committed_supply[h] is None else min(top, pi.committed_supply[h])
        out[h] = range(cap + 1)
    return out


class PeriodBounds:
    """g_p(C): period p planned alone, per second, its termed devices up to C free (memoised on
    the period's demand, its on-demand supply and C); a proven lower bound (CP-SAT's bound)."""

    def __init__(self, pi: PeriodInstance, opts: SolveOptions, cost_of):
        self.pi, self.opts, self.cost_of = pi, opts, cost_of
        self.memo: dict[tuple, float] = {}
        self.solves = 0

    def key(self, p: int, levels: tuple[int, ...]) -> tuple:
        inst = self.pi.periods[p]
        return (tuple(s.demand for s in inst.services), tuple(x[p] for x in self.pi.on_demand_supply), levels)

    def alone(self, p: int) -> PeriodInstance:
        pi = self.pi
        # the dominance bounds (solver/fleet/dominance.py): the same least cost, proven faster
        return dataclasses.replace(
            pi, periods=(pi.bounded(pi.periods[p]),), names=(pi.names[p],), seconds=(1,), start_cost=0,
            committed_price=tuple(None if x is None else 0 for x in pi.committed_price),
            on_demand_supply=tuple((x[p],) for x in pi.on_demand_supply))

    def g(self, p: int, c: dict[int, int]) -> float:
        alone = self.alone(p)
        # a level above the most devices the period can use leaves g as at that most
        c = {h: min(x, device_bound(alone, h)) for h, x in c.items()}
        k = self.key(p, tuple(c[h] for h in sorted(c)))
        if k not in self.memo:
            pm = PeriodModel(alone)
            fix(pm, c)
            pm.m.minimize(self.cost_of(pm))
            solver = make_solver(self.opts, 60.0, 2.0)
            status = solver.solve(pm.m)
            check_status(status, pm.m)
            self.solves += 1
            self.memo[k] = math.inf if status == cp_model.INFEASIBLE else (
                math.ceil(solver.best_objective_bound - 1e-6) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
                else 0.0)
        return self.memo[k]

    def lower(self, c: dict[int, int]) -> float:
        pi = self.pi
        fixed = sum(pi.horizon_s * int(pi.committed_price[h] or 0) * x for h, x in c.items())
        return fixed + sum(pi.seconds[p] * self.g(p, c) for p in range(pi.n_periods))


def period_groups(pi: PeriodInstance) -> list[list[int]]:
    """The periods by equal demand and on-demand supply (first-seen order): planned alone, the
    periods of a group are the same model."""
    keys: dict[tuple, list[int]] = {}
    pb = PeriodBounds(pi, SolveOptions(), None)
    for p in range(pi.n_periods):
        keys.setdefault(pb.key(p, ()), []).append(p)
    return list(keys.values())


def fix(pm: PeriodModel, c: dict[int, int]) -> None:
    for h, v in pm.commit.committed.items():
        pm.m.add(v == c[h])


@dataclass
class CommitResult:
    pm: PeriodModel  # the best committed vector's model, its cost stage solved
    solver: cp_model.CpSolver
    value: int  # its cost (objective units)
    bound: float  # a proven lower bound over every committed vector
    levels: dict[int, int]
    fixed_solves: int
    bound_solves: int


def search(pi: PeriodInstance, ranges: dict[int, range], opts: SolveOptions, first: dict[int, int],
           prepare, cost_of, t0: float) -> CommitResult | None:
    """The cheapest committed vector over `ranges` (`level_ranges`): `first` solved first, then
    the rest by rising LB. `prepare(pm, c)` hints and cuts a fixed model, `cost_of(pm)` its cost
    expression."""
    bounds = PeriodBounds(pi, opts, cost_of)
    types = sorted(ranges)
    vectors = [dict(zip(types, xs)) for xs in itertools.product(*(ranges[h] for h in types))]
    lbs = [bounds.lower(c) for c in vectors]
    order = sorted(range(len(vectors)), key=lambda i: (vectors[i] != first, lbs[i], i))
    best: CommitResult | None = None
    left = math.inf  # the least bound of a vector neither pruned nor proven
    solves = 0
    for i in order:
        c = vectors[i]
        if math.isinf(lbs[i]) or (best is not None and lbs[i] >= best.value):
            continue
        pm = PeriodModel(pi)
        fix(pm, c)
        prepare(pm, c)
        expr = cost_of(pm)
        if best is not None:
            pm.m.add(expr <= best.value - 1)
        pm.m.minimize(expr)
        solver = make_solver(opts, opts.time_limit_s - (time.perf_counter() - t0), opts.primary_work)
        status = solver.solve(pm.m)
        check_status(status, pm.m)
        solves += 1
        if status == cp_model.INFEASIBLE:
            continue  # T(c) >= best (or no plan with c)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            value = int(round(solver.objective_value))
            if status == cp_model.FEASIBLE:
                left = min(left, max(lbs[i], solver.best_objective_bound))
            best = CommitResult(pm, solver, value, 0.0, c, 0, 0)
        else:
            left = min(left, lbs[i])
    if best is None:
        return None
    best.bound = min(float(best.value), left)
    best.fixed_solves, best.bound_solves = solves, bounds.solves
    return best

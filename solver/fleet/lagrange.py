"""A Lagrangian lower bound on the shared fleet's cost (min_cost), pricing the shared supply rows.

The services share the fleet through its supply rows (each hardware type's supply, and per site
each type's supply there). Pricing row r's devices at an integer multiplier lam_r >= 0 (in
1e-4 USD/h per device, the model's cost unit, so every priced cost stays an integer) and moving
the rows into the objective separates the problem per service:

    L(lam) = sum_s min_{x_s feasible for s alone} (cost + sum_r lam_r * devices_r) . x_s
             - sum_r lam_r * supply_r

For any plan x of the shared fleet each row's devices are at most its supply, so
cost . x >= L(lam) for every lam >= 0: L is a lower bound on the shared optimum. Each service
alone keeps every shared limit (solver/fleet/standalone.py `sub_instance`), so its minimum only
relaxes the shared problem. A sub-solve's bound is CP-SAT's best objective bound (valid even
when the sub-solve was cut), rounded up only as far as the integer objective allows; at lam = 0
L is the sum of the services' own optima (the cost floors the shared model already has).

`lagrangian_bound` raises L by at most STEPS projected subgradient steps (Polyak's step
towards the level that would decide a reach question), so it is deterministic; the sub-solves
are memoised by their sub-instance and priced costs (only proven ones). It is used only to say
"no plan reaches the target" (solver/fleet/solve.py `reach_plan`): never a wrong "no", since
L is a valid bound for whichever lam the steps reach (tests/fleet/test_lagrange.py).
"""

from __future__ import annotations

import math

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.instance import FleetInstance
from solver.fleet.options import SolveOptions
from solver.fleet.standalone import Memo, Standalone, sub_instance
from solver.fleet.status import found

# subgradient steps after the start (the own plans): three-services' hard "no" questions were
# decided within 2-5 (benchmarks/plan_speed.md); each step is one small sub-solve per service
STEPS = 8
# a step that does not halve the distance to the target ends the search (a "yes" question, that
# no bound can decide, stalls at once), and the first steps aim at twice that distance (past
# the target): on three-services' reach questions these cut the bound's CPU most of the
# settings tried (1 or 2 misses, factors 1-4: benchmarks/plan_speed.md)
MISSES = 1
FIRST_FACTOR = 2.0
INFEASIBLE = 1 << 62  # a service alone has no plan: no shared plan either (any target is out)


def supply_rows(inst: FleetInstance) -> list[tuple[np.ndarray, int]]:
    """The shared supply rows: (columns, supply) per limited type, then per site and type."""
    rows = []
    for h, supply in enumerate(inst.supply):
        cols = np.flatnonzero(inst.hw == h)
        if supply is not None and cols.size:
            rows.append((cols, int(supply)))
    for k, per_type in enumerate(inst.site_supply):
        for h, supply in enumerate(per_type):
            cols = np.flatnonzero((inst.site == k) & (inst.hw == h))
            if supply is not None and cols.size:
                rows.append((cols, int(supply)))
    return rows


def has_priced_rows(inst: FleetInstance) -> bool:
    """Whether a bound is sought: min_cost with several services and a shared supply row."""
    return inst.objective == "min_cost" and len(inst.services) > 1 and bool(supply_rows(inst))


def _priced_alone(sub: FleetInstance, costs: np.ndarray, opts: SolveOptions, limit: float,
                  memo: Memo | None) -> tuple[int | None, np.ndarray | None]:
    """min costs . x over service `sub`'s plans: (a lower bound, the plan found); (INFEASIBLE,
    None) when the service alone has no plan; (None, None) when cut before any plan."""
    key = ("lagrange", *Memo.key(sub, opts), costs.tobytes())
    got = memo.get(key) if memo is not None else None
    if got is not None:
        return got
    fm = build_model(sub)
    fm.m.minimize(cp_model.LinearExpr.weighted_sum(fm.v.n, costs.tolist()))
    sv = make_solver(opts, limit, opts.primary_work, sites=sub.n_sites > 1, alone=True)
    status = sv.solve(fm.m)
    check_status(status, fm.m)
    if status == cp_model.INFEASIBLE:
        out = (INFEASIBLE, None)
    elif found(status):
        # the objective is an integer: its bound rounds up to the next integer (1e-6: float noise)
        out = (int(math.ceil(sv.best_objective_bound - 1e-6)),
               np.array([sv.value(v) for v in fm.v.n], dtype=np.int64))
    else:
        out = (None, None)
    if memo is not None and status in (cp_model.OPTIMAL, cp_model.INFEASIBLE):
        memo.put(key, out)
    return out


def _evaluate(inst: FleetInstance, rows, lam: np.ndarray, opts: SolveOptions, limit: float,
              memo: Memo | None) -> tuple[int | None, np.ndarray | None]:
    """L(lam) and the services' priced plans as instance counts (None where unknown)."""
    price = np.zeros(len(inst), dtype=np.int64)
    for (cols, _), lr in zip(rows, lam):
        price[cols] += int(lr) * inst.devices[cols]
    total = -sum(int(lr) * supply for (_, supply), lr in zip(rows, lam))
    counts = np.zeros(len(inst), dtype=np.int64)
    for s in range(len(inst.services)):
        at = np.flatnonzero(inst.service == s)
        bound, got = _priced_alone(sub_instance(inst, s), inst.cost[at] + price[at], opts, limit, memo)
        if bound is None:
            return None, None
        if bound >= INFEASIBLE:
            return INFEASIBLE, None
        total += bound
        counts[at] = got
    return total, counts


def _start(inst: FleetInstance, alone: Standalone | None) -> tuple[int, np.ndarray] | None:
    """L(0) and its plans: the services' own optima (their floors, rounded up as the shared
    model's cuts are) and their union; None when some own plan is unknown."""
    if alone is None or alone.counts is None or any(b is None for b in alone.bounds):
        return None
    return sum(int(math.ceil(b - 1e-6)) for b in alone.bounds), alone.counts


def _step(inst: FleetInstance, rows, supply: np.ndarray, lam: np.ndarray, counts: np.ndarray,
          size: float) -> np.ndarray | None:
    """The next multipliers: a projected subgradient step of `size` per unit of the squared
    subgradient's norm (the rows' devices used by `counts` less their supply); None when the
    step cannot move (the priced plans keep within every priced row)."""
    use = np.array([float((counts[cols] * inst.devices[cols]).sum()) for cols, _ in rows])
    g = use - supply
    g[(lam <= 0) & (g < 0)] = 0.0  # projected: a row at lam 0 with slack stays there
    norm = float(g @ g)
    if norm == 0.0:
        return None
    return np.maximum(lam + size / norm * g, 0.0)


def lagrangian_bound(inst: FleetInstance, target: int, opts: SolveOptions, alone: Standalone | None,
                     memo: Memo | None = None) -> int | None:
    """The best L(lam) (model cost units) found from lam = 0 (the own plans `alone`) by at most
    STEPS subgradient steps, each from the best multipliers so far: Polyak's step towards
    target + 1 times FIRST_FACTOR, halved after each step that did not halve the distance to
    the target. It stops once the bound exceeds `target`, or at the MISSES-th such step (the
    bound is stalling below the target: the question is likely a "yes", which no bound
    decides). Deterministic: a fixed sequence of sub-solves under deterministic work. None: nothing known."""
    rows = supply_rows(inst)
    got = _start(inst, alone)
    if inst.objective != "min_cost" or not rows or got is None:
        return None
    best, counts = got
    limit = max(1.0, opts.time_limit_s / (4 * len(inst.services)))
    supply = np.array([s for _, s in rows], dtype=float)
    lam, factor, misses = np.zeros(len(rows)), FIRST_FACTOR, 0
    for _ in range(STEPS):
        if best > target:
            break
        nxt = _step(inst, rows, supply, lam, counts, factor * (target + 1 - best))
        if nxt is None:
            break
        value, got_counts = _evaluate(inst, rows, np.floor(nxt), opts, limit, memo)
        if value is None or got_counts is None:
            return max(best, value) if value is not None else best
        if 2 * (target + 1 - value) > target + 1 - best:
            misses, factor = misses + 1, factor / 2
            if misses == MISSES:
                return max(best, value)
        if value > best:
            best, counts, lam = value, got_counts, nxt
    return best

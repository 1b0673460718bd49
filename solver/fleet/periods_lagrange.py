"""A Lagrangian bound on the fleet over periods (issue 17 point 5): the committed price split
across the periods.

For a committed vector C the horizon costs T(C) = H cp.C + sum_k w_k g_k(C) (+ starts >= 0),
over the distinct periods k of weight w_k (seconds), g_k(C) the period's cost per second with
its termed devices up to C free. Split each type's horizon price into per-period prices pi_k
>= 0 with sum_k w_k pi_k <= H cp (integers: rounded down). Then

    T(C) >= sum_k w_k (pi_k.C + g_k(C)) >= sum_k w_k min over C' of (pi_k.C' + g_k(C')) = L(pi),

and each period's minimum over its own level is the period planned alone with every termed
device at the linear price min(pi_k, op) (committed when pi_k < op: C' = its usage). So L(pi)
is a lower bound for every split; the uniform split pi_k = cp is the floor sum of the period
hints. The periods planned alone at linear prices and without shared rows (no supply, budget or
power limit) fall apart by service: each service is one small model (`sub_instance`).

`search` raises L by projected subgradient steps on nu_k = w_k pi_k (the plane sum_k nu_k =
H cp, nu >= 0): a period's level C'_k is the subgradient, so the steps move committed price to
the periods whose plans commit the most (the peaks). Polyak's step towards the incumbent,
halved after a step that does not raise L, aimed at most AIM above L; a fixed number of steps
(deterministic: every sub-solve runs under a deterministic limit). The periods' plans together are also plans of the
horizon (incumbents for the caller). The best split then prices the box search's periods
(solver/fleet/periods_box.py), whose bound of the whole range is L.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.instance import FleetInstance
from solver.fleet.objective import cost_expr
from solver.fleet.options import SolveOptions
from solver.fleet.periods import PeriodInstance
from solver.fleet.pool import Pool
from solver.fleet.standalone import sub_instance

# subgradient steps: at most STEPS, and at most SOLVES_PER_S sub-solves (each service of each
# distinct period planned alone, about 28 ms of CPU) per second of the time limit: the
# three-service day (72 a step) gets 13 steps in 60 s, its week (504 a step) 9 in 300 s. On the
# day the bound rose 6,263.52 -> 6,348.76 in 9 steps and 6,358.93 in 12 (benchmarks/multiperiod.md)
STEPS = 12
SOLVES_PER_S = 16
SUB_WORK = 1.0  # deterministic time of one service planned alone (the day's 936 took 4.6 in all: benchmarks/multiperiod.md)
FIRST_FACTOR = 1.0  # Polyak's step aims this far past the incumbent at first, halved on a miss
# ... and at most this far above the bound so far: an incumbent far above it (the periods' own
# plans together, 12% above on the three-service day) overshoots. Doubling it after each step
# that raised the bound was tried: day gap 1.47% ($6,446.11) instead of 1.20% ($6,432.63)
AIM = 0.02
# ... and this far past the target (an exact aim at the 1% stop left the week 0.0025 USD short
# of it, and its box search 59 s to close that: benchmarks/multiperiod.md)
PAST = 0.001


@dataclass
class Split:
    prices: np.ndarray  # [group][type]: committed price per second (1e-4 USD per device-hour)
    bound: float  # L at these prices (objective units); a lower bound on the horizon's cost
    plans: list  # [group]: instance counts of the period's plan at these prices (None: none)
    bounds: list  # [group]: the period's proven bound per second at these prices
    evaluations: int = 0
    work: float = 0.0  # deterministic time of the sub-solves


def decomposes(inst: FleetInstance) -> bool:
    """No row shared by the services (supply, budget, power): at linear prices each service
    planned alone is the period planned alone."""
    return inst.budget is None and inst.power_cap is None and all(s is None for s in inst.supply)


def linear_costs(pi: PeriodInstance, types: list[int], prices: np.ndarray) -> np.ndarray:
    """Per column its cost per hour with each termed device at min(committed price, on-demand
    price) (the committed price alone where it cannot be rented; on demand where not committed)."""
    cost = pi.base.cost.copy()
    for i, h in enumerate(types):
        op = pi.on_demand_price[h]
        price = int(prices[i]) if op is None else min(int(prices[i]), int(op))
        if pi.committed_price[h] is None:
            price = int(op or 0)
        at = pi.base.hw == h
        cost[at] = pi.base.devices[at] * price
    return cost


def solve_priced(inst: FleetInstance, work: float, seed: int) -> tuple[int, np.ndarray | None, float]:
    """min cost . n over the instance's plans: (a proven lower bound, the plan, deterministic
    time); a top-level function so that a worker process can run it."""
    fm = build_model(inst)
    fm.m.minimize(cost_expr(fm))
    sv = make_solver(SolveOptions(seed=seed), 60.0, work, alone=len(inst.services) == 1)
    status = sv.solve(fm.m)
    check_status(status, fm.m)
    det = float(sv.response_proto.deterministic_time)
    if status == cp_model.INFEASIBLE:
        return 1 << 62, None, det
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return 0, None, det
    return int(math.ceil(sv.best_objective_bound - 1e-6)), np.array([sv.value(v) for v in fm.v.n]), det


class Lagrange:
    """L(pi) over the distinct periods `groups` (lists of periods of equal demand and supply)."""

    def __init__(self, pi: PeriodInstance, types: list[int], groups: list[list[int]], opts: SolveOptions,
                 pool: Pool):
        self.pi, self.types, self.groups, self.opts, self.pool = pi, types, groups, opts, pool
        self.weight = np.array([sum(pi.seconds[p] for p in g) for g in groups], dtype=float)
        self.cp = np.array([int(pi.committed_price[h] or 0) for h in types], dtype=float)
        self.memo: dict[tuple, tuple] = {}
        self.work = 0.0
        # the dominance bounds do not depend on the prices (within a type the cost is per device)
        self.ub = [pi.bounded(pi.periods[g[0]]).ub for g in groups]

    def tasks(self, prices: np.ndarray) -> list[tuple]:
        """Per group the sub-instances to solve: each service alone, or the whole period."""
        out = []
        for k, g in enumerate(self.groups):
            inst = dataclasses.replace(self.pi.periods[g[0]], cost=linear_costs(self.pi, self.types, prices[k]),
                                       ub=self.ub[k])
            subs = ([sub_instance(inst, s) for s in range(len(inst.services))] if decomposes(inst)
                    else [inst])
            out.append((inst, subs))
        return out

    def evaluate(self, prices: np.ndarray) -> tuple[float, list, np.ndarray]:
        """L(prices) (objective units), the groups' plans, and their levels C'_k [group][type]."""
        total, plans, levels, _ = self.periods(prices)
        return total, plans, levels

    def periods(self, prices: np.ndarray) -> tuple[float, list, np.ndarray, list]:
        """`evaluate`, and per group its proven bound per second (1e-4 USD/h)."""
        tasks = self.tasks(prices)
        todo = {}
        for inst, subs in tasks:
            for sub in subs:
                key = (sub.cost.tobytes(), sub.ub.tobytes(), tuple(s.demand for s in sub.services), sub.service.size)
                if key not in self.memo:
                    todo[key] = sub
        keys = list(todo)
        got = self.pool.map(solve_priced, [(todo[k], SUB_WORK, self.opts.seed) for k in keys])
        for key, res in zip(keys, got):
            self.memo[key] = res
            self.work += res[2]
        total, plans, bounds = 0.0, [], []
        levels = np.zeros((len(self.groups), len(self.types)))
        for k, (inst, subs) in enumerate(tasks):
            parts = [self.memo[(s.cost.tobytes(), s.ub.tobytes(), tuple(x.demand for x in s.services), s.service.size)]
                     for s in subs]
            bounds.append(sum(b for b, _, _ in parts))
            total += self.weight[k] * bounds[-1]
            plan = None if any(c is None for _, c, _ in parts) else np.concatenate([c for _, c, _ in parts])
            if plan is not None and len(subs) > 1:  # sub_instance keeps each service's columns in order
                order = np.concatenate([np.flatnonzero(inst.service == s) for s in range(len(subs))])
                plan = plan[np.argsort(order)]
            plans.append(plan)
            levels[k] = self._levels(plan, prices[k])
        return total, plans, levels, bounds

    def uniform(self) -> np.ndarray:
        """The uniform split: every period at the committed price (the floors of the hints)."""
        return self.integer_prices(self.weight[:, None] * self.cp[None, :])

    def on_demand(self) -> np.ndarray:
        """Prices at which every termed device costs its on-demand price (no committed device)."""
        top = [max(int(self.pi.committed_price[h] or 0), int(self.pi.on_demand_price[h] or 0)) for h in self.types]
        return np.tile(np.array(top, dtype=float), (len(self.groups), 1))

    def _levels(self, plan: np.ndarray | None, prices: np.ndarray) -> np.ndarray:
        """C'_k: a type's usage where committing is cheaper than renting, else 0."""
        if plan is None:
            return np.zeros(len(self.types))
        pi, out = self.pi, np.zeros(len(self.types))
        for i, h in enumerate(self.types):
            op = pi.on_demand_price[h]
            if pi.committed_price[h] is not None and (op is None or prices[i] < op):
                out[i] = float(np.sum(plan * pi.base.devices * (pi.base.hw == h)))
        return out

    def integer_prices(self, nu: np.ndarray) -> np.ndarray:
        """pi_k = floor(nu_k / w_k): sum_k w_k pi_k <= H cp stays true."""
        return np.floor(nu / self.weight[:, None] + 1e-9)

    def steps(self) -> int:
        """The steps the time limit buys (`SOLVES_PER_S`), at most STEPS: deterministic."""
        per_step = sum(len(subs) for _, subs in self.tasks(self.uniform()))
        return max(0, min(STEPS, int(SOLVES_PER_S * self.opts.time_limit_s) // max(per_step, 1) - 1))

    def search(self, target, steps: int | None = None, on_plans=None, start: Split | None = None) -> Split:
        """The best split found from the uniform one (or `start`, a split found before: see the
        module) in `steps` steps (None: `steps()`), towards `target` (a cost, or a function
        returning the current one: the incumbent improves with the plans `on_plans(plans)` is
        shown, per group)."""
        steps = self.steps() if steps is None else steps
        aim = target if callable(target) else (lambda: target)
        H = float(self.pi.horizon_s)
        if start is None:
            best, levels = self._split(self.uniform(), on_plans)
        else:
            best, levels = start, self.periods(start.prices)[2]
        nu = self.weight[:, None] * best.prices
        factor = FIRST_FACTOR
        for _ in range(steps):
            if best.bound >= float(aim()):
                break
            goal = min(float(aim()) * (1 + PAST), (1 + AIM) * best.bound)
            d = levels - levels.mean(axis=0, keepdims=True)
            norm = float(np.sum(d * d))
            if norm == 0.0:
                break
            nu = _project(nu + factor * (goal - best.bound) / norm * d, H * self.cp)
            got, levels = self._split(self.integer_prices(nu), on_plans)
            best.evaluations += 1
            if got.bound > best.bound:
                got.evaluations = best.evaluations
                best = got
            else:
                factor /= 2
                nu = self.weight[:, None] * best.prices  # back to the best split
                levels = self.periods(best.prices)[2]
        best.work = self.work
        return best

    def _split(self, prices: np.ndarray, on_plans) -> tuple[Split, np.ndarray]:
        total, plans, levels, bounds = self.periods(prices)
        if on_plans is not None:
            on_plans(plans)
        return Split(prices, total, plans, bounds, 1), levels


def split_prices(search, lagrange: Lagrange, top: tuple, steps: int,
                 start: Split | None = None) -> tuple[Split, dict[int, int] | None]:
    """The committed price split across the periods (`Lagrange.search` towards the incumbent)
    for a box search (solver/fleet/periods_box.py `BoxSearch`, with an incumbent),
    its plans offered as incumbents; the table repriced when the split's bound beats the
    uniform one over the whole range. `steps` steps from `start` (None: the uniform split).
    Returns the split and the levels of its best plan."""
    table = search.table
    own = []  # the split's plans as incumbents

    def offer(plans: list) -> None:
        by_period = [None] * search.pi.n_periods
        for k, g in enumerate(table.groups):
            for p in g:
                by_period[p] = plans[k]
        got = search.offer(by_period) if all(c is not None for c in by_period) else None
        if got is not None and (not own or got.value < own[0].value):
            own[:] = [got]

    zero = tuple(0 for _ in top)
    split = lagrange.search(search.target, steps, offer, start)
    table.split_bound = max(table.split_bound, split.bound)  # a bound over every vector
    if split.bound > table.lower(zero, top):
        table.reprice(split.prices, split.bounds)
    return split, (own[0].levels if own else None)


def _project(nu: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Each column of nu onto {x >= 0, sum x = total} (Euclidean: the simplex projection)."""
    out = np.zeros_like(nu)
    for j in range(nu.shape[1]):
        v, z = nu[:, j], float(total[j])
        if z <= 0:
            continue
        u = np.sort(v)[::-1]
        css = np.cumsum(u) - z
        rho = np.nonzero(u - css / (np.arange(len(u)) + 1) > 0)[0][-1]
        out[:, j] = np.maximum(v - css[rho] / (rho + 1), 0.0)
    return out

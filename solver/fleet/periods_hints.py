"""The periods planned alone (issue 17): the warm start of the fleet over periods and its cuts.

Each period planned alone at the lower of each termed type's two prices (committed, on demand)
bounds what the period adds to the horizon's cost (its floor), and at the higher ones what it
costs with no committed device (its high floor); its plan is a hint. `period_hints` solves the
periods whole (one solve per distinct demand, under a wall-clock share of the limit);
`service_hints` by the services planned alone, every period, where no row is shared
(solver/fleet/periods_lagrange.py).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from solver.fleet import integerize as ints
from solver.fleet.options import SolveOptions
from solver.fleet.periods import PeriodInstance, PeriodModel
from solver.fleet.periods_lagrange import Lagrange
from solver.fleet.solve import solve
from solver.fleet.status import SolveStatus

HINT_WORK = 1.0  # CP-SAT deterministic time per period planned alone (the hints need no proof)


def lowest_prices(pi: PeriodInstance, pick=min) -> np.ndarray:
    """Per column, its cost per hour with every device of a type with terms at the type's lower
    price (committed or on demand; `pick=max`: the higher one): a period's cost at the lower
    prices, times its seconds, is a lower bound on what it adds to the horizon's cost (usage <=
    committed + on demand, op >= cp)."""
    cost = pi.base.cost.copy()
    for h in range(len(pi.base.hw_names)):
        if pi.termed[h]:
            price = pick(x for x in (pi.committed_price[h], pi.on_demand_price[h]) if x is not None)
            at = pi.base.hw == h
            cost[at] = pi.base.devices[at] * price
    return cost


def alone(pi: PeriodInstance, p: int, cost: np.ndarray, opts: SolveOptions, limit: float):
    """Period p planned alone at these column costs: (counts, a proven lower bound in 1e-4 USD/h),
    or None when nothing was found."""
    inst = pi.bounded(dataclasses.replace(pi.periods[p], cost=cost))  # the same least cost
    sol = solve(inst, opts.follow_up(max_stages=1, time_limit_s=limit,
                                                                            primary_work=HINT_WORK))
    if sol.status == SolveStatus.INFEASIBLE:
        return None
    value = sol.stages[0].value * ints.COST_SCALE
    return sol.counts, int(math.floor(value * (1 - sol.gap) + 1e-6))


@dataclass
class Hints:
    counts: list  # [period]: instance counts, or None
    floors: list  # [period]: a lower bound on the period's cost at the lowest prices, or None
    solves: int
    high_floors: list = field(default_factory=list)  # [period]: the same at the higher prices


def period_hints(pi: PeriodInstance, opts: SolveOptions, budget_s: float) -> Hints:
    """Each period planned alone at the lowest prices (`lowest_prices`), highest demand first,
    one solve per distinct demand while `budget_s` lasts: its plan is a hint, its proven bound a
    cut. A period left unsolved borrows the plan of the smallest solved demand covering its own."""
    t0 = time.perf_counter()
    low, high = lowest_prices(pi), lowest_prices(pi, max)
    two = bool(np.any(low != high))
    demand = np.array([[s.demand for s in inst.services] for inst in pi.periods])
    order = sorted(range(pi.n_periods), key=lambda p: -int(demand[p].sum()))
    solved: dict[tuple, tuple[np.ndarray, int]] = {}
    high_floor: dict[tuple, int] = {}
    out = Hints([None] * pi.n_periods, [None] * pi.n_periods, 0, [None] * pi.n_periods)
    # first the envelope (every service at its highest period demand, the base columns): its
    # plan covers every period, so each period has a hint even when the budget runs out
    envelope = pi.bounded(dataclasses.replace(pi.base, cost=low))
    sol = solve(envelope, opts.follow_up(max_stages=1, time_limit_s=budget_s, primary_work=HINT_WORK))
    if sol.status != SolveStatus.INFEASIBLE:
        cover_key = tuple(s.demand for s in pi.base.services)
        if cover_key not in {tuple(d) for d in demand}:
            solved[cover_key] = (sol.counts, 0)  # a cover only: its bound is no period's own
    for p in order:
        key = tuple(demand[p])
        if key not in solved and (not solved or time.perf_counter() - t0 < budget_s):
            left = max(0.5, budget_s - (time.perf_counter() - t0))
            got = alone(pi, p, low, opts, left)
            if got is not None:
                solved[key] = got
                hi = alone(pi, p, high, opts, left) if two else None
                if hi is not None:
                    high_floor[key] = hi[1]
        if key in solved:
            out.counts[p], out.floors[p] = solved[key]
            out.high_floors[p] = high_floor.get(key)
            continue
        cover = [np.array(k) for k in solved if np.all(np.array(k) >= demand[p])]
        if cover:  # the least demand that covers this period's
            out.counts[p] = solved[tuple(min(cover, key=lambda k: int(k.sum())))][0]
    out.solves = len(solved)
    return out


def service_hints(pi: PeriodInstance, lg: Lagrange) -> Hints:
    """`period_hints` by the services planned alone (every period, the rows shared by the
    services absent: `periods_lagrange.decomposes`): each period at the lower prices (its plan
    and floor: the uniform split) and at the higher ones (its high floor)."""
    _, plans, _, low = lg.periods(lg.uniform())
    high = lg.periods(lg.on_demand())[3]
    out = Hints([None] * pi.n_periods, [None] * pi.n_periods, len(lg.memo), [None] * pi.n_periods)
    for k, g in enumerate(lg.groups):
        for p in g:
            out.counts[p], out.floors[p], out.high_floors[p] = plans[k], low[k], high[k]
    return out


def floor_sum(pi: PeriodInstance, hints: Hints) -> float:
    """A lower bound on the horizon's cost: each period's floor at the lower prices times its
    seconds (committing costs cp over the horizon for every device a period uses under it), a
    period without a floor counted at 0 (costs are not negative). CP-SAT's core-based bound may
    stay below it."""
    return float(sum(f * s for f, s in zip(hints.floors, pi.seconds) if f is not None))


def post_floors(pm: PeriodModel, hints: Hints) -> None:
    """Each period's cost at the lower prices is at least its bound planned alone; and at the
    higher prices: plain + sum_h op_h (committed_h + on_demand_ph) >= its bound planned alone at
    them (its usage is within committed + on demand), which ties each period to the committed
    levels: a low level leaves the busy periods paying on demand."""
    pi = pm.pi
    low = lowest_prices(pi)
    every = np.arange(len(pi.base))
    plain = np.array([not pi.termed[int(h)] for h in pi.base.hw])
    for p, fm in enumerate(pm.fms):
        if hints.floors[p] is not None:
            pm.m.add(fm.row_sum(every, low, "period cost floor") >= hints.floors[p])
        high = hints.high_floors[p] if hints.high_floors else None
        if high is None:
            continue
        terms = [fm.row_sum(every, pi.base.cost * plain, "period cost floor")]
        for h, c in pm.commit.committed.items():
            price = int(max(x for x in (pi.committed_price[h], pi.on_demand_price[h]) if x is not None))
            terms.append(price * (c + pm.commit.on_demand[p][h]))
        pm.m.add(sum(terms) >= high)

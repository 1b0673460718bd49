"""A better starting point when the services' own plans do not fit the shared limits together.

The union of each service's standalone plan (solver/fleet/standalone.py) is the shared fleet's
optimum when it fits the shared limits (supply per type and per site, budget, power). When it
does not, CP-SAT starts from an infeasible hint and has to find good plans by search, which on
models whose optimum lies just above the sum of the standalone optima (three-services'
homogeneous comparison: 277.85 bound, 278.00 optimum) is most of the solve. Here each service in
turn is planned again with what the others' plans leave of the shared limits; the cheapest
such union that fits is the hint. Only a hint: the optimum and its proof are CP-SAT's, so the
answer (a proven optimum) is the same; only the search is shorter.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.instance import FleetInstance
from solver.fleet.objective import cost_expr
from solver.fleet.options import SolveOptions
from solver.fleet.standalone import sub_instance
from solver.fleet.status import found


def _left(cap: int | None, used: int) -> int | None:
    return None if cap is None else cap - used


def _limits_left(inst: FleetInstance, counts: np.ndarray) -> dict:
    """The shared limits less what `counts` use: the fields of FleetInstance to replace."""
    dev = counts * inst.devices
    supply = tuple(_left(s, int(dev[inst.hw == h].sum())) for h, s in enumerate(inst.supply))
    site_supply = tuple(
        tuple(_left(s, int(dev[(inst.site == k) & (inst.hw == h)].sum())) for h, s in enumerate(row))
        for k, row in enumerate(inst.site_supply))
    site_power = tuple(_left(c, int((counts * inst.power)[inst.site == k].sum()))
                       for k, c in enumerate(inst.site_power_cap))
    return dict(supply=supply, site_supply=site_supply, site_power_cap=site_power,
                budget=_left(inst.budget, int((counts * inst.cost).sum())),
                power_cap=_left(inst.power_cap, int((counts * inst.power).sum())))


def fits(inst: FleetInstance, counts: np.ndarray) -> bool:
    """Whether `counts` keep within every shared limit (supply, budget, power; per site too)."""
    left = _limits_left(inst, counts)
    flat = [*left["supply"], *left["site_power_cap"], left["budget"], left["power_cap"],
            *(x for row in left["site_supply"] for x in row)]
    return all(x is None or x >= 0 for x in flat)


def _replan(inst: FleetInstance, s: int, counts: np.ndarray, opts: SolveOptions,
            limit: float) -> np.ndarray | None:
    """Service s planned alone (cheapest) within what the other services' `counts` leave of
    the shared limits: the union's counts, or None when nothing fits."""
    others = np.where(inst.service == s, 0, counts)
    left = _limits_left(inst, others)
    if any(x is not None and x < 0 for x in (*left["supply"], left["budget"], left["power_cap"])):
        return None
    sub = dataclasses.replace(sub_instance(inst, s), **left)
    fm = build_model(sub)
    fm.m.minimize(cost_expr(fm))
    sv = make_solver(opts, limit, opts.primary_work, sites=inst.n_sites > 1)
    status = sv.solve(fm.m)
    check_status(status, fm.m)
    if not found(status):
        return None
    out = others.copy()
    out[np.flatnonzero(inst.service == s)] = [sv.value(v) for v in fm.v.n]
    return out


def repaired(inst: FleetInstance, counts: np.ndarray, opts: SolveOptions, limit: float) -> np.ndarray:
    """`counts` when they fit the shared limits; otherwise the cheapest union, over the services,
    of the others' plans and that service re-planned within what they leave (the first service
    wins a tie); `counts` again when no re-plan fits."""
    if inst.objective != "min_cost" or fits(inst, counts):
        return counts
    best, best_cost = counts, None
    for s in range(len(inst.services)):
        got = _replan(inst, s, counts, opts, limit)
        if got is None or not fits(inst, got):
            continue
        c = int((got * inst.cost).sum())
        if best_cost is None or c < best_cost:
            best, best_cost = got, c
    return best


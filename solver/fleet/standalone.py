"""Each service planned alone: bounds on the shared fleet's optimum and a starting point for it.

A service's cost planned alone is a lower bound on its cost in the shared fleet (min_cost), and
its scale planned alone an upper bound on the common scale (max_throughput): sharing the fleet
only adds constraints. CP-SAT's best bound is valid even when a sub-solve is not finished.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.instance import FleetInstance
from solver.fleet.objective import cost_expr
from solver.fleet.options import SolveOptions
from solver.fleet.status import found


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


def standalone(inst: FleetInstance, opts: SolveOptions, limit: float) -> Standalone | None:
    """Each service planned alone (None for one service, or when a service alone is infeasible:
    the main solve finds and explains it). Together the services' own plans make a starting
    point for the shared fleet (a hint): when they fit the shared limits, they are its optimum."""
    if len(inst.services) < 2:
        return None
    out: list[float | None] = []
    counts: np.ndarray | None = np.zeros(len(inst), dtype=np.int64)
    for s in range(len(inst.services)):
        fm = build_model(sub_instance(inst, s))
        if inst.objective == "max_throughput":
            fm.m.maximize(fm.v.scale)
        else:
            fm.m.minimize(cost_expr(fm))
        sv = make_solver(opts, limit, opts.primary_work, sites=inst.n_sites > 1)
        status = sv.solve(fm.m)
        check_status(status, fm.m)
        if status == cp_model.INFEASIBLE:
            return None
        if not found(status):
            out.append(None)
            counts = None
            continue
        out.append(sv.best_objective_bound)
        if counts is not None:
            counts[np.flatnonzero(inst.service == s)] = [sv.value(v) for v in fm.v.n]
    return Standalone(out, counts)

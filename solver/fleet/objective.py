"""The fleet model's objectives: the lexicographic stages of each objective kind (the primary
objective, then the tie-breaks), their terms, and the redundant cuts that bound the primary one.

- min_cost: cost -> devices -> distinct configurations;
- max_throughput: scale factor -> devices -> distinct configurations -> cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.model import FleetModel

LinearExpr = cp_model.LinearExpr


@dataclass(frozen=True)
class ObjectiveStage:
    name: str  # cost | devices | configs | scale
    expr: object  # a CP-SAT linear expression
    maximize: bool
    unit: int  # the expression's integer units per reported unit


def cost_expr(fm: FleetModel):
    return LinearExpr.weighted_sum(fm.v.n, fm.inst.cost.tolist())


def devices_expr(fm: FleetModel):
    return LinearExpr.weighted_sum(fm.v.n, fm.inst.devices.tolist())


def configs_expr(fm: FleetModel):
    if fm.inst.n_sites == 1:
        return sum(fm.v.used)
    return sum(fm.config_used(np.arange(len(fm.inst))))


def stages(fm: FleetModel) -> list[ObjectiveStage]:
    """The objective's stages in order; the first one is the primary objective."""
    cost = ObjectiveStage("cost", cost_expr(fm), False, ints.COST_SCALE)
    devices = ObjectiveStage("devices", devices_expr(fm), False, 1)
    configs = ObjectiveStage("configs", configs_expr(fm), False, 1)
    if fm.inst.objective == "max_throughput":
        return [ObjectiveStage("scale", fm.v.scale, True, ints.SCALE_UNIT), devices, configs, cost]
    return [cost, devices, configs]


def service_cost_floor(fm: FleetModel, s: int, floor: int) -> None:
    """Service s costs at least `floor` (its optimum when planned alone: a valid cut, since
    sharing the fleet only adds constraints). It lifts the LP bound to the sum of the
    services' own optima, which is what makes proving optimality fast."""
    rows = np.flatnonzero(fm.inst.service == s)
    if rows.size:
        fm.m.add(fm.row_sum(rows, fm.inst.cost, "cost floor") >= floor)


def scale_ceiling(fm: FleetModel, ceiling: int) -> None:
    """max_throughput: the common scale cannot exceed any service's scale planned alone."""
    if fm.v.scale is not None:
        fm.m.add(fm.v.scale <= ceiling)

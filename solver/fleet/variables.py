"""The fleet model's decision variables, built by `build_variables`.

Column formulation: `n[c]` instances of column c (a candidate placed at a site) and `used[c]`
(n[c] >= 1); per service and site a colocated share `col` and a disaggregated share `dis` of the
demand (milli-QPS); for max_throughput the common `scale` of the demand mix (1/1000 units).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.instance import FleetInstance


@dataclass
class FleetVariables:
    n: list[cp_model.IntVar]  # instances per column
    used: list[cp_model.IntVar]  # per column: n >= 1
    col: list[list[cp_model.IntVar]]  # [service][site] colocated share, milli-QPS
    dis: list[list[cp_model.IntVar]]  # [service][site] disaggregated share, milli-QPS
    scale: cp_model.IntVar | None  # max_throughput: the multiple of the mix, in 1/SCALE_UNIT
    top: int  # an upper bound on any share
    extra: list[cp_model.IntVar] = field(default_factory=list)  # auxiliaries, for warm starts

    def all(self) -> list[cp_model.IntVar]:
        """Every variable, in a fixed order, for warm starts between stages."""
        col = [v for vs in self.col for v in vs]
        dis = [v for vs in self.dis for v in vs]
        return self.n + self.used + col + dis + ([self.scale] if self.scale is not None else []) + self.extra


def build_variables(m: cp_model.CpModel, inst: FleetInstance) -> FleetVariables:
    n = [m.new_int_var(0, int(inst.ub[i]), f"n[{i}]") for i in range(len(inst))]
    used = [m.new_bool_var(f"used[{i}]") for i in range(len(inst))]
    for i in range(len(inst)):
        m.add(n[i] <= int(inst.ub[i]) * used[i])
        m.add(n[i] >= used[i])
    top = _max_demand_bound(inst)
    col, dis = _shares(m, inst, top)
    scale = m.new_int_var(0, _scale_bound(inst), "scale") if inst.objective == "max_throughput" else None
    return FleetVariables(n=n, used=used, col=col, dis=dis, scale=scale, top=top)


def _shares(m: cp_model.CpModel, inst: FleetInstance, top: int) -> tuple[list, list]:
    """Per service and site the colocated and disaggregated shares (0 where not allowed)."""
    col, dis = [], []
    for s, spec in enumerate(inst.services):
        cols, diss = [], []
        for k in range(inst.n_sites):
            ok = inst.allowed(s, k)
            tag = f"[{s}]" if inst.n_sites == 1 else f"[{s},{k}]"
            cols.append(m.new_int_var(0, top if spec.colocated and ok else 0, f"col{tag}"))
            diss.append(m.new_int_var(0, top if spec.disaggregated and ok else 0, f"dis{tag}"))
        col.append(cols)
        dis.append(diss)
    return col, dis


def _max_demand_bound(inst: FleetInstance) -> int:
    """An upper bound on any share: the largest capacity the fleet could ever have."""
    total = int(np.sum(inst.cap.astype(object) * inst.ub.astype(object))) if len(inst) else 0
    top = max([total] + [s.demand for s in inst.services])
    return int(min(top, ints.INT_LIMIT // 1024))


def _scale_bound(inst: FleetInstance) -> int:
    bounds = []
    for s, spec in enumerate(inst.services):
        rows = np.flatnonzero(inst.service == s)
        total = int(np.sum(inst.cap[rows].astype(object) * inst.ub[rows].astype(object)))
        bounds.append(total * ints.SCALE_UNIT // max(spec.demand, 1))
    return int(min(max(bounds + [0]), ints.INT_LIMIT // 1024))

"""Each service planned alone: bounds on the shared fleet's optimum and a starting point for it.

A service's cost planned alone is a lower bound on its cost in the shared fleet (min_cost), and
its scale planned alone an upper bound on the common scale (max_throughput): sharing the fleet
only adds constraints. CP-SAT's best bound is valid even when a sub-solve is not finished.

A `Memo` keeps the proven sub-solves (optimal or infeasible) by the sub-instance's content and
the options that steer CP-SAT: the what-if probes of the decision record pose the same
service alone many times (a price that a service's columns do not see, or the same variant
probed with the kept and the free table), and a proven sub-solve on the same model and options
gives the same bound and plan (one worker, fixed seed: CP-SAT is deterministic). Unproven ones
(cut by a limit) are solved again each time, as without the memo.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
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


def instance_key(inst: FleetInstance) -> bytes:
    """A digest of everything in `inst` the fleet model reads (equal digests: the same model)."""
    h = hashlib.sha256()
    for f in dataclasses.fields(inst):
        x = getattr(inst, f.name)
        if isinstance(x, np.ndarray):
            h.update(f"{f.name}:{x.dtype.str}:{x.shape}:".encode())
            h.update(np.ascontiguousarray(x).tobytes())
        else:
            h.update(f"{f.name}={x!r};".encode())
    return h.digest()


class Memo:
    """Proven standalone sub-solves by (sub-instance, CP-SAT options); safe to share between
    threads (a race only solves the same sub-problem twice, with the same result)."""

    def __init__(self) -> None:
        self._got: dict[tuple, tuple] = {}
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(sub: FleetInstance, opts: SolveOptions) -> tuple:
        return (instance_key(sub), opts.seed, opts.workers, opts.primary_work, opts.presolve_iterations)

    def get(self, key: tuple) -> tuple | None:
        with self._lock:
            got = self._got.get(key)
            self.hits += got is not None
            return got

    def put(self, key: tuple, value: tuple) -> None:
        with self._lock:
            self._got[key] = value


def _alone(sub: FleetInstance, objective: str, opts: SolveOptions, limit: float,
           memo: Memo | None) -> tuple:
    """One service alone: (CP-SAT status, best bound, instance counts or None)."""
    key = Memo.key(sub, opts) if memo is not None else None
    got = memo.get(key) if memo is not None else None
    if got is not None:
        return got
    fm = build_model(sub)
    if objective == "max_throughput":
        fm.m.maximize(fm.v.scale)
    else:
        fm.m.minimize(cost_expr(fm))
    sv = make_solver(opts, limit, opts.primary_work, sites=sub.n_sites > 1, alone=True)
    status = sv.solve(fm.m)
    check_status(status, fm.m)
    out = (status, sv.best_objective_bound if found(status) else None,
           [sv.value(v) for v in fm.v.n] if found(status) else None)
    if memo is not None and status in (cp_model.OPTIMAL, cp_model.INFEASIBLE):
        memo.put(key, out)
    return out


@dataclass
class Standalone:
    """Each service planned alone: bounds (None where a sub-solve found nothing) and, where
    every sub-solve found a plan, their union as instance counts of the full instance."""

    bounds: list[float | None]
    counts: np.ndarray | None


def standalone(inst: FleetInstance, opts: SolveOptions, limit: float,
               memo: Memo | None = None) -> Standalone | None:
    """Each service planned alone (None for one service, or when a service alone is infeasible:
    the main solve finds and explains it). Together the services' own plans make a starting
    point for the shared fleet (a hint): when they fit the shared limits, they are its optimum.
    `memo`: proven sub-solves to reuse and keep (the same answers, see above)."""
    if len(inst.services) < 2:
        return None
    out: list[float | None] = []
    counts: np.ndarray | None = np.zeros(len(inst), dtype=np.int64)
    for s in range(len(inst.services)):
        status, bound, got = _alone(sub_instance(inst, s), inst.objective, opts, limit, memo)
        if status == cp_model.INFEASIBLE:
            return None
        if got is None:
            out.append(None)
            counts = None
            continue
        out.append(bound)
        if counts is not None:
            counts[np.flatnonzero(inst.service == s)] = got
    return Standalone(out, counts)

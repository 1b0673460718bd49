"""Why a fleet has no plan: an irreducible set of the named constraint groups that cannot hold
together (CP-SAT's assumption core, then a deletion filter: rebuild with a subset of the groups,
solve for feasibility)."""

from __future__ import annotations

import dataclasses

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet.build import build_model
from solver.fleet.cpsat import check_status, make_solver
from solver.fleet.instance import FleetInstance
from solver.fleet.options import SolveOptions


def _feasible(inst: FleetInstance, enabled: set[str], opts: SolveOptions, limit: float) -> bool:
    fm = build_model(inst, enabled)
    status = make_solver(opts, limit, opts.primary_work).solve(fm.m)
    check_status(status, fm.m)
    return status != cp_model.INFEASIBLE  # UNKNOWN counts as feasible: keep the group


def _assumption_core(inst: FleetInstance, opts: SolveOptions, limit: float) -> list[str] | None:
    """Groups in an infeasible core from CP-SAT's assumption literals (not always minimal)."""
    fm = build_model(inst, assumptions=True)
    by_index = {lit.index: key for key, lit in fm.literals.items()}
    fm.m.add_assumptions(list(fm.literals.values()))
    s = make_solver(dataclasses.replace(opts, workers=1), limit, opts.primary_work)  # core extraction is single-worker
    status = s.solve(fm.m)
    check_status(status, fm.m)
    if status != cp_model.INFEASIBLE:
        return None
    # filter indices that are not our literals (google/or-tools#5141)
    core = [by_index[i] for i in s.sufficient_assumptions_for_infeasibility() if i in by_index]
    return sorted(set(core)) or None


def explain(inst: FleetInstance, opts: SolveOptions, limit_per_solve: float = 5.0) -> list[str]:
    """An irreducible set of constraint groups that cannot hold together.

    CP-SAT's assumption core (each group behind one enforcement literal) narrows the groups; a
    deletion filter (drop a group, re-solve for feasibility, keep it out if still infeasible)
    then makes the set irreducible, since assumption cores are not guaranteed minimal.
    Row bounds are widened to the demand-based ones, so that dropping a supply, budget or power
    group really relaxes it (the solving bounds already build those limits in).
    Options under deterministic work (`primary_work`: the decision record's what-if plans) bound
    each solve by that work, the wall clock only by the whole time limit (a safety net that the
    caller notices by the time spent), so the explanation does not depend on machine load."""
    if opts.primary_work is not None:
        limit_per_solve = opts.time_limit_s
    inst = dataclasses.replace(inst, ub=np.maximum(inst.ub, inst.demand_ub))
    groups = build_model(inst).groups
    core = _assumption_core(inst, opts, limit_per_solve) or sorted(groups)
    for g in list(core):
        trial = [k for k in core if k != g]
        if not _feasible(inst, set(trial), opts, limit_per_solve):
            core = trial
    return [groups[k].text for k in core]

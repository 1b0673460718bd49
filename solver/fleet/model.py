"""The CP-SAT fleet model as the constraint families see it: the model, its variables
(solver/fleet/variables.py), the named constraint groups and the helpers every family posts
through.

Every constraint family (solver/fleet/demand.py, limits.py, survive.py) is a named group;
`enabled` selects which groups are posted, which is how the deletion filter finds the groups
that cannot hold together. solver/fleet/build.py posts the families in order;
solver/fleet/objective.py holds the objective terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.fleet import integerize as ints
from solver.fleet.instance import FleetInstance
from solver.fleet.variables import FleetVariables, build_variables

LinearExpr = cp_model.LinearExpr


class CpModel(cp_model.CpModel):
    """CP-SAT's model without the pre-PEP8 camelCase aliases OR-Tools attaches to every new
    model (ortools/sat/python/cp_model.py, `CpModel._add_pre_pep8_methods`, v9.15): they cost
    about 2 ms a model, most of the build of a small fleet model, and fleetplan calls none."""

    def _add_pre_pep8_methods(self) -> None:
        pass


@dataclass(frozen=True)
class Group:
    """A constraint group, named for the user."""

    key: str
    text: str


class FleetModel:
    def __init__(
        self, inst: FleetInstance, enabled: set[str] | None = None, assumptions: bool = False,
        m: cp_model.CpModel | None = None,
    ):
        self.inst = inst
        # m: a model shared with other FleetModels (one per period, solver/fleet/periods.py)
        self.m = CpModel() if m is None else m
        self.enabled = enabled
        self.groups: dict[str, Group] = {}
        # assumptions=True: every group is enforced by a literal (self.literals) that the caller
        # passes to add_assumptions, so CP-SAT can return an infeasible core of groups
        self.assumptions = assumptions
        self.literals: dict[str, cp_model.IntVar] = {}
        self._row_used: dict[int, cp_model.IntVar] = {}
        self.v: FleetVariables = build_variables(self.m, inst)

    def group(self, key: str, text: str) -> bool:
        """Register a group; True when it should be posted."""
        self.groups[key] = Group(key, text)
        if self.assumptions and key not in self.literals:
            self.literals[key] = self.m.new_bool_var(f"group[{key}]")
        return self.enabled is None or key in self.enabled

    def post(self, key: str, constraint) -> None:
        """Post a constraint of group `key` (under its literal in assumption mode)."""
        ct = self.m.add(constraint).with_name(key)
        lit = self.literals.get(key)
        if lit is not None:
            ct.only_enforce_if(lit)

    def row_sum(self, rows: np.ndarray, coeffs: np.ndarray, what: str):
        """sum of coeffs[c] * n[c] over the columns `rows` (refused if it could overflow)."""
        ints.check_row(coeffs[rows], self.inst.ub[rows], what)
        return LinearExpr.weighted_sum([self.v.n[i] for i in rows], coeffs[rows].tolist())

    def covers(self, key: str, served, s: int) -> None:
        """Post: `served` (milli-QPS) covers service s's demand (or its share of the scaled mix)."""
        spec = self.inst.services[s]
        if self.v.scale is None:
            self.post(key, served >= spec.demand)
        else:
            self.post(key, ints.SCALE_UNIT * served >= spec.demand * self.v.scale)

    def share(self, s: int, k: int):
        """The traffic of service s served at site k (colocated + disaggregated)."""
        return self.v.col[s][k] + self.v.dis[s][k]

    def config_used(self, cols: np.ndarray) -> list:
        """One literal per distinct candidate row among `cols`, true when any of its columns
        (the same configuration at several sites) is used. One site: the columns' own."""
        inst = self.inst
        if inst.n_sites == 1:
            return [self.v.used[i] for i in cols]
        return [self._row_literal(r) for r in sorted({int(inst.row[c]) for c in cols})]

    def _row_literal(self, r: int):
        if r not in self._row_used:
            mine = np.flatnonzero(self.inst.row == r)
            if mine.size == 1:
                self._row_used[r] = self.v.used[int(mine[0])]
            else:
                lit = self.m.new_bool_var(f"row_used[{r}]")
                for c in mine:
                    self.m.add_implication(self.v.used[int(c)], lit)
                self.v.extra.append(lit)
                self._row_used[r] = lit
        return self._row_used[r]

"""The typed status of a fleet solve and of each of its stages (the plan document writes the
value: "optimal", "feasible" or "infeasible")."""

from __future__ import annotations

import enum

from ortools.sat.python import cp_model


class SolveStatus(enum.StrEnum):
    OPTIMAL = "optimal"  # proven optimal (a stage: its objective proven)
    FEASIBLE = "feasible"  # a plan, not proven optimal within the limits
    INFEASIBLE = "infeasible"  # no plan: proven infeasible, or none found within the time limit

    @classmethod
    def of_stage(cls, cp_status) -> SolveStatus:
        """A stage that found a solution: OPTIMAL when CP-SAT proved it, FEASIBLE otherwise."""
        return cls.OPTIMAL if cp_status == cp_model.OPTIMAL else cls.FEASIBLE


def found(cp_status) -> bool:
    """CP-SAT returned a solution (proven optimal or not)."""
    return cp_status in (cp_model.OPTIMAL, cp_model.FEASIBLE)

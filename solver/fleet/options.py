"""`SolveOptions`: how a fleet solve runs (limits, seed, workers) and what it shows the user
(CP-SAT's search log, the exported model)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float = 60.0
    seed: int = 0
    workers: int = 1
    tiebreak_work: float = 5.0  # CP-SAT deterministic time per tie-break stage (~seconds)
    # CP-SAT deterministic time for the primary stage and the standalone sub-solves (None: the
    # time limit alone): a what-if probe that must not depend on machine load sets it
    primary_work: float | None = None
    # CP-SAT's max_presolve_iterations (None: its default). On the small what-if models the
    # second presolve round costs most of the solve and finds nothing the search needs
    presolve_iterations: int | None = None
    max_stages: int | None = None  # run only the first stages (None: all)
    # the primary stage stops at this relative gap (None: proven optimal); the fleet over
    # periods (solver/fleet/periods_solve.py) of a long horizon accepts e.g. 0.01
    relative_gap: float | None = None
    # hint a repaired union of the services' own plans when theirs breaks a shared limit
    # (solver/fleet/repair.py). Off for the plan and the what-ifs the record names: a hint can
    # change which of several equally good fleets is found, and those stay as they were (the
    # plans beyond the validity ends start from their probes' cheapest plan instead:
    # solver/decision/probe.py `best_plan`; the repair there cost more than it saved)
    repair_hint: bool = False
    solver_log: bool = False  # CP-SAT's search log of every solve, on stderr (plan --solver-log)
    export_model: Path | None = None  # write the primary stage's model here (plan --export-model)

    def follow_up(self, **changes) -> SolveOptions:
        """The options of a solve that follows the main plan solve (the homogeneous comparison,
        the decision record's what-ifs): the same, with `changes`, and no model export, so that
        the exported model stays the main solve's."""
        return dataclasses.replace(self, export_model=None, **changes)

"""One CP-SAT solver as every fleet solve configures it, the model check, the search log and the
model export.

With one worker and a fixed seed CP-SAT is deterministic, so the same input gives the same plan.
The search log (`SolveOptions.solver_log`) goes through a callback to stderr, never to stdout,
where the CLI writes the document.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ortools.sat.python import cp_model

from solver import files
from solver.errors import ModelInvalidError
from solver.fleet.options import SolveOptions

LINEARIZATION = 2


def _log_line(line: str) -> None:
    print(line, file=sys.stderr)


def make_solver(opts: SolveOptions, time_left: float, work: float | None = None,
                sites: bool = False, hinted: bool = False, alone: bool = False) -> cp_model.CpSolver:
    """A solver for one fleet solve: `time_left` wall seconds, `work` deterministic time,
    `sites` a model over several sites, `hinted` branching on the hint first (a reach
    question's short try), `alone` one service planned by itself."""
    s = cp_model.CpSolver()
    s.parameters.num_workers = opts.workers
    s.parameters.random_seed = opts.seed
    s.parameters.max_time_in_seconds = max(time_left, 0.05)
    # Covering rows with large capacity coefficients: level 2 adds cuts (knapsack covers, MIR)
    # that close the bound; on the 10-service benchmark it turned a 7% gap after 60 s into a
    # proof, and explanations with enforced rows need it too.
    s.parameters.linearization_level = LINEARIZATION
    if work is not None:
        s.parameters.max_deterministic_time = work
    if opts.presolve_iterations is not None:
        s.parameters.max_presolve_iterations = opts.presolve_iterations
    if sites and opts.workers == 1:
        # Several sites multiply near-equivalent columns under per-site supply: branching on
        # the LP solution proved the shipped multi-site problem in 3.1 s instead of 10.3 s and
        # halved the 60-s gap of benchmarks/bench_fleet_sites.py on one worker (with more
        # workers CP-SAT's portfolio does better left alone).
        s.parameters.search_branching = cp_model.LP_SEARCH
    if hinted:
        s.parameters.search_branching = cp_model.HINT_SEARCH
    if alone:
        # one service planned alone (its own plan, a Lagrangian sub-solve): a small model that
        # the root's MIR cuts slow more than they help. On 52 of three-services' record
        # sub-solves: 3.6 -> 2.2 s of CPU, the slowest 0.58 -> 0.15 s, all proven; the record's
        # validity search 10.0 -> 9.3 units of work (multi-site 6.4 -> 6.0; survive-failure
        # unchanged). On the shared models the cuts pay (benchmarks/plan_speed.md)
        s.parameters.add_mir_cuts = False
    if opts.solver_log:
        s.parameters.log_search_progress = True
        s.parameters.log_to_stdout = False
        s.log_callback = _log_line
    return s


def check_status(status, m: cp_model.CpModel) -> None:
    if status == cp_model.MODEL_INVALID:
        raise ModelInvalidError(f"CP-SAT rejected the fleet model: {m.validate()}")


def export_model(m: cp_model.CpModel, path: Path) -> None:
    """Write the model as CP-SAT's text proto (a CpModelProto in protobuf text format)."""
    files.write_text(path, str(m.proto) + "\n", "--export-model")

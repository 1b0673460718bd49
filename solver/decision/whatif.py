"""The record's what-if plans (runners-up, fallback, choices) under deterministic work.

Each is a whole plan (`plan`, compare=False) of a changed problem. Its primary stage and the
services' own sub-solves run under CP-SAT deterministic time (WHAT_IF_WORK), each tie-break
stage under WHAT_IF_TIEBREAK_WORK, on one worker, so the plan named does not depend on machine
speed or load. The wall clock (WHAT_IF_LIMIT_S per plan) is only a safety net: a plan that
ran that long may have been cut by it, and the record says so (`what_ifs_cut_short`).

Before, a what-if plan ran under a 5-s wall clock alone, its tie-break stages on what was
left of it: on a loaded machine three-services' runners-up came out "infeasible" (nothing
found in time) or at other costs (benchmarks/plan_speed.md).
"""

from __future__ import annotations

import threading
import time

from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult

# CP-SAT deterministic time (its work measure, ~seconds of one core) for a what-if plan's
# primary stage and each of its services' own plans. Measured need (every what-if solve of the
# 19 shipped problems logged in-process with no limit in reach, benchmarks/plan_speed.md): at
# most 0.94 (three-services, all proven), every other problem under 0.01; 5.0 leaves 5x room.
WHAT_IF_WORK = 5.0
# each tie-break stage: measured at most 0.59 (three-services; the others under 0.04), all
# proven; as in solver/fleet/solve.py, a tie-break left unproven still names a cheapest plan
WHAT_IF_TIEBREAK_WORK = 2.0
# the safety net per what-if plan (wall seconds; capped by --time-limit): three-services'
# slowest took 3.75 s of wall time at a load of ~4 on 2 cores, so it fires only on a machine
# far slower or busier than that
WHAT_IF_LIMIT_S = 60.0

_watch = threading.local()  # the net's firings, per thread (each what-if task runs on one)


def what_if_options(opts: SolveOptions) -> SolveOptions:
    """The plan's options for a what-if plan: one worker, the work budgets, the safety net."""
    return opts.follow_up(time_limit_s=min(opts.time_limit_s, WHAT_IF_LIMIT_S), workers=1,
                          primary_work=WHAT_IF_WORK, tiebreak_work=WHAT_IF_TIEBREAK_WORK)


def what_if_plan(rp: ResolvedProblem, opts: SolveOptions, candidates=None) -> PlanResult:
    """`plan(rp, opts, compare=False)`, noting when it ran as long as its wall-clock limit."""
    t0 = time.perf_counter()
    doc = plan(rp, opts, timings=False, candidates=candidates, compare=False)
    if time.perf_counter() - t0 >= opts.time_limit_s:
        _watch.fired = True
    return doc


def watched(task):
    """Run `task()`; (its result, whether a what-if plan inside it may have been cut)."""
    _watch.fired = False
    got = task()
    return got, _watch.fired

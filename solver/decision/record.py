"""`decide()`: plan a problem and attach its decision record (the facade the CLI calls)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

from solver import __version__
from solver.candidates.build import build_candidates
from solver.candidates.table import CandidateSet
from solver.decision.alternatives import fallback, runners_up
from solver.decision.bands import plan_uncertainty
from solver.decision.dimensions import choices
from solver.decision.parallel import Pool
from solver.decision.replayed import Replayer, replay_and_correct
from solver.decision.validity import MAX_SECONDS, MAX_SOLVES, validity_search
from solver.decision.whatif import watched, what_if_options
from solver.fleet.solve import SolveOptions
from solver.plan.homogeneous import may_cross_types, solve_homogeneous
from solver.plan.planner import plan, with_comparison
from solver.problem.load import ResolvedProblem
from solver.schema.decision import DecisionRecord
from solver.schema.result import PlanResult


def input_sha256(rp: ResolvedProblem) -> str:
    """sha256 of the problem file's bytes (of its canonical JSON when it came from text)."""
    path = Path(rp.doc.path)
    if not rp.doc.path.startswith("<") and path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return hashlib.sha256(rp.problem.model_dump_json().encode()).hexdigest()


def _parts(rp: ResolvedProblem, cs: CandidateSet, doc: PlanResult, what_if: SolveOptions, max_solves: int,
           record_seconds: float, abandon: threading.Event | None = None) -> tuple[list, Callable]:
    """The record's independent parts around the plan `doc` (solver/decision/parallel.py), in
    the order they start: the what-ifs (runners-up, fallback, choices: one task, whose solves
    are bounded by the wall clock, so it keeps a core of its own), then each validity
    interval's sides; and what makes the validity of the sides' results. The what-ifs' result
    says too whether the wall-clock safety net may have cut one of them (solver/decision/whatif.py)."""
    searches, finish = validity_search(rp, cs, doc, what_if, max_solves, record_seconds, abandon)

    def what_ifs() -> tuple:
        return watched(lambda: (runners_up(rp, cs, doc, what_if),
                                fallback(rp, doc, what_if) if doc.status != "infeasible" else None,
                                choices(rp, cs, doc, what_if)))

    return [what_ifs, *searches], finish


def _start_order(n: int, demand: bool) -> list[int]:
    """The order in which the record's n parts (`_parts`) start: the what-ifs, then the up sides
    of the price (and rate) intervals, the demand interval's up side (`demand`: the first
    interval is the demand's), then the down sides likewise. Only wall time depends on it (the
    results are put back in the record's order). Why: on the shipped problems the demand
    interval is among the cheapest (multi-site 1.1 s, three-services 2.2 s of CPU) and an up
    side ends with a plan beyond it; multi-site's price-of-h100-sxm up side is half of its
    search, and starting it first ends the record ~2.5 s sooner."""
    ups, downs = list(range(1, n, 2)), list(range(2, n, 2))
    if demand and ups:
        ups = ups[1:] + ups[:1]
        downs = downs[1:] + downs[:1]
    return [0, *ups, *downs]


def decide(rp: ResolvedProblem, opts: SolveOptions = SolveOptions(), timings: bool = True,
           max_solves: int = MAX_SOLVES, replay: bool = True, replayer: Replayer | None = None,
           record_seconds: float = MAX_SECONDS, workers: int | None = None) -> PlanResult:
    """The plan of `rp` with its decision record. The record's extra solves (runners-up, the
    fallback, the validity intervals) run with timings off and the same options, less the
    model export (`SolveOptions.follow_up`).

    `replay`: replay the plan (solver/decision/replayed.py) and, where the replay misses a bound
    the analytic table met, derate that configuration and solve again (bounded); the rest of the
    record is then built on the final plan and its derated candidates. `replayer`: a stand-in
    for the replay (tests). `record_seconds`: the validity search's wall-clock safety net (the
    search is bounded by solves and CP-SAT's deterministic time; when the net fires, the record
    says `cut_short` and marks the unfinished intervals `partial`). `workers`: threads for the
    record's independent searches (solver/decision/parallel.py; None: WORKERS, 1: one after the
    other; the record is the same)."""
    cs = build_candidates(rp)
    if rp.horizon is not None:
        # demand over time: the record's what-ifs would each re-plan every period; the plan's
        # `periods:` section carries its own validity (each committed level's growth margin)
        return plan(rp, opts, timings, candidates=cs, compare=True)
    # the record's what-if plans run under deterministic work, the wall clock a safety net
    # (solver/decision/whatif.py), and export no model: the exported one stays the main plan's
    what_if = what_if_options(opts)
    with Pool(workers) as pool:
        # the homogeneous comparison's solve does not depend on the plan: it starts beside the
        # plan's own solve, on the core that would idle (under deterministic work, so its result
        # is the same; dropped when the plan sends no KV cache across types)
        solved = pool.submit(lambda: solve_homogeneous(rp, cs, opts)) if may_cross_types(rp, cs) else None
        first = plan(rp, opts, timings, candidates=cs, compare=False)
        # the replay first, then beside it the comparison and the record's parts on this plan,
        # kept when the replay keeps it; a re-solved plan gets its own comparison from `plan`,
        # and its record's parts are started again
        replayed = (pool.submit(lambda: replay_and_correct(rp, cs, first, opts, timings, replayer))
                    if replay and first.status != "infeasible" else lambda: (cs, first, None))
        compared = pool.submit(lambda: with_comparison(rp, cs, first, opts, solved))
        abandon = threading.Event()
        tasks, finish = _parts(rp, cs, first, what_if, max_solves, record_seconds, abandon)
        early = pool.start(tasks, _start_order(len(tasks), rp.problem.objective == "min_cost"))
        cs_final, doc, check = replayed()
        if doc is first:
            done, doc = [g() for g in early], compared()
        else:
            abandon.set()  # a search begun on the replaced plan stops at its next probe
            tasks, finish = _parts(rp, cs_final, doc, what_if, max_solves, record_seconds)
            done = pool.run(tasks, _start_order(len(tasks), rp.problem.objective == "min_cost"))
    ((runners, fall, chosen), clock_cut), valid = done[0], finish(done[1:])
    record = DecisionRecord(
        uncertainty=plan_uncertainty(rp, doc), runners_up=runners, fallback=fall, validity=valid,
        input_sha256=input_sha256(rp), fleetplan_version=__version__, replay=check, choices=chosen,
        what_ifs_cut_short=True if clock_cut else None,
    )
    return doc.model_copy(update={"decision": record})

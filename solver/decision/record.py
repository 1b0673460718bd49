"""`decide()`: plan a problem and attach its decision record (the facade the CLI calls)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from solver import __version__
from solver.candidates.build import build_candidates
from solver.decision.alternatives import fallback, runners_up
from solver.decision.bands import plan_uncertainty
from solver.decision.dimensions import choices
from solver.decision.parallel import Pool
from solver.decision.replayed import Replayer, replay_and_correct
from solver.decision.validity import MAX_SECONDS, MAX_SOLVES, validity_search
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan, with_comparison
from solver.problem.load import ResolvedProblem
from solver.schema.decision import DecisionRecord
from solver.schema.result import PlanResult

WHAT_IF_LIMIT_S = 5.0


def input_sha256(rp: ResolvedProblem) -> str:
    """sha256 of the problem file's bytes (of its canonical JSON when it came from text)."""
    path = Path(rp.doc.path)
    if not rp.doc.path.startswith("<") and path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return hashlib.sha256(rp.problem.model_dump_json().encode()).hexdigest()


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
    # the homogeneous comparison (deterministic work) runs beside the replay and the record's
    # searches, and is kept when the replay keeps this plan (a re-solved plan gets its own from `plan`)
    first = doc = plan(rp, opts, timings, candidates=cs, compare=rp.horizon is not None)
    if rp.horizon is not None:
        # demand over time: the record's what-ifs would each re-plan every period; the plan's
        # `periods:` section carries its own validity (each committed level's growth margin)
        return doc
    with Pool(workers) as pool:
        compared = pool.submit(lambda first_cs=cs: with_comparison(rp, first_cs, first, opts))
        check = None
        if replay and doc.status != "infeasible":
            cs, doc, check = replay_and_correct(rp, cs, doc, opts, timings, replayer)
        # the record's what-if solves get a shorter limit each (an unproven one says "feasible")
        # and export no model: the exported one stays the main plan solve's
        what_if = opts.follow_up(time_limit_s=min(opts.time_limit_s, WHAT_IF_LIMIT_S))
        searches, finish = validity_search(rp, cs, doc, what_if, max_solves, record_seconds)

        def what_ifs() -> tuple:
            return (runners_up(rp, cs, doc, what_if),
                    fallback(rp, doc, what_if) if doc.status != "infeasible" else None,
                    choices(rp, cs, doc, what_if))

        # the what-ifs first (one task: their solves are bounded by the wall clock, so they keep
        # a core of their own), then the validity intervals' sides (solver/decision/parallel.py)
        done = pool.run([what_ifs, *searches])
        (runners, fall, chosen), valid = done[0], finish(done[1:])
        if doc is first:
            doc = compared()
    record = DecisionRecord(
        uncertainty=plan_uncertainty(rp, doc), runners_up=runners, fallback=fall, validity=valid,
        input_sha256=input_sha256(rp), fleetplan_version=__version__, replay=check, choices=chosen,
    )
    return doc.model_copy(update={"decision": record})

"""The HTML report's frontier section: a small cost-vs-traffic frontier of the plan's problem
(a few traffic levels, each one CP-SAT plan through the ordinary flow and verifier), computed
here by the caller of the report, which only renders it."""

from __future__ import annotations

from solver.errors import FleetplanError
from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem
from solver.questions.frontier import any_feasible, frontier
from solver.schema.questions import FrontierSection
from solver.schema.result import PlanResult

REPORT_FRONTIER_POINTS = 5  # traffic levels of the report's frontier
REPORT_FRONTIER_TIME_LIMIT_S = 10.0  # per frontier plan, at most (the plan's own limit if lower)


def report_frontier(rp: ResolvedProblem, doc: PlanResult, opts: SolveOptions,
                    timings: bool = True) -> FrontierSection:
    """A small frontier of the plan's problem for the report: REPORT_FRONTIER_POINTS levels up
    to the most traffic the problem's limits allow (or its demand when nothing limits it), each
    plan with at most REPORT_FRONTIER_TIME_LIMIT_S seconds. Skipped for an infeasible plan; a
    failure is reported in the section instead of failing the report."""
    if doc.status == "infeasible":
        return FrontierSection(result=None, note="not computed: the problem has no plan")
    small = SolveOptions(time_limit_s=min(opts.time_limit_s, REPORT_FRONTIER_TIME_LIMIT_S),
                         seed=opts.seed, workers=opts.workers, tiebreak_work=opts.tiebreak_work)

    try:
        fr = frontier(rp, REPORT_FRONTIER_POINTS, None, small, timings)
    except FleetplanError as exc:
        return FrontierSection(result=None, note=f"not computed: the frontier failed ({exc})")
    if not any_feasible(fr):
        return FrontierSection(result=fr, note="no traffic level of the sweep has a plan")
    return FrontierSection(result=fr, note=f"{len(fr.points)} traffic levels, each the cheapest fleet serving at "
                           f"least that traffic (one CP-SAT plan per level, at most "
                           f"{small.time_limit_s:g} s each; fleetplan frontier draws more)")

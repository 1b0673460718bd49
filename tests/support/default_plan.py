"""The default problem (problems/llama3-70b-online.yaml) resolved, its candidates and its plan,
built once per test process for the decision-record tests that search around it."""

from __future__ import annotations

from functools import cache

from solver.candidates.build import build_candidates
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import load_problem
from tests.support.cli import ROOT

OPTS = SolveOptions(time_limit_s=5.0)


@cache
def default_plan():
    """(resolved problem, candidate set, plan result) of the default problem."""
    rp = load_problem(ROOT / "problems" / "llama3-70b-online.yaml")
    cs = build_candidates(rp)
    return rp, cs, plan(rp, OPTS, timings=False, candidates=cs)

"""Plan variants of one problem through the plan flow, with one candidate build for all."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Literal

from solver import __version__
from solver.candidates.build import build_candidates, reprice
from solver.candidates.table import CandidateSet
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, derive
from solver.schema.questions import QuestionSolverInfo
from solver.schema.result import PlanResult


class Replanner:
    """Plans variants of `rp` (`problem.derive`) with the candidate tables built once.

    The tables depend on neither the demand (candidates are sized per instance) nor the prices
    (`candidates.reprice` swaps the cost column), so a variant that changes only those plans
    exactly as the full flow would, without re-running the performance model. Every plan goes
    through `plan.plan`, so every returned document has passed the verifier against its variant.
    """

    def __init__(self, rp: ResolvedProblem, opts: SolveOptions, timings: bool = True):
        self.rp = rp
        self.opts = opts
        self.timings = timings
        self.t0 = time.perf_counter()
        self.candidates: CandidateSet = build_candidates(rp)
        self.build_s = time.perf_counter() - self.t0
        self.solves = 0

    def plan(
        self,
        *,
        demand_scale: float = 1.0,
        prices: Mapping[str, float] | None = None,
        objective: Literal["min_cost", "max_throughput"] | None = None,
    ) -> tuple[ResolvedProblem, PlanResult]:
        variant = derive(self.rp, demand_scale=demand_scale, prices=prices, objective=objective)
        cs = self.candidates if variant.prices == self.rp.prices else reprice(self.candidates, variant.prices)
        self.solves += 1
        return variant, plan(variant, self.opts, self.timings, candidates=cs)

    def info(self) -> QuestionSolverInfo:
        return QuestionSolverInfo(
            solves=self.solves,
            candidates_evaluated=self.candidates.stats.evaluated,
            candidates_in_model=len(self.candidates.table),
            candidates_build_s=round(self.build_s, 3) if self.timings else None,
            wall_s=round(time.perf_counter() - self.t0, 3) if self.timings else None,
            time_limit_s=self.opts.time_limit_s,
            seed=self.opts.seed,
            workers=self.opts.workers,
            version=__version__,
        )

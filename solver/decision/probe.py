"""One what-if probe of the validity search: does the winner's structure stay optimal for a
variant of the problem (another demand or price)?

A probe solves the primary objective restricted to the winner's configurations (its optimum
`kept`, solver/fleet/solve.py `solve_primary`), then asks whether the whole candidate table has
a plan more than REGRET better (`reaches`: a feasibility question, which stops at the first
such plan and needs a weaker proof than the free optimum). The structure stays optimal when it
has none; when the restricted problem has no plan, when the free one has none either. Only
values matter, so a probe runs no tie-break stage, builds no plan document and explains no
infeasible fleet; values are compared exactly in the fleet model's integers (cost in 1e-4
USD/h with each instance's cost rounded up, so a comparison can differ from one of rounded
document costs by at most 1e-4 USD/h per instance).

Every probe solve runs on one worker under CP-SAT's deterministic time (PROBE_WORK), so that
its answer does not depend on machine load; the wall clock (`SearchBudget`, the record's
`--record-seconds`) is only a safety net, and a probe that ends after it is discarded.

The searches of one record share each service's proven own plan (solver/fleet/standalone.py
`Memo`), which both solves of a probe start from: it is solved once per distinct sub-problem,
and a proven sub-solve is the same whichever thread made it. Each prober (one side of one
interval) has a `ProbeMemo` of its own for the rest: a probe posed again (a price that no
column sees, e.g. a type whose every site overrides its price) is answered from it, and the
known-plan shortcut (`Prober.reaches`) sees only the plans its own probes found. Both can
decide a question that the solve under PROBE_WORK leaves undecided, so sharing them between
the record's threads made answers depend on which thread got there first (a three-services
record differed between two runs in the plan named beyond mi300x's price interval). The answers are the
solves' (tests/decision/test_probe_memo.py); a probe answered from the memo still counts its
two solves in the record's `solves`, as the budget does.
"""

from __future__ import annotations

import math
import threading
import time
from fractions import Fraction

import numpy as np

from solver.candidates.build import reprice
from solver.candidates.table import CandidateSet
from solver.fleet.instance import FleetInstance, build_instance
from solver.fleet.repair import fits
from solver.fleet.solve import SolveOptions, reach_plan, solve_primary
from solver.fleet.standalone import Memo, instance_key
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem
from solver.schema.result import PlanResult

REGRET = Fraction(2, 100)  # keeping the structure may cost this much more than re-planning
# CP-SAT deterministic time per probe solve (its work measure, roughly seconds of one core):
# survive-failure's probes needed up to 0.42, multi-site's more than 0.5, the other shipped
# problems' under 0.04 (benchmarks/plan_speed.md)
PROBE_WORK = 2.0
# a plan beyond an end (what the plan becomes there): its cost stage, and each tie-break stage
# (the shipped problems' needed under 0.08 except survive-failure's, up to ~3 s of CPU; a
# tie-break left unproven still names a cheapest plan: solver/fleet/solve.py)
BEYOND_WORK = PROBE_WORK
TIEBREAK_WORK = 1.0
# a reach question's quick first try on a fleet over several sites: the shared model alone
# (no own plans), where its LP often decides the question at once, while each service's own
# plan over several sites is a hard sub-solve (multi-site's chat: 0.13-1.3 s of CPU each,
# where a one-site service's takes ~0.02 s). Measured on the shipped problems
# (benchmarks/plan_speed.md): multi-site's questions 10.7 -> 5.9 s of CPU at 0.05; on
# three-services (one site) the try decided few and cost +1.3 to +2.7 s, so one-site fleets
# skip it. An undecided try is followed by the full question.
QUICK_WORK = 0.05
# one presolve round: on these small models the second one cost 60% of a probe solve and
# changed no optimum (benchmarks/plan_speed.md)
PRESOLVE_ITERATIONS = 1
MIN_SOLVE_S = 0.05  # CP-SAT's smallest wall limit as solver/fleet/cpsat.py sets it


class SearchBudget:
    """At most `probes` probes; `seconds` of wall time as a safety net (`cut` once it fired), or
    until `deadline` (time.perf_counter()) when given (budgets of searches run side by side).
    `abandon`: once set, the search stops as if cut (a search started before the plan it
    searches around was final, whose results are then dropped: solver/decision/record.py)."""

    def __init__(self, probes: int, seconds: float = 0.0, deadline: float | None = None,
                 abandon: threading.Event | None = None):
        self.left = probes
        self.used = 0
        self.deadline = time.perf_counter() + seconds if deadline is None else deadline
        self.cut = False
        self.abandon = abandon

    def take(self) -> bool:
        if self.abandon is not None and self.abandon.is_set():
            self.cut = True
        if self.cut or self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True

    def seconds_left(self) -> float:
        return max(self.deadline - time.perf_counter(), MIN_SOLVE_S)

    def late(self) -> bool:
        """The deadline passed (the last result may have been cut by it): stop for good."""
        if time.perf_counter() > self.deadline or (self.abandon is not None and self.abandon.is_set()):
            self.cut = True
        return self.cut


def _plan_key(inst: FleetInstance) -> tuple:
    """What makes counts a plan of `inst`, apart from prices and the shared limits."""
    return (inst.cap.tobytes(), inst.devices.tobytes(), inst.services)


def regret_target(objective: str, kept: int) -> int:
    """The value a free plan must reach to beat the kept structure by more than REGRET:
    min_cost: a cost c with kept > c * (1 + REGRET); max_throughput: a scale c with
    kept < c * (1 - REGRET) (the largest, resp. smallest, such integer)."""
    if objective == "max_throughput":
        return math.floor(Fraction(kept) / (1 - REGRET)) + 1
    return math.ceil(Fraction(kept) / (1 + REGRET)) - 1


class ProbeMemo:
    """One prober's answers by the probe's two instances and the free plans its probes found,
    and the services' proven own plans (solver/fleet/standalone.py `Memo`), which `own()`
    shares between the probers of one record (threads) while the rest stays each prober's."""

    def __init__(self, alone: Memo | None = None) -> None:
        self.alone = Memo() if alone is None else alone
        # free plans found by this prober's probes, by what makes a plan feasible apart from
        # prices (the known-plan shortcut, `Prober.reaches`)
        self.known: dict[tuple, list[np.ndarray]] = {}
        self._answers: dict[tuple[bytes, bytes], bool] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def answer(self, key: tuple[bytes, bytes]) -> bool | None:
        with self._lock:
            got = self._answers.get(key)
            self.hits += got is not None
            return got

    def keep(self, key: tuple[bytes, bytes], ok: bool) -> None:
        with self._lock:
            self._answers[key] = ok

    def own(self) -> ProbeMemo:
        """A memo for one prober: the shared own plans, answers and known plans of its own."""
        return ProbeMemo(self.alone)


class Prober:
    """Probes of one problem against its winner's configurations, under one budget."""

    def __init__(self, rp: ResolvedProblem, cs: CandidateSet, kept: CandidateSet,
                 opts: SolveOptions, budget: SearchBudget, memo: ProbeMemo | None = None):
        self.rp, self.cs, self.kept, self.budget = rp, cs, kept, budget
        self.memo = ProbeMemo() if memo is None else memo.own()
        self.opts = opts.follow_up(workers=1, primary_work=PROBE_WORK)
        self.plans = 0  # full plans made (the structures beyond the ends)
        # free plans found by this prober's earlier probes (ProbeMemo.known)
        self.known = self.memo.known
        self.shortcuts = 0  # probes a known plan answered (no CP-SAT solve)

    def _tables(self, variant: ResolvedProblem) -> tuple[CandidateSet, CandidateSet]:
        if variant.prices == self.rp.prices:
            return self.cs, self.kept
        return reprice(self.cs, variant.prices), reprice(self.kept, variant.prices)

    def holds(self, variant: ResolvedProblem) -> bool | None:
        """Whether the structure stays optimal at `variant`; None: no budget left."""
        if not self.budget.take():
            return None
        full, kept = self._tables(variant)
        mine_inst, free = build_instance(variant, kept), build_instance(variant, full)
        key = (instance_key(mine_inst), instance_key(free))
        ok = self.memo.answer(key)
        if ok is None:
            ok = self._answer(mine_inst, free)
            if self.budget.late():
                return None
            self.memo.keep(key, ok)
        return None if self.budget.late() else ok

    def _answer(self, mine_inst: FleetInstance, free: FleetInstance) -> bool:
        opts = self.opts.follow_up(time_limit_s=self.budget.seconds_left(),
                                   presolve_iterations=PRESOLVE_ITERATIONS)
        mine = solve_primary(mine_inst, opts, self.memo.alone)
        if mine.found:  # undecided (None): no plan REGRET better found within the probe's work
            target = regret_target(self.rp.problem.objective, mine.value)
            return self.reaches(free, target, opts) is not True
        return not solve_primary(free, opts, self.memo.alone).found

    def reaches(self, inst: FleetInstance, target: int, opts: SolveOptions) -> bool | None:
        """`reach_plan`, answered without a solve when a plan an earlier probe found is a plan
        here too and reaches `target` (min_cost; a price only changes costs and the budget, so
        a plan of another price with the same columns, capacities and demands stays one when
        it keeps within the shared limits and the instance bounds); then, over several sites,
        the shared model alone under QUICK_WORK; the full question (own plans first) when that
        is undecided. Each step answers only what it decides, so the answer is the full
        question's when that decides (tests/fleet/test_reach_shortcuts.py)."""
        if inst.objective == "min_cost":
            for counts in self._known_plans(inst):
                if int((counts * inst.cost).sum()) <= target:
                    self.shortcuts += 1
                    return True
        got, counts = None, None
        if inst.n_sites > 1:
            got, counts = reach_plan(inst, target, opts.follow_up(primary_work=QUICK_WORK), own_plans=False)
        if got is None:
            got, counts = reach_plan(inst, target, opts, self.memo.alone)
        if counts is not None:
            with self.memo._lock:
                self.known.setdefault(_plan_key(inst), []).append(counts)
        return got

    def _known_plans(self, inst: FleetInstance) -> list[np.ndarray]:
        """The free plans this prober's probes found that are plans of `inst` too (a price only
        changes costs and the budget: the same columns, capacities and demands, within the
        shared limits and the instance bounds), in the order found."""
        return [c for c in list(self.known.get(_plan_key(inst), ()))
                if bool((c <= inst.ub).all()) and fits(inst, c)]

    def best_plan(self, variant: ResolvedProblem) -> PlanResult | None:
        """The best plan at `variant` (what the plan becomes there); None once the safety net fired."""
        if self.budget.cut:
            return None
        full, _ = self._tables(variant)
        self.plans += 1
        # start from the cheapest plan a probe found here (min_cost): the own plans' union,
        # repaired to fit the shared supply, was up to 33% dearer than the optimum on
        # three-services' beyond plans, and finding the optimum took ~40% of their cost stage
        inst = build_instance(variant, full)
        plans = self._known_plans(inst) if inst.objective == "min_cost" else []
        hint = min(plans, key=lambda c: int((c * inst.cost).sum())) if plans else None
        # the services' own plans at `variant` are those its probe proved: the same instance and
        # the same options (BEYOND_WORK = PROBE_WORK, one presolve round), so the same memo key,
        # plans and bounds (one presolve round changed no beyond-plan stage of three-services:
        # benchmarks/plan_speed.md)
        opts = self.opts.follow_up(time_limit_s=self.budget.seconds_left(), primary_work=BEYOND_WORK,
                                   tiebreak_work=TIEBREAK_WORK, presolve_iterations=PRESOLVE_ITERATIONS)
        doc = plan(variant, opts, timings=False, candidates=full, compare=False, memo=self.memo.alone,
                   hint=hint)
        return None if self.budget.late() else doc

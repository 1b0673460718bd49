"""How long the plan stays right: the demand, price and (for services that may speculate, or
have a prefix cache's hit rate) acceptance-rate and hit-rate intervals over which it stays
optimal, found by re-solving, and what to re-measure when.

"Stays optimal" means: keeping the plan's configurations (its pools' hardware, parallelism and
batch; instance counts re-optimised for the new value) costs at most REGRET more than the best
plan for that value (serves at least 1 - REGRET of its throughput, for max_throughput). Exact
equality of the optimal structure is too brittle to be useful: with integer instance counts the
cheapest mix of configurations changes with almost any change of demand, by cents.

Each interval starts at the problem's value and steps outwards by the factors in STEPS (demand
scale, or one device type's price) until the plan stops being optimal, then bisects between the
last good and the first bad value until they are within REL_TOL of each other (the interval's
resolution). A probe solves the primary objective twice (free, and restricted to the winner's
configurations: solver/decision/probe.py) on candidate tables built once and repriced; the plan
the problem becomes just beyond an end is then planned in full, once per end. An acceptance or
hit rate changes capacities: its probes build the tables again per value (`_Rebuilding`), under
a budget of their own (MAX_SOLVES / 4 probes, half the seconds).

The search is deterministic: it is bounded by a number of probes (MAX_SOLVES, two solves each)
and each solve by CP-SAT's deterministic time (PROBE_WORK) on one worker, never by the clock.
`seconds` (`plan --record-seconds`) is only a safety net: when it fires, the probe under way is
discarded, the search stops, the record says `cut_short` and every interval not finished says
`partial`.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from solver.candidates.build import build_candidates
from solver.candidates.table import CandidateSet
from solver.decision.alternatives import only_configurations, pools_summary
from solver.decision.dimensions import shared_share, with_acceptance, with_hit_rate
from solver.decision.parallel import run_all
from solver.decision.probe import PROBE_WORK, ProbeMemo, Prober, SearchBudget
from solver.fleet.solve import SolveOptions
from solver.plan.assumptions import REMEASURE_AFTER_DAYS
from solver.problem.load import ResolvedProblem, derive
from solver.schema.decision import Interval, Remeasure, Validity
from solver.schema.prefix import MAX_HIT_RATE
from solver.schema.result import PlanResult

STEPS_UP = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
STEPS_DOWN = (0.9, 0.8, 2.0 / 3.0, 0.5, 1.0 / 3.0, 0.25)
REL_TOL = 0.02
MAX_SOLVES = 160  # probe solves for all intervals (two per probe)
MAX_SECONDS = 15.0  # the safety net: wall time for all intervals (plan --record-seconds)

__all__ = ["MAX_SECONDS", "MAX_SOLVES", "PROBE_WORK", "REL_TOL", "remeasure", "validity", "validity_search"]


def _edge(ask, steps) -> tuple[float, float | None, bool, bool]:
    """(furthest factor where the plan holds, the nearest factor found where it does not or
    None, the end is a search limit, no probe on this side was answered). `ask(f)`:
    True/False, None when the budget is spent."""
    good, bad = 1.0, None
    for i, f in enumerate(steps):
        ok = ask(f)
        if ok is None:
            return good, None, True, i == 0
        if ok:
            good = f
            continue
        bad = f
        break
    if bad is None:
        return good, None, True, False
    lo, hi = good, bad
    while abs(hi - lo) > REL_TOL * min(lo, hi):
        mid = (lo * hi) ** 0.5
        ok = ask(mid)
        if ok is None:
            break
        if ok:
            lo = mid
        else:
            hi = mid
    return lo, hi, False, False


@dataclass(frozen=True)
class _Side:
    """One side of an interval, searched by itself: the furthest factor where the plan holds,
    the nearest where it does not (None), the end is a search limit, nothing was answered, the
    probes it took, the plan just beyond the end (its summary) and the safety net fired."""

    end: float
    beyond: float | None
    limit: bool
    none: bool
    probes: int
    beyond_plan: str | None
    cut: bool


def _side(pr: Prober, variant, steps) -> _Side:
    """Step out and bisect on one side, then plan the structure beyond its end. The two sides
    of an interval are independent searches (run side by side: solver/decision/parallel.py);
    one after the other, the up side's probes come first, as the budget counts them."""
    used = pr.budget.used
    end, beyond, limit, none = _edge(lambda f: pr.holds(variant(f)), steps)
    probes = pr.budget.used - used
    doc = pr.best_plan(variant(beyond)) if beyond is not None else None
    return _Side(end, beyond, limit, none, probes, pools_summary(doc) if doc is not None else None,
                 pr.budget.cut)


def _joined(quantity: str, unit: str, current: float, up: _Side, down: _Side,
            cap: float | None = None) -> Interval:
    """The interval of its two sides (`cap`: the quantity's largest value, an end there a
    search limit)."""
    i = Interval(
        quantity=quantity, unit=unit, current=current,
        low=round(current * down.end, 6), high=round(current * up.end, 6),
        low_is_search_limit=down.limit, high_is_search_limit=up.limit,
        below=down.beyond_plan, above=up.beyond_plan,
        probes=up.probes + down.probes, partial=up.cut or down.cut,
        low_not_computed=down.none, high_not_computed=up.none,
    )
    if cap is not None and i.high >= cap:
        i = i.model_copy(update={"high": cap, "high_is_search_limit": True})
    return i


@dataclass(frozen=True)
class _Spec:
    """An interval to search: what it names, and the problem at factor f of its value (a fresh
    `variant` per side: _values); `cap`: the quantity's largest value (rates)."""

    quantity: str
    unit: str
    current: float
    variant: Callable[[], Callable[[float], ResolvedProblem]]
    cap: float | None = None

    def jobs(self) -> list[Callable[[Prober], _Side]]:
        return [lambda pr: _side(pr, self.variant(), STEPS_UP),
                lambda pr: _side(pr, self.variant(), STEPS_DOWN)]


def _searched(spec: _Spec, pr: Prober) -> Interval:
    """One interval searched by one prober, its up side then its down side (as the record's
    search does one after the other)."""
    up, down = (job(pr) for job in spec.jobs())
    return _joined(spec.quantity, spec.unit, spec.current, up, down, spec.cap)


class _Rebuilding(Prober):
    """Probes of an input that changes capacities (an acceptance or a hit rate): the candidate
    tables are built again for each probed value, the kept ones restricted to the winner's
    configurations; a value probed twice (clamped to its cap) is answered once."""

    def __init__(self, rp: ResolvedProblem, winner: PlanResult, opts: SolveOptions, budget: SearchBudget,
                 memo: ProbeMemo | None = None):
        super().__init__(rp, None, None, opts, budget, memo)  # type: ignore[arg-type]
        self.winner = winner
        self._built: tuple[ResolvedProblem, CandidateSet, CandidateSet] | None = None
        self._seen: dict[int, tuple[ResolvedProblem, bool]] = {}  # by identity; holds the variant

    def _tables(self, variant: ResolvedProblem) -> tuple[CandidateSet, CandidateSet]:
        if self._built is None or self._built[0] is not variant:
            full = build_candidates(variant)
            self._built = (variant, full, only_configurations(full, self.winner, variant))
        return self._built[1], self._built[2]

    def holds(self, variant: ResolvedProblem) -> bool | None:
        if id(variant) not in self._seen:
            ok = super().holds(variant)
            if ok is None:
                return None
            self._seen[id(variant)] = (variant, ok)
        return self._seen[id(variant)][1]


def _values(current: float, cap: float, at: Callable[[float], ResolvedProblem]):
    """The variant at factor f of `current`, clamped to `cap`: one problem object per value
    (a value probed twice is the same object, which _Rebuilding answers once)."""
    made: dict[float, ResolvedProblem] = {}

    def variant(f: float) -> ResolvedProblem:
        x = round(min(current * f, cap), 6)
        if x not in made:
            made[x] = at(x)
        return made[x]

    return variant


def _acceptance_spec(rp: ResolvedProblem, si: int) -> _Spec:
    """Service si's acceptance rate (at most 1)."""
    s = rp.problem.services[si]
    a = s.speculative.acceptance_rate
    return _Spec(f"acceptance rate of '{s.name}' ({s.speculative.method})", "acceptance", a,
                 lambda: _values(a, 1.0, lambda x: with_acceptance(rp, si, x)), cap=1.0)


def _hit_rate_spec(rp: ResolvedProblem, si: int) -> _Spec:
    """Service si's prefix-cache hit rate (at most MAX_HIT_RATE); a shared prefix as the share
    of the mean prompt it covers, varied by changing its length (dimensions.py `with_hit_rate`)."""
    s = rp.problem.services[si]
    pc = s.workload.prefix_cache
    if pc.shared_prefix_tokens is not None:
        what, current = f"prefix hit rate of '{s.name}' (its shared prefix / the mean prompt)", round(shared_share(rp, si), 6)
    else:
        what, current = f"prefix hit rate of '{s.name}'", pc.hit_rate
    return _Spec(what, "hit rate", current,
                 lambda: _values(current, MAX_HIT_RATE, lambda x: with_hit_rate(rp, si, x)), cap=MAX_HIT_RATE)


def remeasure(doc: PlanResult) -> list[Remeasure]:
    """Per measured table group (hardware, engine, version): when to measure again and why."""
    a = doc.assumptions
    if a is None:
        return []
    out: dict[tuple, Remeasure] = {}
    for p in a.profiles:
        key = (p.hardware, p.framework, p.framework_version)
        what = f"{p.hardware} operator tables ({p.framework} {p.framework_version})"
        if p.stack_differs:
            r = Remeasure(what=what, by="now",
                          why=f"measured on {p.framework} {p.framework_version}, the problem declares "
                              f"{a.engine} {a.engine_version}")
        elif p.collected_on is None and p.source_released_on is None:
            r = Remeasure(what=what, by="now", why="collection date unknown")
        else:
            dated = p.collected_on or p.source_released_on
            due = dt.date.fromisoformat(dated) + dt.timedelta(days=REMEASURE_AFTER_DAYS)
            when = (f"collected {p.collected_on}" if p.collected_on else
                    f"collected no later than {p.source_released_on}, the release of its source package")
            r = Remeasure(what=what, by="now" if p.stale else due.isoformat(),
                          why=f"{when}; re-measure every {REMEASURE_AFTER_DAYS} days")
        old = out.get(key)
        if old is None or (r.by == "now") or (old.by != "now" and r.by < old.by):
            out[key] = r
    items = sorted(out.values(), key=lambda r: (r.by != "now", r.by, r.what))
    if a.calibration is not None:
        due = dt.date.fromisoformat(a.calibration.fitted_at) + dt.timedelta(days=REMEASURE_AFTER_DAYS)
        items.append(Remeasure(
            what=f"{a.engine} calibration (end-to-end benchmarks)", by=due.isoformat(),
            why=f"fitted {a.calibration.fitted_at} on {a.calibration.fitted_on}; re-run a benchmark "
                "of the chosen configuration before and after rollout"))
    for hw in a.hardware_without_profiles:
        items.append(Remeasure(what=f"{hw} operator tables", by="now",
                               why="no measured tables: predictions are roofline-only"))
    return items


class _Group:
    """Interval sides searched under one probe budget (`probes`), as one after the other would:
    each side is first searched alone under the whole budget (side by side:
    solver/decision/parallel.py); in the record's order (each interval's up side, then its down
    side), those that fit into what the ones before them left keep their answers (a probe's
    answer does not depend on what ran before it), and from the first that does not, the rest
    are searched again one after the other under what was left."""

    def __init__(self, make: Callable[[SearchBudget], Prober], probes: int, deadline: float,
                 specs: list[_Spec], abandon: threading.Event | None = None):
        self.make, self.probes, self.deadline, self.specs = make, probes, deadline, specs
        self.abandon = abandon
        self.jobs = [job for spec in specs for job in spec.jobs()]

    def tasks(self) -> list[Callable[[], tuple[_Side, int, int, bool]]]:
        return [lambda job=job: self._alone(job) for job in self.jobs]

    def _alone(self, job: Callable[[Prober], _Side]) -> tuple[_Side, int, int, bool]:
        """(the side, probes used, full plans made, the safety net fired)."""
        pr = self.make(SearchBudget(self.probes, deadline=self.deadline, abandon=self.abandon))
        return job(pr), pr.budget.used, pr.plans, pr.budget.cut

    def _sides(self, results: list[tuple[_Side, int, int, bool]]) -> tuple[list[_Side], int, int, bool]:
        out: list[_Side] = []
        used = plans = 0
        cut = False
        for k, (side, n, made, fired) in enumerate(results):
            if used + n > self.probes:
                rest = self.make(SearchBudget(self.probes - used, deadline=self.deadline, abandon=self.abandon))
                out += [job(rest) for job in self.jobs[k:]]
                return out, used + rest.budget.used, plans + rest.plans, cut or rest.budget.cut
            out.append(side)
            used, plans, cut = used + n, plans + made, cut or fired
        return out, used, plans, cut

    def settle(self, results: list[tuple[_Side, int, int, bool]]) -> tuple[list[Interval], int, int, bool]:
        """(the intervals, probes used, full plans made, the safety net fired)."""
        sides, used, plans, cut = self._sides(results)
        intervals = [_joined(spec.quantity, spec.unit, spec.current, sides[2 * k], sides[2 * k + 1], spec.cap)
                     for k, spec in enumerate(self.specs)]
        return intervals, used, plans, cut


def _price_specs(rp: ResolvedProblem) -> list[_Spec]:
    """The demand interval (min_cost) and one per rented device type's price, in the record's order."""
    specs: list[_Spec] = []
    if rp.problem.objective == "min_cost":
        specs.append(_Spec("demand (multiple of every service's qps)", "x", 1.0,
                           lambda: lambda f: derive(rp, demand_scale=f)))
    for name, current in zip(rp.hardware_names, rp.prices):
        if current <= 0:  # an owned type without rent (`cost:`): no rental price to vary
            continue
        specs.append(_Spec(f"price of {name}", "USD/device-hour", current,
                           lambda name=name, current=current: lambda f: derive(rp, prices={name: current * f})))
    return specs


def _rate_specs(rp: ResolvedProblem) -> tuple[list[_Spec], list[_Spec]]:
    """The acceptance-rate and hit-rate intervals (services that have them)."""
    acceptance, hit_rates = [], []
    for si, s in enumerate(rp.problem.services):
        if s.speculative is not None:
            acceptance.append(_acceptance_spec(rp, si))
        pc = s.workload.prefix_cache
        if pc is not None and (pc.shared_prefix_tokens is not None or pc.hit_rate):
            hit_rates.append(_hit_rate_spec(rp, si))
    return acceptance, hit_rates


def validity_search(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, opts: SolveOptions,
                    max_solves: int = MAX_SOLVES, seconds: float = MAX_SECONDS,
                    abandon: threading.Event | None = None):
    """The validity search as independent tasks (one per side of each interval) and what makes
    the record's validity of their results (in the tasks' order): (tasks, finish). Run the tasks
    side by side or one after the other (solver/decision/parallel.py `run_all`): the validity
    is the same. The probers share the services' proven own plans, nothing else
    (solver/decision/probe.py `ProbeMemo`).
    `abandon`: set it to stop the tasks early (their results are then meaningless)."""
    if winner.status == "infeasible":
        return [], lambda done: Validity(demand=None, prices=[], remeasure=remeasure(winner), solves=0)
    t0 = time.perf_counter()
    kept = only_configurations(cs, winner, rp)
    memo = ProbeMemo()
    prices = _Group(lambda b: Prober(rp, cs, kept, opts, b, memo), max_solves // 2, t0 + seconds,  # two solves a probe
                    _price_specs(rp), abandon)
    # acceptance and hit rates: a budget of their own (each probe rebuilds the candidate tables),
    # and half the seconds again as their safety net
    acceptance, hit_rates = _rate_specs(rp)
    rates = _Group(lambda b: _Rebuilding(rp, winner, opts, b, memo), max_solves // 4, t0 + 1.5 * seconds,
                   acceptance + hit_rates, abandon)

    def finish(done: list) -> Validity:
        intervals, used, plans, cut = prices.settle(done[:len(prices.jobs)])
        rated, used_r, plans_r, cut_r = rates.settle(done[len(prices.jobs):])
        demand = intervals.pop(0) if rp.problem.objective == "min_cost" else None
        return Validity(demand=demand, prices=intervals, remeasure=remeasure(winner),
                        solves=2 * (used + used_r) + plans + plans_r,
                        cut_short=cut or cut_r, acceptance=rated[:len(acceptance)] or None,
                        hit_rates=rated[len(acceptance):] or None,
                        traffic_headroom_multiple=winner.traffic_headroom_multiple,
                        traffic_headroom_service=winner.traffic_headroom_service)

    return prices.tasks() + rates.tasks(), finish


def validity(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, opts: SolveOptions,
             max_solves: int = MAX_SOLVES, seconds: float = MAX_SECONDS, workers: int | None = None) -> Validity:
    """The record's validity, its intervals searched side by side on `workers` threads (None:
    WORKERS; 1: one after the other), with the same answers either way."""
    tasks, finish = validity_search(rp, cs, winner, opts, max_solves, seconds)
    return finish(run_all(tasks, workers))

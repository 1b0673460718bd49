"""How long the plan stays right: the demand and price intervals over which it stays optimal,
found by re-solving, and what to re-measure when.

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
the problem becomes just beyond an end is then planned in full, once per end.

The search is deterministic: it is bounded by a number of probes (MAX_SOLVES, two solves each)
and each solve by CP-SAT's deterministic time (PROBE_WORK) on one worker, never by the clock.
`seconds` (`plan --record-seconds`) is only a safety net: when it fires, the probe under way is
discarded, the search stops, the record says `cut_short` and every interval not finished says
`partial`.
"""

from __future__ import annotations

import datetime as dt

from solver.candidates.table import CandidateSet
from solver.decision.alternatives import only_configurations, pools_summary
from solver.decision.probe import PROBE_WORK, Prober, SearchBudget
from solver.fleet.solve import SolveOptions
from solver.plan.assumptions import REMEASURE_AFTER_DAYS
from solver.problem.load import ResolvedProblem, derive
from solver.schema.decision import Interval, Remeasure, Validity
from solver.schema.result import PlanResult

STEPS_UP = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
STEPS_DOWN = (0.9, 0.8, 2.0 / 3.0, 0.5, 1.0 / 3.0, 0.25)
REL_TOL = 0.02
MAX_SOLVES = 160  # probe solves for all intervals (two per probe)
MAX_SECONDS = 15.0  # the safety net: wall time for all intervals (plan --record-seconds)

__all__ = ["MAX_SECONDS", "MAX_SOLVES", "PROBE_WORK", "REL_TOL", "remeasure", "validity"]


def _edge(ask, steps) -> tuple[float, float | None, bool]:
    """(furthest factor where the plan holds, the nearest factor found where it does not or
    None, the end is a search limit). `ask(f)`: True/False, None when the budget is spent."""
    good, bad = 1.0, None
    for f in steps:
        ok = ask(f)
        if ok is None:
            return good, None, True
        if ok:
            good = f
            continue
        bad = f
        break
    if bad is None:
        return good, None, True
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
    return lo, hi, False


def _interval(quantity: str, unit: str, current: float, pr: Prober, variant) -> Interval:
    """One interval: step out and bisect on each side, then plan the structure beyond each end."""
    used = pr.budget.used
    up, above, up_limit = _edge(lambda f: pr.holds(variant(f)), STEPS_UP)
    down, below, down_limit = _edge(lambda f: pr.holds(variant(f)), STEPS_DOWN)
    probes = pr.budget.used - used
    above_doc = pr.best_plan(variant(above)) if above is not None else None
    below_doc = pr.best_plan(variant(below)) if below is not None else None
    return Interval(
        quantity=quantity, unit=unit, current=current,
        low=round(current * down, 6), high=round(current * up, 6),
        low_is_search_limit=down_limit, high_is_search_limit=up_limit,
        below=pools_summary(below_doc) if below_doc is not None else None,
        above=pools_summary(above_doc) if above_doc is not None else None,
        probes=probes, partial=pr.budget.cut,
    )


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
        elif p.collected_on is None:
            r = Remeasure(what=what, by="now", why="collection date unknown")
        else:
            due = dt.date.fromisoformat(p.collected_on) + dt.timedelta(days=REMEASURE_AFTER_DAYS)
            r = Remeasure(what=what, by="now" if p.stale else due.isoformat(),
                          why=f"collected {p.collected_on}; re-measure every {REMEASURE_AFTER_DAYS} days")
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


def validity(rp: ResolvedProblem, cs: CandidateSet, winner: PlanResult, opts: SolveOptions,
             max_solves: int = MAX_SOLVES, seconds: float = MAX_SECONDS) -> Validity:
    if winner.status == "infeasible":
        return Validity(demand=None, prices=[], remeasure=remeasure(winner), solves=0)
    budget = SearchBudget(max_solves // 2, seconds)  # each probe solves twice
    pr = Prober(rp, cs, only_configurations(cs, winner, rp), opts, budget)
    demand = None
    if rp.problem.objective == "min_cost":
        demand = _interval("demand (multiple of every service's qps)", "x", 1.0, pr,
                           lambda f: derive(rp, demand_scale=f))
    prices = []
    for name, current in zip(rp.hardware_names, rp.prices):
        if current <= 0:  # an owned type without rent (`cost:`): no rental price to vary
            continue
        prices.append(_interval(f"price of {name}", "USD/device-hour", current, pr,
                                lambda f, name=name, current=current: derive(rp, prices={name: current * f})))
    return Validity(demand=demand, prices=prices, remeasure=remeasure(winner),
                    solves=2 * budget.used + pr.plans, cut_short=budget.cut)

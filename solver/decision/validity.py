"""How long the plan stays right: the demand, price and (for services that may speculate)
acceptance-rate intervals over which it stays optimal, found by re-solving, and what to
re-measure when.

"Stays optimal" means: keeping the plan's configurations (its pools' hardware, parallelism and
batch; instance counts re-optimised for the new value) costs at most REGRET more than the best
plan for that value (serves at least 1 - REGRET of its throughput, for max_throughput). Exact
equality of the optimal structure is too brittle to be useful: with integer instance counts the
cheapest mix of configurations changes with almost any change of demand, by cents.

Each interval starts at the problem's value and steps outwards by the factors in STEPS (demand
scale, or one device type's price) until the plan stops being optimal, then bisects between the
last good and the first bad value to REL_TOL. Each probe solves twice (free, and restricted to
the winner's configurations) on candidate tables built once and repriced. A budget of solves
bounds the work; an interval cut short by it reports its end as a search limit.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from solver.candidates.build import build_candidates, reprice
from solver.candidates.table import CandidateSet
from solver.decision.alternatives import only_configurations, pools_summary
from solver.decision.dimensions import with_acceptance, with_hit_rate
from solver.fleet.solve import SolveOptions
from solver.plan.assumptions import REMEASURE_AFTER_DAYS
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, derive
from solver.schema.decision import Interval, Remeasure, Validity
from solver.schema.prefix import MAX_HIT_RATE
from solver.schema.result import PlanResult

STEPS_UP = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
STEPS_DOWN = (0.9, 0.8, 2.0 / 3.0, 0.5, 1.0 / 3.0, 0.25)
REL_TOL = 0.02
REGRET = 0.02
MAX_SOLVES = 160
MAX_SECONDS = 15.0  # wall time for all intervals; cut-short ends are reported as search limits


class _Budget:
    """At most `limit` probes and `seconds` of wall time (the record must not dwarf the plan)."""

    def __init__(self, limit: int, seconds: float):
        self.left = limit
        self.used = 0
        self.deadline = time.perf_counter() + seconds

    def take(self) -> bool:
        if self.left <= 0 or time.perf_counter() > self.deadline:
            return False
        self.left -= 1
        self.used += 1
        return True


Probe = Callable[[float], tuple[bool, PlanResult]]


def _edge(holds: Probe, steps, budget: _Budget):
    """(furthest factor where the plan holds, the best plan just beyond it or None, search limit?)"""
    good, beyond, bad = 1.0, None, None
    for f in steps:
        if not budget.take():
            return good, None, True
        ok, best = holds(f)
        if ok:
            good = f
            continue
        beyond, bad = best, f
        break
    if beyond is None:
        return good, None, True
    lo, hi = good, bad
    while abs(hi - lo) > REL_TOL * min(lo, hi) and budget.take():
        mid = (lo * hi) ** 0.5
        ok, best = holds(mid)
        if ok:
            lo = mid
        else:
            hi, beyond = mid, best
    return lo, beyond, False


def _interval(quantity, unit, current, holds: Probe, budget) -> Interval:
    up, above, up_limit = _edge(holds, STEPS_UP, budget)
    down, below, down_limit = _edge(holds, STEPS_DOWN, budget)
    return Interval(
        quantity=quantity, unit=unit, current=current,
        low=round(current * down, 6), high=round(current * up, 6),
        low_is_search_limit=down_limit, high_is_search_limit=up_limit,
        below=pools_summary(below) if below is not None else None,
        above=pools_summary(above) if above is not None else None,
    )


def _still_optimal(objective: str, kept: PlanResult, best: PlanResult) -> bool:
    if kept.status == "infeasible" or best.status == "infeasible":
        return kept.status == best.status == "infeasible"
    if objective == "max_throughput":
        return (kept.throughput_scale or 0.0) >= (best.throughput_scale or 0.0) * (1.0 - REGRET)
    return kept.cost_per_hour <= best.cost_per_hour * (1.0 + REGRET) + 1e-9


def _acceptance_interval(rp: ResolvedProblem, si: int, winner: PlanResult, opts: SolveOptions,
                         budget: _Budget) -> Interval:
    """Service si's acceptance rate (at most 1)."""
    svc = rp.problem.services[si]
    return _rebuilt_interval(rp, f"acceptance rate of '{svc.name}' ({svc.speculative.method})", "acceptance",
                             svc.speculative.acceptance_rate, 1.0, lambda x: with_acceptance(rp, si, x),
                             winner, opts, budget)


def _hit_rate_interval(rp: ResolvedProblem, si: int, winner: PlanResult, opts: SolveOptions,
                       budget: _Budget) -> Interval:
    """Service si's prefix-cache hit rate (at most MAX_HIT_RATE)."""
    svc = rp.problem.services[si]
    return _rebuilt_interval(rp, f"prefix hit rate of '{svc.name}'", "hit rate",
                             svc.workload.prefix_cache.hit_rate, MAX_HIT_RATE,
                             lambda x: with_hit_rate(rp, si, x), winner, opts, budget)


def _rebuilt_interval(rp: ResolvedProblem, quantity: str, unit: str, current: float, cap: float,
                      variant_at: Callable[[float], ResolvedProblem], winner: PlanResult,
                      opts: SolveOptions, budget: _Budget) -> Interval:
    """An input that changes capacities: the candidate tables are built again at each probed
    value; probes above `cap` are clamped to it (and solved once)."""
    a = current
    seen: dict[float, tuple[bool, PlanResult]] = {}

    def holds(f: float) -> tuple[bool, PlanResult]:
        x = round(min(a * f, cap), 6)
        if x not in seen:
            variant = variant_at(x)
            full = build_candidates(variant)
            best = plan(variant, opts, timings=False, candidates=full, compare=False)
            mine = plan(variant, opts, timings=False, candidates=only_configurations(full, winner, variant),
                        compare=False)
            seen[x] = (_still_optimal(rp.problem.objective, mine, best), best)
        return seen[x]

    i = _interval(quantity, unit, a, holds, budget)
    if i.high >= cap:
        i = i.model_copy(update={"high": cap, "high_is_search_limit": True})
    return i


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
    kept_cs = only_configurations(cs, winner, rp)
    budget = _Budget(max_solves // 2, seconds)  # each probe solves twice
    objective = rp.problem.objective

    def probe(variant: ResolvedProblem) -> tuple[bool, PlanResult]:
        full = cs if variant.prices == rp.prices else reprice(cs, variant.prices)
        kept = kept_cs if variant.prices == rp.prices else reprice(kept_cs, variant.prices)
        best = plan(variant, opts, timings=False, candidates=full, compare=False)
        mine = plan(variant, opts, timings=False, candidates=kept, compare=False)
        return _still_optimal(objective, mine, best), best

    demand = None
    if objective == "min_cost":
        demand = _interval("demand (multiple of every service's qps)", "x", 1.0,
                           lambda f: probe(derive(rp, demand_scale=f)), budget)
    prices = []
    for j, name in enumerate(rp.hardware_names):
        current = rp.prices[j]
        prices.append(_interval(
            f"price of {name}", "USD/device-hour", current,
            lambda f, name=name, current=current: probe(derive(rp, prices={name: current * f})),
            budget))
    # acceptance rates: a budget of their own (each probe rebuilds the candidate tables)
    specs = [si for si, s in enumerate(rp.problem.services) if s.speculative is not None]
    own = _Budget(max_solves // 4, seconds / 2)
    acceptance = [_acceptance_interval(rp, si, winner, opts, own) for si in specs] or None
    hits = [si for si, s in enumerate(rp.problem.services)
            if s.workload.prefix_cache is not None and s.workload.prefix_cache.hit_rate]
    hit_rates = [_hit_rate_interval(rp, si, winner, opts, own) for si in hits] or None
    return Validity(demand=demand, prices=prices, remeasure=remeasure(winner),
                    solves=2 * (budget.used + own.used), acceptance=acceptance, hit_rates=hit_rates)

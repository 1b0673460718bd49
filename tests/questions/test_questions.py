"""The what-if questions (solver/questions/): frontier and price sweep, against brute force.

The small problem below has exactly two candidate rows (Llama 3.1 8B colocated, tp1, one batch
size and chunk, one row on H100 and one on H200, one device each), so every fleet is a pair of
instance counts (a, b) and the brute force enumerates them directly:

- capacity a*capA + b*capB (milli-QPS, floored as the fleet model does) >= the demand (ceiled);
- cost a*priceA + b*priceB; the budget caps it; the most traffic a budget buys is
  max floor(1000 * capacity / demand) over the pairs it affords.

Reuse is checked separately: the candidate tables built once and repriced equal a fresh build,
and a plan with reused candidates equals the full flow's.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings

from solver.candidates.build import build_candidates, reprice
from solver.fleet import integerize as ints
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, derive, parse_problem, resolve
from solver.questions.frontier import frontier, pareto_flags
from solver.questions.price import price_sweep
from solver.schema.questions import FrontierResult
from solver.verify.checks import violations
from tests.support.questions_problem import small_problem
from tests.support.strategies import frontier_points

OPTS = SolveOptions(time_limit_s=20, seed=0, workers=1)


@lru_cache(maxsize=None)
def small(qps: float = 100, budget: float | None = None) -> ResolvedProblem:
    return parse_problem(small_problem(qps, budget), "<small>")


@lru_cache(maxsize=None)
def two_rows() -> tuple[int, int]:
    """The integer capacities (milli-QPS) of the one H100 row and the one H200 row."""
    t = build_candidates(small()).table
    assert len(t) == 2 and sorted(t.hw.tolist()) == [0, 1], "the small problem must keep one row per type"
    assert (t.devices == 1).all()
    cap = ints.capacity(t.capacity_qps)
    return int(cap[t.hw == 0][0]), int(cap[t.hw == 1][0])


def pairs(demand_mqps: int | None = None, top: int = 40):
    ca, cb = two_rows()
    for a, b in itertools.product(range(top), repeat=2):
        if demand_mqps is None or a * ca + b * cb >= demand_mqps:
            yield a, b


def brute_min_cost(qps: float, pa: float = 2.5, pb: float = 3.5, budget: float | None = None):
    """Cheapest pair serving qps (cost in the model's integer 1e-4 USD/h, then fewest devices,
    then fewest configurations, as the solver's stages), or None."""
    d = ints.demand(qps)
    ka, kb = int(ints.cost(pa)), int(ints.cost(pb))
    best = None
    for a, b in pairs(d):
        c = a * ka + b * kb
        if budget is not None and c > ints.budget(budget):
            continue
        key = (c, a + b, (a > 0) + (b > 0))
        if best is None or key < best[0]:
            best = (key, (a, b))
    return best


def brute_max_scale(qps: float, budget: float, pb: float = 3.5) -> int:
    ca, cb = two_rows()
    d = ints.demand(qps)
    ka, kb = int(ints.cost(2.5)), int(ints.cost(pb))
    return max(ints.SCALE_UNIT * (a * ca + b * cb) // d
               for a, b in pairs() if a * ka + b * kb <= ints.budget(budget))


def reresolved(rp: ResolvedProblem, qps: float | None = None, prices: dict[str, float] | None = None):
    """A variant built the long way (edit the problem, resolve the cards again), not by derive."""
    p = rp.problem
    services = [s.model_copy(update={"workload": s.workload.model_copy(update={"qps": qps})})
                for s in p.services] if qps is not None else p.services
    hardware = [h.model_copy(update={"price_per_hour": (prices or {}).get(h.name, h.price_per_hour)})
                for h in p.hardware]
    return resolve(p.model_copy(update={"services": services, "hardware": hardware}), rp.doc)


# ---- reuse: derive, reprice, plan(candidates=) -------------------------------------------------


def test_derive_scales_demand_and_changes_prices_only():
    rp = small()
    v = derive(rp, demand_scale=2.5, prices={"h200-sxm": 1.25}, objective="max_throughput")
    assert v.problem.services[0].workload.qps == 250
    assert v.prices == (2.5, 1.25)
    assert v.problem.hardware[1].price_per_hour == 1.25
    assert v.problem.objective == "max_throughput"
    assert v.models == rp.models and v.hardware == rp.hardware and v.supplies == rp.supplies
    assert rp.problem.services[0].workload.qps == 100 and rp.prices == (2.5, 3.5)  # untouched
    assert derive(rp) is rp
    with pytest.raises(ValueError, match="unknown hardware"):
        derive(rp, prices={"b200": 1.0})
    with pytest.raises(ValueError, match="positive"):
        derive(rp, demand_scale=0.0)


def test_repriced_candidates_equal_a_fresh_build():
    rp = parse_problem(open_problem("llama3-70b-online.yaml"), "<online>")
    fresh = build_candidates(reresolved(rp, prices={"h100-sxm": 1.7}))
    reused = reprice(build_candidates(rp), (1.7, rp.prices[1]))
    for name in ("service", "role", "hw", "tp", "pp", "batch", "devices", "capacity_qps", "cost_per_hour"):
        np.testing.assert_array_equal(getattr(reused.table, name), getattr(fresh.table, name), err_msg=name)
    assert fresh.stats == reused.stats


def open_problem(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "problems" / name).read_text()


def test_plan_with_reused_candidates_equals_the_full_flow():
    rp = parse_problem(open_problem("llama3-70b-online.yaml"), "<online>")
    cs = build_candidates(rp)
    for qps, prices in ((80.0, None), (200.0, {"h100-sxm": 3.2})):
        variant = derive(rp, demand_scale=qps / 200, prices=prices)
        reused = plan(variant, OPTS, timings=False,
                      candidates=cs if prices is None else reprice(cs, variant.prices))
        full = plan(reresolved(rp, qps=qps, prices=prices), OPTS, timings=False)
        assert reused.model_dump() == full.model_dump()


# ---- the frontier ------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def small_frontier(points: int, budget: float | None = None, max_scale: float | None = None) -> FrontierResult:
    return frontier(small(100, budget), points, max_scale, OPTS, timings=False)


def test_frontier_points_are_the_brute_force_optima():
    doc = small_frontier(10)
    assert doc.limit is None  # no budget, no supplies: nothing bounds traffic
    assert doc.max_scale_swept == 1.0 and doc.demand_qps == 100
    assert [p.traffic_scale for p in doc.points] == pytest.approx([k / 10 for k in range(1, 11)])
    for p in doc.points:
        assert p.status == "optimal" and p.gap == 0
        (cost, devices, _), (a, b) = brute_min_cost(100 * p.traffic_scale)
        assert round(p.cost_per_hour * ints.COST_SCALE) == cost, p.traffic_scale
        assert p.total_devices == devices
        assert p.traffic_qps == pytest.approx(100 * p.traffic_scale)
        assert p.capacity_qps >= p.traffic_qps * (1 - 1e-9)
    costs = [p.cost_per_hour for p in doc.points]
    assert costs == sorted(costs)  # cost never falls as traffic rises
    assert costs[0] < costs[-1]


def test_every_frontier_fleet_passes_the_verifier_and_matches_an_independent_plan():
    doc = small_frontier(10)
    for p in doc.points:
        variant = reresolved(small(), qps=100 * p.traffic_scale)
        alone = plan(variant, OPTS, timings=False)
        assert alone.cost_per_hour == pytest.approx(p.cost_per_hour)
        # the frontier's own fleet, put into the independent plan's document, verifies
        mine = alone.model_copy(update={
            "services": p.services, "cost_per_hour": p.cost_per_hour,
            "total_devices": p.total_devices, "devices_by_type": p.devices_by_type,
            "power_kw": p.power_kw, "objective": alone.objective.model_copy(update={"value": p.cost_per_hour}),
        })
        assert violations(variant, mine) == []


def test_dominated_points_are_flagged():
    """20 levels of 5..100 QPS: one H100 (about 20.2 QPS) serves 5, 10, 15 and 20 QPS at the same
    cost, so 5, 10 and 15 QPS are dominated by 20 QPS; every other point is on the frontier."""
    ca, cb = two_rows()
    assert ca >= 15_000  # one H100 covers 15 QPS
    doc = small_frontier(20)
    by_cost: dict[float, list[float]] = {}
    for p in doc.points:
        by_cost.setdefault(p.cost_per_hour, []).append(p.traffic_scale)
    for p in doc.points:
        assert p.pareto == (p.traffic_scale == max(by_cost[p.cost_per_hour])), p
    assert [p.pareto for p in doc.points[:4]] == [False, False, False, True]
    assert doc.points[0].cost_per_hour == doc.points[3].cost_per_hour == 2.5


def test_budget_limit_is_the_brute_force_maximum_and_one_step_more_is_infeasible():
    doc = small_frontier(5, budget=20)
    lim = doc.limit
    assert lim is not None and lim.status == "optimal"
    assert lim.limited_by == ["budget $20.00/hour"]
    best = brute_max_scale(100, 20)
    assert lim.max_traffic_scale == pytest.approx(best / ints.SCALE_UNIT)
    assert doc.max_scale_swept == lim.max_traffic_scale
    assert lim.beyond.status == "infeasible"
    assert lim.beyond.traffic_scale == pytest.approx((best + 1) / ints.SCALE_UNIT)
    assert any("budget" in r for r in lim.beyond.infeasible_because)
    top = doc.points[-1]
    assert top.traffic_scale == lim.max_traffic_scale and top.status == "optimal"
    assert top.cost_per_hour <= 20
    for p in doc.points:
        (cost, _, _), _ = brute_min_cost(100 * p.traffic_scale, budget=20)
        assert round(p.cost_per_hour * ints.COST_SCALE) == cost


def test_levels_beyond_the_limit_are_infeasible_points():
    doc = small_frontier(4, budget=20, max_scale=2.0)
    assert [p.traffic_scale for p in doc.points] == [0.5, 1.0, 1.5, 2.0]
    limit = doc.limit.max_traffic_scale
    for p in doc.points:
        assert (p.status == "infeasible") == (p.traffic_scale > limit)
        if p.status == "infeasible":
            assert p.cost_per_hour is None and not p.pareto and p.infeasible_because
            assert brute_min_cost(100 * p.traffic_scale, budget=20) is None


def test_a_budget_below_one_device_leaves_no_point():
    doc = frontier(small(100, 2.0), 5, None, OPTS, timings=False)
    assert doc.points == []
    assert doc.limit.max_traffic_scale is None and doc.limit.status == "infeasible"
    assert any("budget" in r for r in doc.limit.beyond.infeasible_because)


def test_candidates_are_built_once_per_question(monkeypatch):
    import solver.plan.planner
    import solver.questions.replan as replan

    calls = []

    def counting(rp):
        calls.append(rp.name)
        return build_candidates(rp)

    monkeypatch.setattr(replan, "build_candidates", counting)
    monkeypatch.setattr(solver.plan.planner, "build_candidates", counting)
    doc = frontier(small(100, 20), 5, None, OPTS, timings=False)
    assert doc.solver.solves == 5 + 2  # the levels, the limit and one step beyond
    assert calls == ["small-two-types"]
    sweep = price_sweep(small(15), "h200-sxm", 1.0, 4.0, steps=3, opts=OPTS, timings=False)
    assert sweep.solver.solves > 4  # the grid and the bisection
    assert calls == ["small-two-types"] * 2


def test_pareto_flags_by_hand():
    assert pareto_flags([1, 2, 3], [10, 10, 12]) == [False, True, True]
    assert pareto_flags([1, 2, 3], [10, 9, 12]) == [False, True, True]  # a gap made 1 dearer
    assert pareto_flags([1, 2, 2], [5, 8, 8]) == [True, True, False]  # duplicates: the first
    assert pareto_flags([1, 2], [None, 3]) == [False, True]


@settings(max_examples=200, deadline=None)
@given(frontier_points())
def test_pareto_flags_property(pts):
    t = [float(a) for a, _ in pts]
    c = [None if b is None else float(b) for _, b in pts]
    flags = pareto_flags(t, c)

    def dominates(j, i):
        return c[j] is not None and t[j] >= t[i] and c[j] <= c[i] and (t[j] > t[i] or c[j] < c[i])

    for i, f in enumerate(flags):
        if c[i] is None:
            assert not f
        elif f:  # nobody dominates a frontier point, and it is the first of its duplicates
            assert not any(dominates(j, i) for j in range(len(t)))
            assert not any(t[j] == t[i] and c[j] == c[i] for j in range(i))
        else:  # a dominated point is dominated by (or duplicates) some frontier point
            assert any(flags[j] and (dominates(j, i) or (t[j] == t[i] and c[j] == c[i]))
                       for j in range(len(t)))


# ---- the price sweep ---------------------------------------------------------------------------


def envelope_breakpoints(qps: float, lo: float, hi: float) -> list[tuple[Fraction, tuple, tuple]]:
    """Where the cheapest (cost, then devices) pair changes as the H200 price runs from lo to hi:
    each pair's cost is a line 2.5 a + p b in the price p; the lower envelope changes only where
    two lines cross, so the mix is constant between consecutive crossings."""
    d = ints.demand(qps)
    cands = [(a, b) for a, b in pairs(d, top=30)]
    xs = {Fraction(lo), Fraction(hi)}
    for (a1, b1), (a2, b2) in itertools.combinations(cands, 2):
        if b1 != b2:
            x = Fraction(5, 2) * (a2 - a1) / (b1 - b2)
            if lo < x < hi:
                xs.add(x)
    xs = sorted(xs)

    def best(p: Fraction):
        return min(cands, key=lambda ab: (Fraction(5, 2) * ab[0] + p * ab[1], ab[0] + ab[1]))

    out = []
    prev = best((xs[0] + xs[1]) / 2)
    for x0, x1, x2 in zip(xs, xs[1:], xs[2:]):
        cur = best((x1 + x2) / 2)
        if cur != prev:
            out.append((x1, prev, cur))
        prev = cur
    return out


def mix(ab: tuple[int, int]) -> dict[str, int]:
    return {k: n for k, n in (("h100-sxm", ab[0]), ("h200-sxm", ab[1])) if n}


def test_price_breakpoint_by_hand_one_instance_of_either():
    """At 15 QPS one instance of either type suffices (each serves about 19-20 QPS), so the plan
    takes the H200 exactly while it costs less than the H100's $2.50 and the H100 after."""
    ca, cb = two_rows()
    assert min(ca, cb) >= 15_000
    doc = price_sweep(small(15), "h200-sxm", 1.0, 4.0, steps=6, tolerance=0.001, opts=OPTS, timings=False)
    assert [r.devices_by_type_from for r in doc.ranges] == [{"h200-sxm": 1}, {"h100-sxm": 1}]
    assert all(r.devices_by_type_to == r.devices_by_type_from for r in doc.ranges)
    (c,) = doc.changes
    assert c.how == "cost lines cross" and c.price_per_hour == pytest.approx(2.5, abs=1e-9)
    assert c.below_per_hour <= 2.5 <= c.above_per_hour and c.above_per_hour - c.below_per_hour <= 0.001
    assert c.resolved and doc.complete
    assert doc.ranges[0].cost_from_per_hour == 1.0 and doc.ranges[-1].cost_to_per_hour == 2.5


def test_price_breakpoints_match_the_lower_envelope_of_the_candidates():
    """290 QPS: H100 is cheaper per QPS at equal prices, H200 serves more per device; with whole
    instances the plan moves through mixed fleets. The breakpoints are where the cheapest pair's
    cost lines cross (computed exactly, in fractions, from the candidates' capacities)."""
    want = envelope_breakpoints(290, 1.0, 5.0)
    assert len(want) >= 2  # a mixed fleet between the pure ones
    doc = price_sweep(small(290), "h200-sxm", 1.0, 5.0, steps=8, tolerance=0.0005, opts=OPTS, timings=False)
    assert doc.complete
    assert len(doc.changes) == len(want)
    for c, (x, below, above) in zip(doc.changes, want):
        assert c.devices_by_type_below == mix(below) and c.devices_by_type_above == mix(above)
        assert c.how == "cost lines cross"
        assert c.price_per_hour == pytest.approx(float(x), abs=1e-6)
        # the solver's own switch (integer costs, ceiled to 1e-4 USD/h) lies in the bracket
        assert c.below_per_hour - 1e-4 <= float(x) <= c.above_per_hour + 1e-4
        assert c.above_per_hour - c.below_per_hour <= 0.0005 * (1 + 1e-9)
    for r in doc.ranges:  # each range's fleet is the brute-force optimum at both ends
        for price, cost in ((r.price_from_per_hour, r.cost_from_per_hour), (r.price_to_per_hour, r.cost_to_per_hour)):
            _, ab = brute_min_cost(290, pb=price)
            assert r.devices_by_type_from == r.devices_by_type_to == mix(ab)
            assert cost == pytest.approx(2.5 * ab[0] + price * ab[1], abs=1e-6)
    prices = [p.price_per_hour for p in doc.points]
    assert prices == sorted(prices) and len(set(prices)) == len(prices)
    assert sum(p.source == "grid" for p in doc.points) == 9


def test_price_sweep_reports_infeasible_ranges():
    """A $3/hour budget at 15 QPS: one H100 (the H200 costs $3.50) while its price is at most
    $3, no plan above."""
    rp = parse_problem(small_problem(15, budget=3.0, h200_price=3.5), "<tight>")
    doc = price_sweep(rp, "h100-sxm", 1.0, 5.0, steps=4, tolerance=0.01, opts=OPTS, timings=False)
    assert [r.status for r in doc.ranges] == ["optimal", "infeasible"]
    c = doc.changes[-1]
    assert c.feasible_below and not c.feasible_above
    assert c.below_per_hour <= 3.0 <= c.above_per_hour  # one H100 fits the $3 budget up to $3
    assert c.how == "bracket midpoint"
    bad = [p for p in doc.points if p.status == "infeasible"]
    assert bad and all(any("budget" in r for r in p.infeasible_because) for p in bad)


def test_price_sweep_of_a_max_throughput_problem_compares_the_types_used():
    """$20/hour buys the most traffic from H200s up to $2.50 each (8 of them, about 160 QPS,
    beat 8 H100s' 150 QPS) and from H100s above (7 H200s serve only about 140 QPS): whole
    devices within the budget move the change below the per-QPS parity of about $2.66. Every
    point's scale is the brute-force maximum at its price."""
    rp = parse_problem(small_problem(100, budget=20).replace("objective: min_cost",
                                                             "objective: max_throughput"), "<mt>")
    doc = price_sweep(rp, "h200-sxm", 1.0, 4.0, steps=6, tolerance=0.01, opts=OPTS, timings=False)
    assert doc.compare == "types"
    assert doc.ranges[0].types == ["h200-sxm"] and doc.ranges[-1].types == ["h100-sxm"]
    for a, b in zip(doc.ranges, doc.ranges[1:]):
        assert a.types != b.types
    for p in doc.points:
        rng = next(r for r in doc.ranges if r.price_from_per_hour <= p.price_per_hour <= r.price_to_per_hour)
        assert sorted(p.devices_by_type) == rng.types
        assert p.throughput_scale == brute_max_scale(100, 20, pb=p.price_per_hour) / ints.SCALE_UNIT
    ca, cb = two_rows()
    assert 8 * cb > 8 * ca > 7 * cb  # the derivation's premise, from the candidates
    (c,) = doc.changes
    assert c.below_per_hour <= 2.5 < c.above_per_hour and c.resolved
    assert 2.5 < 2.5 * cb / ca  # below the per-QPS parity

"""The committed vector searched by boxes (solver/fleet/periods_box.py): on small instances with
two committed types its answer equals the least cost over every committed vector enumerated, and
every box bound is below the true least cost in the box (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solver.fleet import periods_box, periods_commit
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, PeriodModel, period_instance
from solver.fleet.periods_solve import cost_expr, period_hints, solve_periods
from solver.fleet.status import SolveStatus
from tests.support.two_type_fleet import two_type_fleet

OPTS = SolveOptions(time_limit_s=20)


def horizon(qps: list[float], a: tuple[float, float], b: tuple[float, float], start_usd: float = 0.0,
            b_rent_supply: int | None = None) -> PeriodInstance:
    """Hour-long periods; a and b: (committed, on demand) USD per device-hour."""
    base = two_type_fleet(max(qps))
    return PeriodInstance(
        base=base, periods=tuple(period_instance(base, [q], 0) for q in qps),
        names=tuple(f"p{k}" for k in range(len(qps))), seconds=tuple(3600 for _ in qps),
        termed=(True, True), committed_price=(int(a[0] * 1e4), int(b[0] * 1e4)), committed_supply=(None, None),
        on_demand_price=(int(a[1] * 1e4), int(b[1] * 1e4)),
        on_demand_supply=(tuple(None for _ in qps), tuple(b_rent_supply for _ in qps)),
        start_cost=int(start_usd * COST_UNIT),
    )


def cost_at(pi: PeriodInstance, levels: dict[int, int]) -> float:
    """T(C): the horizon's least cost with the committed vector fixed (inf: no plan)."""
    pm = PeriodModel(pi)
    periods_commit.fix(pm, levels)
    pm.m.minimize(cost_expr(pm))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(pm.m)
    if status == cp_model.INFEASIBLE:
        return float("inf")
    assert status == cp_model.OPTIMAL
    return solver.objective_value


def brute_force(pi: PeriodInstance) -> float:
    ranges = periods_commit.all_level_ranges(pi)
    return min(cost_at(pi, {0: x, 1: y}) for x, y in itertools.product(ranges[0], ranges[1]))


def by_boxes(pi: PeriodInstance, monkeypatch) -> object:
    monkeypatch.setattr(periods_commit, "MAX_VECTORS", 0)  # too many to list: the boxes
    assert periods_commit.level_ranges(pi) is None
    return solve_periods(pi, OPTS)


def test_boxes_by_hand_commit_the_small_devices(monkeypatch):
    """30 then 10 QPS; 'a' (10 QPS a device) $1 committed / $3 on demand, 'b' (25 QPS per 2
    devices) $2 / $5 a device. Committing 3 'a' costs 3 x $1 x 2 h = $6; one 'b' instance
    committed (2 x $2 x 2 h = $8) already costs more; committing 1 'a' and renting 2 in the first
    hour costs 2 + 6 = $8. Levels 0..3 x 0..2: 12 vectors, all enumerated agree."""
    pi = horizon([30.0, 10.0], (1.0, 3.0), (2.0, 5.0))
    assert brute_force(pi) == pytest.approx(6.0 * COST_UNIT)
    sol = by_boxes(pi, monkeypatch)
    assert sol.status is SolveStatus.OPTIMAL
    assert sol.cost_usd == pytest.approx(6.0)
    assert sol.committed == {0: 3, 1: 0}


def test_boxes_by_hand_rent_the_peak_on_big_devices(monkeypatch):
    """50 then 5 QPS; 'a' $1 / $1.50, 'b' $0.90 / $1.00 a device: renting two 'b' instances (4
    devices, 50 QPS) in the first hour costs $4, and one 'a' ($1.50) or one committed 'a' ($2
    over 2 h) in the second: $5.50 rented throughout; committing 1 'a' for $2 and renting 4 'b'
    ($4) costs $6; committing more 'b' ($1.80 a device over 2 h) never pays."""
    pi = horizon([50.0, 5.0], (1.0, 1.5), (0.9, 1.0))
    assert brute_force(pi) == pytest.approx(5.5 * COST_UNIT)
    sol = by_boxes(pi, monkeypatch)
    assert sol.status is SolveStatus.OPTIMAL
    assert sol.cost_usd == pytest.approx(5.5)
    assert sol.committed == {0: 0, 1: 0}


@settings(max_examples=10, deadline=None)
@given(qps=st.lists(st.integers(1, 60), min_size=2, max_size=3), a=st.sampled_from([(1.0, 3.0), (1.0, 1.3)]),
       b=st.sampled_from([(0.9, 1.0), (1.5, 4.0)]), start=st.sampled_from([0.0, 0.5]),
       rent=st.sampled_from([None, 2]))
def test_boxes_equal_enumeration(qps, a, b, start, rent, monkeypatch_module):
    pi = horizon([float(q) for q in qps], a, b, start, rent)
    want = brute_force(pi)
    with monkeypatch_module.context() as mp:
        sol = by_boxes(pi, mp)
    if want == float("inf"):
        assert sol is None
        return
    assert sol.status is SolveStatus.OPTIMAL and sol.gap == 0.0
    assert sol.cost_usd * COST_UNIT == pytest.approx(want)


@settings(max_examples=15, deadline=None)
@given(qps=st.lists(st.integers(1, 60), min_size=2, max_size=3), a=st.sampled_from([(1.0, 3.0), (1.0, 1.3)]),
       b=st.sampled_from([(0.9, 1.0), (1.5, 4.0)]), rent=st.sampled_from([None, 2]),
       boxes=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 3), st.integers(0, 3)),
                      min_size=1, max_size=4))
def test_box_bounds_are_below_every_vector_in_the_box(qps, a, b, rent, boxes):
    """After solving boxes in any order (each period bounded on them, the period floors seeding
    the table), the bound of every box is at most T(C) for each C in it (T by enumeration)."""
    pi = horizon([float(q) for q in qps], a, b, 0.0, rent)
    ranges = periods_commit.all_level_ranges(pi)
    hints = period_hints(pi, OPTS, 5.0)
    table = periods_box.Table(pi, OPTS, cost_expr, [0, 1], hints.floors, hints.high_floors)
    top = (ranges[0][-1], ranges[1][-1])
    for x0, x1, y0, y1 in boxes:
        lo = (min(x0, x1, top[0]), min(y0, y1, top[1]))
        hi = (min(max(x0, x1), top[0]), min(max(y0, y1), top[1]))
        table.solve(lo, hi, 1.0, float("inf"))
    costs = {(x, y): cost_at(pi, {0: x, 1: y}) for x in ranges[0] for y in ranges[1]}
    for x0, x1, y0, y1 in boxes + [(0, top[0], 0, top[1])]:
        lo = (min(x0, x1, top[0]), min(y0, y1, top[1]))
        hi = (min(max(x0, x1), top[0]), min(max(y0, y1), top[1]))
        inside = min(v for (x, y), v in costs.items() if lo[0] <= x <= hi[0] and lo[1] <= y <= hi[1])
        assert table.lb(lo, hi) <= inside + 1e-6


def test_plan_cost_commits_the_cheapest_level_for_the_usage():
    """Usages 3 then 1 'a' device: committing 3 at $1 costs $6 over 2 h, 1 costs 2 + 2 x $3 = $8,
    0 costs $12 on demand: the plan costs $6 with 3 committed."""
    pi = horizon([30.0, 10.0], (1.0, 3.0), (2.0, 5.0))
    got = periods_box.plan_cost(pi, [0, 1], [np.array([3, 0]), np.array([1, 0])])
    assert got.levels == {0: 3, 1: 0}
    assert got.value == 6 * COST_UNIT


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=8, deadline=None)
@given(qps=st.lists(st.integers(1, 60), min_size=2, max_size=3), a=st.sampled_from([(1.0, 3.0), (1.0, 1.3)]),
       b=st.sampled_from([(0.9, 1.0), (1.5, 4.0)]), gap=st.sampled_from([0.05, 0.3]))
def test_boxes_stopped_at_a_gap_bound_the_optimum(qps, a, b, gap, monkeypatch_module):
    """Stopped at a relative gap, the answer is no cheaper than the least T(C) enumerated and its
    bound (cost x (1 - reported gap)) no dearer."""
    pi = horizon([float(q) for q in qps], a, b)
    want = brute_force(pi) / COST_UNIT
    with monkeypatch_module.context() as mp:
        mp.setattr(periods_commit, "MAX_VECTORS", 0)
        sol = solve_periods(pi, SolveOptions(time_limit_s=20, relative_gap=gap))
    assert sol.cost_usd >= want - 1e-9
    assert sol.cost_usd * (1 - sol.gap) <= want + 1e-9

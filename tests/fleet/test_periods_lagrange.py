"""The committed price split across periods (solver/fleet/periods_lagrange.py): a bound by hand,
and against enumeration of every committed vector on small instances (hypothesis): L(pi) never
exceeds the least cost for any split, nor does any box bound of the table repriced by a split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.fleet import periods_box, periods_commit
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, period_instance
from solver.fleet.periods_lagrange import Lagrange, _project, solve_priced
from solver.fleet.periods_solve import cost_expr, period_hints
from solver.fleet.pool import Pool
from solver.schema.roles import COLOCATED
from tests.fleet.test_periods_box import brute_force, cost_at, horizon

OPTS = SolveOptions(time_limit_s=20)


def one_type(qps: list[float]) -> PeriodInstance:
    """One colocated service on one type (1 device serving 10 QPS), committed $1 / on demand $3
    a device-hour, hour-long periods."""
    spec = ServiceSpec(name="chat", demand=int(max(qps) * 1000), colocated=True, disaggregated=False,
                       ratio_lo=None, ratio_hi=None, max_configs=None)
    ub = np.array([int(np.ceil(max(qps) / 10))])
    base = FleetInstance(
        objective="min_cost", service=np.zeros(1, dtype=np.int64), role=np.full(1, COLOCATED), hw=np.array([0]),
        devices=np.array([1]), cap=np.array([10_000]), cost=np.array([30_000]), power=np.array([700]), ub=ub,
        demand_ub=ub.copy(), services=(spec,), hw_names=("a",), supply=(None,), budget=None, power_cap=None)
    return PeriodInstance(
        base=base, periods=tuple(period_instance(base, [q], 0) for q in qps), names=tuple(f"p{k}" for k in range(len(qps))),
        seconds=tuple(3600 for _ in qps), termed=(True,), committed_price=(10_000,), committed_supply=(None,),
        on_demand_price=(30_000,), on_demand_supply=(tuple(None for _ in qps),), start_cost=0)


def test_split_moves_the_committed_price_to_the_peak():
    """30 then 10 QPS: committing 3 costs 3 x $1 x 2 h = $6 (2 committed: 4 + 3 = $7; 1: 2 + 6 =
    $8). At the uniform split each hour sees $1 a device: 3 + 1 = $4 (the floor sum). Splitting
    the $2 a committed device costs over the horizon as $2 on the first hour and $0 on the
    second gives 3 x 2 + 1 x 0 = $6 = the optimum. Along the subgradient (levels 3 and 1: moving
    committed price from the second hour to the first) L rises by $2 per $1 moved, so each
    Polyak step reaches its aim (2% above the bound) exactly: 4 x 1.02^k after k steps until
    1.02 x 4 x 1.02^20 = 6.06 passes the incumbent, whose aim the 21st step reaches: 22
    evaluations."""
    pi = one_type([30.0, 10.0])
    lg = Lagrange(pi, [0], [[0], [1]], OPTS, Pool(1))
    assert lg.evaluate(lg.uniform())[0] == pytest.approx(4 * COST_UNIT)
    assert lg.evaluate(np.array([[20_000.0], [0.0]]))[0] == pytest.approx(6 * COST_UNIT)
    split = lg.search(6 * COST_UNIT, steps=30)
    assert split.bound == pytest.approx(6 * COST_UNIT)
    assert split.prices[:, 0].tolist() == [20_000, 0]
    assert split.evaluations == 22


def test_projection_keeps_the_total_and_signs():
    got = _project(np.array([[3.0, -1.0], [1.0, 5.0], [-2.0, 0.0]]), np.array([2.0, 4.0]))
    assert got.sum(axis=0).tolist() == pytest.approx([2.0, 4.0])
    assert np.all(got >= 0)
    assert got[:, 0].tolist() == pytest.approx([2.0, 0.0, 0.0])


cases = dict(qps=st.lists(st.integers(1, 60), min_size=2, max_size=3), a=st.sampled_from([(1.0, 3.0), (1.0, 1.3)]),
             b=st.sampled_from([(0.9, 1.0), (1.5, 4.0)]), rent=st.sampled_from([None, 2]))


@settings(max_examples=12, deadline=None)
@given(**cases, shares=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6))
def test_every_split_bounds_the_enumerated_optimum(qps, a, b, rent, shares):
    """L(pi) <= min over C of T(C) for random splits, and for the split the search ends at."""
    pi = horizon([float(q) for q in qps], a, b, 0.0, rent)
    want = brute_force(pi)
    groups = [[p] for p in range(pi.n_periods)]
    lg = Lagrange(pi, [0, 1], groups, OPTS, Pool(1))
    w = np.array(shares[: 2 * len(groups)]).reshape(len(groups), 2) + 1e-3
    nu = w / w.sum(axis=0) * pi.horizon_s * lg.cp
    assert lg.evaluate(lg.integer_prices(nu))[0] <= want + 1e-6
    assert lg.search(want).bound <= want + 1e-6


@settings(max_examples=10, deadline=None)
@given(**cases, boxes=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 3), st.integers(0, 3)),
                               min_size=1, max_size=3))
def test_repriced_box_bounds_are_below_every_vector_in_the_box(qps, a, b, rent, boxes):
    """The table repriced by the search's split (seeded with its bounds, single vectors kept):
    every box's bound stays at most T(C) for each C in it."""
    pi = horizon([float(q) for q in qps], a, b, 0.0, rent)
    ranges = periods_commit.all_level_ranges(pi)
    hints = period_hints(pi, OPTS, 5.0)
    table = periods_box.Table(pi, OPTS, cost_expr, [0, 1], hints.floors, hints.high_floors)
    top = (ranges[0][-1], ranges[1][-1])
    table.solve(top, top, 1.0, float("inf"))
    costs = {(x, y): cost_at(pi, {0: x, 1: y}) for x in ranges[0] for y in ranges[1]}
    split = Lagrange(pi, [0, 1], table.groups, OPTS, Pool(1)).search(min(costs.values()) * 1.5)
    table.reprice(split.prices, split.bounds)
    spans = [(min(x0, x1, top[0]), min(y0, y1, top[1]), min(max(x0, x1), top[0]), min(max(y0, y1), top[1]))
             for x0, x1, y0, y1 in boxes]
    for lo0, lo1, hi0, hi1 in spans:
        table.solve((lo0, lo1), (hi0, hi1), 1.0, float("inf"))
    for lo0, lo1, hi0, hi1 in spans + [(0, 0, *top), (*top, *top)]:
        inside = min(v for (x, y), v in costs.items() if lo0 <= x <= hi0 and lo1 <= y <= hi1)
        assert table.lb((lo0, lo1), (hi0, hi1)) <= inside + 1e-6


def test_worker_processes_answer_as_this_process():
    """The same sub-solves in two spawned processes and here: the same bounds and plans, in the
    tasks' order (each solve one sequential CP-SAT worker under a deterministic limit)."""
    pi = one_type([30.0, 10.0, 20.0, 40.0])
    lg = Lagrange(pi, [0], [[p] for p in range(4)], OPTS, Pool(1))
    subs = [inst for inst, _ in lg.tasks(np.array([[5_000.0], [20_000.0], [10_000.0], [40_000.0]]))]
    tasks = [(inst, 1.0, 0) for inst in subs]
    with Pool(2) as pool:
        there = pool.map(solve_priced, tasks)
    here = Pool(1).map(solve_priced, tasks)
    assert [(b, c.tolist()) for b, c, _ in there] == [(b, c.tolist()) for b, c, _ in here]
    # 3, 1, 2, 4 devices at min(price, $3) a device-hour: 3 x $0.50, 1 x $2, 2 x $1, 4 x $3
    assert [b for b, _, _ in here] == [15_000, 20_000, 20_000, 120_000]

"""The committed levels searched exactly (solver/fleet/periods_commit.py): its optimum equals the
one-model optimum (solver/fleet/periods_solve.py with the search off) on generated instances, with
and without a start cost, and a type rented only is paid for."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.fleet import periods_commit, periods_solve
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, period_instance
from solver.fleet.periods_solve import cost_expr, floor_sum, period_hints, solve_periods
from solver.fleet.status import SolveStatus
from tests.support.two_type_fleet import two_type_fleet

OPTS = SolveOptions(time_limit_s=20)


def horizon(qps: list[float], committed: float | None, on_demand: float, start_usd: float) -> PeriodInstance:
    base = two_type_fleet(max(qps))
    return PeriodInstance(
        base=base, periods=tuple(period_instance(base, [q], 0) for q in qps),
        names=tuple(f"p{k}" for k in range(len(qps))), seconds=tuple(3600 for _ in qps),
        termed=(True, False), committed_price=(None if committed is None else int(committed * 1e4), None),
        committed_supply=(None, None), on_demand_price=(int(on_demand * 1e4), None),
        on_demand_supply=(tuple(None for _ in qps), tuple(None for _ in qps)), start_cost=int(start_usd * COST_UNIT),
    )


@settings(max_examples=12, deadline=None)
@given(qps=st.lists(st.integers(1, 60), min_size=2, max_size=4), cp=st.sampled_from([1.0, 2.0]),
       premium=st.sampled_from([1.2, 2.0, 3.5]), start=st.sampled_from([0.0, 0.5]))
def test_search_equals_the_one_model_optimum(qps, cp, premium, start, monkeypatch_module):
    pi = horizon([float(q) for q in qps], cp, cp * premium, start)
    assert periods_commit.level_ranges(pi) is not None
    searched = solve_periods(pi, OPTS)
    with monkeypatch_module.context() as mp:
        mp.setattr(periods_commit, "MAX_VECTORS", 0)  # the one model over periods
        mp.setattr(periods_solve, "BOX_SEARCH", False)
        assert periods_commit.level_ranges(pi) is None
        whole = solve_periods(pi, OPTS)
    assert searched.status is SolveStatus.OPTIMAL and whole.status is SolveStatus.OPTIMAL
    assert searched.cost_usd == pytest.approx(whole.cost_usd)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_rented_only_type_is_paid_for_every_device():
    """30 then 10 QPS, 'a' on demand only at $1.40 (no committed price): 3 + 1 device-hours of
    'a' cost $5.60, cheaper than 'b' (2 x $5 + $5); nothing can be committed."""
    sol = solve_periods(horizon([30.0, 10.0], None, 1.4, 0.0), OPTS)
    assert sol.status is SolveStatus.OPTIMAL
    assert sol.committed == {0: 0} and sol.on_demand == [{0: 3}, {0: 1}]
    assert sol.cost_usd == pytest.approx(5.6)


def test_period_bounds_are_memoised_over_equal_periods():
    """Four periods of two distinct demands: the bounds solve each (demand, level) once; levels
    0..3 for 'a' (30 QPS peak)."""
    pi = horizon([30.0, 10.0, 30.0, 10.0], 1.0, 3.0, 0.0)
    assert periods_commit.level_ranges(pi) == {0: range(4)}
    bounds = periods_commit.PeriodBounds(pi, OPTS, cost_expr)
    # level 1 ($1 x 4 h); 30 QPS: the free 'a' and one 'b' column (10 + 25 QPS) for $5/h, less
    # than 2 more 'a' at $3 ($6/h); 10 QPS: the free 'a' alone
    assert bounds.lower({0: 1}) == pytest.approx((4 * 1.0 + 2 * 5.0) * COST_UNIT)
    assert bounds.solves == 2


def test_floor_sum_bounds_the_horizon_cost():
    """30 then 10 QPS on 'a' alone (committed $1, on demand $3): at the lower price ($1) the
    periods cost at least 3 + 1 = $4 over the two hours, below the optimum $6."""
    from tests.fleet.test_periods import two_periods

    pi = two_periods([30.0, 10.0], 1.0, 3.0)
    hints = period_hints(pi, OPTS, 5.0)
    assert floor_sum(pi, hints) == pytest.approx(4.0 * COST_UNIT)
    assert solve_periods(pi, OPTS).cost_usd == pytest.approx(6.0)

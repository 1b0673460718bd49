"""The fleet model over periods (solver/fleet/periods.py): a two-period instance checked by hand,
the start cost, and invariants of the committed level."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.options import SolveOptions
from solver.fleet.periods import COST_UNIT, PeriodInstance, period_instance
from solver.fleet.periods_solve import solve_periods
from solver.fleet.status import SolveStatus
from solver.schema.roles import COLOCATED

OPTS = SolveOptions(time_limit_s=20)


def one_type(peak_qps: float) -> FleetInstance:
    """One service, one column: 1 device of type 'a' serving 10 QPS."""
    spec = ServiceSpec(name="chat", demand=int(peak_qps * 1000), colocated=True, disaggregated=False,
                       ratio_lo=None, ratio_hi=None, max_configs=None)
    ub = int(np.ceil(peak_qps / 10))
    return FleetInstance(
        objective="min_cost", service=np.zeros(1, dtype=np.int64), role=np.full(1, COLOCATED),
        hw=np.array([0]), devices=np.array([1]), cap=np.array([10_000]), cost=np.array([30_000]),
        power=np.array([700]), ub=np.array([ub]), demand_ub=np.array([ub]), services=(spec,),
        hw_names=("a",), supply=(None,), budget=None, power_cap=None,
    )


def two_periods(qps: list[float], committed: float, on_demand: float, start_usd: float = 0.0,
                committed_supply: int | None = None) -> PeriodInstance:
    """Hour-long periods; prices in USD/device-hour."""
    base = one_type(max(qps))
    return PeriodInstance(
        base=base, periods=tuple(period_instance(base, [q], 0) for q in qps),
        names=tuple(f"p{k}" for k in range(len(qps))), seconds=tuple(3600 for _ in qps),
        termed=(True,), committed_price=(int(committed * 1e4),), committed_supply=(committed_supply,),
        on_demand_price=(int(on_demand * 1e4),), on_demand_supply=(tuple(None for _ in qps),),
        start_cost=int(start_usd * COST_UNIT),
    )


def test_two_periods_by_hand_high_premium_commits_for_the_peak():
    """30 then 10 QPS (3 then 1 device), $1 committed, $3 on demand: committing c devices costs
    2c + 3 (3 - c) + 3 max(1 - c, 0) -> c=0: $12, 1: $8, 2: $7, 3: $6; premium 3 > peak/mean 1.5."""
    sol = solve_periods(two_periods([30, 10], 1.0, 3.0), OPTS)
    assert sol.status is SolveStatus.OPTIMAL
    assert sol.committed == {0: 3} and sol.on_demand == [{0: 0}, {0: 0}]
    assert sol.counts.tolist() == [[3], [1]]
    assert sol.cost_usd == pytest.approx(6.0)


def test_two_periods_by_hand_low_premium_rents_the_peak():
    """$1.40 on demand (premium 1.4 < peak/mean 1.5): c=0: 4 x 1.4 = $5.60, 1: 2 + 2 x 1.4 = $4.80,
    2: 4 + 1.4 = $5.40, 3: $6 -> commit 1, rent 2 in the first hour."""
    sol = solve_periods(two_periods([30, 10], 1.0, 1.4), OPTS)
    assert sol.committed == {0: 1} and sol.on_demand == [{0: 2}, {0: 0}]
    assert sol.cost_usd == pytest.approx(4.8)


def test_start_cost_counts_devices_started_after_the_first_period():
    """10 then 30 QPS: 2 devices start in the second hour; at $0.50 each the plan above costs
    $4.80 + $1.00 (renting 2 in the second hour is still cheapest: committing 3 costs $6 + $0)."""
    sol = solve_periods(two_periods([10, 30], 1.0, 1.4, start_usd=0.5), OPTS)
    assert sol.started.tolist() == [0, 2]
    assert sol.committed == {0: 1}
    assert sol.cost_usd == pytest.approx(5.8)


def test_committed_supply_limits_the_commitment():
    sol = solve_periods(two_periods([30, 10], 1.0, 3.0, committed_supply=2), OPTS)
    assert sol.committed == {0: 2} and sol.on_demand == [{0: 1}, {0: 0}]
    assert sol.cost_usd == pytest.approx(7.0)


def brute_force(qps: list[int], cp: float, op: float) -> float:
    """The cheapest committed level by enumeration (one column of 10 QPS per device)."""
    need = [int(np.ceil(q / 10)) for q in qps]
    return min(cp * c * len(qps) + op * sum(max(n - c, 0) for n in need) for c in range(max(need) + 1))


@settings(max_examples=15, deadline=None)
@given(qps=st.lists(st.integers(1, 60), min_size=1, max_size=4), cp=st.sampled_from([1.0, 2.0]),
       premium=st.sampled_from([1.0, 1.3, 2.0, 3.5]))
def test_cost_equals_the_enumerated_committed_level(qps, cp, premium):
    sol = solve_periods(two_periods([float(q) for q in qps], cp, cp * premium), OPTS)
    assert sol.status is SolveStatus.OPTIMAL
    assert sol.cost_usd == pytest.approx(brute_force(qps, cp, cp * premium))
    need = [int(np.ceil(q / 10)) for q in qps]
    for p, n in enumerate(need):  # every period served, usage within committed + on demand
        assert sol.counts[p][0] == n
        assert sol.counts[p][0] <= sol.committed[0] + sol.on_demand[p][0]

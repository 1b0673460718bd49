"""Capacities and demands become integers with a bounded relative error (solver/fleet/integerize.py).

Each service counts QPS in units of 1/S, S the least power of ten from 1,000 up at which its
smallest capacity and its demand are >= 1,000 units: flooring a capacity loses under 0.1% of it,
ceiling the demand adds under 0.1%. So (stated bound, checked here against an independent numpy
brute force over the same float table, over generated instances):

    float optimum at demand d  <=  integer optimum  <=  float optimum at demand d x 1.002

With one fixed milli-QPS unit, a 0.0059 QPS instance counted 0.005 (15% lost) and the "optimal"
plan could be far dearer than its own table's optimum.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.candidates.build import build_candidates
from solver.fleet import integerize as ints
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.solve import SolveOptions, solve
from solver.plan.planner import plan
from solver.problem.load import parse_problem
from solver.schema.roles import COLOCATED, DECODE, PREFILL

OPTS = SolveOptions(time_limit_s=10, tiebreak_work=50)
SLACK = 1 + 2 * ints.QPS_REL_ERROR  # the float demand multiple the integer optimum never exceeds
MAX_COMBOS = 200_000


def test_qps_scale_is_the_least_power_of_ten_giving_a_thousand_units():
    assert ints.qps_scale([16.8, 184.0], 200.0) == 1000  # shipped sizes: milli-QPS, as before
    assert ints.qps_scale([0.5, 3.0], 20.0) == 10_000  # 0.5 QPS -> 5,000 units
    assert ints.qps_scale([0.005], 1.0) == 1_000_000  # 0.005 x 1e5 = 500 < 1,000
    assert ints.qps_scale([2.0], 0.02) == 100_000  # the demand counts too
    assert ints.qps_scale([1e-9], 1.0) == ints.MAX_QPS_SCALE  # capped (such rows are pruned)
    # a row below 1% of the demand (0.058 QPS of 150: 2,569 instances to carry it) does not
    # raise the scale of the whole service 100x (three-services' chat)
    assert ints.qps_scale([0.058, 0.39, 2.17, 26.2], 150.0) == 1000
    assert ints.qps_scale([0.0505, 0.43, 1.15], 40.0) == 10_000  # 0.43 >= 0.4 counts
    assert ints.capacity([0.0059], 1_000_000).tolist() == [5900]
    assert ints.capacity([0.0059]).tolist() == [5]  # milli-QPS: 15% of the instance lost


# ---- an independent float brute force ------------------------------------------------------------


def float_optimum(cap, cost, role, demand: float) -> float:
    """The cheapest float-feasible counts of one service (colocated capacity + min(prefill,
    decode) >= demand), by enumeration: an optimum never runs more than ceil(demand / cap) of a
    row (one fewer would still cover the demand alone)."""
    ub = [math.ceil(demand / c - 1e-12) for c in cap]
    counts = np.array(list(itertools.product(*[range(u + 1) for u in ub])), dtype=float)
    cap, cost, role = np.asarray(cap), np.asarray(cost), np.asarray(role)

    def by(r):
        return counts[:, role == r] @ cap[role == r]

    served = by(COLOCATED) + np.minimum(by(PREFILL), by(DECODE))
    ok = served >= demand * (1 - 1e-12)
    return float((counts[ok] @ cost).min()) if ok.any() else math.inf


def integer_instance(cap, cost, role, devices, demand: float) -> FleetInstance:
    """The fleet model's instance of one service, integerized as solver/fleet/instance.py does."""
    scale = ints.qps_scale(cap, demand)
    icap = ints.capacity(cap, scale)
    need = ints.demand(demand, scale)
    ub = -(-need // np.maximum(icap, 1))
    spec = ServiceSpec("svc", need, COLOCATED in role, PREFILL in role and DECODE in role, None, None, None,
                       qps_scale=scale)
    a = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return FleetInstance(
        objective="min_cost", service=a([0] * len(cap)), role=a(role), hw=a([0] * len(cap)),
        devices=a(devices), cap=icap, cost=ints.cost(cost), power=a([1] * len(cap)), ub=ub, demand_ub=ub,
        services=(spec,), hw_names=("hw0",), supply=(None,), budget=None, power_cap=None,
    )


@st.composite
def float_tables(draw):
    layout = draw(st.sampled_from([[COLOCATED], [PREFILL, DECODE]]))
    n = draw(st.integers(len(layout), 4))
    role = layout + [draw(st.sampled_from(layout)) for _ in range(n - len(layout))]
    cap = [round(10 ** draw(st.floats(-3, 0.3)), 6) for _ in range(n)]  # 0.001 to 2 QPS
    cost = [draw(st.integers(100, 2000)) / 100 for _ in range(n)]  # USD/h, cents
    devices = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(n)]
    demand = round(min(cap) * draw(st.floats(1.0, 12.0)), 6)
    ub = [math.ceil(demand * SLACK / c) for c in cap]
    if int(np.prod([u + 1 for u in ub])) > MAX_COMBOS:
        demand = round(min(cap) * 2.5, 6)
    return cap, cost, role, devices, demand


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(table=float_tables())
def test_integer_optimum_within_the_stated_bound_of_the_float_optimum(table):
    cap, cost, role, devices, demand = table
    ub = [math.ceil(demand * SLACK / c) for c in cap]
    if int(np.prod([u + 1 for u in ub])) > MAX_COMBOS:
        return
    sol = solve(integer_instance(cap, cost, role, devices, demand), OPTS)
    assert sol.status == "optimal"
    n = sol.counts.astype(float)
    got = float(n @ np.asarray(cost))
    # what the integer plan serves in floats covers the demand (the verifier's check)
    served = sum(n[i] * cap[i] for i in range(len(cap)) if role[i] == COLOCATED) + min(
        sum(n[i] * cap[i] for i in range(len(cap)) if role[i] == PREFILL),
        sum(n[i] * cap[i] for i in range(len(cap)) if role[i] == DECODE))
    assert served >= demand * (1 - 1e-12)
    low, high = float_optimum(cap, cost, role, demand), float_optimum(cap, cost, role, demand * SLACK)
    assert low - 1e-9 <= got <= high + 1e-9, (table, sol.counts.tolist(), low, got, high)


def test_tiny_capacities_reach_the_float_optimum():
    # 3 x 0.0059 QPS = 0.0177 >= 0.0175 QPS at $3.00; in milli-QPS each counted 5 (0.015) and
    # the model needed 4 instances ($4.00, 33% dearer) or the $3.50 0.02 QPS row
    cap, cost, role = [0.0059, 0.02], [1.0, 3.5], [COLOCATED, COLOCATED]
    sol = solve(integer_instance(cap, cost, role, [1, 1], 0.0175), OPTS)
    assert sol.counts.tolist() == [3, 0]
    assert float_optimum(cap, cost, role, 0.0175) == pytest.approx(3.0)


PROBLEM = """
name: tiny-capacity
services:
  - name: chat
    model: llama-3.1-8b
    precision: fp8
    workload: {qps: 0.0175, input_tokens: 1024, output_tokens: 128, max_context: 4096}
    slo:
      ttft_ms: {p50: 2000, p99: 6000}
      tpot_ms: {p50: 60, p99: 120}
    runtime: colocated
hardware:
  - {type: h100-sxm, price_per_hour: 2.50}
search:
  tp: [1]
  batch: [8]
"""


def test_a_plan_with_tiny_capacities_is_the_optimum_of_its_own_table():
    # the planner end to end: the one candidate row's capacity set to 0.0059 QPS per instance
    rp = parse_problem(PROBLEM)
    cs = build_candidates(rp)
    t = cs.table
    assert len(t) >= 1
    cs = replace(cs, table=replace(t, capacity_qps=np.full(len(t), 0.0059)))
    doc = plan(rp, OPTS, timings=False, candidates=cs, compare=False)
    (svc,) = doc.services
    assert sum(p.instances for p in svc.pools) == 3  # 3 x 0.0059 >= 0.0175; milli-QPS needed 4
    assert doc.cost_per_hour == pytest.approx(3 * float(t.cost_per_hour[0]))
    assert svc.capacity_qps == pytest.approx(0.0177)

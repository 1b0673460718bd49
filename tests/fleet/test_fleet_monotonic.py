"""Monotonicity of the planner's optimum.

More budget never lowers the maximum throughput; more demand never lowers the minimum cost;
more supply never raises the minimum cost. Checked on the shipped problems (edited with
`model_copy`, re-resolved and planned end to end) and on small generated `FleetInstance`s
(hypothesis), where every solve is proven optimal.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.solve import SolveOptions, solve
from solver.plan.planner import plan
from solver.problem.load import ResolvedProblem, load_problem, resolve
from solver.schema.result import PlanResult
from solver.schema.roles import COLOCATED, DECODE, PREFILL
from tests.support.strategies import service_rows

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "problems"
OPTS = SolveOptions(time_limit_s=30, seed=0, workers=1)
TINY = SolveOptions(time_limit_s=10, tiebreak_work=20)
EPS = 1e-9


@lru_cache(maxsize=None)
def shipped(name: str) -> ResolvedProblem:
    return load_problem(PROBLEMS / name)


def edited(rp: ResolvedProblem, **update) -> ResolvedProblem:
    return resolve(rp.problem.model_copy(update=update), rp.doc)


def with_qps(rp: ResolvedProblem, qps: float) -> ResolvedProblem:
    services = [
        s.model_copy(update={"workload": s.workload.model_copy(update={"qps": qps})})
        for s in rp.problem.services
    ]
    return edited(rp, services=services)


def with_supply(rp: ResolvedProblem, supplies: dict[str, int | None]) -> ResolvedProblem:
    hardware = [
        h.model_copy(update={"supply": supplies.get(h.name, h.supply)}) for h in rp.problem.hardware
    ]
    return edited(rp, hardware=hardware)


def solved(rp: ResolvedProblem) -> PlanResult:
    doc = plan(rp, OPTS, timings=False)
    assert doc.status == "optimal", (rp.name, doc.status, doc.infeasible_because)
    return doc


# ---- shipped problems --------------------------------------------------------------------------


def test_more_budget_never_lowers_max_throughput():
    rp = shipped("budget-max-throughput.yaml")
    budgets = [200.0, 400.0, 800.0]
    scales = []
    for b in budgets:
        doc = solved(edited(rp, budget_per_hour=b))
        assert doc.cost_per_hour <= b + EPS
        scales.append(doc.throughput_scale)
    print(f"\nbudget-max-throughput: budget {budgets} -> throughput scale {scales}")
    assert all(a <= b + EPS for a, b in zip(scales, scales[1:])), scales
    # doubling the budget can at least replicate the fleet: the scale (nearly) doubles
    assert scales[-1] >= 2 * scales[0] - 0.01


def test_more_demand_never_lowers_min_cost():
    rp = shipped("llama3-70b-online.yaml")
    qps = [100.0, 200.0, 400.0]
    costs = []
    for q in qps:
        doc = solved(with_qps(rp, q))
        assert doc.services[0].capacity_qps >= q - EPS
        costs.append(doc.cost_per_hour)
    print(f"\nllama3-70b-online: qps {qps} -> cost/h {costs}")
    assert all(a <= b + EPS for a, b in zip(costs, costs[1:])), costs


def test_more_supply_never_raises_min_cost():
    rp = shipped("llama3-70b-online.yaml")
    steps = [{"h100-sxm": 24, "h200-sxm": 64}, {"h100-sxm": 48, "h200-sxm": 64},
             {"h100-sxm": 64, "h200-sxm": None}, {"h100-sxm": None, "h200-sxm": None}]
    costs = []
    for sup in steps:
        doc = solved(with_supply(rp, sup))
        for name, s in sup.items():
            assert s is None or doc.devices_by_type.get(name, 0) <= s
        costs.append(doc.cost_per_hour)
    print(f"\nllama3-70b-online: supply {steps} -> cost/h {costs}")
    assert all(b <= a + EPS for a, b in zip(costs, costs[1:])), costs
    # the tightest supply really binds (h100 is the cheaper type per QPS here)
    assert costs[0] > costs[-1]


def test_more_supply_never_raises_min_cost_on_the_mixed_fleet():
    rp = shipped("mixed-supply.yaml")
    base = {h.name: h.supply for h in rp.problem.hardware}
    steps = [base, {k: 2 * v for k, v in base.items()}, {k: None for k in base}]
    costs = [solved(with_supply(rp, sup)).cost_per_hour for sup in steps]
    print(f"\nmixed-supply: supply x1, x2, unlimited -> cost/h {costs}")
    assert all(b <= a + EPS for a, b in zip(costs, costs[1:])), costs


# ---- generated fleet instances -----------------------------------------------------------------


@st.composite
def instances(draw, objective: str) -> FleetInstance:
    """A small fleet instance; every service has a usable runtime."""
    n_services = draw(st.integers(1, 2))
    n_hw = draw(st.integers(1, 2))
    service, role, n_core = service_rows(draw, n_services, 0, 6)
    n = len(service)
    ints = lambda lo, hi: np.array([draw(st.integers(lo, hi)) for _ in range(n)], dtype=np.int64)  # noqa: E731
    ratio = draw(st.sampled_from([(None, None), (500, None), (None, 2000), (500, 2000)]))
    specs = []
    for s in range(n_services):
        roles = {r for sv, r in zip(service, role) if sv == s}
        specs.append(ServiceSpec(
            name=f"s{s}", demand=draw(st.integers(1, 30)), colocated=COLOCATED in roles,
            disaggregated=PREFILL in roles and DECODE in roles, ratio_lo=ratio[0], ratio_hi=ratio[1],
            max_configs=draw(st.one_of(st.none(), st.just(1))),
        ))
    ub = np.array([draw(st.integers(1 if i < n_core else 0, 5)) for i in range(n)], dtype=np.int64)
    return FleetInstance(
        objective=objective, service=np.array(service), role=np.array(role),
        hw=ints(0, n_hw - 1), devices=np.array([draw(st.sampled_from([1, 2, 4])) for _ in range(n)]),
        cap=ints(1, 20), cost=ints(1, 30), power=ints(1, 10), services=tuple(specs),
        ub=ub, demand_ub=ub.copy(),
        hw_names=tuple(f"hw{h}" for h in range(n_hw)),
        # caps are drawn from the top down: hypothesis favours small draws
        supply=tuple(draw(st.one_of(st.none(), st.integers(0, 20).map(lambda x: 20 - x))) for _ in range(n_hw)),
        budget=(draw(st.integers(0, 149).map(lambda x: 150 - x)) if objective == "max_throughput"
                else draw(st.one_of(st.none(), st.integers(0, 299).map(lambda x: 300 - x)))),
        power_cap=draw(st.one_of(st.none(), st.integers(0, 79).map(lambda x: 80 - x))),
    )


def _replace(inst: FleetInstance, **update) -> FleetInstance:
    return FleetInstance(**{**inst.__dict__, **update})


def _cost(inst: FleetInstance, sol) -> int:
    return int(sol.counts @ inst.cost)


GEN = settings(max_examples=40, deadline=None, derandomize=True, database=None)


@GEN
@given(inst=instances("max_throughput"), extra=st.one_of(st.none(), st.integers(1, 100)))
def test_generated_more_budget_never_lowers_max_throughput(inst, extra):
    more = _replace(inst, budget=None if extra is None else inst.budget + extra)
    a, b = solve(inst, TINY), solve(more, TINY)
    if a.status == "infeasible":
        return
    assert b.status == "optimal" and a.status == "optimal"
    assert b.scale >= a.scale - EPS, (a.scale, b.scale)


@GEN
@given(inst=instances("min_cost"), which=st.integers(0, 1), extra=st.integers(1, 20))
def test_generated_more_demand_never_lowers_min_cost(inst, which, extra):
    s = which % len(inst.services)
    specs = list(inst.services)
    specs[s] = ServiceSpec(**{**specs[s].__dict__, "demand": specs[s].demand + extra})
    more = _replace(inst, services=tuple(specs))
    a, b = solve(inst, TINY), solve(more, TINY)
    if b.status == "infeasible":
        return
    assert a.status == "optimal" and b.status == "optimal", "less demand must stay feasible"
    assert _cost(inst, a) <= _cost(more, b)


@GEN
@given(inst=instances("min_cost"), extra=st.lists(st.one_of(st.none(), st.integers(0, 10)), min_size=2, max_size=2))
def test_generated_more_supply_never_raises_min_cost(inst, extra):
    supply = tuple(
        None if s is None or e is None else s + e for s, e in zip(inst.supply, extra)
    )
    more = _replace(inst, supply=supply)
    a, b = solve(inst, TINY), solve(more, TINY)
    if a.status == "infeasible":
        return
    assert a.status == "optimal" and b.status == "optimal", "more supply must stay feasible"
    assert _cost(more, b) <= _cost(inst, a)

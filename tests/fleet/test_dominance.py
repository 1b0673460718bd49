"""Dominance bounds on instance counts (solver/fleet/dominance.py): by hand, and the least cost
within the bounds equal to the least cost without them, by enumeration of every count vector
(hypothesis) and by the fleet model's own solve."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solver.fleet import dominance
from solver.fleet.build import build_model
from solver.fleet.instance import FleetInstance, ServiceSpec
from solver.fleet.objective import cost_expr
from solver.schema.roles import COLOCATED, DECODE, PREFILL
from tests.support.two_type_fleet import two_type_fleet


def test_two_small_instances_give_way_to_one_twice_their_size():
    """'a': 1 device serving 10 QPS ($3); 'b': 2 devices serving 25 QPS ($5). Two 'a' (20 QPS,
    $6) cost more than one 'b' (25 QPS, $5) but are of another type: with both types priced per
    instance (no terms) a plan needs at most one 'a'; with 'a' under terms (its devices possibly
    free) no bound. 'b' is never replaced: 25 QPS needs three 'a' (3 devices, $9)."""
    inst = two_type_fleet(60.0)
    assert list(dominance.dominance_bounds(inst, (False, False))) == [1, 3]
    assert list(dominance.dominance_bounds(inst, (True, False))) == [6, 3]
    assert dominance.least_m(inst, (False, False), 0, 1) == 2
    assert dominance.least_m(inst, (False, False), 1, 0) is None


def test_same_type_replacement_counts_devices_not_prices():
    """One type under terms: 2-device instances serving 9 QPS and 4-device ones serving 20: two
    small (4 devices, 18 QPS) give way to one large (4 devices, 20 QPS) whatever a device costs,
    so the small column gets at most 1; a 4-device one needs 3 small (6 devices): unbounded."""
    inst = _one_service([(0, 2, 9, 6), (0, 4, 20, 12)], [], [], demand=60, types=1)
    assert list(dominance.dominance_bounds(inst, (True,))) == [1, 3]


def _one_service(col, pre, dec, demand: int, types: int = 2, ratio_hi: int | None = None) -> FleetInstance:
    """Columns (type, devices, QPS, $/h) by role; every bound ceil(demand / capacity) plus the
    ratio's room on decode (as solver/fleet/instance.py sizes them)."""
    rows = [(COLOCATED, *x) for x in col] + [(PREFILL, *x) for x in pre] + [(DECODE, *x) for x in dec]
    role, hw, devices, cap, cost = (np.array(v, dtype=np.int64) for v in zip(*rows))
    cap, cost = cap * 1000, cost * 10_000
    ub = -(-demand * 1000 // cap)
    if ratio_hi is not None and pre and dec:
        need = -(-int((ub * devices)[role == PREFILL].max()) * 1000 // ratio_hi)
        ub = np.where(role == DECODE, ub + -(-need // devices), ub)
    spec = ServiceSpec(name="s", demand=demand * 1000, colocated=bool(col), disaggregated=bool(pre and dec),
                       ratio_lo=None, ratio_hi=ratio_hi, max_configs=None)
    return FleetInstance(
        objective="min_cost", service=np.zeros(len(rows), dtype=np.int64), role=role, hw=hw, devices=devices,
        cap=cap, cost=cost, power=devices * 700, ub=ub, demand_ub=ub.copy(), services=(spec,),
        hw_names=tuple("abc"[:types]), supply=(None,) * types, budget=None, power_cap=None)


def enumerated(inst: FleetInstance, ub: np.ndarray, free: tuple[int, ...], price: tuple[int, ...]) -> float:
    """The least cost over every count vector within `ub` that serves the demand (colocated
    capacity + min(prefill, decode capacity)) within the ratio; a type's first `free[h]` devices
    cost nothing, the rest `price[h]` each (a committed level and the on-demand price)."""
    spec = inst.services[0]
    x = np.array(list(itertools.product(*(range(int(u) + 1) for u in ub))), dtype=np.int64)
    c = {r: x @ (inst.cap * (inst.role == r)) for r in (COLOCATED, PREFILL, DECODE)}
    ok = c[COLOCATED] + np.minimum(c[PREFILL], c[DECODE]) >= spec.demand
    if spec.ratio_hi is not None:
        ok &= (x @ (inst.devices * (inst.role == PREFILL))) * 1000 <= spec.ratio_hi * (x @ (inst.devices * (inst.role == DECODE)))
    use = np.stack([x @ (inst.devices * (inst.hw == h)) for h in range(len(free))], axis=1)
    cost = np.maximum(use - np.array(free), 0) @ np.array(price)
    return float(cost[ok].min()) if ok.any() else float("inf")


column = st.tuples(st.integers(0, 1), st.sampled_from([1, 2, 4]), st.integers(6, 30), st.integers(1, 9))


@settings(max_examples=40, deadline=None)
@given(col=st.lists(column, min_size=1, max_size=3), pre=st.lists(column, min_size=0, max_size=2),
       dec=st.lists(column, min_size=0, max_size=2), demand=st.integers(10, 30),
       free=st.integers(0, 6), price=st.tuples(st.integers(1, 9), st.integers(1, 9)),
       ratio=st.sampled_from([None, 1000, 2000]))
def test_bounds_keep_the_least_cost_of_every_count_vector(col, pre, dec, demand, free, price, ratio):
    """Type 0 under terms (its first `free` devices free, the rest at `price[0]`), type 1 priced
    per device: the least cost over every count vector is the same within the dominance bounds."""
    inst = _one_service(col, pre, dec, demand, ratio_hi=ratio)
    assume(int(np.prod(inst.ub + 1)) <= 100_000)  # few enough to list
    inst = dataclasses.replace(inst, cost=inst.devices * np.where(inst.hw == 0, price[0], price[1]))
    ub = dominance.dominance_bounds(inst, (True, False))
    assert np.all(ub <= inst.ub)
    assert enumerated(inst, ub, (free, 0), price) == enumerated(inst, inst.ub, (free, 0), price)


@settings(max_examples=15, deadline=None)
@given(col=st.lists(column, min_size=1, max_size=4), pre=st.lists(column, min_size=1, max_size=3),
       dec=st.lists(column, min_size=1, max_size=3), demand=st.integers(10, 200),
       ratio=st.sampled_from([None, 1000, 3000]))
def test_bounds_keep_the_fleet_models_least_cost(col, pre, dec, demand, ratio):
    """Every type priced per instance: the fleet model's least cost is the same with the bounds."""
    inst = _one_service(col, pre, dec, demand, ratio_hi=ratio)
    got = [_least_cost(dominance.bounded(inst, (False, False))), _least_cost(inst)]
    assert got[0] == got[1]


def _least_cost(inst: FleetInstance) -> float | None:
    fm = build_model(inst)
    fm.m.minimize(cost_expr(fm))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(fm.m)
    assert status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
    return None if status == cp_model.INFEASIBLE else solver.objective_value

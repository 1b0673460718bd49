"""The Lagrangian bound on the shared supply rows (solver/fleet/lagrange.py): at any multipliers
it is at most the shared optimum (brute force), and every reach question it answers, and every
answer of `reach_plan` that uses it, is the enumeration's."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from solver.fleet import lagrange
from solver.fleet.lagrange import lagrangian_bound, supply_rows
from solver.fleet.solve import reach_plan
from solver.fleet.standalone import Memo, standalone
from tests.fleet.test_fleet_bruteforce import (
    OPTS,
    _clamp_ub,
    enumerate_counts,
    evaluate,
    fleet_instances,
    make_instance,
    spec,
)


def _conflict():
    """Two services of demand 10, one instance each: a on row 0 (type 0, 4 devices, cost 100)
    or row 1 (type 1, 130); b on row 2 (type 0, 100) or row 3 (type 1, 120). Type 0 has 4
    devices, so one of them moves to type 1: the shared optimum is 100 + 120 = 220 (b moves),
    where the own plans' floors sum to 200. L(lam) = min(100 + 4 lam, 130) + min(100 + 4 lam,
    120) - 4 lam is 220 for lam in [5, 7.5]."""
    return make_instance(
        "min_cost", [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 1], [4, 4, 4, 4], [10, 10, 10, 10],
        [100, 130, 100, 120], [1, 1, 1, 1], [1, 1, 1, 1],
        [spec("a", 10, disaggregated=False), spec("b", 10, disaggregated=False)], supply=(4, None))


def test_bound_by_hand():
    inst = _conflict()
    rows = supply_rows(inst)
    assert [(list(c), s) for c, s in rows] == [([0, 2], 4)]
    for lam, want in ((0, 200), (1, 204), (5, 220), (7, 220), (10, 210), (20, 170)):
        assert lagrange._evaluate(inst, rows, np.array([lam]), OPTS, 5.0, None)[0] == want
    alone = standalone(inst, OPTS, 5.0)
    # from 200: a step of 2 * 20 / 16 * 4 = lam 10 (210), then back by 2 * 10 / 16 * 4 to lam 5
    assert lagrangian_bound(inst, 219, OPTS, alone) == 220
    assert reach_plan(inst, 219, OPTS)[0] is False
    assert reach_plan(inst, 220, OPTS)[0] is True  # at the optimum no bound can exceed it
    assert lagrangian_bound(inst, 220, OPTS, alone) <= 220


def _optimum(inst) -> int | None:
    ev = evaluate(inst, enumerate_counts(inst.ub))
    return int(ev["cost"][ev["ok"]].min()) if ev["ok"].any() else None


def _shared(rng: np.random.Generator):
    """2-3 colocated services of 2-3 rows on two types, type 0 cheaper and its supply set
    below what the services' cheapest rows want together (the competing case)."""
    n = int(rng.integers(2, 4))
    service = [s for s in range(n) for _ in range(int(rng.integers(2, 4)))]
    k = len(service)
    hw = [int(i % 2) for i in range(k)]
    devices = rng.choice([1, 2, 4], k).tolist()
    cap = rng.integers(5, 30, k).tolist()
    cost = [int(d * (rng.integers(8, 12) if h == 0 else rng.integers(11, 16))) for d, h in zip(devices, hw)]
    demand = rng.integers(5, 40, n).tolist()
    ub = _clamp_ub([min(4, -(-demand[s] // c)) for s, c in zip(service, cap)])
    supply0 = int(rng.integers(2, 12))
    specs = [spec(f"s{s}", int(demand[s]), disaggregated=False) for s in range(n)]
    return make_instance("min_cost", service, [0] * k, hw, devices, cap, cost, [1] * k, ub, specs,
                         supply=(supply0, None))


def test_bound_on_competing_services_seeded():
    """Seeded instances where services compete for type 0: the same checks as below, and the
    bound decides some questions beyond the own plans' floors."""
    rng = np.random.default_rng(18)
    seen = {"instances": 0, "decided": 0}
    for _ in range(40):
        inst = _shared(rng)
        best = _optimum(inst)
        if best is None:
            continue
        seen["instances"] += 1
        _check_around(inst, best, seen)
    assert seen["instances"] > 20 and seen["decided"] > 0, seen


def _check_around(inst, best: int, seen: dict) -> None:
    rows = supply_rows(inst)
    memo = Memo()
    for lam in (0, 1, 3, 10):
        value = lagrange._evaluate(inst, rows, np.full(len(rows), lam), OPTS, 5.0, memo)[0]
        assert value is None or value <= best
    alone = standalone(inst, OPTS, 5.0, memo)
    for target in (best - 3, best - 1, best, best + 1):
        bound = lagrangian_bound(inst, target, OPTS, alone, memo)
        assert bound is None or bound <= best
        if bound is not None and bound > target:
            assert target < best
            start = lagrange._start(inst, alone)
            seen["decided"] += start is not None and start[0] <= target  # beyond the floors
        assert reach_plan(inst, target, OPTS, memo)[0] is (best <= target)


def test_bound_is_at_most_the_optimum_and_answers_match_on_generated_instances():
    """The brute force's generated instances with two services and a limited type (few of
    them): L at fixed multipliers and the searched bound never exceed the brute-force optimum;
    each question the bound decides ("no") is one; reach_plan equals the enumeration around
    the optimum."""
    seen = {"instances": 0, "decided": 0}

    @settings(max_examples=80, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=fleet_instances("min_cost"))
    def check(inst):
        rows = supply_rows(inst)
        best = _optimum(inst)
        if len(inst.services) < 2 or not rows or best is None:
            return
        seen["instances"] += 1
        _check_around(inst, best, seen)

    check()
    assert seen["instances"] > 0, seen

"""The what-if probes' shortcuts in the fleet layer: a reach question that the services' own
plans decide (solver/fleet/solve.py `decided_by_standalone`), or that the shared model alone
decides within little work (`reach_plan(own_plans=False)`), gets the answer the full
question gives, and the memo of proven own plans (solver/fleet/standalone.py `Memo`) gives back
what solving again gives."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from hypothesis import HealthCheck, given, settings

import solver.fleet.solve as solve_module
from solver.fleet.build import build_model
from solver.fleet.objective import stages
from solver.fleet.solve import REACH_HINT_WORK, _solve_reach, _use_standalone, decided_by_standalone, reach_plan
from solver.fleet.standalone import Memo, instance_key, standalone
from tests.fleet.test_fleet_bruteforce import (
    OPTS,
    enumerate_counts,
    evaluate,
    fleet_instances,
    make_instance,
    spec,
)


def _conflict(supply):
    """Two services of demand 10, each cheapest on type 0 (4 devices an instance): alone a
    costs 10 (row 0) and b 10 (row 2); with type 0's supply at 4 one of them moves to type 1
    (b, to row 3: 12), so the shared optimum is 22 where the own plans' floors sum to 20."""
    return make_instance(
        "min_cost", [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 1], [4, 4, 4, 4], [10, 10, 10, 10],
        [10, 13, 10, 12], [1, 1, 1, 1], [1, 1, 1, 1],
        [spec("a", 10, disaggregated=False), spec("b", 10, disaggregated=False)], supply=supply)


def _decided(inst, target):
    fm = build_model(inst)
    return decided_by_standalone(inst, _use_standalone(fm, OPTS), target)


def test_own_plans_decide_by_hand():
    tight = _conflict((4, None))
    assert _decided(tight, 19) == (False, None)  # floors 10 + 10 > 19
    assert _decided(tight, 21) == (None, None)  # floors 20 <= 21, the union breaks the supply
    assert reach_plan(tight, 21, OPTS)[0] is False  # the solve: the optimum is 22
    assert reach_plan(tight, 22, OPTS)[0] is True
    free = _conflict((None, None))  # the union fits: it is the shared optimum, 20
    got, counts = _decided(free, 20)
    assert got is True and list(counts) == [1, 0, 1, 0]
    assert _decided(free, 19) == (False, None)
    assert reach_plan(free, 20, OPTS)[0] is True and reach_plan(free, 19, OPTS)[0] is False


def _truth(inst, target) -> bool:
    """By enumeration: some plan's primary objective reaches `target` (model units)."""
    ev = evaluate(inst, enumerate_counts(inst.ub))
    if inst.objective == "min_cost":
        return bool((ev["ok"] & (ev["cost"] <= target)).any())
    return bool((ev["ok"] & (ev["scale"] >= target)).any())


def test_shortcut_answers_equal_the_brute_force_on_generated_instances():
    """Around each generated instance's optimum (brute force), every answer the own plans give
    and every reach_plan answer equal the enumeration's; some of each kind occur."""
    kinds = {"decided": 0, "solved": 0, "quick": 0}

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=fleet_instances())
    def check(inst):
        ev = evaluate(inst, enumerate_counts(inst.ub))
        if not ev["ok"].any():
            return
        key = "cost" if inst.objective == "min_cost" else "scale"
        best = int(ev[key][ev["ok"]].min() if key == "cost" else ev[key][ev["ok"]].max())
        for target in (best - 2, best - 1, best, best + 1):
            truth = _truth(inst, target)
            got, counts = _decided(inst, target)
            if got is not None:
                kinds["decided"] += 1
                assert got is truth
                if counts is not None:  # the plan it names is one, and reaches the target
                    row = evaluate(inst, np.asarray(counts)[None, :])
                    assert bool(row["ok"][0]) and int(row["cost"][0]) <= target
            answer = reach_plan(inst, target, OPTS)[0]
            kinds["solved"] += 1
            assert answer is truth
            # the probes' quick first try (the shared model alone, little work): when it
            # decides, the same answer
            quick = reach_plan(inst, target, dataclasses.replace(OPTS, primary_work=0.05), own_plans=False)[0]
            assert quick is None or quick is truth
            kinds["quick"] += quick is not None

    check()
    assert kinds["decided"] > 0 and kinds["solved"] > 20 and kinds["quick"] > 20, kinds


def test_memo_gives_back_the_solved_own_plans():
    inst = _conflict((4, None))
    memo = Memo()
    first = standalone(inst, OPTS, 5.0, memo)
    assert memo.hits == 0
    again = standalone(inst, OPTS, 5.0, memo)
    plain = standalone(inst, OPTS, 5.0)
    assert memo.hits == 2  # both services from the memo
    for got in (again, plain):
        assert got.bounds == first.bounds and list(got.counts) == list(first.counts) == [1, 0, 1, 0]
    # another price for one column is another sub-problem: solved, not taken from the memo
    other = _conflict((4, None))
    other.cost[3] = 11
    assert instance_key(other) != instance_key(inst)
    standalone(other, OPTS, 5.0, memo)
    assert memo.hits == 3  # service a's rows did not change; b's did


def _hinted_try(inst, target):
    """The reach question's short hinted try alone (solver/fleet/solve.py): the own plans as
    the hint, the target posted, CP-SAT branching on the hint first."""
    fm = build_model(inst)
    _use_standalone(fm, OPTS)
    stage = stages(fm)[0]
    fm.m.add(stage.expr >= target if stage.maximize else stage.expr <= target)
    return _solve_reach(fm, OPTS, time.perf_counter(), REACH_HINT_WORK, hinted=True)


def test_a_yes_is_found_by_the_hinted_try(monkeypatch):
    """The conflict's shared optimum (22) is the own plans' union with b moved: the hinted try
    finds it, and reach_plan asks nothing more; at 21 (no plan) the try never says yes."""
    tight = _conflict((4, None))
    got, counts = _hinted_try(tight, 22)
    assert got is True and int((counts * tight.cost).sum()) <= 22
    assert _hinted_try(tight, 21)[0] is not True
    calls = []
    real = solve_module._solve_reach
    monkeypatch.setattr(solve_module, "_solve_reach", lambda *a, **k: calls.append(k.get("hinted", False)) or real(*a, **k))
    assert reach_plan(tight, 22, OPTS)[0] is True
    assert calls == [True]  # decided by the hinted try, nothing after it


def test_hinted_try_answers_equal_the_brute_force_on_generated_instances():
    """Around each generated instance's optimum, the hinted try, when it decides, gives the
    enumeration's answer; it decides some "yes" questions."""
    decided = {"yes": 0}

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=fleet_instances())
    def check(inst):
        ev = evaluate(inst, enumerate_counts(inst.ub))
        if not ev["ok"].any() or inst.objective != "min_cost":
            return
        best = int(ev["cost"][ev["ok"]].min())
        for target in (best - 1, best, best + 1):
            got, counts = _hinted_try(inst, target)
            assert got is None or got is _truth(inst, target)
            if got:
                decided["yes"] += 1
                row = evaluate(inst, np.asarray(counts)[None, :])
                assert bool(row["ok"][0]) and int(row["cost"][0]) <= target

    check()
    assert decided["yes"] > 5, decided

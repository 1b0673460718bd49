"""The repaired hint (solver/fleet/repair.py): `fits` restates the shared limits, a repaired
union keeps within them and is a plan of the instance, and the shared fleet's optimum with the
repaired hint is the brute force's (the hint changes the search, never the answer)."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings

from solver.fleet.repair import fits, repaired
from solver.fleet.solve import solve
from solver.fleet.standalone import standalone
from tests.fleet.test_fleet_bruteforce import (
    OPTS,
    brute_force,
    check_against_brute_force,
    evaluate,
    fleet_instances,
    make_instance,
    spec,
    terms_of,
)

REPAIRING = dataclasses.replace(OPTS, repair_hint=True)


def test_fits_restates_supply_budget_and_power():
    inst = make_instance("min_cost", [0, 1], [0, 0], [0, 0], [2, 2], [5, 5], [3, 4], [1, 1], [4, 4],
                         [spec("a", 5, disaggregated=False), spec("b", 5, disaggregated=False)],
                         supply=(6,), budget=20, power_cap=5)
    assert fits(inst, np.array([1, 2]))  # 6 devices, cost 11, power 3
    assert not fits(inst, np.array([2, 2]))  # 8 devices > 6
    assert fits(inst, np.array([3, 0]))  # 6 devices, cost 9, power 3
    tight = make_instance("min_cost", [0], [0], [0], [1], [5], [7], [3], [4], [spec("a", 5, disaggregated=False)],
                          supply=(None,), budget=20, power_cap=8)
    assert fits(tight, np.array([2])) and not fits(tight, np.array([3]))  # cost 21 > 20, power 9 > 8


def test_repair_resolves_a_shared_supply_conflict():
    """Two services each cheapest on type 0 (supply 4): alone each takes 4 devices; together
    one must move to type 1. The repaired union fits and is the shared optimum."""
    inst = make_instance(
        "min_cost", [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 1], [4, 4, 4, 4], [10, 10, 10, 10],
        [10, 13, 10, 12], [1, 1, 1, 1], [1, 1, 1, 1],
        [spec("a", 10, disaggregated=False), spec("b", 10, disaggregated=False)], supply=(4, None))
    alone = standalone(inst, OPTS, 5.0)
    assert alone is not None and list(alone.counts) == [1, 0, 1, 0] and not fits(inst, alone.counts)
    got = repaired(inst, alone.counts, OPTS, 5.0)
    assert list(got) == [1, 0, 0, 1]  # b moves (costs 2 more; a would cost 3 more)
    assert bool(evaluate(inst, got[None, :])["ok"][0])
    bf, _ = check_against_brute_force(inst)
    assert bf is not None and int(got @ inst.cost) == int(bf["cost"])


def test_repaired_hints_fit_and_leave_the_optimum_unchanged():
    """On generated two-service instances: a repaired union that differs from the standalone
    union fits the shared limits and is a plan; CP-SAT (with it as the hint) equals brute force."""
    ran = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(inst=fleet_instances(objective="min_cost"))
    def check(inst):
        alone = standalone(inst, OPTS, 5.0)
        if alone is not None and alone.counts is not None:
            got = repaired(inst, alone.counts, OPTS, 5.0)
            if not np.array_equal(got, alone.counts):
                assert fits(inst, got)
                assert bool(evaluate(inst, got[None, :])["ok"][0])
                ran.append(inst)
        bf = brute_force(inst)
        sol = solve(inst, REPAIRING)
        assert (sol.status == "infeasible") == (bf is None)
        if bf is not None:  # the lexicographic optimum, with the repaired hint
            got = terms_of(inst, sol.counts)
            assert got["ok"] and [got["cost"], got["devices"], got["configs"]] == [
                bf["cost"], bf["devices"], bf["configs"]]

    check()
    print(f"\nrepaired hints: {len(ran)} of the generated instances needed one")

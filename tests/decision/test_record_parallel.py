"""The record's independent searches side by side (solver/decision/parallel.py) give the record
one after the other gives: the same intervals, probes and solves, in the same order, also when
the shared probe budget runs out part-way (the intervals past it searched again in order)."""

from __future__ import annotations

from solver.candidates.build import build_candidates
from solver.decision.parallel import run_all
from solver.decision.record import decide
from solver.decision.validity import validity
from solver.plan.planner import plan
from solver.problem.load import load_problem
from tests.support.cli import ROOT
from tests.support.default_plan import OPTS
from tests.support.default_plan import default_plan as _default


def test_run_all_keeps_the_order_of_the_tasks():
    import time

    def task(k):
        def run():
            time.sleep(0.02 * (3 - k))  # the first task ends last
            return k
        return run

    assert run_all([task(k) for k in range(3)], workers=2) == [0, 1, 2]
    assert run_all([task(k) for k in range(3)], workers=1) == [0, 1, 2]


def test_pool_results_keep_the_order_of_the_tasks_and_one_worker_runs_only_what_is_asked():
    from solver.decision.parallel import Pool

    ran = []

    def task(k):
        def run():
            ran.append(k)
            return 10 * k
        return run

    with Pool(2) as pool:
        assert pool.run([task(k) for k in range(4)], order=[3, 1, 0, 2]) == [0, 10, 20, 30]
    assert sorted(ran) == [0, 1, 2, 3]
    ran.clear()
    with Pool(1) as pool:
        unused = pool.submit(task(9))  # a part started early whose result is never asked for
        got = pool.start([task(k) for k in range(3)], order=[2, 0, 1])
        assert [g() for g in got] == [0, 10, 20] and ran == [0, 1, 2]
    assert 9 not in ran and unused is not None


def test_start_order_is_the_what_ifs_then_up_sides_then_down_sides():
    from solver.decision.record import _start_order

    # what-ifs, then (up, down) per interval: demand, price a, price b
    assert _start_order(7, demand=True) == [0, 3, 5, 1, 4, 6, 2]
    # max_throughput: no demand interval, prices a, b, c
    assert _start_order(7, demand=False) == [0, 1, 3, 5, 2, 4, 6]
    assert _start_order(1, demand=True) == [0]


def test_validity_side_by_side_equals_one_after_the_other():
    rp, cs, doc = _default()
    one = validity(rp, cs, doc, OPTS, seconds=600.0, workers=1)
    two = validity(rp, cs, doc, OPTS, seconds=600.0, workers=2)
    assert two.model_dump_json() == one.model_dump_json()
    assert not two.cut_short and two.demand.probes > 0 and all(i.probes > 0 for i in two.prices)


def test_a_budget_that_runs_out_part_way_is_shared_as_in_order():
    """12 solves are 6 probes: the demand interval takes them all (searched alone it needs
    more, see above), the prices after it get none, whichever runs first."""
    rp, cs, doc = _default()
    full = validity(rp, cs, doc, OPTS, seconds=600.0, workers=1)
    assert full.demand.probes > 6
    one = validity(rp, cs, doc, OPTS, max_solves=12, seconds=600.0, workers=1)
    two = validity(rp, cs, doc, OPTS, max_solves=12, seconds=600.0, workers=2)
    assert two.model_dump_json() == one.model_dump_json()
    assert two.demand.probes == 6 and [i.probes for i in two.prices] == [0, 0]
    assert all(i.low_not_computed and i.high_not_computed for i in two.prices)


def test_whole_record_side_by_side_equals_one_after_the_other():
    rp, _, _ = _default()
    one = decide(rp, OPTS, timings=False, record_seconds=600.0, workers=1)
    two = decide(rp, OPTS, timings=False, record_seconds=600.0, workers=2)
    assert two.model_dump_json() == one.model_dump_json()
    assert two.decision.runners_up and two.decision.fallback is not None


def test_comparison_beside_the_record_is_the_plans_own():
    """`with_comparison` on a plan made without the homogeneous comparison gives what
    plan(compare=True) gives (hetero-prefill-decode: its KV routes cross device types)."""
    from solver.plan.planner import with_comparison

    rp = load_problem(ROOT / "problems" / "hetero-prefill-decode.yaml")
    cs = build_candidates(rp)
    whole = plan(rp, OPTS, timings=False, candidates=cs)
    bare = plan(rp, OPTS, timings=False, candidates=cs, compare=False)
    assert whole.heterogeneity is not None and bare.heterogeneity is None
    assert with_comparison(rp, cs, bare, OPTS).model_dump_json() == whole.model_dump_json()


def test_comparison_started_before_the_plan_is_the_plans_own():
    """The record starts the homogeneous solve beside the plan's own (it does not depend on the
    plan): handed to `with_comparison`, that solve gives the same document and is not solved
    again; a problem whose KV caches cannot cross types starts none."""
    from solver.plan import homogeneous as hom
    from solver.plan.planner import with_comparison

    rp = load_problem(ROOT / "problems" / "hetero-prefill-decode.yaml")
    cs = build_candidates(rp)
    assert hom.may_cross_types(rp, cs)
    solved = hom.solve_homogeneous(rp, cs, OPTS)
    calls = []
    bare = plan(rp, OPTS, timings=False, candidates=cs, compare=False)
    got = with_comparison(rp, cs, bare, OPTS, lambda: calls.append(1) or solved)
    assert calls == [1]
    assert got.model_dump_json() == plan(rp, OPTS, timings=False, candidates=cs).model_dump_json()
    same_type = load_problem(ROOT / "problems" / "llama3-70b-offline.yaml")
    assert not hom.may_cross_types(same_type, build_candidates(same_type))

"""The validity search: its exact regret test, the step-out-and-bisect search on a known answer,
its work budget, and the wall-clock safety net, which never changes a number silently.

The intervals themselves are checked by re-planning at their ends in test_decision.py.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

from solver.candidates.build import build_candidates
from solver.decision.probe import REGRET, Prober, SearchBudget, regret_target
from solver.decision.validity import MAX_SOLVES, REL_TOL, _edge, validity
from solver.fleet.solve import reach_plan
from solver.plan.planner import plan
from solver.problem.load import load_problem
from solver.report.decision_views import _interval
from solver.schema.decision import Interval
from tests.support.cli import ROOT
from tests.support.default_plan import OPTS
from tests.support.default_plan import default_plan as _default


def test_regret_target_by_hand():
    assert REGRET == Fraction(2, 100)
    # min_cost: kept 102 is within 2% of 100 (102 <= 100 * 1.02), not of 99
    assert regret_target("min_cost", 102) == 99
    assert regret_target("min_cost", 103) == 100  # 103 / 1.02 = 100.98: 100 beats it by more
    assert regret_target("min_cost", 100) == 98  # 100 / 1.02 = 98.04
    # max_throughput: kept 98 is within 2% of 100 (98 >= 100 * 0.98), not of 101
    assert regret_target("max_throughput", 98) == 101
    assert regret_target("max_throughput", 99) == 102  # 99 / 0.98 = 101.02


def test_edge_steps_out_then_bisects_to_the_resolution():
    """The plan holds up to 1.37: steps 1.1, 1.25 hold, 1.5 does not, then geometric midpoints
    until the two ends are within REL_TOL."""
    asked = []

    def ask(f):
        asked.append(f)
        return f < 1.37

    lo, hi, limit, none = _edge(ask, (1.1, 1.25, 1.5, 2.0))
    m1 = math.sqrt(1.25 * 1.5)  # 1.3693: holds
    m2 = math.sqrt(m1 * 1.5)  # 1.4332: fails
    m3 = math.sqrt(m1 * m2)  # 1.4009: fails
    m4 = math.sqrt(m1 * m3)  # 1.3850: fails, and 1.3850 - 1.3693 < 2% of 1.3693
    assert asked == [1.1, 1.25, 1.5, m1, m2, m3, m4]
    assert (lo, hi, limit, none) == (m1, m4, False, False)
    assert hi - lo <= REL_TOL * lo < m3 - lo


def test_edge_that_never_changes_or_runs_out_is_a_search_limit():
    assert _edge(lambda f: True, (1.1, 1.25)) == (1.25, None, True, False)
    answers = iter([True, None])  # the budget runs out at the second step
    assert _edge(lambda f: next(answers), (1.1, 1.25, 1.5)) == (1.1, None, True, False)
    # the budget runs out before the first step: nothing was searched on this side
    assert _edge(lambda f: None, (1.1, 1.25)) == (1.0, None, True, True)


def test_budget_counts_probes_and_the_deadline_marks_it_cut():
    b = SearchBudget(2, 600.0)
    assert b.take() and b.take() and not b.take()
    assert b.used == 2 and not b.late() and not b.cut
    late = SearchBudget(5, -1.0)  # a deadline already passed
    assert late.take() and late.late() and late.cut and not late.take()



def test_search_does_not_depend_on_the_wall_clock_budget():
    """The same intervals with a 600-s and a 15-s safety net (the search is bounded by probes
    and CP-SAT's deterministic time, not by the clock), and the solves counted."""
    rp, cs, doc = _default()
    a = validity(rp, cs, doc, OPTS, MAX_SOLVES, 600.0)
    b = validity(rp, cs, doc, OPTS, MAX_SOLVES, 15.0)
    assert a == b and not a.cut_short
    intervals = [a.demand, *a.prices]
    assert not any(i.partial for i in intervals) and all(i.probes > 0 for i in intervals)
    ends = sum(i.below is not None for i in intervals) + sum(i.above is not None for i in intervals)
    assert a.solves == 2 * sum(i.probes for i in intervals) + ends


def test_safety_net_says_so_instead_of_changing_numbers():
    """A deadline that has passed: the first probe of each side of each interval is discarded
    (the sides are searched side by side, each under the same deadline:
    solver/decision/parallel.py), two per interval; every
    interval is partial, nothing beyond an end is claimed, and the record says the search was
    cut short."""
    rp, cs, doc = _default()
    v = validity(rp, cs, doc, OPTS, MAX_SOLVES, 0.0)
    assert v.cut_short
    for i in [v.demand, *v.prices]:
        assert i.partial and i.low == i.high == i.current
        assert i.low_is_search_limit and i.high_is_search_limit and i.below is None and i.above is None
        # nothing was answered on either side: not a zero-width interval ("x1 to x1")
        assert i.low_not_computed and i.high_not_computed
        assert "not computed (--record-seconds cut the search short" in _interval(i)
    assert v.demand.probes == 2 and [i.probes for i in v.prices] == [2, 2]
    assert _interval(v.demand) == ("demand (multiple of every service's qps): not computed "
                                   "(--record-seconds cut the search short before it; now x1)")


def test_a_small_budget_leaves_later_intervals_not_computed():
    rp, cs, doc = _default()
    v = validity(rp, cs, doc, OPTS, max_solves=4, seconds=600.0)  # two probes
    assert not v.cut_short and v.demand.probes == 2
    assert [i.probes for i in v.prices] == [0, 0]
    assert all(i.low == i.high == i.current for i in v.prices)


def test_a_side_nobody_searched_says_not_computed_and_why():
    # the record printed "$2.50 (searched no lower) to $2.50 (searched no higher)"
    i = Interval(quantity="price of h100-sxm", unit="USD/device-hour", current=2.5, low=2.5, high=3.12,
                 low_is_search_limit=True, high_is_search_limit=True, probes=3, low_not_computed=True)
    assert _interval(i) == ("price of h100-sxm: not computed below to $3.12 (searched no higher) (now $2.50; "
                            "the side not computed: the search's solve budget ran out before it)")
    both = i.model_copy(update={"high": 2.5, "high_not_computed": True})
    assert _interval(both) == ("price of h100-sxm: not computed (the search's solve budget ran out "
                               "before it; now $2.50)")
    searched = i.model_copy(update={"low_not_computed": False, "low": 2.0})
    assert _interval(searched) == ("price of h100-sxm: $2.00 (searched no lower) to $3.12 (searched no "
                                   "higher) (now $2.50)")


@cache
def _mixed_supply():
    """problems/mixed-supply.yaml resolved, its candidates and its plan (its price intervals
    take the known-plan shortcut five times; the default problem's, since the FP8 checkpoint
    formats, none)."""
    rp = load_problem(ROOT / "problems" / "mixed-supply.yaml")
    cs = build_candidates(rp)
    return rp, cs, plan(rp, OPTS, timings=False, candidates=cs)


def test_known_plan_shortcut_gives_the_full_re_solves_answers(monkeypatch):
    """Cross-check: every probe a known plan answered (solver/decision/probe.py `reaches`)
    re-solved with CP-SAT says the same, and the whole search with the shortcut off gives the
    same intervals."""
    rp, cs, doc = _mixed_supply()
    checked = []
    original = Prober.reaches

    def checking(self, inst, target, opts):
        before = self.shortcuts
        got = original(self, inst, target, opts)
        if self.shortcuts > before:
            assert got is True and reach_plan(inst, target, opts)[0] is True
            checked.append(target)
        return got

    monkeypatch.setattr(Prober, "reaches", checking)
    with_shortcut = validity(rp, cs, doc, OPTS, MAX_SOLVES, 600.0)
    monkeypatch.setattr(Prober, "reaches", lambda self, inst, target, opts: reach_plan(inst, target, opts)[0])
    without = validity(rp, cs, doc, OPTS, MAX_SOLVES, 600.0)
    # the same intervals; the plan each side becomes may be another optimum of the same cost
    # (a tie CP-SAT breaks either way: on the default problem just above the H200 price, 3 + 5
    # prefill instances of 4 and 8 devices or 1 + 6, 66 devices with the decode pool either way),
    # so only the devices it adds up to are compared
    assert _without_plans(with_shortcut) == _without_plans(without)
    for a, b in zip(with_shortcut.prices, without.prices):
        for side in ("below", "above"):
            assert _devices(getattr(a, side)) == _devices(getattr(b, side)), (side, a, b)
    assert checked, "mixed-supply's price intervals use the shortcut"


def _without_plans(v) -> dict:
    """A validity record with the descriptions of the neighbouring plans left out."""
    d = v.model_dump()
    for group in d.values():
        for i in group if isinstance(group, list) else []:
            if isinstance(i, dict):
                i.pop("below", None)
                i.pop("above", None)
    return d


def _devices(text: str | None) -> int | None:
    """The devices a neighbouring plan's description adds up to ('..., 12 devices; ...')."""
    if text is None:
        return None
    return sum(int(part.rsplit(",", 1)[1].split()[0]) for part in text.split("; ") if "devices" in part)

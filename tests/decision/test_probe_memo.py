"""The validity probes' memo (solver/decision/probe.py `ProbeMemo`): a probe posed again
is answered from it with the solves' answer and still counted, and the whole search with the
memo off gives the same record."""

from __future__ import annotations

from solver.decision.alternatives import only_configurations
from solver.decision.probe import ProbeMemo, Prober, SearchBudget
from solver.decision.validity import MAX_SOLVES, validity
from solver.fleet.standalone import Memo
from solver.problem.load import derive
from tests.support.default_plan import OPTS
from tests.support.default_plan import default_plan as _default


def test_a_probe_posed_again_is_answered_from_the_memo():
    rp, cs, doc = _default()
    kept = only_configurations(cs, doc, rp)
    memo = ProbeMemo()
    pr = Prober(rp, cs, kept, OPTS, SearchBudget(10, 600.0), memo)
    first = pr.holds(derive(rp, demand_scale=1.1))
    again = pr.holds(derive(rp, demand_scale=1.1))  # another object, the same problem
    assert pr.memo.hits == 1 and again is first and pr.budget.used == 2
    # a fresh prober without the memo solves it again: the same answer
    fresh = Prober(rp, cs, kept, OPTS, SearchBudget(10, 600.0))
    assert fresh.holds(derive(rp, demand_scale=1.1)) is first and fresh.memo.hits == 0


def test_the_search_with_the_memo_off_gives_the_same_record(monkeypatch):
    rp, cs, doc = _default()
    used = []
    original = ProbeMemo.answer

    def counting(self, key):
        got = original(self, key)
        used.append(got is not None)
        return got

    monkeypatch.setattr(ProbeMemo, "answer", counting)
    on = validity(rp, cs, doc, OPTS, MAX_SOLVES, 600.0)
    monkeypatch.setattr(ProbeMemo, "answer", lambda self, key: None)
    monkeypatch.setattr(Memo, "get", lambda self, key: None)
    off = validity(rp, cs, doc, OPTS, MAX_SOLVES, 600.0)
    assert on == off and not on.cut_short
    assert len(used) == sum(i.probes for i in [on.demand, *on.prices])  # every probe asked it


def test_the_plan_beyond_an_end_reuses_its_probes_own_plans(monkeypatch):
    """`Prober.best_plan` at a value a probe asked about solves no service alone again: the
    services' own plans there are the probe's (the same sub-instances and options), and the
    plan is the one a prober without that memo makes."""
    from solver.candidates.build import build_candidates
    from solver.plan.planner import plan
    from solver.problem.load import load_problem
    from tests.support.cli import ROOT

    rp = load_problem(ROOT / "problems" / "routing-skew.yaml")
    cs = build_candidates(rp)
    doc = plan(rp, OPTS, timings=False, candidates=cs)
    kept = only_configurations(cs, doc, rp)
    misses: list[bool] = []
    original = Memo.get

    def counting(self, key):
        got = original(self, key)
        misses.append(got is None)
        return got

    monkeypatch.setattr(Memo, "get", counting)
    variant = derive(rp, demand_scale=1.5)
    pr = Prober(rp, cs, kept, OPTS, SearchBudget(10, 600.0))
    assert pr.holds(variant) is not None
    asked = len(misses)
    assert asked >= len(rp.problem.services) and any(misses)  # the probe solved its own plans
    beyond = pr.best_plan(variant)
    assert len(misses) > asked and not any(misses[asked:])  # all found in the memo
    fresh = Prober(rp, cs, kept, OPTS, SearchBudget(10, 600.0)).best_plan(variant)
    assert beyond is not None and fresh is not None
    assert beyond.cost_per_hour == fresh.cost_per_hour and beyond.services == fresh.services


def test_the_plan_beyond_an_end_starts_from_the_cheapest_known_plan(monkeypatch):
    """`Prober.best_plan` hints the cheapest of the plans its probes found there that keep the
    instance's bounds and shared limits; one over a column's bound is left out, and with none
    left the plan starts as before (no hint)."""
    import numpy as np

    import solver.decision.probe as probe
    from solver.fleet.instance import build_instance
    from solver.fleet.solve import solve

    rp, cs, doc = _default()
    kept = only_configurations(cs, doc, rp)
    name = rp.hardware_names[0]
    variant = derive(rp, prices={name: rp.prices[0] * 1.3})
    pr = Prober(rp, cs, kept, OPTS, SearchBudget(10, 600.0))
    full, _ = pr._tables(variant)
    inst = build_instance(variant, full)
    best = solve(inst, OPTS).counts
    col = int(np.flatnonzero(best < inst.ub)[0])
    dearer = best.copy()
    dearer[col] += 1
    over = best.copy()
    over[col] = inst.ub[col] + 1
    hints = []
    real_plan = probe.plan
    monkeypatch.setattr(probe, "plan", lambda *a, hint=None, **k: hints.append(hint) or real_plan(*a, **k))
    pr.known[probe._plan_key(inst)] = [dearer, over, best]
    assert pr.best_plan(variant) is not None
    pr.known[probe._plan_key(inst)] = [over]
    assert pr.best_plan(variant) is not None
    assert np.array_equal(hints[0], best) and hints[1] is None

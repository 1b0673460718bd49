"""The decision record does not depend on the wall clock or on the threads' timing: every solve
of the record is bounded by CP-SAT deterministic time on one worker, and the wall clock is only
a safety net that the record reports when it fires (solver/decision/whatif.py, probe.py).

The old record planned its runners-up, fallback and choices under a 5-s wall clock alone (the
tie-breaks on what was left of it), and its validity probers shared the plans and answers they
found between threads: a three-services record differed between two runs."""

from __future__ import annotations

import math
import time

from ortools.sat.python import cp_model

from solver.decision.alternatives import only_configurations
from solver.decision.probe import ProbeMemo, Prober, SearchBudget
from solver.decision.record import decide
from solver.decision.whatif import WHAT_IF_LIMIT_S, what_if_options
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from tests.support.default_plan import default_plan as _default

# a plan limit above the what-if safety net, so that the net is WHAT_IF_LIMIT_S itself
OPTS = SolveOptions(time_limit_s=120.0)


def _record(monkeypatch, rate: float) -> str:
    """The default problem's whole record (no replay) with Python's clock running `rate` times
    as fast as the real one (CP-SAT keeps its own clock)."""
    real = time.perf_counter
    start = real()
    monkeypatch.setattr(time, "perf_counter", lambda: start + rate * (real() - start))
    try:
        rp, _, _ = _default()
        return decide(rp, OPTS, timings=False, replay=False, record_seconds=600.0, workers=2).model_dump_json()
    finally:
        monkeypatch.setattr(time, "perf_counter", real)


def test_the_record_is_the_same_under_a_fast_or_slow_clock(monkeypatch):
    """4x fast: the old 5-s what-if limit was 1.25 s of real time and its tie-breaks got what
    was left; now only the nets move (60 s -> 15 s, 600 s -> 150 s of real time), far above
    what the default problem needs, so the record is byte for byte the same."""
    normal = _record(monkeypatch, 1.0)
    assert _record(monkeypatch, 4.0) == normal
    assert _record(monkeypatch, 0.25) == normal
    assert '"what_ifs_cut_short"' not in normal and '"cut_short":false' in normal


def test_every_solve_of_the_record_is_bounded_by_deterministic_time(monkeypatch):
    """Only the main plan's own solves (its primary stage under --time-limit, as the user
    asked) may run without a deterministic limit; every other solve of the record has one and
    runs on one worker."""
    log: list[tuple[float, int]] = []
    original = cp_model.CpSolver.solve

    def solve(self, model, *args, **kwargs):
        log.append((self.parameters.max_deterministic_time, self.parameters.num_workers))
        return original(self, model, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "solve", solve)
    rp, cs, _ = _default()
    plan(rp, OPTS, timings=False, candidates=cs, compare=False)
    main = sum(math.isinf(work) for work, _ in log)
    assert main >= 1  # the main plan's primary stage
    log.clear()
    decide(rp, OPTS, timings=False, replay=False, record_seconds=600.0, workers=1)
    unbounded = sum(math.isinf(work) for work, _ in log)
    assert unbounded == main, f"{unbounded - main} record solves without a deterministic limit"
    assert len(log) > 50 and {w for _, w in log} == {1}


def test_what_if_options_put_the_wall_clock_behind_the_work():
    o = what_if_options(SolveOptions(time_limit_s=600.0, workers=4))
    assert o.workers == 1 and o.primary_work is not None and o.tiebreak_work is not None
    assert o.time_limit_s == WHAT_IF_LIMIT_S
    assert what_if_options(SolveOptions(time_limit_s=5.0)).time_limit_s == 5.0


def test_probers_share_only_the_proven_own_plans():
    """Known plans and answered probes decide questions a solve under PROBE_WORK may leave
    undecided, so each side of an interval keeps its own; the proven own plans are the same
    whoever solved them."""
    rp, cs, doc = _default()
    kept = only_configurations(cs, doc, rp)
    memo = ProbeMemo()
    a = Prober(rp, cs, kept, OPTS, SearchBudget(4, 600.0), memo)
    b = Prober(rp, cs, kept, OPTS, SearchBudget(4, 600.0), memo)
    assert a.memo.alone is b.memo.alone is memo.alone
    assert a.known is not b.known and a.memo is not b.memo

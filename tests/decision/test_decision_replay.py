"""The decision record's replay: the winning fleet replayed, analytic vs simulated percentiles,
and the planner's derating and re-solving where the replay misses a bound the analytic table met.

The derating tests replay with a stand-in (`_Optimistic`): a pool of the target configuration
misses its TPOT p50 bound by 20% while its per-instance capacity is above 85% of the analytic
one (an analytic capacity that is optimistic by ~15%), and every other percentile is the
analytic prediction, so each round's outcome is known by hand.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from solver.candidates.build import build_candidates
from solver.candidates.derate import config_rows, derate
from solver.decision.bands import plan_uncertainty
from solver.decision.replayed import FACTOR_MAX, FACTOR_MIN, REPLAY_REQUESTS, REPLAY_SEED, factor_of, replay_and_correct
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.problem.load import parse_problem
from solver.report.decision_views import decision_paragraph
from solver.report.plan_views import to_markdown, to_table
from solver.schema.decision import DecisionRecord, Shortfall
from solver.schema.roles import COLOCATED
from tests.decision.test_decision import decided
from tests.support.cli import EXACT_RECORD, cli
from tests.support.questions_problem import small_problem

OPTS = SolveOptions(time_limit_s=10.0)


def test_the_record_carries_the_replay_of_the_winning_fleet():
    rp, doc = decided()
    r = doc.decision.replay
    assert (r.requests_per_service, r.seed, r.arrival) == (REPLAY_REQUESTS, REPLAY_SEED, "poisson")
    assert r.rounds == 1 and r.deratings == [] and r.shortfalls == []  # the default plan holds in the replay
    assert r.analytic_cost_per_hour == doc.cost_per_hour
    pools = [p for s in doc.services for p in s.pools]
    assert [(p.role, p.hardware, p.tp, p.pp, p.batch, p.instances) for p in r.pools] == \
        [(p.role, p.hardware, p.tp, p.pp, p.batch, p.instances) for p in pools]
    slo = doc.services[0].slo
    for rp_, p in zip(r.pools, pools):
        by = {x.metric: x for x in rp_.latencies}
        want = {"prefill": {"ttft_p50_ms", "ttft_p99_ms"}, "decode": {"tpot_p50_ms", "tpot_p99_ms"}}[p.role]
        assert set(by) == want
        for m, x in by.items():
            assert x.bound_ms == getattr(slo, m)
            assert x.predicted_ms == {"ttft_p50_ms": p.predicted.ttft_ms, "ttft_p99_ms": p.predicted.ttft_p99_ms,
                                      "tpot_p50_ms": p.predicted.tpot_ms, "tpot_p99_ms": p.predicted.tpot_p99_ms}[m]
            assert 0 < x.simulated_ms <= x.bound_ms  # no shortfall recorded: every bound holds
        q = [by[m].simulated_ms for m in sorted(by)]  # p50, p99
        assert q[1] >= q[0]
        assert 0 < rp_.throughput_qps <= rp_.planned_capacity_qps
    s = r.services[0]
    assert s.demand_qps == 200 and s.meets_slo and s.goodput_share == 1.0
    assert s.steady_qps == pytest.approx(200, rel=0.1)  # it serves what it is offered
    assert sum(p.throughput_qps for p in r.pools if p.role == "prefill") == pytest.approx(s.throughput_qps, rel=1e-3)
    text = to_table(doc)
    assert "replay:\n  - 3,000 requests per service, poisson arrivals" in text
    assert "the replay meets every bound the analytic table met; no derating" in text
    assert "## Replay" in to_markdown(doc)


def test_no_replay_leaves_the_record_as_before(tmp_path):
    rp, doc = decided(record_seconds=600.0)  # the validity search's budget never binds, as with EXACT_RECORD
    out = tmp_path / "plan.json"
    r = cli("plan", "llama3-70b-online", "--no-timings", "--no-replay", "--time-limit", "30", "--format", "json",
            "--out", str(out), *EXACT_RECORD)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert "replay" not in data["decision"] and data["decision"]["input_sha256"] == doc.decision.input_sha256
    # the same document as the replayed one less its replay section (the plan holds in the replay)
    want = json.loads(doc.model_copy(update={"decision": doc.decision.model_copy(update={"replay": None})})
                      .model_dump_json())
    assert data == want


def test_factor_is_bound_over_simulated_clipped():
    def miss(sim, bound=30.0):
        return Shortfall(service="s", pool="p", metric="tpot_p50_ms", bound_ms=bound, predicted_ms=25.0,
                         simulated_ms=sim, shortfall_pct=(sim - bound) / bound * 100)
    assert factor_of([miss(36.0)]) == pytest.approx(30 / 36)
    assert factor_of([miss(36.0), miss(40.0)]) == pytest.approx(0.75)  # the worst miss decides
    assert factor_of([miss(30.5)]) == FACTOR_MAX  # at least 5% per round
    assert factor_of([miss(300.0)]) == FACTOR_MIN  # at most half


def test_derate_scales_capacity_of_the_rows_only():
    rp = parse_problem(small_problem(100), "<small>")
    cs = build_candidates(rp)
    t = cs.table
    r0 = config_rows(t, 0, COLOCATED, int(t.hw[0]), int(t.tp[0]), int(t.pp[0]), int(t.ep[0]), int(t.dp[0]),
                     int(t.batch[0]), int(t.chunk[0]))
    assert list(r0) == [0]
    f = np.ones(len(t))
    f[0] = 0.5
    d = derate(cs, f).table
    assert d.capacity_qps[0] == pytest.approx(t.capacity_qps[0] * 0.5)
    assert np.array_equal(d.capacity_qps[1:], t.capacity_qps[1:]) and np.array_equal(d.cost_per_hour, t.cost_per_hour)
    with pytest.raises(ValueError):
        derate(cs, np.full(len(t), 1.5))


class _Optimistic:
    """Stand-in replayer: the target configuration's pools miss TPOT p50 by 20% while their
    per-instance capacity exceeds 85% of `analytic_qps` (always, with `always`)."""

    def __init__(self, hardware: str, analytic_qps: float, always: bool = False) -> None:
        self.hardware, self.analytic_qps, self.always, self.calls = hardware, analytic_qps, always, 0

    def _rep(self, p, slo):
        tpot = p.predicted.tpot_ms
        if p.hardware == self.hardware and (self.always or p.capacity_qps_per_instance > 0.85 * self.analytic_qps):
            tpot = slo.tpot_p50_ms * 1.2
        lat = SimpleNamespace(p50_ms=tpot, p99_ms=tpot)
        return SimpleNamespace(ttft=SimpleNamespace(p50_ms=p.predicted.ttft_ms, p99_ms=p.predicted.ttft_ms),
                               tpot=lat, throughput_rps=p.capacity_qps, goodput_share=1.0)

    def __call__(self, rp, doc):
        self.calls += 1
        services = []
        for s in doc.services:
            pools = [SimpleNamespace(replay=self._rep(p, s.slo), steady_qps=s.demand_qps) for p in s.pools]
            services.append(SimpleNamespace(replay=pools[0].replay, meets_slo=True, steady_qps=s.demand_qps,
                                            pools=pools))
        return SimpleNamespace(services=services)


# H200 at $5/h keeps the plan one H100 pool: an 8B tp1 batch-32 H100 instance serves 19.4 QPS, and
# at the shared problem's $3.5/h a 3 H100 + 2 H200 fleet ($14.50/h) would beat 6 H100 ($15/h)
H200_PRICE = 5.0


def _small():
    rp = parse_problem(small_problem(100, h200_price=H200_PRICE), "<small>")
    cs = build_candidates(rp)
    doc = plan(rp, OPTS, timings=False, candidates=cs)
    return rp, cs, doc


def test_a_replayed_shortfall_derates_and_re_solves_at_a_higher_cost():
    rp, cs, doc = _small()
    (pool,) = doc.services[0].pools
    fake = _Optimistic(pool.hardware, pool.capacity_qps_per_instance)
    cs2, doc2, r = replay_and_correct(rp, cs, doc, OPTS, False, fake)
    # round 1 misses TPOT p50 40 -> 48 ms: factor 40 / 48; the re-solved plan's pools of that
    # configuration run at 83% of the analytic capacity, under the 85% the stand-in misses above
    assert r.rounds == 2 and fake.calls == 2 and r.shortfalls == []
    (d,) = r.deratings
    assert d.round == 1 and d.factor == pytest.approx(40 / 48, abs=1e-6) and d.cumulative_factor == d.factor
    assert d.cost_before_per_hour == doc.cost_per_hour == r.analytic_cost_per_hour
    assert d.cost_after_per_hour == doc2.cost_per_hour > doc.cost_per_hour
    rows = np.flatnonzero(cs.table.hw == rp.hardware_names.index(pool.hardware))
    assert cs2.table.capacity_qps[rows] == pytest.approx(cs.table.capacity_qps[rows] * 40 / 48)
    assert "1 re-solve after derating; the final plan meets every bound" in r.note
    lines = to_table(doc2.model_copy(update={"decision": _record(rp, doc2, r)}))
    assert f"round 1: derated chat colocated {pool.hardware}" in lines and "capacity x0.833" in lines


def test_rounds_are_bounded_and_factors_compound():
    rp, cs, doc = _small()
    (pool,) = doc.services[0].pools
    fake = _Optimistic(pool.hardware, pool.capacity_qps_per_instance, always=True)
    _, doc2, r = replay_and_correct(rp, cs, doc, OPTS, False, fake, max_resolves=2)
    # h100 (one device per instance, $2.50/h) stays cheaper than h200 through both deratings
    # (capacity x5/6, then x25/36 in all): the final plan still misses, after the 2 re-solves allowed
    assert fake.calls == r.rounds == 3 and r.max_rounds == 3 and len(r.shortfalls) == 1
    assert [d.round for d in r.deratings] == [1, 2]
    assert [d.cumulative_factor for d in r.deratings] == pytest.approx([40 / 48, (40 / 48) ** 2], abs=1e-5)
    assert doc2.services[0].pools[0].hardware == pool.hardware
    costs = [d.cost_before_per_hour for d in r.deratings] + [r.deratings[-1].cost_after_per_hour]
    assert costs[0] == doc.cost_per_hour and costs[-1] == doc2.cost_per_hour
    assert costs == sorted(costs) and costs[-1] > costs[0]  # derating never cheapens
    assert "2 re-solves after derating (the most allowed); the final plan still misses 1 bound(s)" in r.note
    text = decision_paragraph(doc2.model_copy(update={"decision": _record(rp, doc2, r)}))  # names the worst miss
    assert "the replay misses 1 bound the analytic model meets, worst TPOT p50 of chat colocated" in text
    assert "(48 ms simulated vs 40 ms, +20.0%)" in text


def _record(rp, doc, r):
    """A record of `doc` with its bands and the replay section `r`, nothing else (to render it)."""
    return DecisionRecord(uncertainty=plan_uncertainty(rp, doc), runners_up=[], fallback=None,
                          validity=None, input_sha256="0" * 64, fleetplan_version="test", replay=r)


def test_an_infeasible_re_solve_keeps_the_last_feasible_plan():
    # 6 x h100 at $2.50/h = $15/h fits a $16/h budget; derated by 5/6 it needs 7 ($17.50/h): none fits
    rp = parse_problem(small_problem(100, budget=16.0, h200_price=H200_PRICE), "<tight>")
    cs = build_candidates(rp)
    doc = plan(rp, OPTS, timings=False, candidates=cs)
    assert doc.cost_per_hour == 15.0
    (pool,) = doc.services[0].pools
    fake = _Optimistic(pool.hardware, pool.capacity_qps_per_instance)
    cs2, doc2, r = replay_and_correct(rp, cs, doc, OPTS, False, fake)
    assert doc2 is doc and cs2 is cs and r.rounds == 1 and len(r.shortfalls) == 1
    (d,) = r.deratings
    assert d.cost_before_per_hour == 15.0 and d.cost_after_per_hour is None
    assert "the last derated problem is infeasible, the last feasible plan is kept" in r.note

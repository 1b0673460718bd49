"""The decision record: bands and SLO checks, runners-up, fallback, validity intervals.

Each part is checked against an independent re-computation: bands by hand from the
calibration, runners-up and the fallback against the properties that define them (excluding
candidates never lowers the optimum, the excluded structure is absent, the fallback meets every
bound at the band's edge), validity intervals by re-solving at their ends.
"""

from __future__ import annotations

import datetime as dt
import json
from functools import cache

import pytest

from solver.candidates.build import build_candidates, reprice
from solver.decision.alternatives import _winner_rows, only_configurations, without
from solver.decision.bands import error_band
from solver.decision.probe import REGRET
from solver.decision.record import decide, input_sha256
from solver.decision.validity import remeasure
from solver.fleet.solve import SolveOptions
from solver.plan.assumptions import REMEASURE_AFTER_DAYS, assumptions, families_drawn
from solver.plan.planner import plan
from solver.problem.load import derive, load_problem
from tests.support.cli import EXACT_RECORD, ROOT, cli, cli_shared, plan_json

OPTS = SolveOptions(time_limit_s=30.0)
DEFAULT = ROOT / "problems" / "llama3-70b-online.yaml"


@cache
def decided(name: str = "llama3-70b-online", **kw):
    rp = load_problem(ROOT / "problems" / f"{name}.yaml")
    return rp, decide(rp, OPTS, timings=False, **kw)


def test_bands_and_checks_by_hand():
    rp, doc = decided()
    slo = rp.problem.services[0].slo
    for band, svc_pools in zip(doc.decision.uncertainty.pools, [p for s in doc.services for p in s.pools]):
        # the model card's own rows on that hardware (llama-3.1-70b: 45 on h100-sxm, 60 on h200-sxm)
        want = error_band("vllm", svc_pools.hardware, moe=False, model="llama-3.1-70b")
        assert "llama-3.1-70b rows" in band.band_source
        assert (band.band_ttft_pct, band.band_tpot_pct) == (want.ttft_pct, want.tpot_pct)
        assert band.role == svc_pools.role and band.hardware == svc_pools.hardware
        for c in band.checks:
            pct = band.band_ttft_pct if c.metric.startswith("ttft") else band.band_tpot_pct
            assert c.upper_edge_ms == pytest.approx(c.predicted_ms * (1 + pct / 100), abs=1e-3)  # 4 decimals
            assert c.holds_at_upper_edge == (c.upper_edge_ms <= c.bound_ms)
            assert c.margin_pct == pytest.approx((c.bound_ms - c.predicted_ms) / c.bound_ms * 100, abs=1e-3)
        bounds = {c.metric: c.bound_ms for c in band.checks}
        if band.role == "prefill":
            assert bounds == {"ttft_p50_ms": slo.ttft_ms.p50, "ttft_p99_ms": slo.ttft_ms.p99}
        if band.role == "decode":
            assert bounds == {"tpot_p50_ms": slo.tpot_ms.p50, "tpot_p99_ms": slo.tpot_ms.p99}
    failing = sum(not c.holds_at_upper_edge for b in doc.decision.uncertainty.pools for c in b.checks)
    assert len(doc.decision.uncertainty.central_only) == failing


def test_runners_up_exclude_the_winners_structure_and_never_beat_it():
    rp, doc = decided()
    kinds = [a.kind for a in doc.decision.runners_up]
    assert kinds == ["device_type", "device_type", "runtime", "parallelism"]
    for a in doc.decision.runners_up:
        assert a.status != "infeasible"
        assert a.cost_per_hour >= doc.cost_per_hour - 1e-9  # fewer candidates, never cheaper
        assert a.delta_cost_per_hour == pytest.approx(a.cost_per_hour - doc.cost_per_hour, abs=1e-6)
    dev = [a for a in doc.decision.runners_up if a.kind == "device_type"]
    for a, hw in zip(dev, sorted(doc.devices_by_type, key=lambda k: -doc.devices_by_type[k])):
        assert hw not in a.devices_by_type
    (rt,) = [a for a in doc.decision.runners_up if a.kind == "runtime"]
    assert doc.services[0].runtime == "disaggregated" and "colocated" in rt.summary
    assert "prefill" not in rt.summary
    (par,) = [a for a in doc.decision.runners_up if a.kind == "parallelism"]
    cs = build_candidates(rp)
    alt = plan(rp, OPTS, timings=False, candidates=without(cs, _winner_rows(cs, doc, rp), "test"))

    def configs(d):
        return {(p.role, p.hardware, p.tp, p.pp, p.ep, p.dp, p.batch) for s in d.services for p in s.pools}

    assert not configs(doc) & configs(alt)  # none of the winner's configurations appears again
    assert alt.cost_per_hour == par.cost_per_hour
    rows = only_configurations(cs, doc, rp).table
    assert len(rows) == len(configs(doc))


def test_an_emptied_role_is_named_by_its_service():
    """A runner-up whose exclusion leaves a role without candidates says so with the service's
    name, not its index ("service 0"), issue 18."""
    import numpy as np

    rp, _ = decided()
    cs = build_candidates(rp)
    out = without(cs, np.ones(len(cs.table), dtype=bool), "no candidate at all",
                  [s.name for s in rp.problem.services])
    why = [m for ms in out.misses.values() for m in ms]
    assert why and all("of service 'chat' excluded: no candidate at all" in m for m in why), why
    doc = plan(rp, OPTS, timings=False, candidates=out)
    assert doc.status == "infeasible" and "service 0" not in " ".join(doc.infeasible_because)
    assert any("'chat'" in x for x in doc.infeasible_because), doc.infeasible_because


def test_fallback_is_homogeneous_and_meets_every_bound_at_the_band_edge():
    rp, doc = decided()
    f = doc.decision.fallback
    assert f.status == "optimal"
    assert set(f.devices_by_type) == {f.hardware}
    roles = [p.role for p in f.pools]
    assert len(roles) == len(set(roles))  # one configuration per role
    band = error_band("vllm", f.hardware, moe=False, model="llama-3.1-70b")
    assert f.safety_margin == pytest.approx(max(band.ttft_pct, band.tpot_pct) / 100, abs=1e-4)
    slo = rp.problem.services[0].slo
    edge = 1 + 1e-6  # the planner fills a prefill pool up to its bound; documents round to 4 decimals
    for p in f.pools:
        if p.predicted.ttft_ms is not None:
            assert p.predicted.ttft_ms * (1 + band.ttft_pct / 100) <= slo.ttft_ms.p50 * edge
            assert p.predicted.ttft_p99_ms * (1 + band.ttft_pct / 100) <= slo.ttft_ms.p99 * edge
        if p.predicted.tpot_ms is not None:
            assert p.predicted.tpot_ms * (1 + band.tpot_pct / 100) <= slo.tpot_ms.p50 * edge
    assert f.cost_per_hour >= doc.cost_per_hour


def _still_optimal(objective: str, mine, best) -> bool:
    """The definition on the two plans' documents (independent of solver/decision/probe.py,
    which decides it in the fleet model's integers without planning either in full)."""
    if mine.status == "infeasible" or best.status == "infeasible":
        return mine.status == best.status == "infeasible"
    if objective == "max_throughput":
        return mine.throughput_scale >= best.throughput_scale * (1 - float(REGRET))
    return mine.cost_per_hour <= best.cost_per_hour * (1 + float(REGRET)) + 1e-9


def _regret_ok(rp, doc, variant):
    cs = build_candidates(rp)
    full = reprice(cs, variant.prices)
    kept = reprice(only_configurations(cs, doc, rp), variant.prices)
    best = plan(variant, OPTS, timings=False, candidates=full)
    mine = plan(variant, OPTS, timings=False, candidates=kept)
    return _still_optimal(rp.problem.objective, mine, best), mine, best


def test_validity_intervals_hold_at_their_ends():
    rp, doc = decided()
    v = doc.decision.validity
    assert v.demand.low <= 1.0 <= v.demand.high
    for scale in (v.demand.low, v.demand.high):
        ok, mine, best = _regret_ok(rp, doc, derive(rp, demand_scale=scale))
        assert ok and mine.cost_per_hour <= best.cost_per_hour * (1 + float(REGRET)) + 1e-9
    for i in v.prices:
        name = i.quantity.removeprefix("price of ")
        assert i.low <= i.current <= i.high
        for price in (i.low, i.high):
            ok, _, _ = _regret_ok(rp, doc, derive(rp, prices={name: price}))
            assert ok, (name, price)
        if not i.high_is_search_limit:
            assert i.above  # what it becomes


def test_remeasure_dates():
    rp, doc = decided()
    a = doc.assumptions
    cal_due = dt.date.fromisoformat(a.calibration.fitted_at) + dt.timedelta(days=REMEASURE_AFTER_DAYS)
    items = {m.what: m for m in doc.decision.validity.remeasure}
    assert items["vllm calibration (end-to-end benchmarks)"].by == cal_due.isoformat()
    for p in a.profiles:
        m = items[f"{p.hardware} operator tables ({p.framework} {p.framework_version})"]
        dated = p.collected_on or p.source_released_on
        assert m.by == "now" if (p.stale or dated is None) else m.by <= (
            dt.date.fromisoformat(dated) + dt.timedelta(days=REMEASURE_AFTER_DAYS)).isoformat()


def test_shipped_tables_are_dated_by_their_source_release():
    """The shipped tables carry no collection date; they were collected no later than the release
    of aiconfigurator-core 0.12.0 (2026-09-18), and are aged from it (issue 18): on 2026-12-01 they
    are 74 days old, not stale, due 180 days after the release."""
    rp, doc = decided()
    a = assumptions(rp, families_drawn(rp, doc.services), today=dt.date(2026, 12, 1))
    assert a.profiles
    for p in a.profiles:
        assert p.collected_on is None and p.source_released_on == "2026-09-18"
        assert p.age_days == 74 and not p.stale
    items = remeasure(doc.model_copy(update={"assumptions": a}))
    tables = [m for m in items if "operator tables" in m.what]
    assert tables and all(m.by == "2027-03-17" for m in tables), tables
    assert all("no later than 2026-09-18" in m.why for m in tables)
    late = assumptions(rp, families_drawn(rp, doc.services), today=dt.date(2027, 3, 18))
    assert all(p.stale and p.age_days == 181 for p in late.profiles)


def test_input_hash_is_the_files():
    import hashlib
    rp, doc = decided()
    assert doc.decision.input_sha256 == hashlib.sha256(DEFAULT.read_bytes()).hexdigest() == input_sha256(rp)


def test_max_throughput_runners_up_report_throughput():
    rp, doc = decided("budget-max-throughput")
    assert doc.decision.validity.demand is None  # demand is the objective there
    for a in doc.decision.runners_up:
        if a.status != "infeasible":
            assert a.throughput_scale <= doc.throughput_scale + 1e-9
            assert a.delta_throughput_pct is not None


def test_cli_carries_the_record_unless_told_not_to():
    a = plan_json(DEFAULT, exact=True)  # shared with test_plan_cli: one run per test process
    b = cli("plan", str(DEFAULT), "--format", "json", "--no-timings", *EXACT_RECORD)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout  # the record is deterministic too
    doc = json.loads(a.stdout)
    assert doc["decision"]["fallback"]["hardware"] == "h100-sxm"
    bare = json.loads(cli("plan", str(DEFAULT), "--format", "json", "--no-timings", "--no-record").stdout)
    assert bare["decision"] is None
    assert {k: v for k, v in doc.items() if k != "decision"} == {k: v for k, v in bare.items() if k != "decision"}
    table = cli_shared("plan", str(DEFAULT), "--no-timings", *EXACT_RECORD).stdout  # shared with test_plan_cli
    for title in ("uncertainty:", "runners-up:", "fallback:", "valid while:"):
        assert title in table

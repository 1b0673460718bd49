"""`fleetplan validate MEASURED --plan RESULT.json`: measured against predicted per pool, with
hand-computed margins and bands (plan: tests/support/plan_doc.py; measurements:
tests/accuracy/data/bench/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.accuracy.bench_validate import validate_measured
from solver.decision.bands import error_band
from solver.errors import InputError
from tests.support.cli import cli
from tests.support.plan_doc import write_plan

DATA = Path(__file__).parent / "data" / "bench"
AIPERF, GUIDELLM, MLPERF = (DATA / "aiperf_profile_export_aiperf.json", DATA / "guidellm_benchmarks.json",
                            DATA / "mlperf_log_summary.txt")


def by_metric(pool):
    return {x.metric: x for x in pool.latencies}


def test_aiperf_against_pool_1(tmp_path):
    # aiperf: TTFT p50 118.0 / p99 190.25, TPOT p50 8.4 / p99 9.9 ms, 8 clients, 1024/128 tokens.
    # pool 1 (h100-sxm): predicted TTFT 110 / 200, TPOT 8.0 / 9.5; bands 15% / 10%;
    # SLO TTFT 300 / 600, TPOT 25 / 9.0.
    plan = write_plan(tmp_path / "plan.json")
    rep, _ = validate_measured(str(AIPERF), plan=plan, pool=1)
    [c] = rep.pools
    assert (c.pool, c.service, c.hardware, c.batch, c.matched_by) == (1, "chat", "h100-sxm", 8, "--pool 1")
    assert c.notes == []  # 8 clients = batch 8; 1024 / 128 tokens as planned
    m = by_metric(c)
    t50 = m["ttft_p50_ms"]
    assert (t50.measured_ms, t50.predicted_ms, t50.band_low_ms, t50.band_high_ms) == (118.0, 110.0, 93.5, 126.5)
    assert (t50.error_pct, t50.inside_band, t50.holds) == (7.273, True, True)  # 8 / 110
    assert (t50.margin_pct, t50.predicted_margin_pct) == (60.667, 63.333)  # 182 / 300, 190 / 300
    t99 = m["ttft_p99_ms"]
    assert (t99.band_low_ms, t99.band_high_ms, t99.error_pct, t99.margin_pct) == (170.0, 230.0, -4.875, 68.292)
    p50 = m["tpot_p50_ms"]
    assert (p50.band_low_ms, p50.band_high_ms, p50.error_pct, p50.margin_pct) == (7.2, 8.8, 5.0, 66.4)
    p99 = m["tpot_p99_ms"]  # 9.9 within 8.55-10.45, but above the 9.0 bound
    assert (p99.band_low_ms, p99.band_high_ms, p99.inside_band) == (8.55, 10.45, True)
    assert (p99.holds, p99.margin_pct, p99.predicted_margin_pct) == (False, -10.0, -5.556)
    assert (rep.bounds_hold, rep.inside_band) == (False, True)


def test_pools_are_matched_by_what_the_file_and_flags_say(tmp_path):
    plan = write_plan(tmp_path / "plan.json")
    with pytest.raises(InputError, match=r"pools 1, 2 of .*plan.json agree with the measurement \(model=llama-3.1-8b\);"
                       r" pass --pool N \(pools: 1: chat colocated h100-sxm tp1 pp1 ep1 dp1; 2: chat colocated h200"):
        validate_measured(str(AIPERF), plan=plan)
    rep, _ = validate_measured(str(AIPERF), flags={"hardware": "h200-sxm"}, plan=plan)
    assert [(c.pool, c.matched_by) for c in rep.pools] == [(2, "model and layout")]
    with pytest.raises(InputError, match=r"no pool of .* agree .*hardware=b200"):
        validate_measured(str(AIPERF), flags={"hardware": "b200"}, plan=plan)
    with pytest.raises(InputError, match=r"--pool: 3: the plan .* has pools 1 to 2"):
        validate_measured(str(AIPERF), plan=plan, pool=3)
    with pytest.raises(InputError, match=r"--pool needs --plan"):
        validate_measured(str(AIPERF), pool=1)


def test_a_guidellm_sweep_compares_every_benchmark(tmp_path):
    # guidellm's labels say h200-sxm tp1: pool 2 (predicted TTFT 90 / 180, TPOT 7.0 / 8.0)
    plan = write_plan(tmp_path / "plan.json")
    rep, _ = validate_measured(str(GUIDELLM), plan=plan)
    a, b = rep.pools
    assert (a.pool, a.where, a.measured_concurrency, b.where, b.measured_rate_qps) == (
        2, "benchmarks[0]", 4, "benchmarks[1]", 2.5)
    ta = by_metric(a)["ttft_p50_ms"]  # 80 in 76.5-103.5
    assert (ta.measured_ms, ta.band_low_ms, ta.band_high_ms, ta.inside_band) == (80.0, 76.5, 103.5, True)
    tb = by_metric(b)["ttft_p50_ms"]  # 66 below 76.5: faster than the band
    assert (tb.measured_ms, tb.inside_band, tb.error_pct) == (66.0, False, -26.667)
    assert a.notes == ["measured at 4 concurrent requests; the pool is planned for a batch of 8 per instance",
                       "mean input length 512 tokens; the plan's workload has 1024",
                       "mean output length 256 tokens; the plan's workload has 128"]
    assert b.notes[0] == "measured at 2.5 req/s; one instance is planned for 6 req/s"
    assert rep.inside_band is False


def test_without_a_decision_record_the_band_is_the_calibrations(tmp_path):
    plan = write_plan(tmp_path / "plan.json", decision=False)
    rep, _ = validate_measured(str(MLPERF), flags={"hardware": "h100-sxm"}, plan=plan)
    [c] = rep.pools
    band = error_band("vllm", "h100-sxm", moe=False)
    assert c.band_source == band.source + " (the plan carries no decision record)"
    m = by_metric(c)
    assert (m["ttft_p50_ms"].band_pct, m["tpot_p50_ms"].band_pct) == (band.ttft_pct, band.tpot_pct)
    assert (m["ttft_p50_ms"].measured_ms, m["tpot_p99_ms"].measured_ms) == (400.0, 80.0)
    assert m["ttft_p50_ms"].holds is False  # 400 > 300
    assert c.measured_input_tokens is None  # MLPerf records no lengths


def test_cli_table_and_json(tmp_path):
    plan = write_plan(tmp_path / "plan.json")
    r = cli("validate", str(AIPERF), "--plan", plan, "--pool", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].startswith("pool 1: service 'chat' colocated on h100-sxm tp1 pp1 ep1 dp1 batch 8 (--pool 1); "
                               "measured by aiperf (document): 8 concurrent, 1024 in / 128 out tokens")
    row = next(line for line in lines if line.startswith("tpot_p99_ms")).split()
    assert row == ["tpot_p99_ms", "9.90", "9.50", "8.55-10.45", "(±10%)", "yes", "9.00", "NO", "-10.0", "-5.56"]
    assert lines[-1] == "every measured latency within its bound: NO; inside the plan's error band: yes"
    j = cli("validate", str(AIPERF), "--plan", plan, "--pool", "1", "--format", "json")
    doc = json.loads(j.stdout)
    assert (doc["format"], doc["plan"], doc["bounds_hold"], doc["inside_band"]) == ("aiperf", "bench-test", False, True)
    assert [x["metric"] for x in doc["pools"][0]["latencies"]] == ["ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                                                    "tpot_p99_ms"]
    bad = cli("validate", str(AIPERF), "--plan", str(AIPERF))
    assert bad.returncode == 2 and "(not a fleetplan plan result)" in bad.stderr
    csv_out = cli("validate", str(AIPERF), "--plan", plan, "--pool", "1", "--format", "csv")
    assert csv_out.returncode == 2 and "--plan prints a table or json" in csv_out.stderr


def test_the_json_validates_against_the_published_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "schemas" / "plan-comparison.schema.json").read_text())
    rep, _ = validate_measured(str(GUIDELLM), plan=write_plan(tmp_path / "plan.json"))
    doc = rep.model_dump(mode="json")
    jsonschema.validate(doc, schema)
    doc["pools"][0]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)

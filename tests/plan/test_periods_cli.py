"""`fleetplan plan` on a problem with demand over time, end to end (the real command)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import cli

PROBLEM = """\
name: two-hours
services:
  - name: chat
    model: llama-3.1-8b
    precision: fp8
    workload: {input_tokens: 512, output_tokens: 64, max_context: 4096}
    demand_profile:
      points: [{time_s: 0, requests_per_s: 40}, {time_s: 1800, requests_per_s: 160},
               {time_s: 3600, requests_per_s: 40}, {time_s: 5400, requests_per_s: 40}]
    slo: {ttft_ms: 1000, tpot_ms: 50}
    runtime: colocated
hardware:
  - type: h100-sxm
    committed: {price_per_hour: 2.0}
    on_demand: {price_per_hour: 6.0}
periods: {length_h: 1}
"""


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    path = tmp_path_factory.mktemp("p") / "p.yaml"
    path.write_text(PROBLEM)
    r = cli("plan", str(path), "--format", "json", "--no-timings", "--time-limit", "30")
    assert r.returncode == 0, r.stderr
    return path, json.loads(r.stdout)


def test_periods_section_adds_up(planned):
    _, doc = planned
    pr = doc["periods"]
    assert pr["periods"] == 2 and pr["horizon_h"] == 2.0 and pr["status"] == "optimal"
    first, second = pr["fleet"]
    assert first["demand_qps"] == {"chat": 160.0} and second["demand_qps"] == {"chat": 40.0}
    assert first["mean_qps"] == {"chat": 100.0}  # half an hour at 40, half at 160
    # premium 3 > peak-to-mean of the usage: everything committed for the peak, nothing rented
    (h100,) = pr["committed"]
    assert h100["devices"] == h100["peak_devices"] == first["devices"] >= second["devices"]
    assert first["on_demand_devices"] == second["on_demand_devices"] == {"h100-sxm": 0}
    assert first["committed_cost_usd"] == pytest.approx(2.0 * h100["devices"])
    assert pr["cost_usd"] == pytest.approx(pr["committed_cost_usd"] + pr["on_demand_cost_usd"] + pr["start_cost_usd"])
    assert pr["cost_usd"] == pytest.approx(first["cost_usd"] + second["cost_usd"])
    assert pr["busiest_period"] == "p0"
    # the document's pools are the busiest period's, sized for its demand
    assert doc["services"][0]["demand_qps"] == 160.0
    assert doc["total_devices"] == first["devices"]
    assert doc["decision"] is None  # the decision record does not cover demand over time


def test_markdown_shows_the_fleet_over_time(planned):
    path, _ = planned
    r = cli("plan", str(path), "--format", "markdown", "--no-timings", "--time-limit", "30")
    assert r.returncode == 0, r.stderr
    assert "## Fleet over time" in r.stdout and "| p0 | 0 | chat 160.0 |" in r.stdout


def test_bad_period_input_exits_2_with_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(PROBLEM.replace("periods: {length_h: 1}", "periods: {length_h: 1, named: [{name: a, start_h: 0, end_h: 1}]}"))
    r = cli("plan", str(path))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and f"{path}:16: periods" in r.stderr and "Traceback" not in r.stderr

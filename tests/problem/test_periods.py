"""Demand over time in the problem file (schema/periods.py, problem/periods.py): profiles cut
into periods by hand, the one-period path equal to today's plan, and the input errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from solver.errors import InputError
from solver.plan.planner import plan
from solver.problem.load import load_problem, parse_problem
from solver.problem.periods import window_stats
from tests.support.cli import ROOT

BASE = """\
name: p
services:
  - name: chat
    model: llama-3.1-8b
    precision: fp8
    workload: {input_tokens: 512, output_tokens: 64}
    demand_profile: {points: [{time_s: 0, requests_per_s: 10}, {time_s: 1800, requests_per_s: 40},
                              {time_s: 3600, requests_per_s: 20}, {time_s: 5400, requests_per_s: 20}]}
    slo: {ttft_ms: 1000, tpot_ms: 50}
hardware:
  - type: h100-sxm
    committed: {price_per_hour: 2.0}
    on_demand: {price_per_hour: 4.0, supply_per_period: [8, 4]}
periods: {length_h: 1}
"""


def test_step_function_window_by_hand():
    t, r = np.array([0.0, 1800.0, 3600.0]), np.array([10.0, 40.0, 20.0])
    assert window_stats(t, r, 0, 3600) == (40.0, 25.0)  # half an hour at 10, half at 40
    assert window_stats(t, r, 900, 2700) == (40.0, 25.0)
    assert window_stats(t, r, 3600, 7200) == (20.0, 20.0)  # the last rate holds


def test_profile_cut_into_hours():
    """Points every 30 min, the last one's step ending at 7200 s: two periods, peaks 40 and 20."""
    rp = parse_problem(BASE)
    hz = rp.horizon
    assert hz.names == ("p0", "p1") and hz.seconds == (3600, 3600)
    assert hz.peak_qps == ((40.0, 20.0),) and hz.mean_qps == ((25.0, 20.0),)
    assert hz.committed_price == (2.0,) and hz.on_demand_price == (4.0,)
    assert hz.on_demand_supply == ((8, 4),) and hz.termed == (True,)
    assert rp.problem.services[0].workload.qps == 40.0  # the peak sizes the candidates' bounds


def test_named_periods_and_scale():
    text = BASE.replace("periods: {length_h: 1}", "periods: {named: [{name: night, start_h: 0, end_h: 0.5}, "
                        "{name: day, start_h: 0.5, end_h: 2}]}").replace(
        "supply_per_period: [8, 4]", "supply: 6").replace(
        "{time_s: 5400, requests_per_s: 20}]}", "{time_s: 5400, requests_per_s: 20}], scale: 2}")
    hz = parse_problem(text).horizon
    assert hz.names == ("night", "day") and hz.seconds == (1800, 5400)
    assert hz.peak_qps == ((20.0, 80.0),)
    assert hz.on_demand_supply == ((6, 6),)


def test_shipped_profile_by_name_is_the_servegen_day():
    rp = load_problem(ROOT / "problems" / "daily-demand.yaml")
    hz = rp.horizon
    assert hz.n_periods == 24 and set(hz.seconds) == {3600}
    assert max(hz.peak_qps[0]) == pytest.approx(582.9917)  # the file's 583 req/s peak falls on day 1
    assert hz.peak_qps[0][0] == pytest.approx(231.4267)  # max of the first six 10-min windows


@pytest.mark.parametrize("edit, where", [
    (lambda d: d.pop("periods"), "p.yaml:9: services[0].demand_profile:"),
    (lambda d: d["periods"].update(length_h=0.0001), "whole number of seconds"),
    (lambda d: d.update(objective="max_throughput", budget_per_hour=100), "periods: plan min_cost"),
    (lambda d: d["hardware"][0]["on_demand"].update(supply_per_period=[1, 2, 3]), "3 values for 2 periods"),
    (lambda d: d["services"][0]["demand_profile"].update(bogus=1), "bogus"),
    (lambda d: d["services"][0].update(demand_profile="no-such-profile"), "unknown trace 'no-such-profile'"),
])
def test_bad_input_names_the_field(edit, where):
    doc = yaml.safe_load(BASE)
    edit(doc)
    with pytest.raises(InputError, match=re.escape(where)) as exc:
        parse_problem(yaml.safe_dump(doc, sort_keys=False), "p.yaml")
    assert "\n" not in str(exc.value)  # one line


def test_bad_profile_row_names_its_line(tmp_path):
    (tmp_path / "rate.csv").write_text("time_s,requests_per_s\n0,10\n600,-1\n")
    doc = yaml.safe_load(BASE)
    doc["services"][0]["demand_profile"] = str(tmp_path / "rate.csv")
    with pytest.raises(InputError, match=r"rate\.csv:3: time_s must be >= 0 and requests_per_s"):
        parse_problem(yaml.safe_dump(doc, sort_keys=False), "p.yaml")


ONE_PERIOD = ["llama3-70b-online", "hetero-prefill-decode", "mixed-supply"]


@pytest.mark.parametrize("name", ONE_PERIOD)
def test_one_period_is_todays_plan(name):
    """Every service's demand as a one-point profile cut into one period: the same fleet and cost."""
    path = ROOT / "problems" / f"{name}.yaml"
    today = plan(load_problem(path), timings=False, compare=False)
    doc = yaml.safe_load(path.read_text())
    rp = load_problem(path)
    for s, svc in zip(doc["services"], rp.problem.services):
        s["demand_profile"] = {"points": [{"time_s": 0, "requests_per_s": svc.workload.qps}]}
    doc["periods"] = {"length_h": 1}
    mp = plan(parse_problem(yaml.safe_dump(doc, sort_keys=False), str(path)), timings=False, compare=False)
    assert mp.periods is not None and mp.periods.periods == 1
    assert [s.model_dump() for s in mp.services] == [s.model_dump() for s in today.services]
    assert mp.cost_per_hour == today.cost_per_hour
    assert mp.periods.cost_usd == pytest.approx(today.cost_per_hour, abs=1e-3)  # one hour

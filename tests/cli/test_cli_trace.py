"""`fleetplan trace FILE` as a user runs it, and `fleetplan simulate`'s default arrivals: the
trace a problem's workload names, at the planned rate."""

from __future__ import annotations

import json
import math

import pytest

from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.plan.sim_sources import arrival_label, total_requests, workload_arrival
from solver.plan.simulate import SimulateOptions, simulate
from solver.problem.load import load_problem, parse_problem
from tests.support.cli import ROOT, cli

TINY = "arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,200,10\n3,300,10\n4,400,10\n6,500,20\n6.5,600,20\n" \
       "9,700,30\n12,800,40\n"


def test_trace_json_table_and_plot(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TINY)
    png = tmp_path / "t.png"
    r = cli("trace", str(path), "--window", "5", "--format", "json", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["requests"] == 8 and doc["mean_rate_qps"] == pytest.approx(7 / 12)
    assert [w["requests"] for w in doc["windows"]] == [4, 3, 1]
    assert doc["arrival_cv"] == pytest.approx(math.sqrt((3 * 2 / 16 + 2 * 4 / 9) / 5))
    assert doc["input_tokens"]["p50_tokens"] == 400 and doc["output_tokens"]["mean_tokens"] == 18.75
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    t = cli("trace", "azure-llm-2023-conv")
    assert t.returncode == 0, t.stderr
    assert "requests       19,366 over 3,501.7 s" in t.stdout
    assert "p99    4,142" in t.stdout and "CV 1.094 overall; 1.028 within windows" in t.stdout


def test_bad_trace_exits_2_naming_file_line_and_field(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,-4,5\n")
    r = cli("trace", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == (f"error: {path}:3: prompt_tokens: expected a whole number of tokens in "
                                "1..10,000,000 (got '-4')")
    r = cli("trace", str(tmp_path))
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_simulate_replays_the_workload_trace_at_the_planned_rate(tmp_path):
    rp = load_problem(ROOT / "problems" / "azure-conv-trace.yaml")
    wl = rp.problem.services[0].workload
    assert workload_arrival(rp, 0) == "trace:azure-llm-2023-conv" == f"trace:{wl.trace}"
    assert workload_arrival(rp, 0, "poisson") == "poisson"
    assert arrival_label(rp, [0], "workload") == f"trace:{wl.trace}"
    assert total_requests(rp, ["conversation"], "workload", None) == 0  # the whole trace: known once read
    doc = plan(rp, SolveOptions(time_limit_s=60), timings=False)
    assert doc.status == "optimal" and doc.services[0].demand_qps == pytest.approx(wl.qps, rel=1e-5)
    res = simulate(rp, doc, SimulateOptions(arrival="workload", requests=400, rate_scale=2.0), timings=False)
    assert res.arrival == f"trace:{wl.trace}"
    replay = res.services[0].replay
    assert replay.requests == 400
    assert res.services[0].offered_qps == pytest.approx(2 * wl.qps, rel=1e-5)


def test_workload_arrival_of_a_burstiness_without_a_trace():
    text = ("name: t\nservices:\n  - name: a\n    model: llama-3.1-8b\n    workload: {qps: 3, input_tokens: 100, "
            "output_tokens: 10, arrival_cv: 2.5}\n  - name: b\n    model: llama-3.1-8b\n    workload: {qps: 3, "
            "input_tokens: 100, output_tokens: 10}\nhardware:\n  - type: h100-sxm\n")
    rp = parse_problem(text)
    assert [workload_arrival(rp, i) for i in (0, 1)] == ["gamma:2.5", "poisson"]
    assert arrival_label(rp, [0, 1], "workload") == "workload" and arrival_label(rp, [1], "workload") == "poisson"
    assert total_requests(rp, ["a", "b"], "workload", None) == 4000


def test_workload_trace_resolves_against_the_problem_folder_and_runs_at_the_planned_rate(tmp_path, monkeypatch):
    from solver.plan.sim_sources import service_source

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text(TINY)
    (tmp_path / "p.yaml").write_text("name: t\nservices:\n  - name: a\n    model: llama-3.1-8b\n    workload: "
                                     "{trace: data/t.csv}\nhardware:\n  - type: h100-sxm\n")
    monkeypatch.chdir(ROOT)
    rp = load_problem(tmp_path / "p.yaml")
    src = service_source(rp, 0, 7 / 6, "workload", None, 0)  # twice the trace's 7/12 req/s
    # arrivals 0 1 3 4 6 6.5 9 12 s, time compressed x2
    assert list(src._arrival) == pytest.approx([0, 0.5, 1.5, 2, 3, 3.25, 4.5, 6])
    assert list(src.table.prompt_tokens[src.ids]) == [100, 200, 300, 400, 500, 600, 700, 800]

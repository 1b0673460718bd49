"""`fleetplan frontier` and `fleetplan price-sweep` end to end through the real command line:
exit codes, the JSON documents (validated by their pydantic models), the PNG (opened, size,
not blank), the missing-matplotlib error, bad arguments, and the two questions that `plan`
answers (the cheapest fleet for a demand, the most traffic for a budget)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from solver.schema.questions import FrontierResult, PriceSweepResult
from tests.support.cli import cli, env_lacking
from tests.support.questions_problem import small_problem


@pytest.fixture(scope="module")
def budget_problem(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("q") / "small.yaml"
    p.write_text(small_problem(100, budget=20))
    return p


@pytest.fixture(scope="module")
def frontier_run(budget_problem, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    js, png = out / "frontier.json", out / "frontier.png"
    r = cli("frontier", str(budget_problem), "--points", "6", "--out-json", str(js), "--plot", str(png))
    return r, js, png


def test_frontier_table_json_and_exit_code(frontier_run):
    r, js, _ = frontier_run
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    doc = FrontierResult.model_validate_json(js.read_text())
    assert len(doc.points) == 6 and all(p.status == "optimal" for p in doc.points)
    assert doc.limit.max_traffic_scale == doc.points[-1].traffic_scale
    assert doc.solver.wall_s > 0 and doc.solver.candidates_build_s > 0
    # the table shows every level and the limit with its reason
    assert "cost vs served traffic, 6 points" in r.stdout
    assert f"limit: at most {doc.limit.max_traffic_scale:g} x the mix" in r.stdout
    assert "budget of $20.00/hour" in r.stdout
    for p in doc.points:
        assert f"{p.cost_per_hour:,.2f}" in r.stdout


def test_frontier_png_is_a_real_plot(frontier_run):
    import matplotlib.image as mpimg
    import numpy as np

    _, _, png = frontier_run
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(png)
    assert img.shape[:2] == (605, 990)  # 9 x 5.5 inches at 110 dpi
    rgb = img[..., :3]
    ink = (rgb < 0.9).any(axis=2).mean()
    assert 0.01 < ink < 0.5, ink  # axes, line, labels: neither blank nor a filled block
    blue = ((np.abs(rgb[..., 0] - 0.12) < 0.08) & (np.abs(rgb[..., 2] - 0.71) < 0.08)).sum()
    assert blue > 100  # the frontier's line and markers (tab:blue)


def test_frontier_json_on_stdout_is_deterministic_without_timings(budget_problem):
    args = ("frontier", str(budget_problem), "--points", "3", "--format", "json", "--no-timings")
    a, b = cli(*args), cli(*args)
    assert a.returncode == b.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    doc = FrontierResult.model_validate(json.loads(a.stdout))
    assert doc.solver.wall_s is None and len(doc.points) == 3


def test_frontier_plot_without_matplotlib_is_a_clear_error(budget_problem, tmp_path):
    """A package named matplotlib that cannot be imported stands in for a missing install."""
    env = env_lacking(tmp_path, "matplotlib")
    png = tmp_path / "f.png"
    for flag in ("--plot", "--out-png"):
        r = cli("frontier", str(budget_problem), flag, str(png), env=env)
        assert r.returncode == 2
        assert r.stderr.strip() == ("error: --plot/--out-png needs matplotlib, which is not "
                                    "installed (pip install 'fleetplan[plot]')")
        assert "Traceback" not in r.stderr and r.stdout == ""
        assert not png.exists()


def test_frontier_with_nothing_feasible_exits_1(tmp_path):
    p = tmp_path / "broke.yaml"
    p.write_text(small_problem(100, budget=2))
    r = cli("frontier", str(p), "--points", "3")
    assert r.returncode == 1, r.stderr
    assert "not even 0.1% of the demand mix can be served" in r.stdout
    assert "budget of $2.00/hour" in r.stdout


@pytest.mark.parametrize("args, message", [
    (("--points", "0"), "--points: must be in 1..1,000"),
    (("--points", "5000"), "--points: must be in 1..1,000"),
    (("--max-scale", "-1"), "--max-scale: must be in 0.001..10000"),
])
def test_frontier_bad_arguments(budget_problem, args, message):
    r = cli("frontier", str(budget_problem), *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_price_sweep_end_to_end(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(small_problem(15))
    js = tmp_path / "sweep.json"
    r = cli("price-sweep", str(p), "--hardware", "h200-sxm", "--from", "1", "--to", "4",
            "--steps", "6", "--out-json", str(js))
    assert r.returncode == 0, r.stderr
    doc = PriceSweepResult.model_validate_json(js.read_text())
    assert [x.devices_by_type_from for x in doc.ranges] == [{"h200-sxm": 1}, {"h100-sxm": 1}]
    assert doc.compare == "devices"
    assert doc.changes[0].price_per_hour == pytest.approx(2.5)
    assert "mix changes at h200-sxm $2.5000/h (cost lines cross" in r.stdout
    assert "h200-sxm x 1" in r.stdout and "h100-sxm x 1" in r.stdout
    j = cli("price-sweep", str(p), "--hardware", "h200-sxm", "--from", "1", "--to", "4",
            "--steps", "6", "--format", "json", "--no-timings")
    assert j.returncode == 0, j.stderr
    assert PriceSweepResult.model_validate_json(j.stdout).ranges == doc.ranges


def test_price_sweep_defaults_to_half_and_twice_the_price(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(small_problem(15))
    r = cli("price-sweep", str(p), "--hardware", "h100-sxm", "--steps", "2", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = PriceSweepResult.model_validate_json(r.stdout)
    assert (doc.price_from_per_hour, doc.price_to_per_hour, doc.base_price_per_hour) == (1.25, 5.0, 2.5)


@pytest.mark.parametrize("args, message", [
    (("--hardware", "b200"), "hardware 'b200' is not in problem small-two-types's hardware (h100-sxm, h200-sxm)"),
    (("--hardware", "h100-sxm", "--from", "3", "--to", "2"), "need 0 < from < to"),
    (("--hardware", "h100-sxm", "--from", "0"), "--from: must be in (0, 10000]"),
    ((), "the following arguments are required: --hardware"),
])
def test_price_sweep_bad_arguments(tmp_path, args, message):
    p = tmp_path / "small.yaml"
    p.write_text(small_problem(15))
    r = cli("price-sweep", str(p), *args)
    assert r.returncode == 2, r.stdout
    assert message in r.stderr and "Traceback" not in r.stderr


# ---- the two questions `plan` answers ----------------------------------------------------------


def test_cheapest_fleet_for_a_demand_is_plan_min_cost(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(small_problem(30))
    r = cli("plan", str(p), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # 30 QPS: two of either type; two H100s ($5.00) beat two H200s ($7.00) and one of each ($6.00)
    assert doc["objective"] == {"kind": "min_cost", "value": 5.0}
    assert doc["devices_by_type"] == {"h100-sxm": 2}


def test_most_traffic_for_a_budget_is_plan_max_throughput(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text(small_problem(100, budget=20).replace("objective: min_cost", "objective: max_throughput"))
    r = cli("plan", str(p), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # $20/hour buys 8 H100s (8 x 18.82 QPS) or 5 H200s + 1 H100 (119 QPS): the H100s serve more
    assert doc["devices_by_type"] == {"h100-sxm": 8}
    assert doc["objective"]["kind"] == "max_throughput"
    served = doc["services"][0]["capacity_qps"]  # scale: whole thousandths of the 100 QPS mix
    assert doc["throughput_scale"] == math.floor(served * 1000 / 100) / 1000
    f = cli("frontier", str(p), "--points", "1", "--format", "json", "--no-timings")
    assert FrontierResult.model_validate_json(f.stdout).limit.max_traffic_scale == doc["throughput_scale"]

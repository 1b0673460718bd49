"""`fleetplan batch` over a sweep of the on-demand price of problems/daily-demand.yaml (demand
over time, docs/periods.md): two variants, each planned with that price, and the committed level
does not rise as the on-demand premium falls (renting the peaks gets cheaper)."""

from __future__ import annotations

import json

import pytest

from solver.schema.batch import BatchSummary
from tests.support.cli import ROOT, cli

PRICES = (6.0, 3.0)  # USD/device-hour on demand; committed: 2.49


def test_a_sweep_of_the_on_demand_price_commits_no_more_as_the_premium_falls(tmp_path):
    text = (ROOT / "problems" / "daily-demand.yaml").read_text()
    path = tmp_path / "daily-demand-premium.yaml"
    path.write_text(text + "sweep:\n  hardware[h100-sxm].on_demand.price_per_hour: [6.0, 3.0]\n")
    out = tmp_path / "out"
    r = cli("batch", str(path), "--out", str(out), "--no-timings", "--no-record", "--time-limit", "20")
    assert r.returncode == 0, r.stderr
    s = BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert [row.problem for row in s.rows] == [
        f"daily-demand[h100-sxm.on_demand_price={p:g}]" for p in PRICES]
    assert [row.sweep for row in s.rows] == [{"h100-sxm.on_demand_price": p} for p in PRICES]
    levels = []
    for row, price in zip(s.rows, PRICES):
        assert row.status in ("optimal", "feasible")
        pr = json.loads((out / row.result).read_text())["periods"]
        (h100,) = pr["committed"]
        assert (h100["price_per_hour"], h100["on_demand_price_per_hour"]) == (2.49, price)
        assert pr["cost_usd"] == pytest.approx(
            pr["committed_cost_usd"] + pr["on_demand_cost_usd"] + pr["start_cost_usd"], abs=0.011)
        levels.append(h100["devices"])
    high, low = levels  # premium 6.0 / 2.49 = 2.4 x, then 3.0 / 2.49 = 1.2 x
    assert low <= high and high >= 1
    # the summary CSV carries the swept price as a column
    header = (out / "summary.csv").read_text().splitlines()[0].split(",")
    assert "sweep.h100-sxm.on_demand_price" in header

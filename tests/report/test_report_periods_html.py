"""The HTML report of a plan with demand over time (problems/daily-demand.yaml, planned once): the
"Fleet over time" section, its three plots (decoded as PNGs, and the figures' bars and points
checked against the document) and its tables' numbers against the document's `periods:`."""

from __future__ import annotations

import base64
import json
from collections import defaultdict

import pytest

from solver.report import plots
from solver.report.html import to_html
from solver.schema.result import PlanResult
from tests.report.test_report_html import PNG_SIGNATURE, Page
from tests.support.cli import ROOT, cli

SECTIONS = ["decision", "periods", "pools", "latency", "cost", "frontier", "alternatives", "canary",
            "assumptions", "validity", "solver"]  # no replay: no decision record with periods
ALTS = ["fleet over time: devices by role and type", "cost per period: committed, on demand, starts",
        "utilisation per period"]


@pytest.fixture(scope="module")
def planned():
    r = cli("plan", str(ROOT / "problems" / "daily-demand.yaml"), "--format", "json", "--no-timings",
            "--time-limit", "20")
    assert r.returncode == 0, r.stderr
    doc = PlanResult.model_validate(json.loads(r.stdout))
    assert doc.periods is not None and len(doc.periods.fleet) == 24
    return doc, Page(to_html(doc))


def test_the_section_comes_after_the_decision(planned):
    doc, page = planned
    assert list(page.sections) == SECTIONS
    pr = doc.periods
    text = page.sections["periods"]
    assert f"${pr.cost_usd:,.2f} in all = ${pr.committed_cost_usd:,.2f} committed + " in text
    assert f"period '{pr.busiest_period}', the busiest" in text
    assert "not built for demand over time" in page.sections["alternatives"]


def test_three_plots_are_embedded_pngs(planned):
    _, page = planned
    alts = [a["alt"] for a in page.images()]
    assert [a for a in alts if a in ALTS] == ALTS
    for a in page.images():
        if a["alt"] in ALTS:
            head, data = a["src"].split(",", 1)
            assert head == "data:image/png;base64"
            png = base64.b64decode(data)
            assert png.startswith(PNG_SIGNATURE) and len(png) > 5000


def test_committed_table_is_the_documents(planned):
    doc, page = planned
    (c,) = doc.periods.committed
    assert page.headers["periods-committed"][:2] == ["type", "committed"]
    assert page.tables["periods-committed"] == [[
        "h100-sxm", str(c.devices), f"{c.price_per_hour:.2f}", f"{c.on_demand_price_per_hour:.2f}",
        str(c.peak_devices), f"+{c.valid_growth_pct:.1f}%"]]
    assert (c.price_per_hour, c.on_demand_price_per_hour) == (2.49, 4.25)
    assert c.devices <= c.peak_devices == max(f.devices_by_type.get("h100-sxm", 0) for f in doc.periods.fleet)


def test_period_table_is_the_documents(planned):
    doc, page = planned
    fleet = doc.periods.fleet
    assert page.column("periods", "period") == [f.name for f in fleet]
    assert page.column("periods", "committed $") == [f"{f.committed_cost_usd:,.2f}" for f in fleet]
    assert page.column("periods", "on demand $") == [f"{f.on_demand_cost_usd:,.2f}" for f in fleet]
    assert page.column("periods", "cost $") == [f"{f.cost_usd:,.2f}" for f in fleet]
    assert page.column("periods", "started") == [str(f.devices_started) for f in fleet]
    assert page.column("periods", "utilisation") == [f"{f.utilisation['chat']:.0%}" for f in fleet]
    assert sum(f.cost_usd for f in fleet) == pytest.approx(doc.periods.cost_usd, abs=0.05)


def _bar_sums(fig) -> dict[int, float]:
    sums: dict[int, float] = defaultdict(float)
    for bar in fig.axes[0].patches:
        sums[round(bar.get_x() + bar.get_width() / 2)] += bar.get_height()
    return sums


def test_plots_draw_the_documents_numbers(planned):
    doc, _ = planned
    pr = doc.periods
    fleet = plots.periods_fleet_figure(pr)
    assert _bar_sums(fleet) == {i: f.devices for i, f in enumerate(pr.fleet)}
    # the committed level as a line
    levels = [ln.get_ydata()[0] for ln in fleet.axes[0].get_lines()]
    assert levels == [c.devices for c in pr.committed]
    cost = _bar_sums(plots.periods_cost_figure(pr))
    assert [cost[i] for i in range(24)] == pytest.approx(
        [f.committed_cost_usd + f.on_demand_cost_usd + f.start_cost_usd for f in pr.fleet])
    (line,) = plots.periods_utilisation_figure(pr).axes[0].get_lines()
    assert list(line.get_ydata()) == pytest.approx([100 * f.utilisation["chat"] for f in pr.fleet])

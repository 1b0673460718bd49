"""The plan document's `periods:` section rendered: the committed levels, and per period the
fleet by type and role, the cost split committed / on demand and the utilisation (markdown and
table lines, and the HTML report's section with its plots)."""

from __future__ import annotations

from solver.report import plots
from solver.report.html_markup import img, para, table
from solver.schema.periods_result import PeriodFleet, PeriodsResult


def summary_line(pr: PeriodsResult) -> str:
    return (f"{pr.periods} periods over {pr.horizon_h:g} h ({pr.status}, gap {pr.gap:.2%}): "
            f"${pr.cost_usd:,.2f} in all = ${pr.committed_cost_usd:,.2f} committed + "
            f"${pr.on_demand_cost_usd:,.2f} on demand + ${pr.start_cost_usd:,.2f} starts; "
            f"${pr.mean_cost_per_hour:,.2f}/hour on average; the pools above are period "
            f"'{pr.busiest_period}', the busiest")


def committed_rows(pr: PeriodsResult) -> list[list[object]]:
    rows: list[list[object]] = []
    for c in pr.committed:
        growth = "never pays" if c.valid_growth_pct is None else f"+{c.valid_growth_pct:.1f}%"
        od = "-" if c.on_demand_price_per_hour is None else f"{c.on_demand_price_per_hour:.2f}"
        rows.append([c.hardware, c.devices, f"{c.price_per_hour:.2f}", od, c.peak_devices, growth])
    return rows


COMMITTED_HEADERS = ["type", "committed", "$/device-h", "on demand $/device-h", "peak devices",
                     "demand may grow before committing more pays"]


def _fleet_cell(f: PeriodFleet) -> str:
    parts = []
    for role, by_type in f.devices_by_role.items():
        parts.append(f"{role} " + ", ".join(f"{n} {t}" for t, n in by_type.items()))
    return "; ".join(parts) or "none"


def period_rows(pr: PeriodsResult) -> list[list[object]]:
    rows: list[list[object]] = []
    for f in pr.fleet:
        demand = ", ".join(f"{s} {q:,.1f}" for s, q in f.demand_qps.items())
        util = ", ".join(f"{u:.0%}" for u in f.utilisation.values())
        od = ", ".join(f"{n} {t}" for t, n in f.on_demand_devices.items() if n) or "-"
        rows.append([f.name, f"{f.start_h:g}", demand, _fleet_cell(f), od, f.devices_started,
                     f"{f.committed_cost_usd:,.2f}", f"{f.on_demand_cost_usd:,.2f}", f"{f.cost_usd:,.2f}", util])
    return rows


PERIOD_HEADERS = ["period", "start h", "demand QPS", "devices by role", "on demand", "started",
                  "committed $", "on demand $", "cost $", "utilisation"]


def periods_markdown(pr: PeriodsResult, table) -> list[str]:
    """Markdown lines; `table(headers, rows)` renders a markdown table (report/plan_views.py)."""
    out = ["## Fleet over time", "", summary_line(pr), ""]
    if pr.committed:
        out += ["Committed devices (paid every period):", "", table(COMMITTED_HEADERS, committed_rows(pr)), ""]
    out += [table(PERIOD_HEADERS, period_rows(pr)), ""]
    return out


def periods_html(pr: PeriodsResult) -> str:
    """The HTML report's "Fleet over time" section: the fleet, cost and utilisation per period as
    plots, the committed levels with their validity and the periods as tables."""
    out = [para(summary_line(pr))]
    if pr.committed:
        out += ["<h3>Committed devices (paid every period)</h3>",
                table(COMMITTED_HEADERS, committed_rows(pr), "periods-committed", "lrrrrr"),
                para("Validity: every period's usage may grow by this factor before committing one more "
                     "device pays (it then costs the committed price over the horizon and saves the "
                     "on-demand price whenever the usage reaches it).", "note")]
    figures = ((plots.periods_fleet_figure, "fleet over time: devices by role and type"),
               (plots.periods_cost_figure, "cost per period: committed, on demand, starts"),
               (plots.periods_utilisation_figure, "utilisation per period"))
    out += [img(plots.png_bytes(draw(pr)), alt, "plot") for draw, alt in figures]
    out += ["<h3>Periods</h3>", table(PERIOD_HEADERS, period_rows(pr), "periods", "lrllrrrrrl")]
    return "\n".join(out)

"""The plan as one self-contained HTML report (`fleetplan plan --format html`).

One file: inline CSS, plots embedded as base64 PNG data URIs, no script, no external resource;
it prints cleanly. Every string that can come from a problem file (problem, service, model and
hardware names) is escaped where it is written.

Formatting only: everything comes from the plan document and, for the frontier section, the
`FrontierSection` the caller computed (`solver/questions/report_frontier.py`: a small
cost-vs-traffic frontier of the same problem).
"""

from __future__ import annotations

from solver.report import plots, runbook
from solver.report.breakdown import POWER_NOTE, cost_breakdown
from solver.report.decision_views import decision_paragraph
from solver.report.drift_views import drift_html
from solver.report.html_markup import bullets, esc, money, para, section
from solver.report.html_sections import (
    alternatives_section,
    assumptions_section,
    cost_section,
    frontier_section,
    latency_section,
    pools_section,
    solver_section,
    validity_section,
)
from solver.report.periods_views import periods_html
from solver.report.replay_views import replay_section
from solver.schema.questions import FrontierSection
from solver.schema.result import PlanResult

FLAG = "--format html"


CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --rule:#d9dee7; --band:#f4f6fa; --accent:#2456a6; }
* { box-sizing: border-box; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
header h1 { font-size: 24px; margin: 0 0 4px; }
header .sub { color: var(--muted); margin: 0; }
nav { margin: 14px 0 6px; font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 14px; }
h2 { font-size: 18px; border-bottom: 2px solid var(--rule); padding-bottom: 4px; margin: 30px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.decision { font-size: 15px; background: var(--band); border-left: 4px solid var(--accent);
             padding: 12px 16px; margin: 8px 0; }
p.note { color: var(--muted); font-size: 12.5px; }
.figures { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 10px 0; }
.figures div { min-width: 120px; }
.figures .v { font-size: 20px; font-weight: 600; }
.figures .k { color: var(--muted); font-size: 12px; }
div.scroll { max-width: 100%; overflow-x: auto; margin: 6px 0 10px; }
table { border-collapse: collapse; width: 100%; margin: 0; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--rule); padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfd; }
pre.command { background: var(--band); padding: 8px 10px; white-space: pre-wrap; word-break: break-all; font-size: 12px; }
img.plot { max-width: 100%; height: auto; display: block; margin: 8px 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11.5px; white-space: nowrap; }
.badge.ok { background: #e3f4e6; color: #1d6b2c; }
.badge.warn { background: #fff1dc; color: #8a4b00; }
.badge.bad { background: #fde4e4; color: #9b1c1c; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--rule); padding-top: 8px; }
@page { margin: 14mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav { display: none; }
  section { break-inside: auto; }
  div.scroll { overflow: visible; }
  h2, h3 { break-after: avoid; }
  tr, img { break-inside: avoid; }
  p.decision { border-left-color: #000; }
}
"""


def _figures(doc: PlanResult) -> str:
    vals = [(money(doc.cost_per_hour), "cost"), (f"{doc.total_devices}", "devices"),
            (f"{doc.power_kw:,.1f} kW", f"power ({POWER_NOTE})"), (doc.status, "status")]
    if doc.throughput_scale is not None and doc.objective and doc.objective.kind == "max_throughput":
        vals.insert(0, (f"{doc.throughput_scale:g} x", "the demand mix served"))
    return ('<div class="figures">' + "".join(
        f'<div><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>' for v, k in vals)
        + "</div>")


def _no_record(doc: PlanResult) -> str:
    if doc.periods is not None:
        return "Not computed: the decision record is not built for demand over time (docs/periods.md)."
    return "Not computed: the plan carries no decision record (plan --no-record)."


def to_html(doc: PlanResult, frontier: FrontierSection | None = None) -> str:
    """The report. `frontier`: from `solver/questions/report_frontier.py` (None: the section says it was not run)."""
    plots.require_matplotlib(FLAG)
    feasible = doc.status != "infeasible"
    sections: list[tuple[str, str, str]] = []
    decision = para(decision_paragraph(doc), "decision")
    if feasible:
        decision = _figures(doc) + "\n" + decision
    sections.append(("decision", "Decision", decision))
    if not feasible:
        sections.append(("why", "Why no plan exists", bullets(doc.infeasible_because or ["no reason recorded"])))
    else:
        if doc.periods is not None:
            sections.append(("periods", "Fleet over time", periods_html(doc.periods)))
        sections.append(("pools", "Pools", pools_section(doc)))
        sections.append(("latency", "Latency vs SLO", latency_section(doc)))
        if doc.drift is not None:
            sections.append(("drift", "Drift of the running plan", drift_html(doc.drift)))
        sections.append(("cost", "Cost breakdown", cost_section(cost_breakdown(doc))))
        sections.append(("frontier", "Frontier: cost vs served traffic", frontier_section(doc, frontier)))
    r = doc.decision
    if r is not None and r.replay is not None:
        sections.append(("replay", "Replay vs analytic", replay_section(r.replay)))
    if r is not None and (feasible or r.runners_up):
        sections.append(("alternatives", "Runners-up and fallback", alternatives_section(r)))
    elif feasible:
        sections.append(("alternatives", "Runners-up and fallback", para(_no_record(doc), "note")))
    if feasible:
        sections.append(("canary", "Canary runbook", runbook.html_section(doc)))
    sections.append(("assumptions", "Assumptions", assumptions_section(doc)))
    if r is not None and r.validity is not None:
        sections.append(("validity", "Validity and re-measurement", validity_section(r)))
    elif feasible:
        sections.append(("validity", "Validity and re-measurement", para(_no_record(doc), "note")))
    sections.append(("solver", "Solver", solver_section(doc)))
    nav = "<nav>" + "".join(f'<a href="#{sid}">{esc(title)}</a>' for sid, title, _ in sections) + "</nav>"
    obj = doc.objective.kind if doc.objective else "no objective"
    title = f"Fleet plan: {doc.problem}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<header><h1>{esc(title)}</h1>"
        f'<p class="sub">{esc(doc.status)}, {esc(obj)}; fleetplan {esc(doc.solver.version)}</p></header>',
        nav,
        *[section(sid, t, body) for sid, t, body in sections],
        "<footer>Generated by fleetplan. Every number comes from the verified plan document"
        + ("; the frontier's plans were solved for this report" if frontier and frontier.result else "")
        + ".</footer>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"

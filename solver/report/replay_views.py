"""The decision record's replay section in words (table and markdown) and as an HTML table: the
winning fleet's simulated percentiles next to the analytic ones, the bounds the replay misses
with their shortfall, and the configurations derated before the final solve."""

from __future__ import annotations

from solver.report.breakdown import METRIC_NAMES
from solver.report.html_markup import bullets, para, table
from solver.schema.decision import ReplayCheck, ReplayedLatency


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _lat(x: ReplayedLatency) -> str:
    bound = "" if x.bound_ms is None else f"/{x.bound_ms:,g}"
    return f"{METRIC_NAMES[x.metric]} {_ms(x.predicted_ms)}->{_ms(x.simulated_ms)}{bound}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _served(steady: float | None, window: float) -> str:
    """The steady rate, and the tools' count over the whole window (ramp-up and drain included)."""
    head = "-" if steady is None else f"{steady:,.4g}"
    return f"{head} QPS steady ({window:,.4g} over the window)"


def replay_lines(r: ReplayCheck) -> list[str]:
    """One line per service and pool (analytic -> simulated / bound, ms), then the shortfalls,
    the deratings and what the rounds did."""
    out = [f"{r.requests_per_service:,} requests per service, {r.arrival} arrivals at the planned demand, "
           f"seed {r.seed}; {r.rounds} replay round{'s' if r.rounds != 1 else ''} (at most {r.max_rounds})"]
    for s in r.services:
        lats = ", ".join(_lat(x) for x in s.latencies if x.simulated_ms is not None)
        out.append(f"{s.name}: demand {s.demand_qps:,.4g} QPS, served {_served(s.steady_qps, s.throughput_qps)}, "
                   f"goodput {_share(s.goodput_share)}; "
                   f"{lats} ms (analytic->simulated/bound){'' if s.meets_slo else '; misses an SLO'}")
    for p in r.pools:
        lats = ", ".join(_lat(x) for x in p.latencies)
        site = f"@{p.site}" if p.site else ""
        extra = (f" cp{p.cp}" if p.cp else "") + (f" +{p.speculative}" if p.speculative else "")
        out.append(f"{p.service} {p.role} {p.instances} x {p.hardware}{site} tp{p.tp} pp{p.pp}{extra} batch {p.batch}: "
                   f"planned capacity {p.planned_capacity_qps:,.4g} QPS, served {_served(p.steady_qps, p.throughput_qps)}, "
                   f"goodput {_share(p.goodput_share)}; {lats} ms")
    for m in r.shortfalls:
        out.append(f"replay misses {m.service} {m.pool} {METRIC_NAMES[m.metric]}: {_ms(m.simulated_ms)} ms "
                   f"simulated vs {m.bound_ms:,g} ms bound (+{m.shortfall_pct:.1f}%; analytic {_ms(m.predicted_ms)} ms)")
    for d in r.deratings:
        after = "infeasible" if d.cost_after_per_hour is None else f"${d.cost_after_per_hour:,.2f}/h"
        out.append(f"round {d.round}: derated {d.service} {d.pool} capacity x{d.factor:.3g} (x{d.cumulative_factor:.3g} "
                   f"in all): ${d.cost_before_per_hour:,.2f}/h -> {after}")
    out.append(r.note + (f" (analytic plan ${r.analytic_cost_per_hour:,.2f}/h)" if r.deratings else ""))
    return out


def replay_section(r: ReplayCheck) -> str:
    """HTML: the pools' analytic and simulated percentiles, then the shortfalls and deratings."""
    headers = ["service", "pool", "planned capacity QPS", "steady QPS", "goodput", "metric", "analytic ms",
               "simulated ms", "bound ms"]
    rows: list[list[object]] = []
    for p in r.pools:
        name = f"{p.role} {p.instances} x {p.hardware} tp{p.tp} pp{p.pp} b{p.batch}"
        for k, x in enumerate(p.latencies):
            steady = "-" if p.steady_qps is None else f"{p.steady_qps:,.4g}"
            head = ([p.service, name, f"{p.planned_capacity_qps:,.4g}", steady, _share(p.goodput_share)]
                    if k == 0 else ["", "", "", "", ""])
            rows.append(head + [METRIC_NAMES[x.metric], _ms(x.predicted_ms), _ms(x.simulated_ms),
                                "-" if x.bound_ms is None else f"{x.bound_ms:,g}"])
    lines = replay_lines(r)
    extra = lines[1 + len(r.services) + len(r.pools):]
    return "\n".join([para(lines[0], "note"), table(headers, rows, "replay", "llrrrlrrr"), bullets(extra)])

"""The decision record in words: one list of lines, shared by the table and markdown views."""

from __future__ import annotations

from solver.schema.decision import DecisionRecord, Interval

METRIC = {"ttft_p50_ms": "TTFT p50", "ttft_p99_ms": "TTFT p99", "tpot_p50_ms": "TPOT p50",
          "tpot_p99_ms": "TPOT p99"}


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}/h"


def _interval(i: Interval) -> str:
    fmt = (lambda v: f"x{v:.3g}") if i.unit == "x" else (lambda v: f"${v:,.2f}")
    lo = fmt(i.low) + (" (searched no lower)" if i.low_is_search_limit else "")
    hi = fmt(i.high) + (" (searched no higher)" if i.high_is_search_limit else "")
    return f"{i.quantity}: {lo} to {hi} (now {fmt(i.current)})"


def uncertainty_lines(r: DecisionRecord) -> list[str]:
    out = []
    for b in r.uncertainty.pools:
        checks = ", ".join(
            f"{METRIC[c.metric]} {c.predicted_ms:.0f}->{c.upper_edge_ms:.0f}/{c.bound_ms:g} ms"
            + ("" if c.holds_at_upper_edge else " (central only)")
            for c in b.checks
        )
        out.append(f"{b.service} {b.role} on {b.hardware}: band TTFT +-{b.band_ttft_pct:g}%, "
                   f"TPOT +-{b.band_tpot_pct:g}% ({b.band_source}); {checks or 'no latency bound'}")
    if r.uncertainty.central_only:
        out.append("meets an SLO only at the central estimate: " + "; ".join(r.uncertainty.central_only))
    else:
        out.append("every SLO bound holds at the upper edge of its error band")
    return out


def record_lines(r: DecisionRecord) -> list[tuple[str, list[str]]]:
    """(section title, lines) pairs."""
    runners = []
    for a in r.runners_up:
        if a.status == "infeasible":
            runners.append(f"without {a.excluded} ({a.kind}): infeasible; {a.summary}")
            continue
        delta = (f"{a.delta_throughput_pct:+.1f}% throughput" if a.delta_throughput_pct is not None
                 else f"{a.delta_cost_pct:+.1f}%" if a.delta_cost_pct is not None else "")
        runners.append(f"without {a.excluded} ({a.kind}): {_money(a.cost_per_hour)} ({delta}); {a.summary}")
    f = r.fallback
    if f is None:
        fallback = ["none (the problem is infeasible)"]
    elif f.status == "infeasible":
        fallback = [f"{f.hardware} only ({f.why}), safety margin {f.safety_margin:.0%}: infeasible: "
                    + "; ".join(f.infeasible_because[:3])]
    else:
        pools = "; ".join(f"{p.role} {p.instances}x tp{p.tp} pp{p.pp} batch {p.batch}" for p in f.pools)
        fallback = [f"{f.hardware} only ({f.why}), one configuration per role, safety margin "
                    f"{f.safety_margin:.0%}: {_money(f.cost_per_hour)} ({f.delta_cost_pct:+.1f}%); {pools}"]
    v = r.validity
    valid = []
    if v is not None:
        if v.demand is not None:
            valid.append(_interval(v.demand))
        valid += [_interval(i) for i in v.prices]
        valid += [f"re-measure {m.what}: {m.by} ({m.why})" for m in v.remeasure]
        valid.append(f"({v.solves} solves; within the interval keeping the plan's configurations "
                     "costs at most 2% more than re-planning)")
    return [("uncertainty", uncertainty_lines(r)), ("runners-up", runners), ("fallback", fallback),
            ("valid while", valid),
            ("record", [f"input sha256 {r.input_sha256}; fleetplan {r.fleetplan_version}"])]

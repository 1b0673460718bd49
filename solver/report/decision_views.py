"""The decision record in words: the lines shared by the table and markdown views, and the
decision in one paragraph (markdown and html)."""

from __future__ import annotations

from solver.report.breakdown import METRIC_NAMES, POWER_NOTE, latency_rows, parallel_text
from solver.report.replay_views import replay_lines
from solver.schema.decision import DecisionRecord, Fallback, Interval
from solver.schema.pool import pool_phrase
from solver.schema.result import PlanResult, ServiceResult

METRIC = METRIC_NAMES


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}/h"


def _interval(i: Interval) -> str:
    fmt = ((lambda v: f"x{v:.3g}") if i.unit == "x" else (lambda v: f"{v:.3g}") if i.unit in ("acceptance", "hit rate")
           else (lambda v: f"${v:,.2f}"))
    why = ("--record-seconds cut the search short before it" if i.partial
           else "the search's solve budget ran out before it")
    if i.probes == 0 or (i.low_not_computed and i.high_not_computed):
        return f"{i.quantity}: not computed ({why}; now {fmt(i.current)})"
    lo = ("not computed below" if i.low_not_computed
          else fmt(i.low) + (" (searched no lower)" if i.low_is_search_limit else ""))
    hi = ("not computed above" if i.high_not_computed
          else fmt(i.high) + (" (searched no higher)" if i.high_is_search_limit else ""))
    side = "; the side not computed: " + why if i.low_not_computed or i.high_not_computed else ""
    partial = " (partial: cut short by --record-seconds)" if i.partial else ""
    return f"{i.quantity}: {lo} to {hi} (now {fmt(i.current)}{side}){partial}"


def headroom_line(multiple: float | None, service: str | None) -> str | None:
    """The plan's traffic headroom in words (None without a plan)."""
    if multiple is None:
        return None
    return (f"traffic headroom: the fleet as planned (pools and instance counts fixed) serves up to "
            f"x{multiple:g} of every service's demand (set by '{service}'); beyond that it must grow")


def fallback_pools(f: Fallback) -> str:
    """The fallback's pools in one line, each with its service (`pool_phrase`)."""
    return "; ".join(pool_phrase(p, f.services[i] if i < len(f.services) else None)
                     for i, p in enumerate(f.pools))


def uncertainty_lines(r: DecisionRecord) -> list[str]:
    out = [f"WARNING: {r.uncertainty.margin_below_band}"] if r.uncertainty.margin_below_band else []
    for b in r.uncertainty.pools:
        checks = ", ".join(
            f"{METRIC[c.metric]} {c.predicted_ms:.0f}->{c.upper_edge_ms:.0f}/{c.bound_ms:g} ms"
            + ("" if c.holds_at_upper_edge else " (central only)")
            for c in b.checks
        )
        out.append(f"{b.service} {b.role} on {b.hardware}: band TTFT +-{b.band_ttft_pct:g}%, "
                   f"TPOT +-{b.band_tpot_pct:g}% ({b.band_source}); {checks or 'no latency bound'}")
    if not r.uncertainty.pools:
        out.append("no pool to check (there is no plan)")
    elif r.uncertainty.central_only:
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
        fallback = [f"{f.hardware} only ({f.why}), one configuration per role, safety margin "
                    f"{f.safety_margin:.0%}: {_money(f.cost_per_hour)} ({f.delta_cost_pct:+.1f}%), "
                    f"{_mix(f.devices_by_type)}; {fallback_pools(f)}"]
    v = r.validity
    valid = []
    if v is not None:
        if v.demand is not None:
            valid.append(_interval(v.demand))
        valid += [_interval(i) for i in v.prices]
        valid += [_interval(i) for i in (v.acceptance or []) + (v.hit_rates or [])]
        valid += [f"re-measure {m.what}: {m.by} ({m.why})" for m in v.remeasure]
        valid.append(f"({v.solves} solves; within the interval keeping the plan's configurations "
                     "costs at most 2% more than re-planning)")
        if v.cut_short:
            valid.append("the search was cut short by --record-seconds: the intervals marked "
                         "partial are incomplete (raise --record-seconds)")
    replay = [("replay", replay_lines(r.replay))] if r.replay is not None else []
    chosen = [("choices", [c.effect for c in r.choices])] if r.choices else []
    return [("uncertainty", uncertainty_lines(r)), *replay, *chosen, ("runners-up", runners), ("fallback", fallback),
            ("valid while", valid),
            ("record", [f"input sha256 {r.input_sha256}; fleetplan {r.fleetplan_version}"])]


# ---- the decision in one paragraph (markdown and html) -----------------------------------------


def _mix(devices_by_type: dict[str, int]) -> str:
    return ", ".join(f"{n} x {k}" for k, n in devices_by_type.items())


def _role_text(s: ServiceResult) -> str:
    by_role: dict[str, list[str]] = {}
    for p in s.pools:
        by_role.setdefault(p.role, []).append(f"{p.instances} x {p.hardware} {parallel_text(p)}"
                                              + (f" at {p.site}" if p.site else ""))
    return "; ".join(f"{role} {' + '.join(v)}" for role, v in by_role.items())


def _service_sentence(s: ServiceResult) -> str:
    return (f"service '{s.name}' ({s.model}, {s.demand_qps:,.4g} QPS) runs {s.runtime} on "
            f"{s.devices} devices for {_money(s.cost_per_hour)}: {_role_text(s)}.")


def main_risk(doc: PlanResult) -> str:
    """The plan's main risk in one sentence: an SLO bound met only at the central estimate (the
    worst one), else the tightest bound at the error band's edge; stale measurements added."""
    rows = latency_rows(doc)
    if doc.decision is None:
        risk = "the prediction error was not assessed (the plan carries no decision record)"
        if rows:
            r = max(rows, key=lambda x: x.predicted_ms / x.bound_ms)
            risk += (f"; the tightest bound is {r.metric} of {r.pool}: {r.predicted_ms:,.0f} of "
                     f"{r.bound_ms:,.4g} ms predicted")
        return risk + "."
    central = [r for r in rows if r.holds_at_edge is False]
    if central:
        r = max(central, key=lambda x: (x.upper_edge_ms or 0.0) / x.bound_ms)
        others = len(central) - 1
        risk = (f"{r.metric} of {r.pool} meets its {r.bound_ms:,.4g} ms bound only at the central "
                f"estimate ({r.predicted_ms:,.0f} ms predicted, {r.upper_edge_ms:,.0f} ms at the "
                f"+{r.band_pct:g}% error band's upper edge)")
        if others:
            risk += f"; {others} more bound{'s' if others > 1 else ''} likewise"
    elif rows:
        r = max(rows, key=lambda x: (x.upper_edge_ms or 0.0) / x.bound_ms)
        risk = (f"every SLO bound holds at its error band's upper edge; the tightest is {r.metric} "
                f"of {r.pool} ({r.upper_edge_ms:,.0f} of {r.bound_ms:,.4g} ms at the edge)")
    else:
        risk = "no pool has a latency bound to check"
    replay = doc.decision.replay
    if replay is not None and replay.shortfalls:
        w = max(replay.shortfalls, key=lambda m: m.shortfall_pct)
        risk += (f"; the replay misses {len(replay.shortfalls)} bound{'s' if len(replay.shortfalls) > 1 else ''} "
                 f"the analytic model meets, worst {METRIC[w.metric]} of {w.service} {w.pool} "
                 f"({w.simulated_ms:,.0f} ms simulated vs {w.bound_ms:,.4g} ms, +{w.shortfall_pct:.1f}%)")
    a = doc.assumptions
    if a is not None:
        stale = sum(1 for p in a.profiles if p.stale)
        if stale:
            n = len(a.profiles)
            which = f"all {n}" if stale == n else f"{stale} of the {n}"
            risk += f"; {which} measured operator tables it rests on are due for re-measurement"
        if a.hardware_without_profiles:
            risk += f"; {', '.join(a.hardware_without_profiles)} predicted from the roofline only"
    return risk + "."


def _fallback_sentence(r: DecisionRecord) -> str:
    f = r.fallback
    if f is None:
        return "No fallback was planned."
    if f.status == "infeasible":
        return (f"No fallback exists on {f.hardware} alone ({f.why}) with every bound met at the "
                f"error band's upper edge.")
    return (f"Fallback: {_mix(f.devices_by_type)} ({f.hardware} only, {f.why}, one configuration "
            f"per role, safety margin {f.safety_margin:.0%} so every bound holds at the band's "
            f"edge) for {_money(f.cost_per_hour)} ({f.delta_cost_pct:+.1f}%).")


def _runner_up_sentence(r: DecisionRecord, max_throughput: bool) -> str:
    ok = [a for a in r.runners_up if a.status != "infeasible"]
    if not ok:
        return ""
    if max_throughput:
        best = max(ok, key=lambda a: a.delta_throughput_pct if a.delta_throughput_pct is not None else -1e9)
        delta = (f"{best.delta_throughput_pct:+.1f}% throughput" if best.delta_throughput_pct is not None
                 else "")
    else:
        best = min(ok, key=lambda a: a.delta_cost_pct if a.delta_cost_pct is not None else 1e9)
        delta = f"{best.delta_cost_pct:+.1f}%" if best.delta_cost_pct is not None else ""
    return (f" Next best, without {best.excluded}: {_mix(best.devices_by_type)} for "
            f"{_money(best.cost_per_hour)} ({delta}).")


def decision_paragraph(doc: PlanResult) -> str:
    """What to deploy, its cost and devices, each service's runtime and pools, the main risk and
    the fallback, in one paragraph of plain text (the reports escape it)."""
    if doc.status == "infeasible":
        n = len(doc.infeasible_because)
        first = doc.infeasible_because[0] if n else "the solver found no plan"
        more = f" ({n - 1} more reason{'s' if n > 2 else ''} below)" if n > 1 else ""
        return f"No plan exists for {doc.problem}: {first}{more}. Nothing can be deployed as specified."
    maxt = doc.objective is not None and doc.objective.kind == "max_throughput"
    goal = (f"the most traffic the limits allow, {doc.throughput_scale:g} x the demand mix"
            if maxt else "the lowest cost that meets every SLO")
    proof = "proven optimal" if doc.status == "optimal" else f"feasible, gap {doc.solver.gap:.2%}"
    text = (f"Deploy {doc.total_devices} devices ({_mix(doc.devices_by_type)}) for "
            f"{_money(doc.cost_per_hour)} and {doc.power_kw:,.1f} kW ({POWER_NOTE}): {goal} ({proof}). ")
    sv = [_service_sentence(s) for s in doc.services]
    text += " ".join(x[0].upper() + x[1:] for x in sv)
    text += f" Main risk: {main_risk(doc)}"
    if doc.decision is not None:
        text += " " + _fallback_sentence(doc.decision)
        text += _runner_up_sentence(doc.decision, maxt)
    else:
        text += " No fallback or runners-up were planned (the plan carries no decision record)."
    return text

"""Rules on what a plan compares itself with: the best homogeneous plan (heterogeneity) and
today's deployment (transition)."""

from __future__ import annotations

from solver.problem.load import ResolvedProblem
from solver.schema.fleet import Transition
from solver.schema.result import HeteroComparison, PlanResult, TransitionResult
from solver.verify.recount import change_counts
from solver.verify.tally import Tally, eq


def _saving(doc: PlanResult, h: HeteroComparison) -> list[str]:
    if h.homogeneous_cost_per_hour is None or h.saving_per_hour is None or h.saving_pct is None:
        return ["heterogeneity: the homogeneous cost or the saving is missing"]
    out = []
    if not eq(h.saving_per_hour, h.homogeneous_cost_per_hour - doc.cost_per_hour):
        out.append(f"heterogeneity: saving {h.saving_per_hour} != homogeneous "
                   f"{h.homogeneous_cost_per_hour} - plan {doc.cost_per_hour}")
    pct = 100 * h.saving_per_hour / h.homogeneous_cost_per_hour if h.homogeneous_cost_per_hour else 0.0
    if abs(h.saving_pct - pct) > 1e-3:
        out.append(f"heterogeneity: saving_pct {h.saving_pct} != {pct:.4f}")
    if h.exact and h.saving_per_hour < -1e-6:
        out.append("heterogeneity: the heterogeneous optimum costs more than the homogeneous one")
    return out


def check_heterogeneity(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """A plan with cross-type KV routes states its saving against the best homogeneous plan
    (unless the caller asked for the plan only); a homogeneous plan carries no comparison."""
    hetero = any(s.kv_routes for s in doc.services)
    h = doc.heterogeneity
    if not hetero:
        return ["a homogeneous plan carries a heterogeneity comparison"] if h is not None else []
    if h is None:
        return [] if not t.compared else [
            "a heterogeneous plan does not state its saving against the best homogeneous plan"]
    if h.homogeneous_status == "infeasible":
        if h.homogeneous_cost_per_hour is not None or h.saving_per_hour is not None:
            return ["heterogeneity: an infeasible homogeneous plan with a cost or saving"]
        return []
    if doc.objective is not None and doc.objective.kind == "min_cost":
        return _saving(doc, h)
    return []


def _figures(rp: ResolvedProblem, doc: PlanResult, tr: Transition, rep: TransitionResult) -> list[str]:
    """Each reported figure against its recount."""
    counts = change_counts(rp, tr, doc.services)
    out = []
    if (rep.devices_moved, rep.instances_resharded) != (counts.moved, counts.resharded):
        out.append(f"transition: moved/re-sharded {rep.devices_moved}/{rep.instances_resharded}, "
                   f"recounted {counts.moved}/{counts.resharded}")
    figures = [
        ("drained_device_hours", rep.drained_device_hours, counts.drained_device_hours),
        ("moved_cost_usd", rep.moved_cost_usd, counts.moved * tr.per_device_moved_usd),
        ("resharded_cost_usd", rep.resharded_cost_usd, counts.resharded * tr.per_instance_resharded_usd),
        ("drained_cost_usd", rep.drained_cost_usd, counts.drained_usd),
        ("switching_cost_usd", rep.switching_cost_usd,
         rep.moved_cost_usd + rep.resharded_cost_usd + rep.drained_cost_usd),
        ("plan_cost_per_hour", rep.plan_cost_per_hour, doc.cost_per_hour),
        ("saving_per_hour", rep.saving_per_hour, rep.current_cost_per_hour - rep.plan_cost_per_hour),
        ("saving_over_horizon_usd", rep.saving_over_horizon_usd, rep.saving_per_hour * tr.horizon_hours),
        ("current_cost_per_hour", rep.current_cost_per_hour, sum(c.cost_per_hour for c in rep.current_pools)),
    ]
    for name, got, want in figures:
        if abs(got - want) > 1e-6 * max(1.0, abs(want)):
            out.append(f"transition: {name} {got} != {want:.6f}")
    return out


def _verdict(rep: TransitionResult) -> list[str]:
    """The payback time and the recommendation follow from the reported figures."""
    out = []
    if rep.saving_per_hour > 0:
        payback = rep.switching_cost_usd / rep.saving_per_hour
        if rep.payback_hours is None or abs(rep.payback_hours - payback) > 1e-6 * max(1.0, payback):
            out.append(f"transition: payback_hours {rep.payback_hours} != {payback:.6f}")
    elif rep.payback_hours is not None:
        out.append("transition: a payback time without a saving")
    move = (not rep.current_meets_problem) or rep.saving_over_horizon_usd > rep.switching_cost_usd
    if rep.recommendation != ("move" if move else "stay"):
        out.append(f"transition: recommends '{rep.recommendation}', the figures say "
                   f"'{'move' if move else 'stay'}'")
    return out


def check_transition(rp: ResolvedProblem, doc: PlanResult, t: Tally) -> list[str]:
    """A problem with a current deployment gets a transition report whose changes, costs,
    saving, payback and recommendation are recounted; a problem without one gets none."""
    tr, rep = rp.problem.transition, doc.transition
    if tr is None:
        return ["a transition report without a transition in the problem"] if rep is not None else []
    if rep is None:
        return ["the problem describes a current deployment; the plan reports no transition"]
    return _figures(rp, doc, tr, rep) + _verdict(rep)

"""Cost vs served traffic: an epsilon-constraint sweep over traffic levels.

The traffic of a problem is its demand mix (every service's qps) times a scale. Each point of
the frontier is one exact CP-SAT plan: minimise cost subject to serving at least that scale of
the mix (the problem's demand scaled, objective min_cost, every other constraint as given), so
it is the cheapest fleet for that much traffic, proven optimal or carrying its status and gap.

Levels: `points` evenly spaced scales up to the top level, `top/points, 2 top/points, ..., top`.
The top level is `max_scale` when given; otherwise the most traffic the problem allows (its
budget, power cap or supplies), found by one CP-SAT max_throughput plan of the same problem;
otherwise (nothing bounds traffic) the problem's own demand (scale 1).

The limit: when the problem bounds traffic, that max_throughput plan gives the largest scale
(in steps of 1/1000 of the mix) and the cheapest-fleet plan one step above it shows why no more
can be served (the constraint groups that cannot hold together).

Pareto filter: a point is dominated when another point serves at least as much traffic for at
most its cost, one of the two strictly. Exact optima have non-decreasing cost in traffic, so a
dominated point is one whose cost equals a higher level's (the fleet has spare capacity);
points that are only feasible (a gap) can also be dominated by a cheaper, larger one.
"""

from __future__ import annotations

from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem
from solver.questions.replan import Replanner
from solver.schema.questions import FrontierPoint, FrontierResult, TrafficLimit
from solver.schema.result import PlanResult

SCALE_STEP = 0.001  # the fleet model's max_throughput scale unit (integerize.SCALE_UNIT)
MAX_POINTS = 1000


def traffic_limits(rp: ResolvedProblem) -> list[str]:
    """The problem's limits that bound traffic; empty when traffic is unbounded (no budget, no
    power cap, and some hardware type without a supply)."""
    p = rp.problem
    out: list[str] = []
    if p.budget_per_hour is not None:
        out.append(f"budget ${p.budget_per_hour:,.2f}/hour")
    if p.constraints.power_kw is not None:
        out.append(f"power cap {p.constraints.power_kw:g} kW")
    if all(s is not None for s in rp.supplies):
        out.append("supply: " + ", ".join(f"{n} {s}" for n, s in zip(rp.hardware_names, rp.supplies)))
    return out


def _point(scale: float, demand_qps: float, doc: PlanResult) -> FrontierPoint:
    ok = doc.status != "infeasible"
    return FrontierPoint(
        traffic_scale=round(scale, 6),
        traffic_qps=round(scale * demand_qps, 6),
        status=doc.status,
        gap=doc.solver.gap if ok else None,
        cost_per_hour=doc.cost_per_hour if ok else None,
        total_devices=doc.total_devices if ok else None,
        devices_by_type=dict(doc.devices_by_type),
        capacity_qps=round(sum(s.capacity_qps for s in doc.services), 6) if ok else None,
        power_kw=doc.power_kw if ok else None,
        pareto=False,
        services=list(doc.services),
        infeasible_because=list(doc.infeasible_because),
    )


def pareto_flags(traffic: list[float], cost: list[float | None]) -> list[bool]:
    """True for each point (traffic, cost) that no other point dominates; a point without a
    cost (infeasible) is never on the frontier. Equal points: only the first is kept."""
    flags = []
    for i, (t, c) in enumerate(zip(traffic, cost)):
        if c is None:
            flags.append(False)
            continue
        dominated = False
        for j, (t2, c2) in enumerate(zip(traffic, cost)):
            if j == i or c2 is None:
                continue
            if t2 >= t and c2 <= c and (t2 > t or c2 < c or j < i):
                dominated = True
                break
        flags.append(not dominated)
    return flags


def levels(top: float, points: int) -> list[float]:
    return [round(top * k / points, 6) for k in range(1, points + 1)]


def frontier(
    rp: ResolvedProblem,
    points: int = 10,
    max_scale: float | None = None,
    opts: SolveOptions = SolveOptions(),
    timings: bool = True,
) -> FrontierResult:
    if not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be 1..{MAX_POINTS}, got {points}")
    rep = Replanner(rp, opts, timings)
    demand_qps = sum(s.workload.qps for s in rp.problem.services)
    limited_by = traffic_limits(rp)
    limit = None
    top = max_scale if max_scale is not None else 1.0
    if limited_by:
        _, best = rep.plan(objective="max_throughput")
        if best.status == "infeasible":
            limit = TrafficLimit(
                max_traffic_scale=None, max_traffic_qps=None, status="infeasible", gap=None,
                limited_by=limited_by,
                beyond=_point(SCALE_STEP, demand_qps, best),
            )
        else:
            smax = float(best.throughput_scale or 0.0)
            above = round(smax + SCALE_STEP, 6)
            _, past = rep.plan(demand_scale=above, objective="min_cost")
            limit = TrafficLimit(
                max_traffic_scale=smax, max_traffic_qps=round(smax * demand_qps, 6),
                status=best.status, gap=best.solver.gap, limited_by=limited_by,
                beyond=_point(above, demand_qps, past),
            )
            if max_scale is None:
                top = smax
    pts: list[FrontierPoint] = []
    if limit is None or limit.max_traffic_scale is not None or max_scale is not None:
        for s in levels(top, points):
            _, doc = rep.plan(demand_scale=s, objective="min_cost")
            pts.append(_point(s, demand_qps, doc))
    flags = pareto_flags([p.traffic_scale for p in pts], [p.cost_per_hour for p in pts])
    pts = [p.model_copy(update={"pareto": f}) for p, f in zip(pts, flags)]
    return FrontierResult(
        problem=rp.name, method="epsilon_constraint", demand_qps=round(demand_qps, 6),
        max_scale_swept=round(top, 6), points=pts, limit=limit, solver=rep.info(),
    )


def any_feasible(doc: FrontierResult) -> bool:
    return any(p.status != "infeasible" for p in doc.points)

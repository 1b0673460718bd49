"""The prices of one device type at which the chosen mix changes: a sweep plus bisection.

The problem is planned as given (its objective, demand, budget and supplies) with the swept
type's price per device-hour at `steps + 1` evenly spaced grid prices from `price_from` to
`price_to`. The mix of a plan is, with `compare="devices"` (the default for min_cost), its
device count per type; with `compare="types"` (the default for max_throughput, where every
device the budget buys changes the counts), the set of types it uses; an infeasible plan has
the mix "infeasible". Wherever two neighbouring solved prices give different mixes, the
interval is bisected (one more plan at its midpoint, then each half that still differs) until
the bracket is at most `tolerance` wide, so every change between grid points is located; a
change and its reversal inside one grid step (A -> B -> A) are missed unless a bisection
point falls between them. `max_solves` caps the plans in all (grid included).

For min_cost problems the change point is estimated exactly where the two neighbouring fleets'
cost lines cross: each fleet's cost is linear in the swept price (its other devices' cost plus
its devices of the swept type times the price), and the optimum changes where they are equal.
When the lines do not cross inside the bracket (the mix changed for another reason: a tie-break,
a budget turning the problem infeasible, or a max_throughput objective), the bracket's midpoint
is reported.
"""

from __future__ import annotations

from typing import Callable

from solver.errors import InputError
from solver.fleet.solve import SolveOptions
from solver.problem.load import ResolvedProblem
from solver.questions.replan import Replanner
from solver.schema.problem import MAX_PRICE
from solver.schema.questions import (
    Compare,
    PriceChange,
    PricePoint,
    PriceRange,
    PriceSweepResult,
)
from solver.schema.result import PlanResult

MAX_STEPS = 1000
DEFAULT_TOLERANCE = 0.001  # USD per device-hour
DEFAULT_MAX_SOLVES = 200
STATUS_ORDER = {"optimal": 0, "feasible": 1, "infeasible": 2}

Mix = tuple | None  # devices by type, or the types used; None when infeasible


def mix_of(p: PricePoint, compare: Compare) -> Mix:
    if p.status == "infeasible":
        return None
    if compare == "types":
        return tuple(sorted(k for k, n in p.devices_by_type.items() if n))
    return tuple(sorted(p.devices_by_type.items()))


def _point(price: float, source: str, doc: PlanResult) -> PricePoint:
    ok = doc.status != "infeasible"
    return PricePoint(
        price_per_hour=round(price, 6), source=source, status=doc.status,
        gap=doc.solver.gap if ok else None,
        cost_per_hour=doc.cost_per_hour if ok else None,
        total_devices=doc.total_devices if ok else None,
        devices_by_type=dict(doc.devices_by_type),
        throughput_scale=doc.throughput_scale if ok else None,
        infeasible_because=list(doc.infeasible_because),
    )


def _crossing(lo: PricePoint, hi: PricePoint, hardware: str) -> float | None:
    """Where the two fleets' costs, each linear in the swept price, are equal."""
    if lo.cost_per_hour is None or hi.cost_per_hour is None:
        return None
    d_lo = lo.devices_by_type.get(hardware, 0)
    d_hi = hi.devices_by_type.get(hardware, 0)
    if d_lo == d_hi:
        return None
    rest_lo = lo.cost_per_hour - d_lo * lo.price_per_hour
    rest_hi = hi.cost_per_hour - d_hi * hi.price_per_hour
    return (rest_hi - rest_lo) / (d_lo - d_hi)


def _change(lo: PricePoint, hi: PricePoint, hardware: str, objective: str, tol: float) -> PriceChange:
    eps = 1e-9 * max(1.0, hi.price_per_hour)
    x = _crossing(lo, hi, hardware) if objective == "min_cost" else None
    crosses = x is not None and lo.price_per_hour - eps <= x <= hi.price_per_hour + eps
    return PriceChange(
        below_per_hour=lo.price_per_hour, above_per_hour=hi.price_per_hour,
        price_per_hour=round(x if crosses else (lo.price_per_hour + hi.price_per_hour) / 2, 6),
        how="cost lines cross" if crosses else "bracket midpoint",
        resolved=hi.price_per_hour - lo.price_per_hour <= tol * (1 + 1e-9),
        devices_by_type_below=dict(lo.devices_by_type),
        devices_by_type_above=dict(hi.devices_by_type),
        feasible_below=lo.status != "infeasible", feasible_above=hi.status != "infeasible",
    )


def _range(pts: list[PricePoint]) -> PriceRange:
    a, b = pts[0], pts[-1]
    return PriceRange(
        price_from_per_hour=a.price_per_hour, price_to_per_hour=b.price_per_hour,
        status=max((p.status for p in pts), key=STATUS_ORDER.__getitem__),
        types=sorted(k for k, n in a.devices_by_type.items() if n),
        devices_by_type_from=dict(a.devices_by_type), devices_by_type_to=dict(b.devices_by_type),
        total_devices_from=a.total_devices, total_devices_to=b.total_devices,
        cost_from_per_hour=a.cost_per_hour, cost_to_per_hour=b.cost_per_hour,
        throughput_scale_from=a.throughput_scale, throughput_scale_to=b.throughput_scale,
        points=len(pts),
    )


def _grid(lo: float, hi: float, steps: int) -> list[float]:
    return [round(lo + (hi - lo) * k / steps, 6) for k in range(steps + 1)]


def _checked_range(rp: ResolvedProblem, hardware: str, price_from: float | None,
                   price_to: float | None, steps: int, tolerance: float) -> tuple[float, float, float]:
    """The swept type's price in the problem and the range (from, to), or an InputError."""
    names = rp.hardware_names
    if hardware not in names:
        raise InputError(f"hardware '{hardware}' is not in problem {rp.name}'s hardware "
                         f"({', '.join(names)})")
    base = rp.prices[names.index(hardware)]
    lo = price_from if price_from is not None else base / 2
    hi = price_to if price_to is not None else base * 2
    if not 0 < lo < hi <= MAX_PRICE:
        raise InputError(f"price range ${lo:g} to ${hi:g} per device-hour: need 0 < from < to "
                         f"<= {MAX_PRICE:g}")
    if not 1 <= steps <= MAX_STEPS:
        raise InputError(f"steps must be 1..{MAX_STEPS}, got {steps}")
    if not tolerance > 0:
        raise InputError(f"tolerance must be positive, got {tolerance:g}")
    return base, lo, hi


def _bisect(pts: list[PricePoint], solve_at: Callable[[float, str], PricePoint],
            rep: Replanner, compare: Compare, tolerance: float, max_solves: int) -> bool:
    """Add bisection points to `pts` between every two neighbours of different mixes; whether
    every bracket was narrowed (False when `max_solves` stopped it)."""
    complete = True
    stack = [(pts[i], pts[i + 1]) for i in range(len(pts) - 1)]
    while stack:
        a, b = stack.pop()
        if mix_of(a, compare) == mix_of(b, compare) or b.price_per_hour - a.price_per_hour <= tolerance * (1 + 1e-9):
            continue
        mid = round((a.price_per_hour + b.price_per_hour) / 2, 6)
        if mid in (a.price_per_hour, b.price_per_hour):
            continue  # the bracket is at the printed resolution (1e-6)
        if rep.solves >= max_solves:
            complete = False
            continue
        m = solve_at(mid, "bisection")
        pts.append(m)
        stack += [(a, m), (m, b)]
    return complete


def _segments(pts: list[PricePoint], compare: Compare, hardware: str, objective: str,
              tolerance: float) -> tuple[list[PriceRange], list[PriceChange]]:
    """The price-sorted points cut into ranges of one mix, and the changes between them."""
    ranges: list[PriceRange] = []
    changes: list[PriceChange] = []
    run = [pts[0]]
    for prev, p in zip(pts, pts[1:]):
        if mix_of(p, compare) == mix_of(prev, compare):
            run.append(p)
            continue
        ranges.append(_range(run))
        changes.append(_change(prev, p, hardware, objective, tolerance))
        run = [p]
    ranges.append(_range(run))
    return ranges, changes


def price_sweep(
    rp: ResolvedProblem,
    hardware: str,
    price_from: float | None = None,
    price_to: float | None = None,
    steps: int = 10,
    tolerance: float = DEFAULT_TOLERANCE,
    max_solves: int = DEFAULT_MAX_SOLVES,
    opts: SolveOptions = SolveOptions(),
    timings: bool = True,
    compare: Compare | None = None,
) -> PriceSweepResult:
    base, lo, hi = _checked_range(rp, hardware, price_from, price_to, steps, tolerance)
    if compare is None:
        compare = "devices" if rp.problem.objective == "min_cost" else "types"
    rep = Replanner(rp, opts, timings)

    def solve_at(price: float, source: str) -> PricePoint:
        _, doc = rep.plan(prices={hardware: price})
        return _point(price, source, doc)

    pts = [solve_at(p, "grid") for p in dict.fromkeys(_grid(lo, hi, steps))]
    complete = _bisect(pts, solve_at, rep, compare, tolerance, max_solves)
    pts.sort(key=lambda p: p.price_per_hour)
    ranges, changes = _segments(pts, compare, hardware, rp.problem.objective, tolerance)
    complete = complete and all(c.resolved for c in changes)
    return PriceSweepResult(
        problem=rp.name, objective=rp.problem.objective, hardware=hardware, compare=compare,
        base_price_per_hour=base, price_from_per_hour=round(lo, 6), price_to_per_hour=round(hi, 6),
        steps=steps, tolerance_per_hour=tolerance, complete=complete, points=pts, ranges=ranges,
        changes=changes, solver=rep.info(),
    )


def any_feasible(doc: PriceSweepResult) -> bool:
    return any(p.status != "infeasible" for p in doc.points)

"""What the verifier's rules share: one pass over a plan document that recomputes each pool's
cost and sums devices, cost, power and capacity by type, site, service and role, plus the
tolerances every comparison uses. The rules (solver/verify/rules/) read it; none writes it."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from solver.problem.load import ResolvedProblem
from solver.schema.problem import Service
from solver.schema.result import PlanResult, Pool, ServiceResult
from solver.verify.recount import REL_TOL, Unit, servable, units_of


def le(a: float, b: float) -> bool:
    """a <= b up to the documents' rounding."""
    return a <= b * (1 + REL_TOL) + 1e-9


def eq(a: float, b: float) -> bool:
    """a == b up to the documents' rounding."""
    return abs(a - b) <= REL_TOL * max(1.0, abs(b))


def where(sr: ServiceResult, pool: Pool) -> str:
    """How a violation names a pool."""
    return f"service '{sr.name}' {pool.role} pool on {pool.hardware} tp{pool.tp} pp{pool.pp}"


@dataclass(frozen=True)
class PoolFigures:
    """A pool of a known service on known hardware; `cost` (recomputed USD/h) is None when its
    site is not one of the problem's, and then no sum counts it."""

    result: ServiceResult
    spec: Service
    pool: Pool
    cost: float | None

    @property
    def counted(self) -> bool:
        return self.cost is not None


@dataclass
class ServiceFigures:
    """A service of the plan that the problem has, with its counted pools summed by role."""

    result: ServiceResult
    spec: Service
    units: list[Unit]
    served: float  # what its pools can serve (solver/verify/recount.py)
    need: float  # the demand it must serve (scaled under max_throughput)
    cap: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    dev: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    configs: defaultdict[str, set[tuple]] = field(default_factory=lambda: defaultdict(set))


@dataclass
class Tally:
    """The document's figures as the verifier recounts them."""

    scale: float  # the demand multiplier: 1 under min_cost, the plan's throughput scale (0 when invalid)
    compared: bool  # the caller solved the homogeneous comparison of a heterogeneous plan
    services: list[ServiceFigures] = field(default_factory=list)
    pools: list[PoolFigures] = field(default_factory=list)
    used_devices: Counter[str] = field(default_factory=Counter)
    at_site: Counter[tuple[str, str]] = field(default_factory=Counter)
    site_power: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    total_cost: float = 0.0
    total_power: float = 0.0


def demand_scale(rp: ResolvedProblem, doc: PlanResult) -> float | None:
    """The multiplier of every service's demand; None: a max_throughput plan without a
    positive throughput scale."""
    if rp.problem.objective != "max_throughput":
        return 1.0
    s = doc.throughput_scale
    return s if s is not None and s > 0 else None


def site_price(rp: ResolvedProblem, site: str | None, hw: str, power_w: float | None = None) -> float:
    """USD per device-hour of a card at a site (the problem's price when it has no sites),
    with the running costs of an owned type at `power_w` (default the type's power)."""
    j = rp.hardware_names.index(hw)
    return rp.device_cost(rp.site_names.index(site) if rp.site_names else 0, j, power_w)


def _pool_cost(rp: ResolvedProblem, pool: Pool) -> float | None:
    if rp.site_names and pool.site not in rp.site_names:
        return None
    return pool.devices * site_price(rp, pool.site, pool.hardware, pool.power_cap_w)


def _count(rp: ResolvedProblem, t: Tally, sf: ServiceFigures, pool: Pool, cost: float) -> None:
    power_w = pool.power_cap_w or rp.power_w[rp.hardware_names.index(pool.hardware)]
    if rp.site_names:
        t.at_site[(pool.site, pool.hardware)] += pool.devices
        t.site_power[pool.site] += pool.devices * power_w
    sf.cap[pool.role] += pool.capacity_qps
    sf.dev[pool.role] += pool.devices
    sf.configs[pool.role].add((pool.hardware, pool.tp, pool.pp, pool.ep, pool.dp, pool.batch, pool.chunk_tokens))
    t.used_devices[pool.hardware] += pool.devices
    t.total_cost += cost
    t.total_power += pool.devices * power_w


def tally(rp: ResolvedProblem, doc: PlanResult, compared: bool = True) -> Tally:
    """Recount a feasible document's pools (in document order, so every sum adds up as the
    plan builder's does)."""
    t = Tally(scale=demand_scale(rp, doc) or 0.0, compared=compared)
    by_name = {s.name: s for s in rp.problem.services}
    for sr in doc.services:
        svc = by_name.get(sr.name)
        if svc is None:
            continue
        units = units_of(rp, sr.pools)
        sf = ServiceFigures(sr, svc, units, servable(units), svc.workload.qps * t.scale)
        t.services.append(sf)
        for pool in sr.pools:
            if pool.hardware not in rp.hardware_names:
                continue
            cost = _pool_cost(rp, pool)
            t.pools.append(PoolFigures(sr, svc, pool, cost))
            if cost is not None:
                _count(rp, t, sf, pool, cost)
    return t

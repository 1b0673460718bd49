"""The fleet model's input: integer candidate columns and fleet constraints, nothing else.

Built from the candidate table and the problem's fleet-level settings; the CP-SAT model reads
only this (it never sees the performance model or the problem file).

A column is a candidate row placed at a site (without `sites:` the fleet is one place and the
columns are the rows, in order). A prefill column carries the decode types its KV cache may be
sent to (`reach`); the model routes each site's disaggregated traffic from prefill to decode
columns of that site only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.candidates.table import CandidateSet
from solver.fleet import integerize as ints
from solver.problem.load import ResolvedProblem
from solver.schema.roles import COLOCATED, DECODE, PREFILL


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    demand: int  # 1/qps_scale QPS (min_cost: to serve; max_throughput: the mix weight)
    colocated: bool  # may use colocated capacity (and has candidates)
    disaggregated: bool  # may use prefill+decode pools (and has candidates for both)
    ratio_lo: int | None  # prefill/decode device ratio numerator over RATIO_DEN
    ratio_hi: int | None
    max_configs: int | None  # per role
    sites: tuple[int, ...] | None = None  # the sites the service may use; None: every site
    qps_scale: int = ints.QPS_SCALE  # units per QPS of this service's demand and capacities


@dataclass(frozen=True)
class FleetInstance:
    objective: str  # min_cost | max_throughput
    service: np.ndarray  # per row
    role: np.ndarray
    hw: np.ndarray
    devices: np.ndarray
    cap: np.ndarray  # per instance, in its service's 1/qps_scale QPS (floored)
    cost: np.ndarray  # 1e-4 USD/h per instance (ceiled)
    power: np.ndarray  # W per instance (ceiled)
    ub: np.ndarray  # instance count upper bounds (supply, budget, power; demand for min_cost)
    demand_ub: np.ndarray  # the demand-based bound alone (explanations relax the limits)
    services: tuple[ServiceSpec, ...]
    hw_names: tuple[str, ...]
    supply: tuple[int | None, ...]
    budget: int | None
    power_cap: int | None
    # sites, KV reach and failure domains (defaults: one site, every prefill column serves every
    # decode type, no failure constraint; the model is then exactly the one-place model)
    site: np.ndarray | None = None  # per column: index into site_names (0 without sites)
    reach: np.ndarray | None = None  # (columns, hw types) bool: decode types a prefill column serves
    row: np.ndarray | None = None  # per column: the candidate table row it places
    site_names: tuple[str, ...] = ()
    site_supply: tuple[tuple[int | None, ...], ...] = ()  # [site][hw]; None: unlimited
    site_power_cap: tuple[int | None, ...] = ()  # W per site; None: no cap
    lose_instances: int = 0  # survive losing this many instances of any one type (0: no)
    lose_site: bool = False  # survive losing any one site

    def __post_init__(self) -> None:
        n = len(self.service)
        if self.site is None:
            object.__setattr__(self, "site", np.zeros(n, dtype=np.int64))
        if self.row is None:
            object.__setattr__(self, "row", np.arange(n))
        if self.reach is None:
            object.__setattr__(self, "reach", np.ones((n, len(self.hw_names)), dtype=bool))

    def __len__(self) -> int:
        return len(self.service)

    @property
    def n_sites(self) -> int:
        return max(1, len(self.site_names))

    def rows(self, s: int, role: int) -> np.ndarray:
        """Columns of service s in a role, at every site."""
        return np.flatnonzero((self.service == s) & (self.role == role))

    def cols(self, s: int, role: int, k: int) -> np.ndarray:
        """Columns of service s in a role at site k."""
        return np.flatnonzero((self.service == s) & (self.role == role) & (self.site == k))

    def allowed(self, s: int, k: int) -> bool:
        sites = self.services[s].sites
        return sites is None or k in sites


def _demand_bounds(t, cap, services, ratio) -> np.ndarray:
    """Instances of one row that serving the demand can ever need: ceil(demand / capacity),
    plus what a prefill:decode ratio may force on one side (sized with the integer ratio
    bounds the model enforces)."""
    need = np.array([services[s].demand for s in t.service], dtype=np.int64)
    ub = -(-need // np.maximum(cap, 1))
    extra = np.zeros(len(t), dtype=np.int64)
    for s, spec in enumerate(services):
        pre, dec = t.rows(s, PREFILL), t.rows(s, DECODE)
        if pre.size == 0 or dec.size == 0:
            continue
        max_pre = int((ub[pre] * t.devices[pre]).max())
        max_dec = int((ub[dec] * t.devices[dec]).max())
        if spec.ratio_lo is not None:  # prefill devices >= lo * decode devices
            need_p = -(-spec.ratio_lo * max_dec // ints.RATIO_DEN)
            extra[pre] = -(-need_p // t.devices[pre])
        if spec.ratio_hi:  # decode devices >= prefill devices / hi
            need_d = -(-max_pre * ints.RATIO_DEN // spec.ratio_hi)
            extra[dec] = -(-need_d // t.devices[dec])
    return ub + extra


def _limit_bounds(rp: ResolvedProblem, devices, hw, site, cost, power) -> np.ndarray:
    """Instances of one column that supply, budget and power allow (the global limits and the
    column's site's)."""
    big = np.iinfo(np.int64).max // 4
    supply = np.array([big if s is None else s for s in rp.supplies], dtype=np.int64)[hw]
    if rp.site_names:
        local = np.array([[big if x is None else x for x in row] for row in rp.site_supplies],
                         dtype=np.int64)
        supply = np.minimum(supply, local[site, hw])
    ub = supply // np.maximum(devices, 1)
    if rp.problem.budget_per_hour is not None:
        ub = np.minimum(ub, ints.budget(rp.problem.budget_per_hour) // np.maximum(cost, 1))
    if rp.problem.constraints.power_kw is not None:
        ub = np.minimum(ub, ints.power_cap(rp.problem.constraints.power_kw) // np.maximum(power, 1))
    for k, kw in enumerate(rp.site_power_kw):
        if kw is not None:
            at = site == k
            ub[at] = np.minimum(ub[at], ints.power_cap(kw) // np.maximum(power[at], 1))
    return ub


def _placements(rp: ResolvedProblem, cs: CandidateSet) -> tuple[np.ndarray, np.ndarray]:
    """(row, site) of every column: each candidate row at every site its service may use and
    that has its hardware type (in row order, sites in order). One site: the rows themselves."""
    t = cs.table
    if not rp.site_names:
        return np.arange(len(t)), np.zeros(len(t), dtype=np.int64)
    rows, sites = [], []
    for r in range(len(t)):
        pin = rp.problem.services[int(t.service[r])].sites
        for k, name in enumerate(rp.site_names):
            if (pin is None or name in pin) and rp.site_supplies[k][int(t.hw[r])] != 0:
                rows.append(r)
                sites.append(k)
    return np.array(rows, dtype=np.int64), np.array(sites, dtype=np.int64)


def _column_costs(rp: ResolvedProblem, cs: CandidateSet, row: np.ndarray, site: np.ndarray) -> np.ndarray:
    """Cost per instance of every column (1e-4 USD/h): with sites, at the site's price (and its
    running costs for owned types, at the row's power cap)."""
    t = cs.table
    if not rp.site_names:
        return ints.cost(t.cost_per_hour)
    unit = np.array([t.devices[r] * rp.device_cost(int(k), int(t.hw[r]), float(t.power_cap_w[r]))
                     for r, k in zip(row, site)])
    return ints.cost(unit) if len(row) else np.zeros(0, dtype=np.int64)


def _service_specs(rp: ResolvedProblem, cs: CandidateSet) -> list[ServiceSpec]:
    t = cs.table
    ratio = rp.problem.constraints.prefill_decode_ratio
    names = rp.site_names
    services = []
    for si, s in enumerate(rp.problem.services):
        roles = cs.roles[si]
        has = {r: t.rows(si, r).size > 0 for r in (COLOCATED, PREFILL, DECODE)}
        scale = ints.qps_scale(t.capacity_qps[t.service == si], s.workload.qps)
        services.append(
            ServiceSpec(
                name=s.name,
                demand=ints.demand(s.workload.qps, scale),
                colocated=COLOCATED in roles and has[COLOCATED],
                disaggregated=PREFILL in roles and has[PREFILL] and has[DECODE],
                ratio_lo=ints.ratio_lo(ratio.min) if ratio.min is not None else None,
                ratio_hi=ints.ratio_hi(ratio.max) if ratio.max is not None else None,
                max_configs=rp.problem.search.max_distinct_configs,
                sites=None if s.sites is None else tuple(names.index(x) for x in s.sites),
                qps_scale=scale,
            )
        )
    return services


def _lose_instances(rp: ResolvedProblem) -> int:
    survive = rp.problem.constraints.survive
    return (survive.lose_instances or 0) if survive is not None else 0


def build_instance(rp: ResolvedProblem, cs: CandidateSet, heterogeneous: bool | None = None) -> FleetInstance:
    """The fleet model's columns and limits. heterogeneous=False restricts every prefill column
    to send its KV cache to its own hardware type (the best homogeneous plan's model); the
    default is the problem's constraints.heterogeneous_prefill_decode."""
    p = rp.problem
    if heterogeneous is None:
        heterogeneous = p.constraints.heterogeneous_prefill_decode
    t = cs.table
    row, site = _placements(rp, cs)
    devices = t.devices.astype(np.int64)[row]
    cost = _column_costs(rp, cs, row, site)
    services = _service_specs(rp, cs)
    cap = ints.capacity(t.capacity_qps, [services[int(s)].qps_scale for s in t.service])
    power = ints.power(t.power_w)[row]
    demand_ub = _demand_bounds(t, cap, services, p.constraints.prefill_decode_ratio)[row]
    if p.objective == "min_cost":
        demand_ub = demand_ub + _lose_instances(rp)  # losing k can need k more instances of one row
    ub = _limit_bounds(rp, devices, t.hw[row], site, cost, power)
    if p.objective == "min_cost":
        ub = np.minimum(ub, demand_ub)
    reach = cs.reach(row, heterogeneous, len(rp.hardware))
    reach[t.role[row] != PREFILL] = True
    return FleetInstance(
        objective=p.objective,
        service=t.service[row].copy(), role=t.role[row].copy(), hw=t.hw[row].copy(),
        devices=devices, cap=cap[row], cost=cost, power=power,
        ub=np.maximum(ub, 0), demand_ub=demand_ub, services=tuple(services),
        hw_names=rp.hardware_names, supply=rp.supplies,
        budget=ints.budget(p.budget_per_hour) if p.budget_per_hour else None,
        power_cap=ints.power_cap(p.constraints.power_kw) if p.constraints.power_kw else None,
        site=site, reach=reach, row=row, site_names=rp.site_names, site_supply=rp.site_supplies,
        site_power_cap=tuple(None if kw is None else ints.power_cap(kw) for kw in rp.site_power_kw),
        lose_instances=_lose_instances(rp),
        lose_site=bool(p.constraints.survive is not None and p.constraints.survive.lose_site),
    )

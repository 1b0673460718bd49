"""The fleet model's input: integer candidate columns and fleet constraints, nothing else.

Built from the candidate table and the problem's fleet-level settings; the CP-SAT model reads
only this (it never sees the performance model or the problem file).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.candidates import COLOCATED, DECODE, PREFILL, CandidateSet
from solver.fleet import integerize as ints
from solver.problem import ResolvedProblem


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    demand: int  # milli-QPS (min_cost: to serve; max_throughput: the mix weight)
    colocated: bool  # may use colocated capacity (and has candidates)
    disaggregated: bool  # may use prefill+decode pools (and has candidates for both)
    ratio_lo: int | None  # prefill/decode device ratio numerator over RATIO_DEN
    ratio_hi: int | None
    max_configs: int | None  # per role


@dataclass(frozen=True)
class FleetInstance:
    objective: str  # min_cost | max_throughput
    service: np.ndarray  # per row
    role: np.ndarray
    hw: np.ndarray
    devices: np.ndarray
    cap: np.ndarray  # milli-QPS per instance (floored)
    cost: np.ndarray  # 1e-4 USD/h per instance (ceiled)
    power: np.ndarray  # W per instance (ceiled)
    ub: np.ndarray  # instance count upper bounds (supply, budget, power; demand for min_cost)
    demand_ub: np.ndarray  # the demand-based bound alone (explanations relax the limits)
    services: tuple[ServiceSpec, ...]
    hw_names: tuple[str, ...]
    supply: tuple[int | None, ...]
    budget: int | None
    power_cap: int | None

    def __len__(self) -> int:
        return len(self.service)

    def rows(self, s: int, role: int) -> np.ndarray:
        return np.flatnonzero((self.service == s) & (self.role == role))


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


def _limit_bounds(rp: ResolvedProblem, t, cost, power) -> np.ndarray:
    """Instances of one row that supply, budget and power allow."""
    big = np.iinfo(np.int64).max // 4
    supply = np.array([big if s is None else s for s in rp.supplies], dtype=np.int64)
    ub = supply[t.hw] // np.maximum(t.devices, 1)
    if rp.problem.budget_per_hour is not None:
        ub = np.minimum(ub, ints.budget(rp.problem.budget_per_hour) // np.maximum(cost, 1))
    if rp.problem.constraints.power_kw is not None:
        ub = np.minimum(ub, ints.power_cap(rp.problem.constraints.power_kw) // np.maximum(power, 1))
    return ub


def build_instance(rp: ResolvedProblem, cs: CandidateSet) -> FleetInstance:
    t = cs.table
    cap = ints.capacity(t.capacity_qps)
    cost = ints.cost(t.cost_per_hour)
    power = ints.power(t.power_w)
    ratio = rp.problem.constraints.prefill_decode_ratio
    services = []
    for si, s in enumerate(rp.problem.services):
        roles = cs.roles[si]
        has = {r: t.rows(si, r).size > 0 for r in (COLOCATED, PREFILL, DECODE)}
        services.append(
            ServiceSpec(
                name=s.name,
                demand=ints.demand(s.workload.qps),
                colocated=COLOCATED in roles and has[COLOCATED],
                disaggregated=PREFILL in roles and has[PREFILL] and has[DECODE],
                ratio_lo=ints.ratio_lo(ratio.min) if ratio.min is not None else None,
                ratio_hi=ints.ratio_hi(ratio.max) if ratio.max is not None else None,
                max_configs=rp.problem.search.max_distinct_configs,
            )
        )
    demand_ub = _demand_bounds(t, cap, services, ratio)
    ub = _limit_bounds(rp, t, cost, power)
    if rp.problem.objective == "min_cost":
        ub = np.minimum(ub, demand_ub)
    return FleetInstance(
        objective=rp.problem.objective,
        service=t.service.copy(),
        role=t.role.copy(),
        hw=t.hw.copy(),
        devices=t.devices.astype(np.int64),
        cap=cap,
        cost=cost,
        power=power,
        ub=np.maximum(ub, 0),
        demand_ub=demand_ub,
        services=tuple(services),
        hw_names=rp.hardware_names,
        supply=rp.supplies,
        budget=ints.budget(rp.problem.budget_per_hour) if rp.problem.budget_per_hour else None,
        power_cap=(
            ints.power_cap(rp.problem.constraints.power_kw)
            if rp.problem.constraints.power_kw
            else None
        ),
    )

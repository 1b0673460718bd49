"""The fleet model over periods (demand over time, issue 17).

The candidate columns are built once (`FleetInstance`, the per-instance tables do not change
with demand); each period is the same columns with that period's demand and demand bounds, and
gets its own instance-count variables and its own demand, ratio, configuration, power and
failure families, all posted into one shared CP-SAT model. Across periods:

- per hardware type with commitment terms, one integer variable `committed[h]` (paid for the
  whole horizon) and per period `on_demand[p][h]`, with the type's devices used in period p at
  most committed[h] + on_demand[p][h] (each within its supply);
- types without terms pay their columns' hourly cost in each period they are used;
- with a start cost, `started[p][c] >= n[p][c] - n[p-1][c]` counts the instances started.

Costs are integers in 1e-4 USD/hour x seconds (`COST_UNIT` per USD): per-instance and
per-device costs rounded up once (solver/fleet/integerize.py), then multiplied by whole seconds.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver.candidates.table import CandidateSet
from solver.fleet import dominance, limits, survive
from solver.fleet import integerize as ints
from solver.fleet.demand import post_demand
from solver.fleet.instance import FleetInstance, _demand_bounds, build_instance
from solver.fleet.model import CpModel, FleetModel
from solver.problem.load import ResolvedProblem

COST_UNIT = ints.COST_SCALE * 3600  # objective units per USD: 1e-4 USD/hour x seconds

PERIOD_FAMILIES = (
    post_demand,
    limits.post_supply,
    limits.post_budget,
    limits.post_power,
    limits.post_ratio,
    limits.post_distinct_configs,
    survive.post_lose_instances,
)


@dataclass(frozen=True)
class PeriodInstance:
    base: FleetInstance  # the columns, sized for the peak period
    periods: tuple[FleetInstance, ...]  # per period: the columns with that period's demand
    names: tuple[str, ...]
    seconds: tuple[int, ...]
    termed: tuple[bool, ...]  # per type: priced by terms (usage variables), not by column cost
    committed_price: tuple[int | None, ...]  # 1e-4 USD per device-hour (rounded up)
    committed_supply: tuple[int | None, ...]
    on_demand_price: tuple[int | None, ...]  # None: no on-demand devices of the type
    on_demand_supply: tuple[tuple[int | None, ...], ...]  # [type][period]
    start_cost: int  # objective units per device started (rounded up)

    @property
    def n_periods(self) -> int:
        return len(self.periods)

    @property
    def horizon_s(self) -> int:
        return sum(self.seconds)

    @functools.cached_property
    def dominance_limits(self) -> np.ndarray:
        """The columns' dominance limits (solver/fleet/dominance.py), shared by every period."""
        return dominance.column_limits(self.base, self.termed)

    def bounded(self, inst: FleetInstance) -> FleetInstance:
        """A period's instance (these columns) within its dominance bounds: the same least cost."""
        return dominance.bounded(inst, self.termed, self.dominance_limits)


def period_instance(base: FleetInstance, qps: list[float], lose: int) -> FleetInstance:
    """The columns of `base` with each service's demand `qps[s]` and the bounds it implies."""
    services = tuple(dataclasses.replace(spec, demand=ints.demand(q)) for spec, q in zip(base.services, qps))
    demand_ub = _demand_bounds(base, base.cap, services, None) + lose
    return dataclasses.replace(base, services=services, demand_ub=demand_ub,
                               ub=np.minimum(base.ub, demand_ub))


def _price(x: float | None) -> int | None:
    return None if x is None else int(ints.cost(np.array([x]))[0])


def build_period_instance(rp: ResolvedProblem, cs: CandidateSet) -> PeriodInstance:
    hz = rp.horizon
    assert hz is not None
    base = build_instance(rp, cs)
    lose = base.lose_instances
    periods = tuple(period_instance(base, [hz.peak_qps[s][p] for s in range(len(base.services))], lose)
                    for p in range(hz.n_periods))
    return PeriodInstance(
        base=base, periods=periods, names=hz.names, seconds=hz.seconds, termed=hz.termed,
        committed_price=tuple(_price(x) for x in hz.committed_price),
        committed_supply=hz.committed_supply,
        on_demand_price=tuple(_price(x) for x in hz.on_demand_price),
        on_demand_supply=hz.on_demand_supply,
        start_cost=ints.ceil_scalar(hz.start_cost_usd_per_device, COST_UNIT),
    )


@dataclass
class Commitment:
    committed: dict[int, cp_model.IntVar]  # per termed type
    on_demand: list[dict[int, cp_model.IntVar]]  # [period][termed type]


class PeriodModel:
    """One CP-SAT model: a FleetModel per period sharing it, and the commitment variables."""

    def __init__(self, pi: PeriodInstance):
        self.pi = pi
        self.m = CpModel()
        self.fms = [FleetModel(inst, m=self.m) for inst in pi.periods]
        for fm in self.fms:
            for post in PERIOD_FAMILIES:
                post(fm)
        self.commit = _post_commitment(self)
        self.started = _post_starts(self)

    def all_vars(self) -> list:
        """Every variable in a fixed order (for hints between stages)."""
        out = [v for fm in self.fms for v in fm.v.all()]
        out += [self.commit.committed[h] for h in sorted(self.commit.committed)]
        out += [d[h] for d in self.commit.on_demand for h in sorted(d)]
        return out + [v for vs in self.started for v in vs]


def device_bound(pi: PeriodInstance, h: int) -> int:
    """The most devices of type h any period can use (its columns' bounds)."""
    rows = np.flatnonzero(pi.base.hw == h)
    return int(max(int(np.sum(inst.ub[rows] * inst.devices[rows])) for inst in pi.periods)) if rows.size else 0


def _post_commitment(pm: PeriodModel) -> Commitment:
    """usage[p][h] <= committed[h] + on_demand[p][h] for every type with terms."""
    pi, m = pm.pi, pm.m
    committed: dict[int, cp_model.IntVar] = {}
    on_demand: list[dict[int, cp_model.IntVar]] = [{} for _ in range(pi.n_periods)]
    for h, name in enumerate(pi.base.hw_names):
        if not pi.termed[h]:
            continue
        top = device_bound(pi, h)
        # no committed price: the type cannot be committed (rented only)
        cap = 0 if pi.committed_price[h] is None else min(top, _or(pi.committed_supply[h], top))
        committed[h] = m.new_int_var(0, cap, f"committed[{name}]")
        rows = np.flatnonzero(pi.base.hw == h)
        for p, fm in enumerate(pm.fms):
            od_cap = 0 if pi.on_demand_price[h] is None else min(top, _or(pi.on_demand_supply[h][p], top))
            on_demand[p][h] = m.new_int_var(0, od_cap, f"on_demand[{p},{name}]")
            if rows.size:
                used = fm.row_sum(rows, pi.base.devices, f"commitment:{name}")
                m.add(used <= committed[h] + on_demand[p][h]).with_name(f"commitment:{name}")
    return Commitment(committed, on_demand)


def _or(x: int | None, default: int) -> int:
    return default if x is None else x


def _post_starts(pm: PeriodModel) -> list[list[cp_model.IntVar]]:
    """started[p][c] >= n[p][c] - n[p-1][c] for p >= 1 (only with a start cost)."""
    pi, m = pm.pi, pm.m
    if pi.start_cost == 0:
        return []
    out = []
    for p in range(1, pi.n_periods):
        now, before = pm.fms[p].v.n, pm.fms[p - 1].v.n
        vs = [m.new_int_var(0, int(pi.periods[p].ub[c]), f"started[{p},{c}]") for c in range(len(pi.base))]
        for c, v in enumerate(vs):
            m.add(v >= now[c] - before[c])
        out.append(vs)
    return out

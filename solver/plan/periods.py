"""The plan over periods (demand over time): solve the fleet over every period
(solver/fleet/periods_solve.py), verify every period's fleet against that period's demand, and
write the document: its services show the busiest period's fleet (the most devices), and
`periods:` the fleet, cost and utilisation of every period and the committed levels.

Costs come from the model's integers (each per-instance and per-device price rounded up once),
so the periods' costs add up to the objective exactly.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from solver.candidates.table import CandidateSet
from solver.fleet.periods import COST_UNIT, PeriodInstance
from solver.fleet.periods_solve import PeriodSolution
from solver.fleet.solve import FleetSolution
from solver.problem.load import ResolvedProblem
from solver.schema.periods_result import CommittedLevel, PeriodFleet, PeriodsResult
from solver.schema.roles import COLOCATED, DECODE, PREFILL, ROLES


def period_problem(rp: ResolvedProblem, p: int) -> ResolvedProblem:
    """The problem as period p sees it: every service's qps its demand in that period."""
    hz = rp.horizon
    assert hz is not None
    services = [s.model_copy(update={"workload": s.workload.model_copy(update={"qps": max(hz.peak_qps[i][p], 1e-3)})})
                for i, s in enumerate(rp.problem.services)]  # 1e-3 QPS: as problem/periods.py
    problem = rp.problem.model_copy(update={"services": services})
    return type(rp)(**{**rp.__dict__, "problem": problem})


def period_solution(sol: PeriodSolution, p: int) -> FleetSolution:
    """Period p's fleet as a one-period solution (the document's pools are built from it)."""
    col, dis = sol.colocated_share[p], sol.disaggregated_share[p]
    return FleetSolution(
        status=sol.status, counts=sol.counts[p], colocated_share=col, disaggregated_share=dis,
        scale=None, gap=sol.gap, wall_s=sol.wall_s, stages=sol.stages,
        site_colocated=col[:, None], site_disaggregated=dis[:, None],
    )


def busiest(pi: PeriodInstance, sol: PeriodSolution) -> int:
    devices = sol.counts @ pi.base.devices
    return int(np.argmax(devices))


def _capacity(pi: PeriodInstance, cs: CandidateSet, counts: np.ndarray, s: int) -> float:
    cap = cs.table.capacity_qps[pi.base.row] * counts
    by = {r: float(cap[(pi.base.service == s) & (pi.base.role == r)].sum()) for r in (COLOCATED, PREFILL, DECODE)}
    return by[COLOCATED] + min(by[PREFILL], by[DECODE])


def _devices(pi: PeriodInstance, counts: np.ndarray) -> tuple[dict, dict]:
    names = pi.base.hw_names
    by_type: Counter[str] = Counter()
    by_role: dict[str, Counter[str]] = {}
    for c in np.flatnonzero(counts):
        d = int(counts[c] * pi.base.devices[c])
        by_type[names[int(pi.base.hw[c])]] += d
        by_role.setdefault(ROLES[int(pi.base.role[c])], Counter())[names[int(pi.base.hw[c])]] += d
    return ({k: by_type[k] for k in sorted(by_type)},
            {r: {k: v[k] for k in sorted(v)} for r, v in sorted(by_role.items())})


def _costs(pi: PeriodInstance, sol: PeriodSolution, p: int) -> tuple[float, float, float]:
    """(committed, on demand, starts) of period p, USD."""
    sec = pi.seconds[p]
    plain = np.array([not pi.termed[int(h)] for h in pi.base.hw])
    on_demand = int(np.sum(pi.base.cost * plain * sol.counts[p])) * sec
    on_demand += sum(x * int(pi.on_demand_price[h] or 0) * sec for h, x in sol.on_demand[p].items())
    committed = sum(x * int(pi.committed_price[h] or 0) * sec for h, x in sol.committed.items())
    start = int(sol.started[p]) * pi.start_cost
    return committed / COST_UNIT, on_demand / COST_UNIT, start / COST_UNIT


def _period(rp: ResolvedProblem, cs: CandidateSet, pi: PeriodInstance, sol: PeriodSolution,
            p: int, start_s: int) -> PeriodFleet:
    hz = rp.horizon
    names = [s.name for s in rp.problem.services]
    caps = {n: round(_capacity(pi, cs, sol.counts[p], s), 6) for s, n in enumerate(names)}
    mean = {n: round(hz.mean_qps[s][p], 6) for s, n in enumerate(names)}
    by_type, by_role = _devices(pi, sol.counts[p])
    committed, on_demand, start = _costs(pi, sol, p)
    return PeriodFleet(
        name=pi.names[p], start_h=round(start_s / 3600, 6), hours=round(pi.seconds[p] / 3600, 6),
        demand_qps={n: round(hz.peak_qps[s][p], 6) for s, n in enumerate(names)}, mean_qps=mean,
        capacity_qps=caps,
        utilisation={n: round(mean[n] / caps[n], 6) if caps[n] > 0 else 0.0 for n in names},
        devices=sum(by_type.values()), devices_by_type=by_type, devices_by_role=by_role,
        on_demand_devices={pi.base.hw_names[h]: x for h, x in sorted(sol.on_demand[p].items())},
        devices_started=int(sol.started[p]),
        cost_usd=round(committed + on_demand + start, 6), committed_cost_usd=round(committed, 6),
        on_demand_cost_usd=round(on_demand, 6), start_cost_usd=round(start, 6),
    )


def valid_growth_pct(usage: np.ndarray, seconds: np.ndarray, level: int, cp: int, op: int | None) -> float | None:
    """How far every period's usage of a type may grow (by one factor) before committing one
    more device pays: one more committed device costs cp over the whole horizon and saves op
    in every second its usage reaches level + 1, so it pays once the time at or above level + 1
    exceeds the horizon x cp / op. With usage scaled by g that happens when g x u_q >= level + 1,
    u_q the usage exceeded during that share of the time: the growth is (level + 1) / u_q - 1."""
    if op is None or op <= cp or not usage.any():
        return None
    share = seconds.sum() * cp / op
    order = np.argsort(-usage, kind="stable")
    acc = np.cumsum(seconds[order])
    k = int(np.searchsorted(acc, share, side="right"))  # the first period past the share
    if k >= usage.size:
        return None
    u_q = float(usage[order][k])
    return None if u_q <= 0 else round(((level + 1) / u_q - 1) * 100, 4)


def _levels(pi: PeriodInstance, sol: PeriodSolution) -> list[CommittedLevel]:
    out = []
    secs = np.array(pi.seconds, dtype=float)
    for h, level in sorted(sol.committed.items()):
        rows = pi.base.hw == h
        usage = (sol.counts[:, rows] * pi.base.devices[rows]).sum(axis=1)
        cp, op = pi.committed_price[h] or 0, pi.on_demand_price[h]
        out.append(CommittedLevel(
            hardware=pi.base.hw_names[h], devices=level, price_per_hour=cp / 1e4,
            on_demand_price_per_hour=None if op is None else op / 1e4, peak_devices=int(usage.max()),
            valid_growth_pct=valid_growth_pct(usage, secs, level, cp, op) if pi.committed_price[h] else None,
        ))
    return out


def periods_result(rp: ResolvedProblem, cs: CandidateSet, pi: PeriodInstance, sol: PeriodSolution) -> PeriodsResult:
    starts = np.concatenate([[0], np.cumsum(pi.seconds)[:-1]])
    fleet = [_period(rp, cs, pi, sol, p, int(starts[p])) for p in range(pi.n_periods)]
    hours = pi.horizon_s / 3600
    total = sum(f.cost_usd for f in fleet)
    return PeriodsResult(
        periods=pi.n_periods, horizon_h=round(hours, 6), cost_usd=round(total, 6),
        committed_cost_usd=round(sum(f.committed_cost_usd for f in fleet), 6),
        on_demand_cost_usd=round(sum(f.on_demand_cost_usd for f in fleet), 6),
        start_cost_usd=round(sum(f.start_cost_usd for f in fleet), 6),
        mean_cost_per_hour=round(total / hours, 6), busiest_period=pi.names[busiest(pi, sol)],
        committed=_levels(pi, sol), fleet=fleet, status=str(sol.status), gap=round(sol.gap, 6),
        hint_solves=sol.hint_solves,
    )

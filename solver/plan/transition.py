"""Moving from today's deployment (`current:`) to a plan: what it costs, what it saves, and
whether it pays back within the operating horizon (`transition:`).

How changes are counted (solver/verify/recount.py counts them for the plan and the verifier):

- An instance is **re-sharded** when the plan runs it in a layout the current deployment does
  not already run: per (service, role, site, hardware type, tp, pp, ep, dp), the plan's
  instances beyond the current ones. Changing the batch or the prefill chunk of a running
  instance is a runtime setting, not a re-shard. Each costs `per_instance_resharded_usd`
  (orchestration, weight re-layout, warm-up).
- A device is **moved** when it starts serving another (service, role, site): per (service,
  role, site, hardware type), the plan's devices beyond the current ones. They come from a
  pool that shrinks, from another site, or are newly brought in; each needs the new weights and
  a warm cache, and costs `per_device_moved_usd`. Devices a pool gives up cost nothing.
- **Drained capacity**: every re-sharded instance's devices are paid for
  `drained_hours_per_change` hours without serving (the old layout drains while the new one
  loads and warms), at the plan's hourly price of that instance.

switching cost = moved x per_device_moved_usd + re-sharded x per_instance_resharded_usd +
drained instance-hours x their hourly cost. The saving is the current deployment's hourly cost
minus the plan's. The planner recommends moving only when the current deployment no longer
meets the problem (demand, SLOs, memory, supply, power, budget, failure domains), or when the
saving over `horizon_hours` exceeds the switching cost; the payback time (switching cost /
hourly saving) is reported either way (none when the plan saves nothing).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from solver.candidates.build import estimate_pool
from solver.problem.load import ResolvedProblem
from solver.schema.fleet import Transition
from solver.schema.result import (
    CurrentPoolResult,
    PlanResult,
    Predicted,
    TransitionResult,
)
from solver.schema.roles import ROLES
from solver.verify.recount import (
    Unit,
    change_counts,
    servable,
    shared_link,
    worst_instance_loss,
    worst_site_loss,
)


def _kv_link(rp: ResolvedProblem, cp, decode_types: set[str]) -> tuple[float, float] | None:
    """The slowest link from a current prefill pool to the decode types it feeds (bytes/s per
    device, seconds); None: its own card's link."""
    hw = rp.hardware_names[rp.hw_index(cp.hardware)]
    others = [shared_link(rp, hw, d) for d in decode_types if d != hw]
    if not others:
        return None
    own = shared_link(rp, hw, hw)
    bw = min([own[0]] + [o[0] for o in others]) if hw in decode_types else min(o[0] for o in others)
    lat = max([own[1]] + [o[1] for o in others]) if hw in decode_types else max(o[1] for o in others)
    return bw * 1e9, lat * 1e-6


def evaluate_current(rp: ResolvedProblem) -> tuple[list[CurrentPoolResult], list[Unit], list[str]]:
    """Each current pool through the performance model, the pools as units (for capacity), and
    the reasons the current deployment does not meet the problem (empty when it does)."""
    p = rp.problem
    current = p.current or []
    names = [s.name for s in p.services]
    decode_at: defaultdict[tuple[str, str | None], set[str]] = defaultdict(set)
    for cp in current:
        if cp.role == "decode":
            decode_at[(cp.service, cp.site)].add(rp.hardware_names[rp.hw_index(cp.hardware)])
    pools: list[CurrentPoolResult] = []
    units: list[Unit] = []
    problems: list[str] = []
    for cp in current:
        si = names.index(cp.service)
        h = rp.hw_index(cp.hardware)
        hw = rp.hardware_names[h]
        site = rp.site_of(cp.site)
        role = ROLES.index(cp.role)
        link = _kv_link(rp, cp, decode_at[(cp.service, cp.site)]) if cp.role == "prefill" else None
        est = estimate_pool(rp, si, role, h, cp.tp, cp.pp, cp.ep, cp.dp, cp.batch or 1,
                            cp.chunk_tokens, link)
        where = (f"current {cp.role} pool of '{cp.service}' on {hw} tp{cp.tp} pp{cp.pp} "
                 f"batch {cp.batch}" + (f" at '{cp.site}'" if cp.site else ""))
        if not est.valid:
            problems.append(f"{where}: the configuration cannot run (degrees or placement)")
        elif not est.fits:
            problems.append(f"{where}: does not fit in memory ({est.memory_gib:.1f} GiB per device)")
        elif not est.slo_ok:
            problems.append(f"{where}: misses the SLO at any load")
        ok = est.valid and est.fits and est.slo_ok
        per = est.capacity_qps if ok else 0.0
        devices = cp.instances * cp.devices_per_instance
        pools.append(CurrentPoolResult(
            service=cp.service, role=cp.role, hardware=hw, site=cp.site, tp=cp.tp, pp=cp.pp,
            ep=cp.ep, dp=cp.dp, batch=cp.batch or 1, chunk_tokens=cp.chunk_tokens,
            instances=cp.instances, devices=devices,
            capacity_qps=round(cp.instances * per, 6),
            cost_per_hour=round(devices * rp.device_cost(site, h), 6),
            fits_memory=est.fits, meets_slo=est.slo_ok,
            predicted=Predicted(
                ttft_ms=_r(est.ttft_p50_ms), tpot_ms=_r(est.tpot_p50_ms),
                memory_gib_per_device=round(est.memory_gib, 3),
                ttft_p99_ms=_r(est.ttft_p99_ms), tpot_p99_ms=_r(est.tpot_p99_ms),
            ),
        ))
        reach = frozenset(decode_at[(cp.service, cp.site)]) if cp.role == "prefill" else frozenset()
        units.append(Unit(cp.role, hw, cp.site, per, cp.instances, reach))
    problems += _limits(rp, pools, units)
    return pools, units, problems


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _demand_limits(rp: ResolvedProblem, units: list[Unit]) -> list[str]:
    """Each service's demand, and what is left after losing each failure domain asked for."""
    out = []
    survive = rp.problem.constraints.survive
    for svc in rp.problem.services:
        mine = [u for u, cp in zip(units, rp.problem.current or []) if cp.service == svc.name]
        demand = svc.workload.qps
        have = servable(mine)
        if have < demand * (1 - 1e-9):
            out.append(f"current deployment serves {have:.1f} QPS of '{svc.name}', demand {demand:g} QPS")
            continue
        if survive is not None and survive.lose_instances:
            worst, hw = worst_instance_loss(mine, survive.lose_instances)
            if worst < demand * (1 - 1e-9):
                out.append(f"current deployment of '{svc.name}' serves {worst:.1f} QPS after losing "
                           f"{survive.lose_instances} {hw} instance(s), demand {demand:g}")
        if survive is not None and survive.lose_site:
            worst, site = worst_site_loss(mine, rp.site_names)
            if worst < demand * (1 - 1e-9):
                out.append(f"current deployment of '{svc.name}' serves {worst:.1f} QPS after losing "
                           f"site '{site}', demand {demand:g}")
    return out


def _supply_limits(rp: ResolvedProblem, pools: list[CurrentPoolResult]) -> list[str]:
    """Devices of each type, overall and at each site, against the supply."""
    out = []
    by_type: Counter[str] = Counter()
    by_site: Counter[tuple[str | None, str]] = Counter()
    for cp in pools:
        by_type[cp.hardware] += cp.devices
        by_site[(cp.site, cp.hardware)] += cp.devices
    for h, name in enumerate(rp.hardware_names):
        if rp.supplies[h] is not None and by_type[name] > rp.supplies[h]:
            out.append(f"current deployment uses {by_type[name]} {name}, supply {rp.supplies[h]}")
        for k, site in enumerate(rp.site_names):
            cap = rp.site_supplies[k][h]
            if cap is not None and by_site[(site, name)] > cap:
                out.append(f"current deployment uses {by_site[(site, name)]} {name} at '{site}', "
                           f"supply {cap}")
    return out


def _power_and_budget_limits(rp: ResolvedProblem, pools: list[CurrentPoolResult]) -> list[str]:
    """Power per site and overall against the caps, and the hourly cost against the budget."""
    p = rp.problem
    out = []
    power: defaultdict[str | None, float] = defaultdict(float)
    for cp in pools:
        power[cp.site] += cp.devices * rp.power_w[rp.hardware_names.index(cp.hardware)]
    for k, site in enumerate(rp.site_names):
        kw = rp.site_power_kw[k]
        if kw is not None and power[site] / 1000 > kw * (1 + 1e-9):
            out.append(f"current deployment draws {power[site] / 1000:.1f} kW at '{site}', cap {kw:g} kW")
    total_kw = sum(power.values()) / 1000
    if p.constraints.power_kw is not None and total_kw > p.constraints.power_kw * (1 + 1e-9):
        out.append(f"current deployment draws {total_kw:.1f} kW, cap {p.constraints.power_kw:g} kW")
    cost = sum(cp.cost_per_hour for cp in pools)
    if p.budget_per_hour is not None and cost > p.budget_per_hour * (1 + 1e-9):
        out.append(f"current deployment costs ${cost:,.2f}/h, budget ${p.budget_per_hour:,.2f}/h")
    return out


def _limits(rp: ResolvedProblem, pools: list[CurrentPoolResult], units: list[Unit]) -> list[str]:
    """Demand, supply, power, budget and failure domains of the current deployment."""
    return _demand_limits(rp, units) + _supply_limits(rp, pools) + _power_and_budget_limits(rp, pools)


def transition_report(rp: ResolvedProblem, tr: Transition, doc: PlanResult) -> TransitionResult:
    """The move from the problem's current deployment to the plan `doc`, costed by `tr`."""
    pools, _, problems = evaluate_current(rp)
    current_cost = round(sum(cp.cost_per_hour for cp in pools), 6)
    moved, resharded, drained_h, drained_usd = change_counts(rp, tr, doc.services)
    moved_usd = round(moved * tr.per_device_moved_usd, 6)
    resharded_usd = round(resharded * tr.per_instance_resharded_usd, 6)
    drained_usd = round(drained_usd, 6)
    switching = round(moved_usd + resharded_usd + drained_usd, 6)
    saving = round(current_cost - doc.cost_per_hour, 6)
    over_horizon = round(saving * tr.horizon_hours, 6)
    payback = switching / saving if saving > 0 else None
    if problems:
        move, reason = True, "the current deployment does not meet the problem: " + "; ".join(problems)
    elif saving <= 0:
        move, reason = False, (f"the plan saves nothing (${-saving:,.2f}/h more than today); "
                               "keep the current deployment")
    elif over_horizon > switching:
        move, reason = True, (f"saves ${saving:,.2f}/h: ${over_horizon:,.0f} over {tr.horizon_hours:g} h "
                              f"against a switching cost of ${switching:,.0f}; pays back in "
                              f"{payback:,.1f} h")
    else:
        move, reason = False, (f"saves ${saving:,.2f}/h, but the switching cost of ${switching:,.0f} "
                               f"takes {payback:,.1f} h to pay back, beyond the {tr.horizon_hours:g} h "
                               "horizon")
    return TransitionResult(
        current_cost_per_hour=current_cost, current_pools=pools,
        current_meets_problem=not problems, current_problems=problems,
        plan_cost_per_hour=doc.cost_per_hour, saving_per_hour=saving,
        horizon_hours=tr.horizon_hours, saving_over_horizon_usd=over_horizon,
        devices_moved=moved, instances_resharded=resharded,
        drained_device_hours=round(drained_h, 6), moved_cost_usd=moved_usd,
        resharded_cost_usd=resharded_usd, drained_cost_usd=drained_usd,
        switching_cost_usd=switching,
        payback_hours=None if payback is None else round(payback, 6),
        recommendation="move" if move else "stay", reason=reason,
    )

"""`fleetplan simulate`: replay a planned fleet request by request (solver/replay/).

`simulate(rp, doc, opts)` builds, for every service of the plan document `doc` (of the problem
`rp`), one source of requests at its planned demand x `rate_scale` and one server made of its
pools (solver/replay/fleet.py):

- each pool of the plan is `instances` engine instances of its configuration behind a router;
- a service's colocated pools and its disaggregated part share its traffic in proportion to the
  plan: without sites, colocated_qps : disaggregated_qps, the colocated share split over the
  colocated pools by their planned capacity_qps; with sites, every colocated pool by its
  capacity and each site's disaggregated part by the smaller of its prefill and decode
  capacities (KV routes stay inside a site, as the fleet model plans them);
- a disaggregated part sends each prompt from its prefill pools (by capacity) over the KV link
  the plan's TTFT was computed for (the prefill pool's `kv_link_gb_s` when the plan names one,
  else its own card's scale-out link; solver/perf/runtime.py `kv_transfer_s`) to its decode
  pools (by capacity).

Then the event loop runs the whole fleet (solver/replay/loop.py) and the request table is
summarised per service and per pool (solver/plan/sim_metrics.py).

The engine instances and the request sources are made by `make_instance` and `make_source`
(`Makers`), so that the fleet can be tested on stand-ins; the defaults are the replay's own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from solver import __version__
from solver.errors import InputError
from solver.perf import runtime as rt
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable
from solver.plan.sim_instances import InstanceMaker, PoolSpec, pool_spec
from solver.plan.sim_metrics import instance_stats, pool_doc, service_doc, service_window
from solver.plan.sim_sources import arrival_label, parse_arrival, service_source
from solver.problem.load import ResolvedProblem
from solver.replay.fleet import Disaggregated, Fleet, KvLink, Pool, Split, Tags
from solver.replay.fleet_source import FleetSource
from solver.replay.loop import run
from solver.replay.requests import RequestTable, Server, Source
from solver.schema.pool import Pool as PoolDoc
from solver.schema.result import PlanResult, ServiceResult
from solver.schema.simulation import SimulationResult


@dataclass(frozen=True)
class SimulateOptions:
    rate_scale: float = 1.0
    # poisson | gamma:CV | trace:FILE | closed:N | workload (sim_sources.py); the command line's
    # default is workload, the decision record's replay keeps poisson (solver/decision/replayed.py)
    arrival: str = "poisson"
    requests: int | None = None  # per service (None: the arrival's default, sim_sources.py)
    seed: int = 0
    router: str = "least_queue"


MakeInstance = Callable[[PoolSpec, RequestTable, int], Server]  # (spec, table, instance index)
MakeSource = Callable[[ResolvedProblem, int, float, SimulateOptions, int], Source]  # (rp, si, qps, opts, seed)


def _default_source(rp: ResolvedProblem, si: int, qps: float, opts: SimulateOptions, seed: int) -> Source:
    try:
        parse_arrival(opts.arrival)
    except ValueError as exc:
        raise InputError(f"--arrival: {exc}") from None
    return service_source(rp, si, qps, opts.arrival, opts.requests, seed, opts.rate_scale)


@dataclass
class Makers:
    make_instance: MakeInstance = field(default_factory=InstanceMaker)
    make_source: MakeSource = _default_source


@dataclass
class _Built:
    """The fleet being built: the merged source, the tags, and the pools in fleet order."""

    rp: ResolvedProblem
    hw: HardwareTable
    merged: FleetSource
    tags: Tags
    pools: list[tuple[int, PoolDoc]] = field(default_factory=list)  # (plan service index, pool doc)
    servers: list[Pool] = field(default_factory=list)  # the same pools as servers


def _hardware(rp: ResolvedProblem) -> HardwareTable:
    return HardwareTable.from_cards(rp.hardware, rp.prices, rp.engine,
                                    measured_tables(rp.hardware, rp.problem.software.engine))


def kv_link(spec: PoolSpec) -> KvLink:
    """The link a prefill pool's KV crosses, as its TTFT was planned with (linear in tokens)."""
    link = None
    if spec.pool.kv_link_gb_s is not None:
        link = (np.array([spec.pool.kv_link_gb_s * 1e9]), np.array([(spec.pool.kv_link_latency_us or 0.0) * 1e-6]))
    t0, t1 = (float(rt.kv_transfer_s(spec.arch, spec.hw, spec.plan, n, spec.rp.engine, link)[0]) for n in (0.0, 1.0))
    return KvLink(t0, t1 - t0)


def _pool(b: _Built, makers: Makers, k: int, spec: PoolSpec, opts: SimulateOptions) -> Pool:
    table = b.merged.table
    insts = [makers.make_instance(spec, table, i) for i in range(spec.pool.instances)]
    p = Pool(table, insts, opts.router, len(b.pools), b.tags, spec.pool.role)
    b.pools.append((k, spec.pool))
    b.servers.append(p)
    return p


def _disaggregated(b: _Built, makers: Makers, k: int, name: str, specs: list[PoolSpec],
                   opts: SimulateOptions) -> tuple[Server, float]:
    pre = [s for s in specs if s.pool.role == "prefill"]
    dec = [s for s in specs if s.pool.role == "decode"]
    if not pre or not dec:
        raise InputError(f"plan: service '{name}' has prefill pools without decode pools (or the "
                         "reverse) at one site: nothing to replay them with")
    pre_pools = [_pool(b, makers, k, s, opts) for s in pre]
    dec_pools = [_pool(b, makers, k, s, opts) for s in dec]
    links = [[kv_link(s)] * len(dec) for s in pre]
    cap_p = [s.pool.capacity_qps for s in pre]
    cap_d = [s.pool.capacity_qps for s in dec]
    server = Disaggregated(b.merged.table, pre_pools, cap_p, dec_pools, cap_d, links, b.tags)
    return server, min(sum(cap_p), sum(cap_d))


def _service(b: _Built, makers: Makers, k: int, si: int, sr: ServiceResult, opts: SimulateOptions) -> Server:
    """Plan service k (problem service si): its colocated pools and disaggregated part(s), by
    the plan's shares."""
    specs = [pool_spec(b.rp, si, p, b.hw) for p in sr.pools]
    targets: list[Server] = []
    weights: list[float] = []
    col = [s for s in specs if s.pool.role == "colocated"]
    col_cap = sum(s.pool.capacity_qps for s in col)
    for s in col:
        targets.append(_pool(b, makers, k, s, opts))
        share = sr.colocated_qps / col_cap if sr.sites is None and col_cap > 0 else 1.0
        weights.append(s.pool.capacity_qps * share)
    sites = sorted({s.pool.site or "" for s in specs if s.pool.role != "colocated"})
    for site in sites:
        mine = [s for s in specs if s.pool.role != "colocated" and (s.pool.site or "") == site]
        server, cap = _disaggregated(b, makers, k, sr.name, mine, opts)
        targets.append(server)
        weights.append(sr.disaggregated_qps if sr.sites is None else cap)
    if not targets:
        raise InputError(f"plan: service '{sr.name}' has no pools: nothing to replay it on")
    if sum(weights) <= 0:
        weights = [1.0] * len(targets)
    return targets[0] if len(targets) == 1 else Split(b.merged.table, targets, weights)


def check_plan(doc: PlanResult) -> None:
    if doc.status == "infeasible":
        raise InputError(f"plan '{doc.problem}' is infeasible: nothing to simulate "
                         f"({'; '.join(doc.infeasible_because) or 'no fleet'})")


def _services(rp: ResolvedProblem, doc: PlanResult, opts: SimulateOptions) -> list[int]:
    """The problem's index of each planned service (the plan's order)."""
    if opts.arrival.startswith("trace:") and len(doc.services) > 1:
        raise InputError(f"--arrival {opts.arrival}: a trace replays one service; the plan has {len(doc.services)} "
                         f"({', '.join(sr.name for sr in doc.services)})")
    names = [s.name for s in rp.problem.services]
    for sr in doc.services:
        if sr.name not in names:
            raise InputError(f"plan: service '{sr.name}' is not in problem '{rp.name}' (services: {', '.join(names)})")
    return [names.index(sr.name) for sr in doc.services]


def simulate(rp: ResolvedProblem, doc: PlanResult, opts: SimulateOptions = SimulateOptions(),
             makers: Makers | None = None, on_finished: Callable[[int], None] | None = None,
             timings: bool = True) -> SimulationResult:
    """Replay the plan `doc` of problem `rp`; `on_finished(k)`: k more requests finished."""
    check_plan(doc)
    makers = makers or Makers()
    t0 = time.perf_counter()
    order = _services(rp, doc, opts)
    # service k draws with seed + k (as solver.replay.sources.services_source seeds them)
    sources = [makers.make_source(rp, si, sr.demand_qps * opts.rate_scale, opts, opts.seed + k)
               for k, (si, sr) in enumerate(zip(order, doc.services))]
    tags = Tags()
    merged = FleetSource(sources, tags, on_finished=on_finished)
    b = _Built(rp, _hardware(rp), merged, tags)
    servers = [_service(b, makers, k, si, sr, opts) for k, (si, sr) in enumerate(zip(order, doc.services))]
    fleet = Fleet(merged.table, servers, tags)
    events = run(merged, fleet)
    merged.scatter_back()
    return _document(rp, order, doc, opts, b, events, time.perf_counter() - t0 if timings else None)


def _document(rp: ResolvedProblem, order: list[int], doc: PlanResult, opts: SimulateOptions, b: _Built,
              events: int, wall: float | None) -> SimulationResult:
    table, tags = b.merged.table, b.tags
    n = len(table)
    svc_of, pool_of, pre_of = (tags.get(k, n) for k in ("service", "pool", "prefill_pool"))
    finite = table.finish_s[np.isfinite(table.finish_s)]
    end_s = float(finite.max()) if len(finite) else 0.0
    services = []
    for k, (si, sr) in enumerate(zip(order, doc.services)):
        slo = rp.problem.services[si].slo
        mine = svc_of == k
        window = service_window(table, mine)
        index = {id(pdoc): idx for idx, (owner, pdoc) in enumerate(b.pools) if owner == k}
        pools = [pool_doc(table, (pre_of if p.role == "prefill" else pool_of) == index[id(p)], p, sr.name, slo,
                          window, instance_stats(b.servers[index[id(p)]].children, end_s))
                 for p in sr.pools]  # in the plan's order
        services.append(service_doc(table, mine, sr, slo, opts.rate_scale, window, pools))
    return SimulationResult(
        problem=doc.problem, plan_status=doc.status, cost_per_hour=doc.cost_per_hour,
        arrival=arrival_label(rp, order, opts.arrival),
        rate_scale=opts.rate_scale, requests_per_service=opts.requests, seed=opts.seed, router=opts.router,
        simulated_s=round(end_s, 6), events=events,
        wall_s=None if wall is None else round(wall, 3), services=services, fleetplan_version=__version__,
    )

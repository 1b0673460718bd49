"""The decision record's replay: the winning fleet replayed request by request at its demand
(solver/plan/simulate.py `simulate`), its simulated percentiles next to the analytic ones, and
the planner's correction when the replay misses a bound the analytic table met.

Bounds of the replay (fixed, so that the record is reproducible and cheap):

- `REPLAY_REQUESTS` = 3,000 requests per service, Poisson arrivals at the planned demand, seed
  `REPLAY_SEED` = 0 (both recorded). Why 3,000: the p99 is then the 30th-largest sample, and a
  binomial order-statistic interval puts the true 99th percentile between the ~19th and ~41st
  largest (+-2 sigma, sqrt(3000 x 0.01 x 0.99) = 5.4), i.e. between about the 98.6th and 99.4th
  sample percentile; 2,000 would leave 20 samples above it (+-4.5), 10,000 would triple the cost.
- What a pool is checked on: a prefill pool on TTFT, a decode pool on TPOT, a colocated pool on
  both, a service on both (the quantities each pool's prediction covers). A bound is an SLO
  bound as the problem states it (without the safety margin, which is the analytic model's
  allowance for its own error).

The correction (at most `MAX_RESOLVES` re-solves): every pool with a shortfall has the rows of
its configuration (service, role, hardware, parallelism, batch, chunk) derated in the candidate
table (solver/candidates/derate.py) by

    factor = clip(min over its missed bounds of bound / simulated, 0.5, 0.95)

i.e. the first-order rule that a latency above its bound shrinks in proportion to the load per
instance near the operating point; the clip makes every round take at least 5% off (so a round
always changes something) and at most half (so one noisy percentile cannot discard a
configuration). Factors compound over rounds. The problem is then solved again with the derated
table (the same solve options) and the new plan replayed. The rounds stop when the replay meets
every bound the analytic table met, when the re-solve is infeasible (the last feasible plan is
kept, its shortfalls reported), or after `MAX_RESOLVES` re-solves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from solver.candidates.derate import config_rows, derate
from solver.candidates.table import CandidateSet
from solver.fleet.solve import SolveOptions
from solver.plan.planner import plan
from solver.plan.sim_instances import InstanceMaker, PoolSpec
from solver.plan.simulate import Makers, SimulateOptions, simulate
from solver.problem.load import ResolvedProblem
from solver.replay.requests import RequestTable
from solver.schema.decision import Derating, ReplayCheck, ReplayedLatency, ReplayedPool, ReplayedService, Shortfall
from solver.schema.pool import Pool as PoolDoc
from solver.schema.replay import PoolReplay
from solver.schema.result import PlanResult, Pool, SloBounds
from solver.schema.roles import ROLES
from solver.schema.simulation import SimulatedPool, SimulationResult

REPLAY_REQUESTS = 3000  # per service; see the module docstring for why
REPLAY_SEED = 0
MAX_RESOLVES = 3
FACTOR_MIN, FACTOR_MAX = 0.5, 0.95

Replayer = Callable[[ResolvedProblem, PlanResult], SimulationResult]

_METRICS = {"colocated": ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"),
            "prefill": ("ttft_p50_ms", "ttft_p99_ms"), "decode": ("tpot_p50_ms", "tpot_p99_ms")}


class _SharedInstances(InstanceMaker):
    """solver/plan/sim_instances.py `InstanceMaker` with its per-pool step-time grids kept across
    the rounds by configuration: a re-solved plan's pools are new documents, so each is handed
    over as the first document seen of its configuration (kept alive here, since the grids are
    keyed by the document's id; the grid depends only on the configuration)."""

    def __init__(self) -> None:
        super().__init__()
        self._first: dict[tuple, PoolDoc] = {}

    def __call__(self, spec: PoolSpec, table: RequestTable, index: int):
        p = spec.pool
        key = (spec.service, p.role, p.hardware, p.tp, p.pp, p.ep, p.dp, p.cp, p.speculative, p.batch,
               p.chunk_tokens)
        first = self._first.setdefault(key, p)
        return super().__call__(spec if first is p else replace(spec, pool=first), table, index)


class Replay:
    """The record's replayer: the plan replayed with the record's fixed bounds (no wall time, so
    the record is reproducible), the step-time grids built once over all rounds."""

    def __init__(self) -> None:
        self._makers = Makers(make_instance=_SharedInstances())

    def __call__(self, rp: ResolvedProblem, doc: PlanResult) -> SimulationResult:
        return simulate(rp, doc, SimulateOptions(requests=REPLAY_REQUESTS, seed=REPLAY_SEED), self._makers,
                        timings=False)


def _simulated(rep: PoolReplay, metric: str) -> float | None:
    stats = rep.ttft if metric.startswith("ttft") else rep.tpot
    if stats is None:
        return None
    return round(stats.p50_ms if metric.endswith("p50_ms") else stats.p99_ms, 3)


def _latencies(rep: PoolReplay, predicted: dict[str, float | None], slo: SloBounds,
               metrics: tuple[str, ...]) -> list[ReplayedLatency]:
    return [ReplayedLatency(metric=m, predicted_ms=predicted.get(m), simulated_ms=_simulated(rep, m),
                            bound_ms=getattr(slo, m)) for m in metrics]


def _predicted(p: Pool) -> dict[str, float | None]:
    return {"ttft_p50_ms": p.predicted.ttft_ms, "ttft_p99_ms": p.predicted.ttft_p99_ms,
            "tpot_p50_ms": p.predicted.tpot_ms, "tpot_p99_ms": p.predicted.tpot_p99_ms}


def pool_label(p: Pool | SimulatedPool) -> str:
    site = f"@{p.site}" if p.site else ""
    chunk = f" chunk {p.chunk_tokens}" if p.chunk_tokens else ""
    cp, spec = p.cp, p.speculative
    extra = (f" cp{cp}" if cp else "") + (f" +{spec}" if spec else "")
    return f"{p.role} {p.hardware}{site} tp{p.tp} pp{p.pp} ep{p.ep} dp{p.dp}{extra} batch {p.batch}{chunk}"


def _shortfalls(service: str, pool: str, lats: list[ReplayedLatency]) -> list[Shortfall]:
    out = []
    for x in lats:
        if x.bound_ms is None or x.predicted_ms is None or x.simulated_ms is None:
            continue
        if x.predicted_ms <= x.bound_ms < x.simulated_ms:
            out.append(Shortfall(service=service, pool=pool, metric=x.metric, bound_ms=x.bound_ms,
                                 predicted_ms=x.predicted_ms, simulated_ms=x.simulated_ms,
                                 shortfall_pct=round((x.simulated_ms - x.bound_ms) / x.bound_ms * 100, 3)))
    return out


@dataclass
class _Round:
    """One plan and what its replay found."""

    doc: PlanResult
    services: list[ReplayedService]
    pools: list[ReplayedPool]
    shortfalls: list[Shortfall]
    keys: dict[str, tuple[int, Pool]]  # pool label -> (problem service index, its pool document)


def replay_round(rp: ResolvedProblem, doc: PlanResult, replayer: Replayer) -> _Round:
    """Replay `doc` and compare: per service and pool, analytic vs simulated, and the shortfalls."""
    sim = replayer(rp, doc)
    names = [s.name for s in rp.problem.services]
    services, pools, shortfalls, keys = [], [], [], {}
    for sr, ss in zip(doc.services, sim.services):
        worst = {m: max((v for p in sr.pools if m in _METRICS[p.role] if (v := _predicted(p)[m]) is not None),
                        default=None) for m in _METRICS["colocated"]}
        services.append(ReplayedService(
            name=sr.name, demand_qps=sr.demand_qps, throughput_qps=round(ss.replay.throughput_rps, 6),
            steady_qps=ss.steady_qps,
            goodput_share=ss.replay.goodput_share, meets_slo=ss.meets_slo,
            latencies=_latencies(ss.replay, worst, sr.slo, _METRICS["colocated"])))
        for p, sp in zip(sr.pools, ss.pools):
            lats = _latencies(sp.replay, _predicted(p), sr.slo, _METRICS[p.role])
            label = pool_label(p)
            pools.append(ReplayedPool(
                service=sr.name, role=p.role, hardware=p.hardware, site=p.site, tp=p.tp, pp=p.pp, ep=p.ep,
                dp=p.dp, batch=p.batch, chunk_tokens=p.chunk_tokens, cp=p.cp, speculative=p.speculative,
                instances=p.instances,
                planned_capacity_qps=p.capacity_qps, throughput_qps=round(sp.replay.throughput_rps, 6),
                steady_qps=sp.steady_qps,
                goodput_share=sp.replay.goodput_share, latencies=lats))
            shortfalls += _shortfalls(sr.name, label, lats)
            keys[f"{sr.name}/{label}"] = (names.index(sr.name), p)
    return _Round(doc, services, pools, shortfalls, keys)


def factor_of(shortfalls: list[Shortfall]) -> float:
    """The capacity factor of one configuration from its shortfalls (module docstring)."""
    ratio = min(s.bound_ms / s.simulated_ms for s in shortfalls)
    return float(np.clip(ratio, FACTOR_MIN, FACTOR_MAX))


def _derate(rp: ResolvedProblem, cs: CandidateSet, rnd: _Round, cumulative: dict[str, float], k: int
            ) -> tuple[CandidateSet, list[Derating]]:
    """Derate every configuration with a shortfall in round `rnd` (the `cost_after` is filled in later)."""
    factor = np.ones(len(cs.table))
    out = []
    by_pool: dict[str, list[Shortfall]] = {}
    for s in rnd.shortfalls:
        by_pool.setdefault(f"{s.service}/{s.pool}", []).append(s)
    for key, misses in by_pool.items():
        si, p = rnd.keys[key]
        f = factor_of(misses)
        rows = config_rows(cs.table, si, ROLES.index(p.role), rp.hardware_names.index(p.hardware), p.tp, p.pp,
                           p.ep, p.dp, p.batch, p.chunk_tokens or 0, p.cp or 1, int(p.speculative is not None))
        factor[rows] = f
        cumulative[key] = cumulative.get(key, 1.0) * f
        out.append(Derating(round=k, service=misses[0].service, pool=misses[0].pool, factor=round(f, 6),
                            cumulative_factor=round(cumulative[key], 6),
                            cost_before_per_hour=rnd.doc.cost_per_hour, cost_after_per_hour=None))
    return derate(cs, factor), out


def _note(rounds: list[_Round], resolves: int, infeasible: bool) -> str:
    last = rounds[-1]
    if not rounds[0].shortfalls:
        return "the replay meets every bound the analytic table met; no derating"
    what = f"{resolves} re-solve{'s' if resolves != 1 else ''} after derating"
    if infeasible:
        return f"{what}; the last derated problem is infeasible, the last feasible plan is kept with its shortfalls"
    if last.shortfalls:
        return f"{what} (the most allowed); the final plan still misses {len(last.shortfalls)} bound(s) in the replay"
    return f"{what}; the final plan meets every bound the analytic table met in the replay"


def replay_and_correct(rp: ResolvedProblem, cs: CandidateSet, doc: PlanResult, opts: SolveOptions,
                       timings: bool, replayer: Replayer | None = None,
                       max_resolves: int = MAX_RESOLVES) -> tuple[CandidateSet, PlanResult, ReplayCheck]:
    """Replay the plan `doc`; while it misses bounds, derate and re-solve (bounded). Returns the
    candidate set and plan the rest of the record is built on, and the record's replay section."""
    replayer = replayer or Replay()
    rounds = [replay_round(rp, doc, replayer)]
    deratings: list[Derating] = []
    cumulative: dict[str, float] = {}
    infeasible = False
    while rounds[-1].shortfalls and len(rounds) <= max_resolves:
        cs_next, new = _derate(rp, cs, rounds[-1], cumulative, len(rounds))
        doc_next = plan(rp, opts, timings, candidates=cs_next)
        cost = doc_next.cost_per_hour if doc_next.status != "infeasible" else None
        deratings += [d.model_copy(update={"cost_after_per_hour": cost}) for d in new]
        if doc_next.status == "infeasible":
            infeasible = True
            break
        cs = cs_next
        rounds.append(replay_round(rp, doc_next, replayer))
    last = rounds[-1]
    check = ReplayCheck(
        arrival="poisson", requests_per_service=REPLAY_REQUESTS, seed=REPLAY_SEED, rounds=len(rounds),
        max_rounds=max_resolves + 1, analytic_cost_per_hour=rounds[0].doc.cost_per_hour, services=last.services,
        pools=last.pools, shortfalls=last.shortfalls, deratings=deratings,
        note=_note(rounds, len(rounds) - 1 + int(infeasible), infeasible))
    return cs, last.doc, check

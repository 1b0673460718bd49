"""The `fleetplan simulate` document from a finished replay: per service and per pool the
replay's measurements (solver/replay/metrics.py `pool_metrics`, as the benchmark tools count
them, over the service's measurement window: first measured send to last measured finish),
next to the plan's predictions, plus two things of this command's own:

- `steady_qps`, the steady completion rate: completions per second from the first arrival +
  the median E2E (the fleet has filled) to the last arrival (the drain begins). The tools'
  throughput divides by the whole window, ramp-up and drain included, which in a short run
  reads well below the arrival rate the fleet keeps up with;
- the pools' TTFT and TPOT quantiles (0th to 100th percentile), the CDFs `--plot` draws.

The instances' running statistics (solver/replay/instance.py `InstanceStats`: queue and KV
block integrals) are handed to the metrics as the integrals they read (`_Use`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.replay import metrics as rm
from solver.replay.requests import RequestTable
from solver.replay.sources.open_loop import measurement_window
from solver.schema.pool import Pool as PoolDoc
from solver.schema.problem import Slo
from solver.schema.result import ServiceResult
from solver.schema.simulation import SimulatedPool, SimulatedService


@dataclass(frozen=True)
class _Use:
    """One instance's statistics as solver/replay/metrics.py `instance_use` reads them."""

    busy_s: float
    queue_integral: float  # request-seconds waiting
    kv_integral: float  # seconds x share of KV blocks in use
    preemptions: int
    queue_max: int
    elapsed_s: float


def instance_stats(instances, end_s: float) -> list[_Use]:
    """The statistics of instances that keep them (`stats` with `waiting_s`, `kv_block_s`,
    `max_waiting`, and `kv.total`; or `stats` already in the metrics' terms), else none."""
    out = []
    for inst in instances:
        st, kv = getattr(inst, "stats", None), getattr(inst, "kv", None)
        if st is not None and hasattr(st, "queue_integral"):  # already as the metrics read them
            out.append(st)
            continue
        if st is None or not hasattr(st, "waiting_s"):
            return []
        total = float(getattr(kv, "total", 0) or 0)
        out.append(_Use(busy_s=st.busy_s, queue_integral=st.waiting_s,
                        kv_integral=st.kv_block_s / total if total > 0 else 0.0, preemptions=st.preemptions,
                        queue_max=st.max_waiting, elapsed_s=end_s))
    return out


def quantiles(values_s: np.ndarray) -> list[float] | None:
    """The 0th..100th percentiles in ms (101 points) of finite values in seconds; None: none."""
    v = np.asarray(values_s, dtype=float)
    v = v[np.isfinite(v)] * 1e3
    return None if len(v) == 0 else [round(float(x), 3) for x in np.percentile(v, np.arange(101))]


def steady_qps(table: RequestTable, mask: np.ndarray) -> float | None:
    """Completions per second between the first arrival + the median E2E (the fleet filled) and
    the last arrival (before the drain); None when that interval is empty (a run shorter than
    its requests' E2E has no steady part)."""
    rows = rm.selected(table, mask)
    done = rm.finished(table, rows)
    if len(done) < 2:
        return None
    lo = float(table.arrival_s[rows].min()) + float(np.median(rm.e2e_s(table, done)))
    hi = float(table.arrival_s[rows].max())
    if hi <= lo:
        return None
    fin = table.finish_s[done]
    return round(float(np.count_nonzero((fin >= lo) & (fin <= hi))) / (hi - lo), 6)


def _label(p: PoolDoc) -> str:
    return f"{p.role} {p.hardware}{'@' + p.site if p.site else ''} tp{p.tp} pp{p.pp} ep{p.ep} dp{p.dp} b{p.batch}"


def pool_doc(table: RequestTable, mask: np.ndarray, p: PoolDoc, service: str, slo: Slo,
             window: tuple[float, float], stats: list) -> SimulatedPool:
    rep = rm.pool_metrics(table, rm.Selection(service, _label(p), mask, slo, stats=stats), window)
    rows = rm.finished(table, rm.selected(table, mask))
    return SimulatedPool(
        role=p.role, hardware=p.hardware, site=p.site, tp=p.tp, pp=p.pp, ep=p.ep, dp=p.dp, batch=p.batch,
        chunk_tokens=p.chunk_tokens, instances=p.instances, planned_capacity_qps=p.capacity_qps,
        planned_ttft_ms=p.predicted.ttft_ms, planned_tpot_ms=p.predicted.tpot_ms,
        steady_qps=steady_qps(table, mask), replay=rep,
        ttft_quantiles_ms=quantiles(rm.ttft_s(table, rows)), tpot_quantiles_ms=quantiles(rm.tpot_s(table, rows)),
    )


def service_window(table: RequestTable, mask: np.ndarray) -> tuple[float, float]:
    """First measured send to last measured finish of the service's requests."""
    return measurement_window(table, np.flatnonzero(mask))


def service_doc(table: RequestTable, mask: np.ndarray, sr: ServiceResult, slo: Slo, rate_scale: float,
                window: tuple[float, float], pools: list[SimulatedPool]) -> SimulatedService:
    rep = rm.pool_metrics(table, rm.Selection(sr.name, "all", mask, slo), window)
    return SimulatedService(
        name=sr.name, model=sr.model, runtime=sr.runtime, demand_qps=sr.demand_qps,
        offered_qps=round(sr.demand_qps * rate_scale, 6), slo=sr.slo, meets_slo=all(c.met for c in rep.slo),
        steady_qps=steady_qps(table, mask), replay=rep, pools=pools,
    )

"""The `fleetplan simulate` document from a finished replay: per service and per pool the
replay's measurements (solver/replay/metrics.py `pool_metrics`, as the benchmark tools count
them, over the service's measurement window: first measured send to last measured finish),
next to the plan's predictions, plus two things of this command's own:

- `steady_qps`, the steady completion rate: the arrival rate of the requests that arrived
  after the fleet filled and before the drain, divided by how much later each finishes than
  the one before per second of arrival (`steady_qps` says how). The tools' throughput divides
  by the whole window, ramp-up and drain included, which in a short run reads well below the
  arrival rate the fleet keeps up with;
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
    prefix_query_tokens: int = 0
    prefix_hit_tokens: int = 0


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
                        queue_max=st.max_waiting, elapsed_s=end_s,
                        prefix_query_tokens=int(getattr(kv, "query_tokens", 0)),
                        prefix_hit_tokens=int(getattr(kv, "hit_tokens", 0))))
    return out


def quantiles(values_s: np.ndarray) -> list[float] | None:
    """The 0th..100th percentiles in ms (101 points) of finite values in seconds; None: none."""
    v = np.asarray(values_s, dtype=float)
    v = v[np.isfinite(v)] * 1e3
    return None if len(v) == 0 else [round(float(x), 3) for x in np.percentile(v, np.arange(101))]


MIN_STEADY_REQUESTS = 20  # fewer in the filled window: use the middle half of the arrivals


def steady_qps(table: RequestTable, mask: np.ndarray) -> float | None:
    """The completion rate the fleet keeps up with, free of the run's ramp-up and drain.

    Over the finished measured requests that arrived between the first arrival + m and the last
    arrival - m (m: the 90th percentile of E2E: the fleet has filled, and the drain has not yet
    lightened the batches; where that leaves fewer than `MIN_STEADY_REQUESTS`, a run too short
    or a queue that keeps growing, m is a quarter of the arrival span: the middle half, which in
    a short run still holds some of the ramp-up and reads low), it is their arrival rate (count
    / (hi - lo)) divided by the least-squares slope of finish time on arrival time. A fleet that keeps up finishes requests
    as fast as they arrive (slope 1: the arrival rate); one that falls behind finishes them at
    its capacity (each finish later than the one before by 1 / capacity: slope rate / capacity).
    Counting completions between two instants instead reads low after a ramp-up: while the
    batches fill, each request's E2E is longer than its predecessor's, so completions trail
    arrivals (with 2,000 requests at 200 QPS on the default problem such a count gave 159).
    None: fewer than two such requests, or finish times that do not grow with arrival times."""
    rows = rm.finished(table, rm.selected(table, mask))
    if len(rows) < 2:
        return None
    arr = table.arrival_s[rows]
    first, last = float(arr.min()), float(arr.max())
    m = float(np.percentile(rm.e2e_s(table, rows), 90))
    if np.count_nonzero((arr >= first + m) & (arr <= last - m)) < MIN_STEADY_REQUESTS:
        m = (last - first) / 4  # too short a run (or a growing queue): the middle half of the arrivals
    lo, hi = first + m, last - m
    mid = rows[(arr >= lo) & (arr <= hi)]
    if len(mid) < 2 or hi <= lo:
        return None
    a, f = table.arrival_s[mid], table.finish_s[mid]
    da = a - a.mean()
    slope = float(np.dot(da, f - f.mean()) / np.dot(da, da)) if np.dot(da, da) > 0 else 0.0
    if slope <= 0:
        return None
    return round(len(mid) / (hi - lo) / slope, 6)


def _label(p: PoolDoc) -> str:
    extra = (f" cp{p.cp}" if p.cp else "") + (f" +{p.speculative}" if p.speculative else "")
    return f"{p.role} {p.hardware}{'@' + p.site if p.site else ''} tp{p.tp} pp{p.pp} ep{p.ep} dp{p.dp}{extra} b{p.batch}"


def pool_doc(table: RequestTable, mask: np.ndarray, p: PoolDoc, service: str, slo: Slo,
             window: tuple[float, float], stats: list) -> SimulatedPool:
    rep = rm.pool_metrics(table, rm.Selection(service, _label(p), mask, slo, stats=stats), window)
    rows = rm.finished(table, rm.selected(table, mask))
    return SimulatedPool(
        role=p.role, hardware=p.hardware, site=p.site, tp=p.tp, pp=p.pp, ep=p.ep, dp=p.dp, batch=p.batch,
        chunk_tokens=p.chunk_tokens, cp=p.cp, speculative=p.speculative, instances=p.instances,
        planned_capacity_qps=p.capacity_qps,
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

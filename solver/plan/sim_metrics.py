"""Summaries of a replay's request table per service and per pool (the `fleetplan simulate`
document, solver/schema/simulation.py).

Over the measured requests of a group (the window: first measured arrival to last measured
finish, as `vllm bench serve` and aiperf measure a run): latency percentiles, throughput as the
steady completion rate ((n - 1) finishes over the span of the n finishes: at a load the fleet
keeps up with, the arrival rate, whatever the ramp-up and drain of a short run), goodput (share of
requests whose TTFT and TPOT are each within the service's per-request bound: the p99 bound,
or the p50 bound when the SLO gives no p99, in the spirit of DistServe's goodput, Zhong et al.
2024, section 2), queueing (waiting requests: time average by Little's law, and the most at
once), preemptions. A pool's queue and KV use come from its instances' running statistics
(time averages over the whole replay) when they keep them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.replay.requests import RequestTable
from solver.schema.pool import Pool as PoolDoc
from solver.schema.result import ServiceResult, SloBounds
from solver.schema.simulation import Percentiles, ReplayMetrics, SimulatedPool, SimulatedService, SloCheck


def percentiles(values_s: np.ndarray) -> Percentiles:
    """p50 / p90 / p99 / mean in ms of finite values in seconds (numpy's linear percentiles)."""
    v = np.asarray(values_s, dtype=float)
    v = v[np.isfinite(v)] * 1e3
    if len(v) == 0:
        return Percentiles(p50=None, p90=None, p99=None, mean=None)
    q = np.percentile(v, [50, 90, 99])
    return Percentiles(p50=round(float(q[0]), 4), p90=round(float(q[1]), 4), p99=round(float(q[2]), 4),
                       mean=round(float(v.mean()), 4))


def quantiles(values_s: np.ndarray) -> list[float] | None:
    """The 0th..100th percentiles in ms (101 points) of finite values in seconds; None: none."""
    v = np.asarray(values_s, dtype=float)
    v = v[np.isfinite(v)] * 1e3
    return None if len(v) == 0 else [round(float(x), 3) for x in np.percentile(v, np.arange(101))]


def tpot_s(table: RequestTable, ids: np.ndarray) -> np.ndarray:
    """Per request: (last token - first token) / (output tokens - 1); NaN for one-token answers."""
    out = table.output_tokens[ids].astype(float)
    gap = table.finish_s[ids] - table.first_token_s[ids]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(out > 1, gap / np.maximum(out - 1.0, 1.0), np.nan)


def _bound(p50: float | None, p99: float | None) -> float:
    b = p99 if p99 is not None else p50
    return np.inf if b is None else b * 1e-3


def _queue(arrive: np.ndarray, start: np.ndarray, lo: float, hi: float) -> tuple[float, int]:
    """Requests waiting: time average over [lo, hi] and the most at once."""
    if len(arrive) == 0 or hi <= lo:
        return 0.0, 0
    start = np.minimum(start, hi)
    mean = float(np.sum(np.clip(start, lo, hi) - np.clip(arrive, lo, hi)) / (hi - lo))
    t = np.concatenate([arrive, start])
    d = np.concatenate([np.ones(len(arrive)), -np.ones(len(start))])
    order = np.lexsort((d, t))  # at one instant, starts before arrivals
    return round(mean, 4), int(np.cumsum(d[order]).max(initial=0))


@dataclass(frozen=True)
class PoolLoad:
    """A pool's queue and KV use over the replay, from its instances' running statistics."""

    queue_mean: float  # requests waiting, summed over the instances, time average
    queue_max: int  # the most waiting at one instance
    kv_use_mean: float | None  # blocks in use / blocks, time average over the pool
    kv_use_max: float | None  # the highest at one instance (None: not tracked)


def instance_load(instances, end_s: float) -> PoolLoad | None:
    """From `stats` (waiting_s, max_waiting, kv_block_s; optionally max_kv_blocks) and `kv.total`
    of each instance (solver.replay.instance.Instance); None when they do not keep them."""
    stats = [getattr(i, "stats", None) for i in instances]
    if end_s <= 0 or any(st is None or not hasattr(st, "waiting_s") for st in stats):
        return None
    totals = [float(getattr(getattr(i, "kv", None), "total", 0) or 0) for i in instances]
    kv_mean = sum(st.kv_block_s for st in stats) / (sum(totals) * end_s) if sum(totals) > 0 else None
    peaks = [getattr(st, "max_kv_blocks", None) for st in stats]
    kv_max = None if None in peaks or 0 in totals else max(p / t for p, t in zip(peaks, totals))
    return PoolLoad(sum(st.waiting_s for st in stats) / end_s, max(st.max_waiting for st in stats),
                    kv_mean, kv_max)


def metrics(table: RequestTable, mask: np.ndarray, slo: SloBounds, load: PoolLoad | None = None,
            cdf: bool = False) -> ReplayMetrics:
    """The metrics of the requests `mask` selects (measured ones only); `load`: the pool's queue
    and KV use from its instances (else the queue of the requests' own waits); `cdf`: with
    quantiles."""
    ids = np.flatnonzero(mask & table.measured)
    done = ids[np.isfinite(table.finish_s[ids])]
    arr = table.arrival_s[done]
    lo = float(table.arrival_s[ids].min()) if len(ids) else 0.0
    hi = float(table.finish_s[done].max()) if len(done) else lo
    window = max(hi - lo, 0.0)
    ttft = table.first_token_s[done] - arr
    tpot = tpot_s(table, done)
    good = (ttft <= _bound(slo.ttft_p50_ms, slo.ttft_p99_ms)) & ~(tpot > _bound(slo.tpot_p50_ms, slo.tpot_p99_ms))
    has_slo = any(b is not None for b in (slo.ttft_p50_ms, slo.ttft_p99_ms, slo.tpot_p50_ms, slo.tpot_p99_ms))
    fin = np.sort(table.finish_s[done])
    span = float(fin[-1] - fin[0]) if len(fin) > 1 else 0.0
    per = (len(fin) - 1) / len(fin) if len(fin) > 1 else 0.0  # n finishes span n - 1 gaps

    def rate(k: float) -> float:
        return round(k * per / span, 6) if span > 0 else 0.0

    if load is None:
        q_mean, q_max = _queue(table.arrival_s[ids], table.arrival_s[ids] + table.queued_s[ids], lo, hi)
    else:
        q_mean, q_max = round(load.queue_mean, 4), load.queue_max
    return ReplayMetrics(
        requests=len(done), unfinished=len(ids) - len(done), window_s=round(window, 6),
        ttft_ms=percentiles(ttft), tpot_ms=percentiles(tpot), e2e_ms=percentiles(table.finish_s[done] - arr),
        queued_ms=percentiles(table.queued_s[done]), throughput_qps=rate(len(done)),
        output_tokens_per_s=rate(float(table.output_tokens[done].sum())),
        goodput=round(float(good.mean()), 6) if has_slo and len(done) else None,
        goodput_qps=rate(int(good.sum())) if has_slo else None,
        queue_mean=q_mean, queue_max=q_max, preemptions=int(table.preemptions[ids].sum()),
        kv_use_mean=_r(None if load is None else load.kv_use_mean),
        kv_use_max=_r(None if load is None else load.kv_use_max),
        ttft_quantiles_ms=quantiles(ttft) if cdf else None, tpot_quantiles_ms=quantiles(tpot) if cdf else None,
    )


def slo_checks(m: ReplayMetrics, slo: SloBounds) -> list[SloCheck]:
    out = []
    for metric, bound, got in (("ttft_p50_ms", slo.ttft_p50_ms, m.ttft_ms.p50), ("ttft_p99_ms", slo.ttft_p99_ms, m.ttft_ms.p99),
                               ("tpot_p50_ms", slo.tpot_p50_ms, m.tpot_ms.p50), ("tpot_p99_ms", slo.tpot_p99_ms, m.tpot_ms.p99)):
        if bound is not None:
            out.append(SloCheck(metric=metric, bound_ms=bound, simulated_ms=got, met=got is not None and got <= bound))
    return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def pool_doc(table: RequestTable, mask: np.ndarray, p: PoolDoc, slo: SloBounds,
             load: PoolLoad | None = None) -> SimulatedPool:
    return SimulatedPool(
        role=p.role, hardware=p.hardware, site=p.site, tp=p.tp, pp=p.pp, ep=p.ep, dp=p.dp, batch=p.batch,
        chunk_tokens=p.chunk_tokens, instances=p.instances, planned_capacity_qps=p.capacity_qps,
        planned_ttft_ms=p.predicted.ttft_ms, planned_tpot_ms=p.predicted.tpot_ms,
        metrics=metrics(table, mask, slo, load, cdf=True),
    )


def service_doc(table: RequestTable, mask: np.ndarray, sr: ServiceResult, slo: SloBounds, rate_scale: float,
                pools: list[SimulatedPool]) -> SimulatedService:
    m = metrics(table, mask, slo)
    checks = slo_checks(m, slo)
    return SimulatedService(
        name=sr.name, model=sr.model, runtime=sr.runtime, demand_qps=sr.demand_qps,
        offered_qps=round(sr.demand_qps * rate_scale, 6), slo=slo, slo_checks=checks,
        meets_slo=all(c.met for c in checks), metrics=m, pools=pools,
    )

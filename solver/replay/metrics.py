"""A replay's measurements from its request table, as the benchmark tools compute them.

Definitions (vLLM `vllm/benchmarks/serve.py` `calculate_metrics`, vllm-project/vllm at
009e6d4a; aiperf 0.1.1 `aiperf/metrics/types/`; both agree on these):
- TTFT = first token - send, E2E = last token - send (the client's clock: `arrival_s` is the
  send), over the measured requests that finished;
- TPOT per request = (E2E - TTFT) / (output tokens - 1), over requests with more than one
  output token (aiperf calls it inter-token latency);
- percentiles: `np.percentile`, linear interpolation, over requests;
- throughput = finished requests / measurement window, output tok/s likewise; the window is
  first send to last finish of the measured requests (`measurement_window`);
- goodput (vLLM `--goodput`, aiperf `--goodput`): a request is good when each of its TTFT, TPOT
  (0 for a single output token) and E2E is at or below its threshold; the share of good
  requests among those that finished. A problem's SLO is a percentile bound, which no single
  request can meet or miss; `request_bounds` takes its p99 bound as the per-request threshold
  (the p50 bound where only that is given), and `slo_checks` compares the replay's percentiles
  with every bound directly.
- mean requests in system: the time average of requests in flight over the window (SGLang's
  bench_serving reports the same as "concurrency" = sum of E2E / duration); by Little's law it
  equals throughput x mean E2E when every request starts and ends inside the window.

Instance statistics (`InstanceStats`, written by the instance) are optional: each has
`busy_s` (seconds with an iteration running), `queue_integral` (integral over time of the
waiting-queue length, request-seconds), `kv_integral` (integral of the share of KV blocks in use,
seconds), `preemptions` (count), and may have `queue_max`, `kv_max`, `elapsed_s` (the
seconds the integrals cover; the replay's last finish when absent) and `prefix_query_tokens` /
`prefix_hit_tokens` (prompt tokens looked up in the prefix cache, and found).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from solver.replay.requests import RequestTable
from solver.replay.sources.open_loop import measurement_window
from solver.schema.problem import Slo
from solver.schema.replay import (
    InstanceUse,
    LatencyStats,
    PoolReplay,
    ReplayReport,
    RequestBounds,
    SloCheck,
)

MS = 1000.0  # ms per s


class InstanceStats(Protocol):
    busy_s: float
    queue_integral: float
    kv_integral: float
    preemptions: int


def selected(table: RequestTable, mask: np.ndarray | None = None) -> np.ndarray:
    """Rows that are measured (and in `mask`, a boolean array over the table's rows)."""
    keep = table.measured.copy()
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != keep.shape:
            raise ValueError(f"mask of {m.shape} rows for a table of {len(table)}")
        keep &= m
    return np.nonzero(keep)[0]


def finished(table: RequestTable, rows: np.ndarray) -> np.ndarray:
    return rows[np.isfinite(table.finish_s[rows])]


def ttft_s(table: RequestTable, rows: np.ndarray) -> np.ndarray:
    return table.first_token_s[rows] - table.arrival_s[rows]


def e2e_s(table: RequestTable, rows: np.ndarray) -> np.ndarray:
    return table.finish_s[rows] - table.arrival_s[rows]


def tpot_s(table: RequestTable, rows: np.ndarray, single_as_zero: bool = False) -> np.ndarray:
    """Per-request TPOT; requests with one output token are dropped (or 0 with
    `single_as_zero`, as vLLM's goodput counts them)."""
    out = table.output_tokens[rows]
    multi = out > 1
    t = np.zeros(len(rows))
    t[multi] = (table.finish_s[rows][multi] - table.first_token_s[rows][multi]) / (out[multi] - 1)
    return t if single_as_zero else t[multi]


def latency_stats(values_s: np.ndarray) -> LatencyStats | None:
    """Mean, p50, p90, p99 and max in ms (None for no values)."""
    v = np.asarray(values_s, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    p50, p90, p99 = np.percentile(v, [50, 90, 99]) * MS
    return LatencyStats(count=len(v), mean_ms=float(v.mean() * MS), p50_ms=float(p50), p90_ms=float(p90),
                        p99_ms=float(p99), max_ms=float(v.max() * MS))


def request_bounds(slo: Slo | None) -> RequestBounds | None:
    """Per-request thresholds from a problem's SLO: each metric's p99 bound, else its p50."""
    if slo is None:
        return None
    pick = {name: (b.p99 if b.p99 is not None else b.p50) if b is not None else None
            for name, b in (("ttft_ms", slo.ttft_ms), ("tpot_ms", slo.tpot_ms))}
    if all(v is None for v in pick.values()):
        return None
    return RequestBounds(**pick)


def good(table: RequestTable, rows: np.ndarray, bounds: RequestBounds) -> np.ndarray:
    """Boolean per row of `rows` (finished ones): within every given threshold."""
    ok = np.ones(len(rows), dtype=bool)
    if bounds.ttft_ms is not None:
        ok &= ttft_s(table, rows) * MS <= bounds.ttft_ms
    if bounds.tpot_ms is not None:
        ok &= tpot_s(table, rows, single_as_zero=True) * MS <= bounds.tpot_ms
    if bounds.e2e_ms is not None:
        ok &= e2e_s(table, rows) * MS <= bounds.e2e_ms
    return ok


def slo_checks(ttft: LatencyStats | None, tpot: LatencyStats | None, slo: Slo | None) -> list[SloCheck]:
    """Every percentile bound of `slo` against the replay's percentile of that metric."""
    out: list[SloCheck] = []
    if slo is None:
        return out
    for metric, bound, stats in (("ttft", slo.ttft_ms, ttft), ("tpot", slo.tpot_ms, tpot)):
        if bound is None:
            continue
        for q in ("p50", "p99"):
            limit = getattr(bound, q)
            if limit is None:
                continue
            sim = None if stats is None else getattr(stats, f"{q}_ms")
            out.append(SloCheck(metric=metric, quantile=q, bound_ms=float(limit), simulated_ms=sim,
                                met=sim is not None and sim <= limit))
    return out


def mean_in_system(table: RequestTable, rows: np.ndarray, window: tuple[float, float]) -> float:
    """Time-average number of `rows` in flight (sent, not finished) over `window`."""
    t0, t1 = window
    if t1 <= t0 or not len(rows):
        return 0.0
    start = np.maximum(table.arrival_s[rows], t0)
    end = np.minimum(table.finish_s[rows], t1)  # unfinished: inf, held until the window's end
    return float(np.clip(end - start, 0.0, None).sum() / (t1 - t0))


def littles_law(table: RequestTable, rows: np.ndarray, window: tuple[float, float]) -> tuple[float, float]:
    """(time-average in system, throughput x mean E2E) over the finished `rows`: equal when they
    all start and end inside the window."""
    done = finished(table, rows)
    t0, t1 = window
    if t1 <= t0 or not len(done):
        return 0.0, 0.0
    lam = len(done) / (t1 - t0)
    return mean_in_system(table, done, window), float(lam * e2e_s(table, done).mean())


def instance_use(stats: Sequence, end_s: float) -> InstanceUse | None:
    """Time averages over instances' statistics (see the module docstring)."""
    if not stats:
        return None
    el = np.array([float(getattr(s, "elapsed_s", end_s) or end_s) for s in stats])
    el = np.where(el > 0, el, np.nan)
    busy = np.array([s.busy_s for s in stats]) / el
    queue = np.array([s.queue_integral for s in stats]) / el
    kv = np.array([s.kv_integral for s in stats]) / el
    qmax = [getattr(s, "queue_max", None) for s in stats]
    kmax = [getattr(s, "kv_max", None) for s in stats]

    def mean(a):
        return float(np.nanmean(a)) if np.isfinite(a).any() else None

    queried = sum(int(getattr(s, "prefix_query_tokens", 0) or 0) for s in stats)
    hits = sum(int(getattr(s, "prefix_hit_tokens", 0) or 0) for s in stats)
    return InstanceUse(instances=len(stats), busy_share=mean(busy), mean_queue_len=mean(queue),
                       max_queue_len=None if None in qmax else float(max(qmax)), mean_kv_use=mean(kv),
                       max_kv_use=None if None in kmax else float(max(kmax)),
                       preemptions=int(sum(int(s.preemptions) for s in stats)),
                       prefix_hit_rate=hits / queried if queried else None)


@dataclass(frozen=True)
class Selection:
    """One row of the report: a service's pool (or the whole service) as a boolean mask over the
    table's rows (None: all rows), its SLO, explicit per-request bounds (default: from the SLO)
    and the statistics of its instances."""

    service: str
    pool: str
    mask: np.ndarray | None = None
    slo: Slo | None = None
    bounds: RequestBounds | None = None
    stats: Sequence = field(default_factory=tuple)


def pool_metrics(table: RequestTable, sel: Selection, window: tuple[float, float]) -> PoolReplay:
    """The measurements over one selection, in the given measurement window."""
    rows = selected(table, sel.mask)
    done = finished(table, rows)
    span = max(window[1] - window[0], 0.0)
    per_s = 1.0 / span if span > 0 else 0.0
    ttft = latency_stats(ttft_s(table, done))
    tpot = latency_stats(tpot_s(table, done))
    bounds = sel.bounds if sel.bounds is not None else request_bounds(sel.slo)
    share = None
    n_good = 0
    if bounds is not None and len(done):
        n_good = int(good(table, done, bounds).sum())
        share = n_good / len(done)
    end_s = float(np.max(table.finish_s[np.isfinite(table.finish_s)], initial=window[1]))
    return PoolReplay(
        service=sel.service, pool=sel.pool, requests=len(done), unfinished=len(rows) - len(done),
        window_s=span, throughput_rps=len(done) * per_s,
        input_tokens_per_s=float(table.prompt_tokens[done].sum()) * per_s,
        output_tokens_per_s=float(table.output_tokens[done].sum()) * per_s,
        ttft=ttft, tpot=tpot, e2e=latency_stats(e2e_s(table, done)),
        queue_wait=latency_stats(table.queued_s[done]), bounds=bounds, goodput_share=share,
        goodput_rps=None if share is None else n_good * per_s, slo=slo_checks(ttft, tpot, sel.slo),
        mean_in_system=mean_in_system(table, rows, window), preemptions=int(table.preemptions[rows].sum()),
        instances=instance_use(list(sel.stats), end_s))


def replay_report(table: RequestTable, source, selections: Sequence[Selection],
                  seed: int | None = None) -> ReplayReport:
    """What `fleetplan simulate` prints: one `PoolReplay` per selection, all over the source's
    measurement window (`source.window()` when it has one, else first measured send to last
    measured finish over the whole table)."""
    window = source.window() if hasattr(source, "window") else measurement_window(table)
    label = source.describe() if hasattr(source, "describe") else type(source).__name__
    return ReplayReport(source=label, seed=seed, window_start_s=window[0], window_end_s=window[1],
                        requests_total=len(table), requests_measured=int(table.measured.sum()),
                        pools=[pool_metrics(table, s, window) for s in selections])

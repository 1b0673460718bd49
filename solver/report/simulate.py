"""`fleetplan simulate`'s renderings of its document (solver/schema/simulation.py): the table,
the JSON, the PNG of TTFT and TPOT CDFs per pool with the SLO bounds marked; and its progress
bar on stderr (drawn only when stderr is a terminal)."""

from __future__ import annotations

import time
from typing import TextIO

from solver import files
from solver.report.plots import _figure, _plain, require_matplotlib
from solver.report.text import table
from solver.schema.replay import PoolReplay
from solver.schema.simulation import SimulatedPool, SimulatedService, SimulationResult

HEADERS = ("role", "hardware", "parallel", "inst", "reqs", "QPS", "TTFT p50", "p90", "p99",
           "TPOT p50", "p90", "p99", "E2E p50", "p99", "good", "queue", "KV", "preempt")


def to_json(doc: SimulationResult) -> str:
    return doc.model_dump_json(indent=2) + "\n"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _lat(st, q: str) -> float | None:
    return None if st is None else getattr(st, f"{q}_ms")


def _row(role: str, hw: str, parallel: str, inst: int | None, qps: float | None, r: PoolReplay) -> list[object]:
    u = r.instances
    queue = kv = "-"
    if u is not None and u.mean_queue_len is not None:
        queue = f"{u.mean_queue_len:.1f}" + ("" if u.max_queue_len is None else f"/{u.max_queue_len:.0f}")
    if u is not None and u.mean_kv_use is not None:
        kv = f"{100 * u.mean_kv_use:.0f}%" + ("" if u.max_kv_use is None else f"/{100 * u.max_kv_use:.0f}%")
    return [role, hw, parallel, inst, r.requests, qps, _lat(r.ttft, "p50"), _lat(r.ttft, "p90"), _lat(r.ttft, "p99"),
            _lat(r.tpot, "p50"), _lat(r.tpot, "p90"), _lat(r.tpot, "p99"), _lat(r.e2e, "p50"), _lat(r.e2e, "p99"),
            _pct(r.goodput_share), queue, kv, r.preemptions]


def _parallel(p: SimulatedPool) -> str:
    extra = "".join(f" {k}{v}" for k, v in (("ep", p.ep), ("dp", p.dp)) if v > 1)
    extra += (f" cp{p.cp}" if p.cp else "") + (f" +{p.speculative}" if p.speculative else "")
    return f"tp{p.tp} pp{p.pp}{extra}" + (f" c{p.chunk_tokens}" if p.chunk_tokens else "")


def _checks(s: SimulatedService) -> str:
    parts = [f"{c.metric.upper()} {c.quantile} {'-' if c.simulated_ms is None else f'{c.simulated_ms:,.0f}'}"
             f"/{c.bound_ms:,.0f}{'' if c.met else ' MISSED'}" for c in s.replay.slo]
    return "; ".join(parts) if parts else "no SLO bounds"


def service_text(s: SimulatedService) -> str:
    r = s.replay
    steady = "-" if s.steady_qps is None else f"{s.steady_qps:,.4g}"
    head = (f"service '{s.name}' ({s.model}, {s.runtime}): offered {s.offered_qps:,.4g} QPS, served "
            f"{steady} QPS steady ({r.throughput_rps:,.4g} over the {r.window_s:,.1f} s window); "
            f"goodput {_pct(r.goodput_share)}; SLO {'met' if s.meets_slo else 'MISSED'} ({_checks(s)})")
    if r.unfinished:
        head += f"; {r.unfinished} requests unfinished"
    rows = [_row("service", "-", "-", None, s.steady_qps, r)]
    rows += [_row(p.role, p.hardware + (f"@{p.site}" if p.site else ""), _parallel(p), p.instances, p.steady_qps,
                  p.replay) for p in s.pools]
    hits = [f"{p.role} {_parallel(p)} {100 * p.replay.instances.prefix_hit_rate:.1f}%" for p in s.pools
            if p.replay.instances is not None and p.replay.instances.prefix_hit_rate is not None]
    tail = ("\nprefix cache hit rate (prompt tokens found cached): " + ", ".join(hits)) if hits else ""
    return head + "\n" + table(HEADERS, rows) + tail


def simulate_text(doc: SimulationResult) -> str:
    wall = "" if doc.wall_s is None else f", {doc.wall_s:.2f} s wall"
    n = "" if doc.requests_per_service is None else f"{doc.requests_per_service:,} requests per service, "
    head = (f"{doc.problem}: replay of the {doc.plan_status} plan (${doc.cost_per_hour:,.2f}/hour): {doc.arrival} "
            f"arrivals at {doc.rate_scale:g} x demand, {n}seed "
            f"{doc.seed}, router {doc.router}; {doc.simulated_s:,.1f} s simulated, {doc.events:,} events{wall}")
    body = "\n\n".join(service_text(s) for s in doc.services)
    foot = ("latencies in ms over the measured requests; QPS: steady completion rate; good: share of requests "
            "within every per-request bound (p99, else p50); queue: requests waiting per instance, mean/max; "
            "KV: share of KV blocks in use, mean")
    return f"{head}\n\n{body}\n\n{foot}\n"


# ---- the plot ----------------------------------------------------------------------------------


def _cdf(ax, q: list[float] | None, label: str) -> None:
    if q:
        ax.plot(q, [i / 100 for i in range(len(q))], label=_plain(label), linewidth=1.4)


def _bounds(ax, p50: float | None, p99: float | None) -> None:
    for b, y, ls, q in ((p50, 0.5, "--", "p50"), (p99, 0.99, ":", "p99")):
        if b is not None:
            ax.axvline(b, color="tab:red", linestyle=ls, linewidth=1.0, label=f"SLO {q} bound")
            ax.plot([b], [y], marker="o", color="tab:red", markersize=4)


def simulate_figure(doc: SimulationResult):
    """One row per service: TTFT CDFs (left) and TPOT CDFs (right), a curve per pool; the SLO
    bounds as red lines (dashed p50, dotted p99) with a dot at the quantile they bound."""
    n = len(doc.services)
    fig = _figure(11, 3.4 * n + 0.6)
    for k, s in enumerate(doc.services):
        for j, (metric, lo, hi) in enumerate((("ttft", s.slo.ttft_p50_ms, s.slo.ttft_p99_ms),
                                             ("tpot", s.slo.tpot_p50_ms, s.slo.tpot_p99_ms))):
            ax = fig.add_subplot(n, 2, 2 * k + j + 1)
            for p in s.pools:
                q = getattr(p, f"{metric}_quantiles_ms")
                _cdf(ax, q, f"{p.role} {p.hardware} tp{p.tp} pp{p.pp} x{p.instances}")
            _bounds(ax, lo, hi)
            ax.set_title(_plain(f"{s.name}: {metric.upper()}"), fontsize=9)
            ax.set_xlabel("ms", fontsize=8)
            ax.set_ylabel("share of requests", fontsize=8)
            ax.set_ylim(0, 1.01)
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(_plain(f"{doc.problem}: replay, {doc.arrival} at {doc.rate_scale:g} x demand (seed {doc.seed})"),
                 fontsize=10)
    fig.tight_layout()
    return fig


def simulate_png(doc: SimulationResult, path: str, flag: str = "--plot") -> None:
    require_matplotlib(flag)
    fig = simulate_figure(doc)
    with files.replacing(path, flag) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})


# ---- progress ----------------------------------------------------------------------------------


class Progress:
    """Requests finished out of `total`, a bar redrawn in place on a terminal (else nothing)."""

    WIDTH = 28
    REDRAW_S = 0.1

    def __init__(self, total: int, stream: TextIO | None) -> None:
        """`total` 0: unknown (a count without a bar)."""
        tty = stream is not None and bool(getattr(stream, "isatty", lambda: False)())
        self.stream = stream if tty else None
        self.total = total
        self.done = 0
        self._last = 0.0

    def advance(self, k: int) -> None:
        self.done += k
        if self.stream is None:
            return
        now = time.monotonic()
        if now - self._last >= self.REDRAW_S or self.done == self.total:
            self._last = now
            if self.total > 0:
                filled = min(self.WIDTH, self.WIDTH * self.done // self.total)
                text = f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {self.done:,}/{self.total:,}"
            else:
                text = f"{self.done:,}"
            self.stream.write(f"\rsimulate {text} requests finished\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

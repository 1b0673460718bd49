"""The document of a replay's measurements (`fleetplan simulate`): per service and pool,
latency percentiles, throughput, goodput, queues, KV use and preemptions, as
`solver/replay/metrics.py` computes them from the request table."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.pool import Doc


class LatencyStats(Strict):
    """Milliseconds over requests; percentiles with linear interpolation (numpy's default, as
    `vllm bench serve` and aiperf report them)."""

    count: int = Field(ge=0, description="requests the statistics are over")
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float


class RequestBounds(Strict):
    """Per-request thresholds in ms: a request is good when its TTFT, TPOT and E2E are each at or
    below the threshold given (vLLM `--goodput`); None: no threshold on that metric."""

    ttft_ms: float | None = Field(None, gt=0)
    tpot_ms: float | None = Field(None, gt=0)
    e2e_ms: float | None = Field(None, gt=0)


class SloCheck(Strict):
    """One of the problem's percentile bounds against the replay's percentile."""

    metric: Literal["ttft", "tpot", "e2e"]
    quantile: Literal["p50", "p90", "p99"]
    bound_ms: float
    simulated_ms: float | None = Field(description="None: no request to measure it on")
    met: bool


class InstanceUse(Doc):
    """Time averages over the pool's instances (from their statistics, when the server gives
    them): busy share of time, waiting-queue length, share of KV blocks in use; with prefix
    caching, the share of prompt tokens its caches found."""

    _omit_when_none = frozenset({"prefix_hit_rate"})

    instances: int = Field(ge=0)
    busy_share: float | None = Field(None, ge=0, description="mean over instances of busy seconds / elapsed")
    mean_queue_len: float | None = Field(None, ge=0, description="requests waiting, time average per instance")
    max_queue_len: float | None = Field(None, ge=0, description="largest on any instance")
    mean_kv_use: float | None = Field(None, ge=0, description="share of KV blocks in use, time average")
    max_kv_use: float | None = Field(None, ge=0)
    preemptions: int = Field(0, ge=0, description="as the instances counted them (all requests)")
    prefix_hit_rate: float | None = Field(
        None, ge=0, le=1, description="prompt tokens found in the instances' prefix caches / prompt tokens "
        "looked up (vLLM's prefix_cache_hits / prefix_cache_queries), all requests; absent without prefix caching")


class PoolReplay(Strict):
    """A replay's measurements over one selection of requests (a service, or one of its pools),
    over the measured requests in the harness's measurement window."""

    service: str
    pool: str
    requests: int = Field(ge=0, description="measured requests that finished")
    unfinished: int = Field(ge=0, description="measured requests still in flight when the replay ended")
    window_s: float = Field(ge=0, description="measurement window: first send to last finish")
    throughput_rps: float = Field(ge=0, description="finished requests / window")
    input_tokens_per_s: float = Field(ge=0)
    output_tokens_per_s: float = Field(ge=0)
    ttft: LatencyStats | None = None
    tpot: LatencyStats | None = Field(None, description="per request (e2e - ttft) / (output tokens - 1)")
    e2e: LatencyStats | None = None
    queue_wait: LatencyStats | None = Field(None, description="arrival to first scheduled iteration")
    bounds: RequestBounds | None = None
    goodput_share: float | None = Field(None, ge=0, le=1, description="share of finished measured requests "
                                        "within every per-request bound")
    goodput_rps: float | None = Field(None, ge=0)
    slo: list[SloCheck] = []
    mean_in_system: float = Field(ge=0, description="time-average requests in flight over the window "
                                  "(Little's law: throughput x mean E2E when all finish inside it)")
    preemptions: int = Field(ge=0, description="preemptions of the selected measured requests")
    instances: InstanceUse | None = None


class ReplayReport(Strict):
    """What `fleetplan simulate` prints: the source, its window and one entry per selection."""

    source: str
    seed: int | None = None
    window_start_s: float
    window_end_s: float
    requests_total: int = Field(ge=0, description="requests sent, warm-up included")
    requests_measured: int = Field(ge=0)
    pools: list[PoolReplay]

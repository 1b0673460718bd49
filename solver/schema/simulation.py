"""The result of `fleetplan simulate`: a planned fleet replayed request by request.

Per service and per pool: latency percentiles (TTFT, TPOT, end to end), throughput, goodput,
queueing, KV use and preemptions, over the requests inside the measurement window; and the
service's SLO bounds with whether the simulated percentiles meet them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.pool import Doc, Role
from solver.schema.result import SloBounds


class Percentiles(Strict):
    """A latency's distribution over requests, in ms (None: no request has it)."""

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None


class ReplayMetrics(Doc):
    """What a group of requests (a service's, a pool's) saw in the replay."""

    _omit_when_none = frozenset({"kv_use_mean", "kv_use_max", "ttft_quantiles_ms", "tpot_quantiles_ms"})

    requests: int = Field(description="requests measured (inside the window) and finished")
    unfinished: int = Field(description="measured requests that never finished (the replay ended)")
    window_s: float = Field(description="first measured arrival to last measured finish, simulated s")
    ttft_ms: Percentiles
    tpot_ms: Percentiles = Field(description="per request: (last token - first token) / (output tokens - 1)")
    e2e_ms: Percentiles
    queued_ms: Percentiles = Field(description="arrival to the first scheduled iteration")
    throughput_qps: float = Field(description="the steady completion rate: (finished - 1) / (last finish - "
                                  "first finish), free of the window's ramp-up and drain")
    output_tokens_per_s: float = Field(description="output tokens per second at the same rate")
    goodput: float | None = Field(description="share of requests within every per-request bound of the SLO "
                                  "(each latency at most its p99 bound, or its p50 bound when no p99 is given)")
    goodput_qps: float | None
    queue_mean: float = Field(description="requests waiting on average: a service's over the window (from "
                              "their waits, Little's law); a pool's summed over its instances, over the replay")
    queue_max: int = Field(description="most requests waiting at once (a pool's: at one instance)")
    preemptions: int
    kv_use_mean: float | None = Field(None, description="pools: KV blocks in use / blocks, time average, [0, 1]")
    kv_use_max: float | None = Field(None, description="pools: the peak share at one instance")
    ttft_quantiles_ms: list[float] | None = Field(
        None, description="pools: TTFT at the 0th, 1st, ..., 100th percentile (the CDF the plot draws)")
    tpot_quantiles_ms: list[float] | None = None


class SloCheck(Strict):
    """One SLO bound against the simulated percentile."""

    metric: Literal["ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"]
    bound_ms: float
    simulated_ms: float | None
    met: bool


class SimulatedPool(Doc):
    _omit_when_none = frozenset({"site", "chunk_tokens"})

    role: Role
    hardware: str
    site: str | None = None
    tp: int
    pp: int
    ep: int
    dp: int
    batch: int
    chunk_tokens: int | None = None
    instances: int
    planned_capacity_qps: float
    planned_ttft_ms: float | None = Field(description="the plan's p50 TTFT prediction")
    planned_tpot_ms: float | None = Field(description="the plan's p50 TPOT prediction")
    metrics: ReplayMetrics


class SimulatedService(Strict):
    name: str
    model: str
    runtime: Literal["colocated", "disaggregated", "mixed"]
    demand_qps: float = Field(description="the planned demand")
    offered_qps: float = Field(description="the arrival rate replayed: demand x rate scale (open loop)")
    slo: SloBounds
    slo_checks: list[SloCheck]
    meets_slo: bool = Field(description="every SLO bound met by the simulated percentiles")
    metrics: ReplayMetrics
    pools: list[SimulatedPool]


class SimulationResult(Strict):
    problem: str
    plan_status: Literal["optimal", "feasible"]
    cost_per_hour: float
    arrival: str = Field(description="poisson, gamma:CV, trace:FILE or closed:N")
    rate_scale: float
    requests_per_service: int
    seed: int
    router: str = Field(description="the policy of every pool's router")
    simulated_s: float = Field(description="simulated time of the whole replay")
    events: int
    wall_s: float | None = Field(description="None with --no-timings")
    services: list[SimulatedService]
    fleetplan_version: str

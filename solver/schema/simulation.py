"""The result of `fleetplan simulate`: a planned fleet replayed request by request.

Per service and per pool the replay's measurements (`replay`, solver/schema/replay.py: latency
percentiles of TTFT, TPOT and end to end, throughput, goodput, queueing, KV use, preemptions,
the SLO checks), next to what the plan predicted; the pools' TTFT and TPOT quantiles (the CDFs
`--plot` draws).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.pool import Doc, Role
from solver.schema.replay import PoolReplay
from solver.schema.result import SloBounds


class SimulatedPool(Doc):
    _omit_when_none = frozenset({"site", "chunk_tokens", "ttft_quantiles_ms", "tpot_quantiles_ms", "cp",
                                 "speculative"})

    role: Role
    hardware: str
    site: str | None = None
    tp: int
    pp: int
    ep: int
    dp: int
    batch: int
    chunk_tokens: int | None = None
    cp: int | None = Field(None, ge=2, description="context-parallel ranks (absent: 1)")
    speculative: str | None = Field(None, description="the speculative decoding method (absent: none)")
    instances: int
    planned_capacity_qps: float
    planned_ttft_ms: float | None = Field(description="the plan's p50 TTFT prediction")
    planned_tpot_ms: float | None = Field(description="the plan's p50 TPOT prediction")
    steady_qps: float | None = Field(description="the steady completion rate (free of a run's ramp-up and drain): "
                                     "over the requests that arrived after the fleet filled and before the drain, "
                                     "their arrival rate / the slope of finish time on arrival time (the arrival "
                                     "rate when the fleet keeps up, its capacity when a queue grows); None: finish "
                                     "times do not grow with arrival times")
    replay: PoolReplay
    ttft_quantiles_ms: list[float] | None = Field(
        None, description="TTFT at the 0th, 1st, ..., 100th percentile (the CDF --plot draws)")
    tpot_quantiles_ms: list[float] | None = None


class SimulatedService(Strict):
    name: str
    model: str
    runtime: Literal["colocated", "disaggregated", "mixed"]
    demand_qps: float = Field(description="the planned demand")
    offered_qps: float = Field(description="the arrival rate replayed: demand x rate scale (open loop)")
    slo: SloBounds
    meets_slo: bool = Field(description="every SLO bound met by the simulated percentiles (replay.slo)")
    steady_qps: float | None = Field(description="as the pools' steady_qps, over the service's requests")
    replay: PoolReplay
    pools: list[SimulatedPool]


class SimulationResult(Strict):
    problem: str
    plan_status: Literal["optimal", "feasible"]
    cost_per_hour: float
    arrival: str = Field(description="poisson, gamma:CV, trace:FILE, closed:N or workload (each service "
                         "its own)")
    rate_scale: float
    requests_per_service: int | None = Field(description="--requests; None: the arrival's default (2,000 for "
                                             "open loops, 10 per client for closed ones, the whole trace)")
    seed: int
    router: str = Field(description="the policy of every pool's router")
    simulated_s: float = Field(description="simulated time of the whole replay")
    events: int
    wall_s: float | None = Field(description="None with --no-timings")
    services: list[SimulatedService]
    fleetplan_version: str

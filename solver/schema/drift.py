"""The drift section of a re-plan (`fleetplan plan PROBLEM --current RESULT.json --measured
FILES`): which bounds of the running plan no longer hold under the new measurements, the time
dilation each pool's re-plan was made with, and what the re-plan changes."""

from __future__ import annotations

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.bench_compare import MeasuredLatency
from solver.schema.pool import Role


class DriftPool(Strict):
    pool: int = Field(description="the pool's number in the running plan (1-based)")
    service: str
    role: Role
    hardware: str
    sources: list[str] = Field(description="the measured files (FILE and the part of it) of this pool")
    latencies: list[MeasuredLatency] = Field(description="measured against the running plan (plan_compare)")
    violated: list[str] = Field(description="metrics whose SLO bound the measurement breaks")
    outside_band: list[str] = Field(description="metrics measured outside the plan's error band")
    factor: float = Field(gt=0, description="time dilation the re-plan applies to this pool's "
                          "service, role and hardware: measured / predicted p50 of the pool's stage "
                          "where outside the band, else 1")


class PoolChange(Strict):
    service: str
    role: Role
    hardware: str
    devices_before: int
    devices_after: int
    instances_before: int
    instances_after: int


class Drift(Strict):
    current: str = Field(description="the running plan (RESULT.json)")
    measured: list[str] = Field(description="the measured files")
    method: str = Field(description="how the re-plan takes the measurements into account")
    pools: list[DriftPool]
    bounds_hold: bool = Field(description="every measured latency within its SLO bound")
    changes: list[PoolChange] = Field(description="per service, role and hardware type: the running "
                                      "plan's devices and instances against the re-plan's")

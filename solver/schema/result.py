"""The result document (SPEC "Result document"); fields beyond SPEC are marked as extensions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.cards import Precision
from solver.schema.decision import DecisionRecord, Fallback

Role = Literal["prefill", "decode", "colocated"]


class Predicted(Strict):
    ttft_ms: float | None = Field(description="p50 TTFT at the planned load")
    tpot_ms: float | None = Field(description="p50 TPOT at the planned load")
    memory_gib_per_device: float
    # extensions
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None


class Pool(Strict):
    role: Role
    hardware: str
    tp: int
    pp: int
    ep: int
    dp: int
    devices_per_instance: int
    instances: int
    devices: int
    batch: int
    capacity_qps: float
    cost_per_hour: float
    predicted: Predicted
    # extensions
    precision: Precision
    chunk_tokens: int | None = Field(None, description="colocated: prefill tokens per iteration")
    power_kw: float
    capacity_qps_per_instance: float


class SloBounds(Strict):
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None


class ServiceResult(Strict):
    name: str
    model: str
    demand_qps: float
    capacity_qps: float
    runtime: Literal["colocated", "disaggregated", "mixed"] = Field(
        description="mixed (extension): part of the traffic colocated, part disaggregated"
    )
    prefill_decode_ratio: float | None
    pools: list[Pool]
    # extensions
    colocated_qps: float
    disaggregated_qps: float
    slo: SloBounds
    cost_per_hour: float
    devices: int
    routing: str | None = Field(None, description="MoE models: the routing the plan assumed")


class Objective(Strict):
    kind: Literal["min_cost", "max_throughput"]
    value: float = Field(description="min_cost: USD/hour; max_throughput: multiple of the demand mix")


class PruneCounts(Strict):
    invalid: int
    topology: int
    memory: int
    slo: int
    dominated: int


class StageInfo(Strict):
    name: str
    status: str
    value: float


class SolverInfo(Strict):
    wall_s: float | None
    candidates_evaluated: int
    candidates_in_model: int
    gap: float
    # extensions
    pruned: PruneCounts
    stages: list[StageInfo]
    seed: int
    workers: int
    time_limit_s: float
    version: str


class ProfileUse(Strict):
    """A measured operator table the plan's predictions rest on."""

    hardware: str
    family: str
    framework: str
    framework_version: str
    collected_on: str | None
    age_days: int | None
    content_sha256: str
    source: str
    stale: bool = Field(description="older than the re-measurement age, or of unknown date")
    stack_differs: bool = Field(description="measured on another engine version than declared")


class CalibrationUse(Strict):
    engine: str
    fitted_on: str
    fitted_at: str
    source_sha256: str
    ttft_median_abs_pct: float
    tpot_median_abs_pct: float


class Assumptions(Strict):
    """What the plan rests on (extension; the decision record grows from here)."""

    engine: str
    engine_version: str | None
    calibration: CalibrationUse | None
    profiles: list[ProfileUse]
    hardware_without_profiles: list[str]
    remeasure_after_days: int


class PlanResult(Strict):
    problem: str
    status: Literal["optimal", "feasible", "infeasible"]
    objective: Objective | None
    cost_per_hour: float
    total_devices: int
    devices_by_type: dict[str, int]
    services: list[ServiceResult]
    infeasible_because: list[str]
    solver: SolverInfo
    # extensions
    power_kw: float
    throughput_scale: float | None = Field(
        None, description="max_throughput: the served multiple of every service's demand"
    )
    assumptions: Assumptions | None = None
    decision: DecisionRecord | None = Field(
        None, description="the decision record (extension): uncertainty, runners-up, fallback, validity"
    )


Fallback.model_rebuild(_types_namespace={"Pool": Pool})
DecisionRecord.model_rebuild()
PlanResult.model_rebuild()

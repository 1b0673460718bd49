"""The result document (SPEC "Result document"); fields beyond SPEC are marked as extensions.

Fleet extensions (sites, KV routes, the heterogeneous-vs-homogeneous comparison, failure
domains, transitions) are left out of the document when they do not apply (None), so a
problem that uses none of them gives the same document as before they existed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.decision import DecisionRecord
from solver.schema.drift import Drift
from solver.schema.periods_result import PeriodsResult
from solver.schema.pool import CostComponents, Doc, Pool, Predicted, Role


class KvRoute(Doc):
    """Traffic whose KV cache goes from prefill pools of one type to decode pools of another
    (or the same) type, at one site."""

    _omit_when_none = frozenset({"site"})

    site: str | None = None
    prefill_hardware: str
    decode_hardware: str
    qps: float
    link_gb_s: float = Field(description="the shared link: the slower card's scale-out, per device")
    link_latency_us: float


class SiteShare(Strict):
    site: str
    qps: float = Field(description="the traffic the site is sized for: its share of the demand "
                       "(with failure domains, what it must take over when others fail)")
    capacity_qps: float = Field(description="what the service's pools at the site can serve")


class ServiceSurvival(Doc):
    """Capacity left in the worst case of each failure the problem asks to survive."""

    _omit_when_none = frozenset({"lose_instances", "worst_instances_loss_qps",
                                 "worst_instances_loss_hardware", "worst_site_loss_qps",
                                 "worst_site_loss_site"})

    lose_instances: int | None = None
    worst_instances_loss_qps: float | None = Field(
        None, description="capacity after the worst loss of lose_instances instances of one type")
    worst_instances_loss_hardware: str | None = None
    lose_site: bool = False
    worst_site_loss_qps: float | None = Field(None, description="capacity after the worst site loss")
    worst_site_loss_site: str | None = None


class SloBounds(Strict):
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None


class ServiceResult(Doc):
    _omit_when_none = frozenset({"kv_routes", "sites", "survive"})

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
    # fleet extensions
    kv_routes: list[KvRoute] | None = Field(
        None, description="heterogeneous services: the KV traffic between hardware types")
    sites: list[SiteShare] | None = None
    survive: ServiceSurvival | None = None


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
    age_days: int | None = Field(description="days since collected_on, else since source_released_on")
    content_sha256: str
    source: str
    stale: bool = Field(description="older than the re-measurement age, or of unknown date")
    stack_differs: bool = Field(description="measured on another engine version than declared")
    source_released_on: str | None = Field(
        None, description="release date of the source package the table came from: a table without "
        "collected_on was collected no later than this, and is aged from it")


class CalibrationUse(Strict):
    engine: str
    fitted_on: str
    fitted_at: str
    source_sha256: str
    ttft_median_abs_pct: float
    tpot_median_abs_pct: float
    file: str | None = Field(None, description="the calibration file the problem named "
                             "(software.calibration); null: the shipped one of the engine")
    file_sha256: str | None = None
    held_out_ttft_median_abs_pct: float | None = Field(
        None, description="a user's refit (fleetplan calibrate): the error on its held-out rows")
    held_out_tpot_median_abs_pct: float | None = None


class WorkloadAssumption(Strict):
    """A service's workload and SLO bounds as planned (the plan is optimal for these only)."""

    service: str
    model: str
    qps: float
    input_tokens_mean: float
    input_tokens_p99: float
    output_tokens_mean: float
    output_tokens_p99: float
    slo: SloBounds
    routing: str | None = None
    arrival_cv: float = Field(1.0, description="CV of inter-arrival times the queueing waits assume (1: Poisson)")
    data: str | None = Field(None, description="the trace or length file the workload came from, as the "
                                               "problem names it")


class HardwareAssumption(Strict):
    """A device type as priced and supplied to the planner."""

    name: str
    price_per_hour: float
    price_source: str | None = Field(description="the card's price source, or 'problem file'")
    supply: int | None = Field(description="devices available (None: unlimited)")
    power_w: float


class Assumptions(Strict):
    """What the plan rests on (extension; the decision record grows from here)."""

    engine: str
    engine_version: str | None
    calibration: CalibrationUse | None
    profiles: list[ProfileUse]
    hardware_without_profiles: list[str]
    remeasure_after_days: int
    workloads: list[WorkloadAssumption] = Field(default_factory=list)
    hardware: list[HardwareAssumption] = Field(default_factory=list)
    safety_margin: float | None = None
    fleetplan_version: str | None = None


class SiteResult(Strict):
    name: str
    devices: int
    devices_by_type: dict[str, int]
    cost_per_hour: float
    power_kw: float
    power_cap_kw: float | None


class HomogeneousService(Strict):
    name: str
    runtime: Literal["colocated", "disaggregated", "mixed"]
    prefill_decode_ratio: float | None
    devices: int
    cost_per_hour: float


class HeteroComparison(Doc):
    """A heterogeneous plan (prefill and decode of a service on different types) against the
    best homogeneous plan for the same problem, found by solving it again with every KV route
    kept within one hardware type."""

    _omit_when_none = frozenset({"homogeneous_throughput_scale", "throughput_gain_pct"})

    homogeneous_status: Literal["optimal", "feasible", "infeasible"]
    homogeneous_cost_per_hour: float | None
    homogeneous_throughput_scale: float | None = None
    homogeneous_devices_by_type: dict[str, int]
    homogeneous_services: list[HomogeneousService]
    saving_per_hour: float | None = Field(description="min_cost: homogeneous minus this plan's cost")
    saving_pct: float | None
    throughput_gain_pct: float | None = None
    exact: bool = Field(description="both plans proven optimal, so the saving is exact")
    infeasible_because: list[str]


class CurrentPoolResult(Doc):
    """A pool of the current deployment as the performance model sees it."""

    _omit_when_none = frozenset({"site", "chunk_tokens"})

    service: str
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
    devices: int
    capacity_qps: float
    cost_per_hour: float
    fits_memory: bool
    meets_slo: bool
    predicted: Predicted


class TransitionResult(Strict):
    """Moving from the current deployment to this plan: what it costs, what it saves, and
    whether it pays back within the horizon."""

    current_cost_per_hour: float
    current_pools: list[CurrentPoolResult]
    current_meets_problem: bool
    current_problems: list[str] = Field(description="why the current deployment does not do")
    plan_cost_per_hour: float
    saving_per_hour: float
    horizon_hours: float
    saving_over_horizon_usd: float
    devices_moved: int
    instances_resharded: int
    drained_device_hours: float
    moved_cost_usd: float
    resharded_cost_usd: float
    drained_cost_usd: float
    switching_cost_usd: float
    payback_hours: float | None = Field(description="switching cost / hourly saving; null: never")
    recommendation: Literal["move", "stay"]
    reason: str


class PlanResult(Doc):
    _omit_when_none = frozenset({"sites", "heterogeneity", "transition", "cost_components",
                                 "traffic_headroom_multiple", "traffic_headroom_service", "periods", "drift"})

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
    # fleet extensions
    sites: list[SiteResult] | None = None
    heterogeneity: HeteroComparison | None = None
    transition: TransitionResult | None = None
    cost_components: CostComponents | None = Field(
        None, description="problems with `cost:` entries: the hourly cost by component")
    traffic_headroom_multiple: float | None = Field(
        None, description="the largest multiple of every service's demand (the problem's qps) that "
        "the planned fleet serves as it stands, pools and instance counts fixed: the least "
        "capacity_qps / qps over the services, rounded down to 4 decimals; absent without a plan")
    traffic_headroom_service: str | None = Field(
        None, description="the service whose capacity sets traffic_headroom_multiple")
    periods: PeriodsResult | None = Field(
        None, description="demand over time: the fleet, cost and utilisation of every period")
    drift: Drift | None = Field(None, description="`plan --current RESULT.json --measured FILES`: the "
                                "running plan's bounds under the measurements and what the re-plan changes")


PlanResult.model_rebuild()

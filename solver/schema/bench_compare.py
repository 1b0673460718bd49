"""The document `fleetplan validate MEASURED --plan RESULT.json` prints: a benchmark tool's
measurements against the plan's predictions, pool by pool."""

from __future__ import annotations

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.decision import Metric
from solver.schema.pool import Role


class MeasuredLatency(Strict):
    metric: Metric
    measured_ms: float | None = Field(description="the tool's statistic; None: the file has none")
    predicted_ms: float | None = Field(description="the plan's prediction for the pool; None: it predicts none")
    bound_ms: float | None = Field(description="the service's SLO bound; None: it has none")
    band_pct: float = Field(description="the plan's error band for this latency (median |error| %)")
    band_low_ms: float | None = Field(description="predicted x (1 - band / 100)")
    band_high_ms: float | None = Field(description="predicted x (1 + band / 100): the decision record's upper edge")
    error_pct: float | None = Field(description="(measured - predicted) / predicted x 100")
    inside_band: bool | None = Field(description="band_low_ms <= measured <= band_high_ms")
    holds: bool | None = Field(description="measured <= bound")
    margin_pct: float | None = Field(description="(bound - measured) / bound x 100; negative: broken")
    predicted_margin_pct: float | None = Field(description="(bound - predicted) / bound x 100")


class PoolComparison(Strict):
    pool: int = Field(description="the pool's number in the plan (1-based, services then pools in order)")
    service: str
    role: Role
    hardware: str
    tp: int
    pp: int
    ep: int
    dp: int
    batch: int
    matched_by: str = Field(description="how the measurement was assigned to the pool")
    tool: str
    where: str = Field(description="the part of the measured file")
    measured_concurrency: int | None
    measured_rate_qps: float | None
    measured_input_tokens: float | None
    measured_output_tokens: float | None
    planned_input_tokens: float | None
    planned_output_tokens: float | None
    band_source: str
    latencies: list[MeasuredLatency]
    notes: list[str] = Field(description="where the measured load or lengths differ from the plan's")


class PlanComparison(Strict):
    source: str = Field(description="the measured file")
    format: str = Field(description="the tool that wrote it")
    plan: str = Field(description="the plan's problem")
    pools: list[PoolComparison]
    bounds_hold: bool = Field(description="every measured latency within its SLO bound")
    inside_band: bool = Field(description="every measured latency inside the plan's error band")

"""The plan document's `periods:` section (demand over time, docs/result-document.md): the fleet
of every period, the cost over the horizon split committed / on demand, and each committed
level with how far demand may grow before committing more pays."""

from __future__ import annotations

from pydantic import Field

from solver.schema.base import Strict


class PeriodFleet(Strict):
    name: str
    start_h: float = Field(description="hours from the horizon's start")
    hours: float
    demand_qps: dict[str, float] = Field(description="per service: the highest rate in the period (served)")
    mean_qps: dict[str, float] = Field(description="per service: the period's time-weighted mean rate")
    capacity_qps: dict[str, float]
    utilisation: dict[str, float] = Field(description="per service: mean rate / capacity")
    devices: int
    devices_by_type: dict[str, int]
    devices_by_role: dict[str, dict[str, int]] = Field(description="role -> hardware type -> devices")
    on_demand_devices: dict[str, int] = Field(description="per type with terms: devices above the committed level")
    devices_started: int = Field(description="devices of the instances started at the period's start")
    cost_usd: float
    committed_cost_usd: float
    on_demand_cost_usd: float = Field(description="on-demand devices and types without terms")
    start_cost_usd: float


class CommittedLevel(Strict):
    hardware: str
    devices: int
    price_per_hour: float = Field(description="USD/device-hour committed")
    on_demand_price_per_hour: float | None = Field(description="USD/device-hour; null: no on-demand devices")
    peak_devices: int = Field(description="the most devices of the type any period uses")
    valid_growth_pct: float | None = Field(
        description="how far every period's usage may grow (uniformly) before committing one more "
        "device pays; null: committing more never pays (no on-demand premium or no usage)")


class PeriodsResult(Strict):
    periods: int
    horizon_h: float
    cost_usd: float = Field(description="over the horizon: committed + on demand + starts")
    committed_cost_usd: float
    on_demand_cost_usd: float
    start_cost_usd: float
    mean_cost_per_hour: float
    busiest_period: str = Field(description="the period whose fleet the document's services show")
    committed: list[CommittedLevel]
    fleet: list[PeriodFleet]
    status: str
    gap: float
    hint_solves: int = Field(description="periods planned alone for the warm start")

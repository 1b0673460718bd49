"""The decision record a plan carries (extension of SPEC's result document).

What an operations team needs to check a plan (docs/sources.md, "The paper": what a decision must carry): how far
its latency predictions may be off and whether the SLOs still hold then; the next best plans of
another structure; a safe plan to roll back to; and the range of demand and prices over which
the plan stays the best, with what to re-measure and when.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.pool import Pool, Role

Metric = Literal["ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"]


class SloCheck(Strict):
    metric: Metric
    predicted_ms: float
    upper_edge_ms: float = Field(description="predicted x (1 + band / 100)")
    bound_ms: float
    margin_pct: float = Field(description="(bound - predicted) / bound x 100; negative: broken")
    holds_at_upper_edge: bool


class PoolBand(Strict):
    """One pool's latency predictions with the error band of the evidence they rest on."""

    service: str
    role: Role
    hardware: str
    band_ttft_pct: float = Field(description="median absolute % error of TTFT predictions")
    band_tpot_pct: float
    band_source: str = Field(description="which measured benchmark rows the band comes from")
    checks: list[SloCheck]


class Uncertainty(Strict):
    pools: list[PoolBand]
    central_only: list[str] = Field(
        description="SLO bounds met at the central estimate but not at the band's upper edge"
    )


class Alternative(Strict):
    """A runner-up: the best plan once the winner's structure of one kind is excluded."""

    kind: Literal["device_type", "runtime", "parallelism"]
    excluded: str = Field(description="what of the winner was excluded, in words")
    status: Literal["optimal", "feasible", "infeasible"]
    cost_per_hour: float | None
    delta_cost_per_hour: float | None = Field(description="runner-up minus winner")
    delta_cost_pct: float | None
    throughput_scale: float | None = Field(None, description="max_throughput problems")
    delta_throughput_pct: float | None = None
    devices_by_type: dict[str, int]
    summary: str = Field(description="its pools, one phrase each")


class Fallback(Strict):
    """A safe plan to roll back to: one device type (the most available), one configuration per
    service and role, every SLO met at the error band's upper edge."""

    hardware: str
    why: str
    safety_margin: float = Field(description="the margin it was planned with (>= the band)")
    status: Literal["optimal", "feasible", "infeasible"]
    cost_per_hour: float | None
    delta_cost_pct: float | None = Field(description="vs the winner")
    devices_by_type: dict[str, int]
    pools: list[Pool]
    infeasible_because: list[str] = Field(default_factory=list)


class Interval(Strict):
    """The range of one input over which the plan's structure (its pool configurations) stays
    optimal; instance counts may change within it."""

    quantity: str
    unit: str
    current: float
    low: float = Field(description="lowest value found with the same structure")
    high: float = Field(description="highest value found with the same structure")
    low_is_search_limit: bool = Field(description="low is where the search stopped, not a change")
    high_is_search_limit: bool
    below: str | None = Field(None, description="what the plan becomes just below low")
    above: str | None = Field(None, description="what the plan becomes just above high")


class Remeasure(Strict):
    what: str
    by: str = Field(description="YYYY-MM-DD, or 'now'")
    why: str


class Validity(Strict):
    demand: Interval | None
    prices: list[Interval]
    remeasure: list[Remeasure]
    solves: int = Field(description="plans solved to find the intervals")


class DecisionRecord(Strict):
    uncertainty: Uncertainty
    runners_up: list[Alternative]
    fallback: Fallback | None
    validity: Validity | None
    input_sha256: str = Field(description="sha256 of the problem file's bytes")
    fleetplan_version: str

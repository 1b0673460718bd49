"""Documents of the what-if questions (extensions to SPEC): `fleetplan frontier` and
`fleetplan price-sweep`. Every number on a point comes from one CP-SAT plan that passed the
independent verifier, with that plan's status and gap."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.result import ServiceResult

Status = Literal["optimal", "feasible", "infeasible"]


class QuestionSolverInfo(Strict):
    """How the answer was computed: one candidate build, many CP-SAT plans."""

    solves: int = Field(description="plans solved (each through the plan flow, each verified)")
    candidates_evaluated: int
    candidates_in_model: int
    candidates_build_s: float | None = Field(description="building the candidate tables, once")
    wall_s: float | None = Field(description="everything, candidate build included")
    time_limit_s: float = Field(description="per plan")
    seed: int
    workers: int
    version: str


# ---- fleetplan frontier ------------------------------------------------------------------------


class FrontierPoint(Strict):
    """The cheapest fleet that serves `traffic_scale` x the problem's demand mix."""

    traffic_scale: float = Field(description="multiple of every service's qps that must be served")
    traffic_qps: float = Field(description="traffic_scale x the sum of the services' qps")
    status: Status
    gap: float | None = Field(description="CP-SAT's relative gap on cost; 0 when optimal")
    cost_per_hour: float | None
    total_devices: int | None
    devices_by_type: dict[str, int]
    capacity_qps: float | None = Field(description="sum of the services' planned capacity")
    power_kw: float | None
    pareto: bool = Field(
        description="no other point serves at least as much traffic for at most the cost "
        "(one of the two strictly)"
    )
    services: list[ServiceResult] = Field(description="the plan's services and pools")
    infeasible_because: list[str]


class TrafficLimit(Strict):
    """The most traffic the problem's budget, power cap and supplies allow."""

    max_traffic_scale: float | None = Field(
        description="largest multiple of the demand mix (CP-SAT max_throughput, in steps of 0.001); "
        "null when not even 0.001 x the mix can be served"
    )
    max_traffic_qps: float | None
    status: Status
    gap: float | None
    limited_by: list[str] = Field(description="the problem's limits: budget, power cap, supplies")
    beyond: FrontierPoint | None = Field(
        description="the cheapest-fleet plan one step (0.001 x the mix) above the limit: "
        "infeasible, with the constraint groups that cannot hold together"
    )


class FrontierResult(Strict):
    problem: str
    method: Literal["epsilon_constraint"] = Field(
        description="each point: minimise cost subject to serving at least its traffic level"
    )
    demand_qps: float = Field(description="the sum of the services' qps (traffic_scale 1)")
    max_scale_swept: float
    points: list[FrontierPoint]
    limit: TrafficLimit | None = Field(
        description="null: the problem bounds no traffic (no budget, no power cap, and some "
        "hardware type without a supply)"
    )
    solver: QuestionSolverInfo


# ---- fleetplan price-sweep ---------------------------------------------------------------------


class PricePoint(Strict):
    """One plan of the problem with the swept type at `price_per_hour`."""

    price_per_hour: float
    source: Literal["grid", "bisection"]
    status: Status
    gap: float | None
    cost_per_hour: float | None
    total_devices: int | None
    devices_by_type: dict[str, int]
    throughput_scale: float | None = Field(description="max_throughput: multiple of the mix")
    infeasible_because: list[str]


Compare = Literal["devices", "types"]


class PriceRange(Strict):
    """Consecutive solved prices with the same mix (see PriceSweepResult.compare)."""

    price_from_per_hour: float
    price_to_per_hour: float
    status: Status = Field(description="the weakest status of its points")
    types: list[str] = Field(description="the hardware types the plans use")
    devices_by_type_from: dict[str, int] = Field(description="the plan at price_from_per_hour")
    devices_by_type_to: dict[str, int] = Field(description="the plan at price_to_per_hour")
    total_devices_from: int | None
    total_devices_to: int | None
    cost_from_per_hour: float | None
    cost_to_per_hour: float | None
    throughput_scale_from: float | None
    throughput_scale_to: float | None
    points: int


class PriceChange(Strict):
    """Where the mix changes between two neighbouring solved prices."""

    below_per_hour: float = Field(description="highest solved price with the lower range's mix")
    above_per_hour: float = Field(description="lowest solved price with the upper range's mix")
    price_per_hour: float = Field(description="the estimate of the change point")
    how: Literal["cost lines cross", "bracket midpoint"] = Field(
        description="cost lines cross: the price at which the two fleets cost the same (min_cost, "
        "inside the bracket); otherwise the bracket's midpoint"
    )
    resolved: bool = Field(description="the bracket is within the tolerance")
    devices_by_type_below: dict[str, int]
    devices_by_type_above: dict[str, int]
    feasible_below: bool
    feasible_above: bool


class PriceSweepResult(Strict):
    problem: str
    objective: Literal["min_cost", "max_throughput"]
    hardware: str
    compare: Compare = Field(
        description="what counts as a change of mix: devices (the device count of each type; "
        "the default for min_cost) or types (which types are used; the default for "
        "max_throughput, whose device counts change with every device the budget buys)"
    )
    base_price_per_hour: float = Field(description="the problem's own price of the swept type")
    price_from_per_hour: float
    price_to_per_hour: float
    steps: int
    tolerance_per_hour: float
    complete: bool = Field(description="every change's bracket was narrowed to the tolerance")
    points: list[PricePoint]
    ranges: list[PriceRange]
    changes: list[PriceChange]
    solver: QuestionSolverInfo


class FrontierSection(Strict):
    """The HTML report's frontier section: the frontier document, or why there is none
    (computed by `solver/questions/report_frontier.py`, rendered by `solver/report/html.py`)."""

    result: FrontierResult | None
    note: str

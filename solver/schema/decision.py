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
from solver.schema.pool import Doc, Pool, Role

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
    margin_below_band: str | None = Field(
        None, description="set when the problem's safety margin is below the error band of a "
        "pool's bounded latency (the default margin does not follow the band: "
        "docs/decision-record.md); says by how much and which margin would cover the band")


class Alternative(Strict):
    """A runner-up: the best plan once the winner's structure of one kind is excluded."""

    kind: Literal["device_type", "runtime", "parallelism", "power_cap", "precision"]
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
    services: list[str] = Field(default_factory=list,
                                description="the service of each pool, in the order of pools")
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
    probes: int = Field(0, ge=0, description="probes spent on this interval (two solves each); "
                                             "0: not computed, the search's budget was spent")
    partial: bool = Field(False, description="the --record-seconds safety net stopped this "
                                             "interval's search before it finished")
    low_not_computed: bool = Field(
        False, description="no probe below the current value was answered (the solve budget or "
        "the safety net ran out first): `low` is only the current value, nothing was searched")
    high_not_computed: bool = Field(False, description="likewise above the current value")


class Remeasure(Strict):
    what: str
    by: str = Field(description="YYYY-MM-DD, or 'now'")
    why: str


class Validity(Doc):
    _omit_when_none = frozenset({"acceptance", "hit_rates"})

    demand: Interval | None
    prices: list[Interval]
    remeasure: list[Remeasure]
    solves: int = Field(description="CP-SAT solves of the primary objective (two per probe) "
                                    "and full plans of the structures beyond the ends")
    cut_short: bool = Field(False, description="the --record-seconds safety net fired: the "
                                               "intervals marked partial are incomplete")
    acceptance: list[Interval] | None = Field(
        None, description="per service that may speculate: the acceptance rate's interval (unit "
        "'acceptance'); absent when no service speculates")
    hit_rates: list[Interval] | None = Field(
        None, description="per service with a prefix cache: the hit rate's interval (unit 'hit rate'; a shared "
        "prefix as its share of the mean prompt, varied by its length)")
    traffic_headroom_multiple: float | None = Field(
        None, description="the plan's traffic_headroom_multiple: the largest multiple of every "
        "service's demand the fleet serves with its pools and instance counts fixed (the demand "
        "interval is where re-planning would not pay; this is where the fleet stops serving)")
    traffic_headroom_service: str | None = Field(None, description="the service that sets it")


class Choice(Strict):
    """A modelling dimension the plan chose (or declined) for one service, and its effect,
    found by re-solving without it (solver/decision/dimensions.py)."""

    dimension: Literal["context_parallelism", "speculation", "prefix_cache"]
    service: str
    used: str | None = Field(description="what the plan uses (e.g. 'cp4', 'eagle'; a prefix cache: 'shared_prefix' "
                             "or 'hit_rate'); None: offered, not used")
    effect: str = Field(description="the effect in words")
    cost_without_per_hour: float | None = Field(
        None, description="the best plan without the dimension (None: infeasible, or not solved)")
    break_even_acceptance: float | None = Field(
        None, description="speculation: the acceptance rate where using it starts (or stops) paying")


class ReplayedLatency(Strict):
    """One latency percentile: the analytic prediction (the candidate table's) and the replay's."""

    metric: Metric
    predicted_ms: float | None = Field(description="the analytic model's, as the plan states it")
    simulated_ms: float | None = Field(description="the replay's; None: no request measured")
    bound_ms: float | None = Field(description="the SLO bound; None: the service has none")


class ReplayedPool(Doc):
    _omit_when_none = frozenset({"site", "chunk_tokens", "cp", "speculative"})

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
    cp: int | None = Field(None, ge=2, description="context-parallel ranks (absent: 1)")
    speculative: str | None = Field(None, description="the speculative decoding method (absent: none)")
    instances: int
    planned_capacity_qps: float
    throughput_qps: float = Field(description="finished requests / measurement window, as the tools count it")
    steady_qps: float | None = Field(description="the steady completion rate (fleetplan simulate's steady_qps)")
    goodput_share: float | None = Field(description="share of finished requests within every bound")
    latencies: list[ReplayedLatency]


class ReplayedService(Strict):
    """A service's requests over all its pools; `predicted_ms` of a latency is its worst pool's."""

    name: str
    demand_qps: float
    throughput_qps: float = Field(description="finished requests / measurement window, as the tools count it")
    steady_qps: float | None = Field(description="the steady completion rate (fleetplan simulate's steady_qps)")
    goodput_share: float | None
    meets_slo: bool = Field(description="every SLO bound met by the service's simulated percentiles")
    latencies: list[ReplayedLatency]


class Shortfall(Strict):
    """A bound the analytic table met but the replay misses."""

    service: str
    pool: str = Field(description="role, hardware and layout, in words")
    metric: Metric
    bound_ms: float
    predicted_ms: float
    simulated_ms: float
    shortfall_pct: float = Field(description="(simulated - bound) / bound x 100")


class Derating(Strict):
    """One configuration's capacity derated after a replay round, and what re-solving cost."""

    round: int = Field(ge=1)
    service: str
    pool: str
    factor: float = Field(gt=0, le=1, description="capacity multiplier applied this round")
    cumulative_factor: float = Field(gt=0, le=1, description="product over rounds so far")
    cost_before_per_hour: float
    cost_after_per_hour: float | None = Field(description="the re-solved plan's cost; None: infeasible")


class ReplayCheck(Strict):
    """The winning fleet replayed at its demand (solver/decision/replayed.py)."""

    arrival: str
    requests_per_service: int
    seed: int
    rounds: int = Field(description="replays run (1 + the re-solves after derating)")
    max_rounds: int
    analytic_cost_per_hour: float = Field(description="the first plan's cost, before any derating")
    services: list[ReplayedService] = Field(description="the final plan's replay")
    pools: list[ReplayedPool]
    shortfalls: list[Shortfall] = Field(description="of the final plan's replay")
    deratings: list[Derating]
    note: str = Field(description="what the rounds did, in words")


class DecisionRecord(Doc):
    _omit_when_none = frozenset({"replay", "choices", "what_ifs_cut_short"})

    uncertainty: Uncertainty
    runners_up: list[Alternative]
    fallback: Fallback | None
    validity: Validity | None
    input_sha256: str = Field(description="sha256 of the problem file's bytes")
    fleetplan_version: str
    replay: ReplayCheck | None = Field(None, description="the plan replayed; absent with --no-replay")
    choices: list[Choice] | None = Field(
        None, description="context parallelism and speculation: what the plan chose and its effect; "
        "absent when the problem offers neither")
    what_ifs_cut_short: bool | None = Field(
        None, description="a runner-up, fallback or choice plan ran as long as its wall-clock safety "
        "net and may have been cut by it (then it can differ between runs); absent when none did")

"""The problem file (SPEC "Problem file"), strict: unknown keys, NaN, infinities are errors.

Extensions beyond SPEC (documented in the README): `services[].kv_precision`,
`search.chunk_tokens` (prefill tokens per colocated iteration), `search.precision`-free
per-service precision, `engine:` overrides of the runtime parameters, and hardware entries'
`power_w` override.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from solver.schema.base import FieldError, Strict
from solver.schema.cards import HardwareCard, ModelCard, Precision
from solver.schema.engine import EngineParams
from solver.schema.fleet import (
    MAX_SITES,
    CurrentPool,
    Site,
    Survive,
    Transition,
)
from solver.schema.periods import CommittedTerm, DemandProfile, OnDemandTerm, Periods, check_period_fields
from solver.schema.prefix import PrefixCache
from solver.schema.problem_checks import check_fleet_fields
from solver.schema.routing import Routing
from solver.schema.speculative import Speculative
from solver.schema.sweep import Sweep
from solver.schema.tco import DeviceCost

# Upper limits that catch absurd input (a typo of several orders of magnitude) early.
MAX_QPS = 1e7
MAX_TOKENS = 10_000_000
MAX_WEIGHT = 1e20  # a histogram bin's weight (requests or share)
MAX_SUPPLY = 10_000_000
MAX_PRICE = 10_000.0
MAX_BUDGET = 1e9
MAX_DEGREE = 1024
MAX_BATCH = 65_536
MAX_CP = 64  # an input bound; Yang et al. 2024 (arXiv 2411.01783) ran CP over up to 16 nodes (x TP8)


def _card_tag(v: Any) -> str:
    return "Name" if isinstance(v, str) else "Card"


ModelRef = Annotated[
    Union[Annotated[str, Tag("Name")], Annotated[ModelCard, Tag("Card")]],
    Discriminator(_card_tag),
]
HardwareRef = Annotated[
    Union[Annotated[str, Tag("Name")], Annotated[HardwareCard, Tag("Card")]],
    Discriminator(_card_tag),
]


def _number_or_mapping(cls, core_schema, handler):
    """JSON Schema of a model that also accepts a bare number (validation mode only)."""
    schema = handler(core_schema)
    if handler.mode == "validation":
        return {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, schema]}
    return schema


class TokenDist(Strict):
    """A token count: a mean, optional p50/p99, or a histogram of [tokens, weight] pairs."""

    mean: float | None = Field(None, gt=0, le=MAX_TOKENS)
    p50: float | None = Field(None, gt=0, le=MAX_TOKENS)
    p99: float | None = Field(None, gt=0, le=MAX_TOKENS)
    # a weight is a request count or a share; its bound keeps every sum finite (MAX_TOKENS bins of
    # MAX_WEIGHT, times MAX_TOKENS tokens, is 1e34); bins are distinct counts, at most MAX_TOKENS
    histogram: list[tuple[Annotated[float, Field(gt=0, le=MAX_TOKENS)],
                          Annotated[float, Field(gt=0, le=MAX_WEIGHT)]]] | None = Field(
        None, min_length=1, max_length=MAX_TOKENS
    )

    __get_pydantic_json_schema__ = classmethod(_number_or_mapping)

    @model_validator(mode="before")
    @classmethod
    def _from_number(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("expected a number of tokens or a mapping, got a boolean")
        if isinstance(v, (int, float)):
            return {"mean": v}
        return v

    @model_validator(mode="after")
    def _check(self) -> TokenDist:
        if self.histogram is not None:
            if self.mean is not None or self.p50 is not None or self.p99 is not None:
                raise ValueError("give either a histogram or mean/p50/p99, not both")
        elif self.mean is None and self.p50 is None:
            raise ValueError("needs a mean (or p50) or a histogram")
        if self.p50 is not None and self.p99 is not None and self.p50 > self.p99:
            raise ValueError(f"p50 ({self.p50}) exceeds p99 ({self.p99})")
        return self

    @property
    def mean_tokens(self) -> float:
        if self.histogram is not None:
            total = sum(w for _, w in self.histogram)
            return sum(t * w for t, w in self.histogram) / total
        return float(self.mean if self.mean is not None else self.p50)  # type: ignore[arg-type]

    @property
    def p99_tokens(self) -> float:
        if self.histogram is not None:
            total = sum(w for _, w in self.histogram)
            acc = 0.0
            for t, w in sorted(self.histogram):
                acc += w
                if acc >= 0.99 * total - 1e-12:
                    return float(t)
            return float(max(t for t, _ in self.histogram))
        if self.p99 is not None:
            return float(self.p99)
        return self.mean_tokens


class LatencyBound(Strict):
    """A latency SLO in ms: a plain number is a p50 bound."""

    p50: float | None = Field(None, gt=0, le=1e7)
    p99: float | None = Field(None, gt=0, le=1e7)

    __get_pydantic_json_schema__ = classmethod(_number_or_mapping)

    @model_validator(mode="before")
    @classmethod
    def _from_number(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("expected milliseconds or {p50:, p99:}, got a boolean")
        if isinstance(v, (int, float)):
            return {"p50": v}
        return v

    @model_validator(mode="after")
    def _check(self) -> LatencyBound:
        if self.p50 is None and self.p99 is None:
            raise ValueError("give p50 and/or p99 (ms)")
        if self.p50 is not None and self.p99 is not None and self.p50 > self.p99:
            raise ValueError(f"p50 bound ({self.p50} ms) exceeds p99 bound ({self.p99} ms)")
        return self


class Slo(Strict):
    ttft_ms: LatencyBound | None = None
    tpot_ms: LatencyBound | None = None


MAX_ARRIVAL_CV = 100.0  # as `fleetplan simulate --arrival gamma:CV` (solver/plan/sim_sources.py MAX_CV)
MAX_PATH = 4096  # characters of a file name in a problem (Linux PATH_MAX)


class Workload(Strict):
    """A service's requests: given (qps and token counts), or from data (`trace:` or `lengths:`,
    solver/problem/workload_data.py fills the fields not given); given fields override the data."""

    qps: float | None = Field(None, gt=0, le=MAX_QPS, description="requests/s; max_throughput: mix weight")
    input_tokens: TokenDist | None = None
    output_tokens: TokenDist | None = None
    max_context: int | None = Field(None, ge=1, le=MAX_TOKENS, description="tokens")
    prefix_cache: PrefixCache | None = None  # prompts served partly from a prefix cache (schema/prefix.py)
    arrival_cv: float | None = Field(None, gt=0, le=MAX_ARRIVAL_CV,
                                     description="CV of inter-arrival times (1: Poisson, the default)")
    trace: str | None = Field(None, min_length=1, max_length=MAX_PATH,
                              description="request trace file (or shipped trace name)")
    lengths: str | None = Field(None, min_length=1, max_length=MAX_PATH,
                                description="length-distribution file (or shipped name)")
    window_s: float | None = Field(None, gt=0, le=86_400, description="trace window for the burstiness")

    @model_validator(mode="after")
    def _check(self) -> Workload:
        if self.trace is not None and self.lengths is not None:
            raise ValueError("give trace: or lengths:, not both")
        if self.window_s is not None and self.trace is None:
            raise FieldError("window_s applies to a trace: workload", ("window_s",))
        if self.trace is None:
            # qps: checked by Service (a demand_profile gives it instead)
            if self.lengths is None:
                for f in ("input_tokens", "output_tokens"):
                    if getattr(self, f) is None:
                        raise FieldError(f"needs {f} (or a trace: or lengths: file)", (f,))
        n = self.prefix_cache.shared_prefix_tokens if self.prefix_cache is not None else None
        if n is not None and self.input_tokens is not None and n >= self.input_tokens.mean_tokens:
            raise FieldError(f"shared_prefix_tokens ({n}) must be below the mean input tokens "
                             f"({self.input_tokens.mean_tokens:g})", ("prefix_cache", "shared_prefix_tokens"))
        if self.max_context is not None and self.input_tokens is not None and self.output_tokens is not None:
            need = self.input_tokens.mean_tokens + self.output_tokens.mean_tokens
            if need > self.max_context:
                raise ValueError(
                    f"input + output tokens ({need:g}) exceed max_context ({self.max_context})"
                )
        return self

    @property
    def from_data(self) -> bool:
        return self.trace is not None or self.lengths is not None


class Service(Strict):
    name: str = Field(min_length=1, max_length=200)
    model: ModelRef
    # a list: each value is acceptable and the planner chooses per pool (extension)
    precision: Precision | list[Precision] = "bf16"
    kv_precision: Precision | list[Precision] | None = None
    workload: Workload
    slo: Slo = Slo()
    runtime: Literal["auto", "colocated", "disaggregated"] = "auto"
    routing: Routing | None = None  # mixture-of-experts models only (schema/routing.py)
    sites: list[str] | None = Field(None, min_length=1, max_length=MAX_SITES)  # pin (schema/fleet.py)
    speculative: Speculative | None = None  # decode speculatively where it pays (schema/speculative.py)
    demand_profile: DemandProfile | None = None  # demand over time (schema/periods.py)

    @model_validator(mode="after")
    def _demand_given(self) -> Service:
        wl = self.workload
        if wl.qps is None and wl.trace is None and self.demand_profile is None:
            raise FieldError("needs qps (requests/s) or a trace: file", ("workload", "qps"))
        return self

    @field_validator("precision", "kv_precision")
    @classmethod
    def _precision_choice(cls, v: Any) -> Any:
        if isinstance(v, list) and (not v or len(set(v)) != len(v)):
            raise ValueError("a list of precisions must be non-empty and must not repeat")
        return v

    @property
    def precisions(self) -> tuple[Precision, ...]:
        """The weight precisions the planner may choose from (the first is the default)."""
        return tuple(self.precision) if isinstance(self.precision, list) else (self.precision,)

    @property
    def kv_precisions(self) -> tuple[Precision, ...] | None:
        """The KV cache precisions to choose from; None: the KV cache follows the weights."""
        kv = self.kv_precision
        return None if kv is None else tuple(kv) if isinstance(kv, list) else (kv,)


class HardwareEntry(Strict):
    type: HardwareRef
    supply: int | None = Field(None, ge=0, le=MAX_SUPPLY, description="devices available")
    price_per_hour: float | None = Field(None, gt=0, le=MAX_PRICE, description="USD/device-hour")
    power_w: float | None = Field(None, gt=0, le=1e5, description="override the card's power")
    # extensions: power limits as a search axis, ownership costs (schema/tco.py), pod sizes
    power_caps_w: list[Annotated[float, Field(gt=0, le=1e5)]] | None = Field(
        None, min_length=1, max_length=16, description="board power limits to choose from, W")
    cost: DeviceCost | None = None
    devices_per_node: int | None = Field(None, ge=1, le=MAX_DEGREE, description="override the card's")
    scale_up_domain_devices: int | None = Field(None, ge=1, le=100_000, description="override the card's")
    # demand over time (schema/periods.py): commitment terms
    committed: CommittedTerm | None = None
    on_demand: OnDemandTerm | None = None

    @field_validator("power_caps_w")
    @classmethod
    def _distinct_caps(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and len(set(v)) != len(v):
            raise ValueError("power caps must not repeat")
        return None if v is None else sorted(v, reverse=True)

    @property
    def name(self) -> str:
        return self.type if isinstance(self.type, str) else self.type.name


def _degrees(limit: int):
    return Annotated[list[Annotated[int, Field(ge=1, le=limit)]], Field(min_length=1, max_length=64)]


# Decode batches: steps of at most 4/3 from 96 to 512, where TPOT bounds of dense models usually
# bind (a step of r loses up to 1 - 1/r of the capacity between grid points), then doubling-ish
# steps to 4096 for MoE and large-memory decode (expert weights amortise over thousands of
# sequences). Rows that do not fit in memory are pruned before the solver sees them.
DEFAULT_BATCHES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024, 1536,
                   2048, 3072, 4096]


class Search(Strict):
    tp: _degrees(MAX_DEGREE) = [1, 2, 4, 8]  # type: ignore[valid-type]
    pp: _degrees(MAX_DEGREE) = [1, 2, 4, 8]  # type: ignore[valid-type]
    ep: _degrees(MAX_DEGREE) = [1, 2, 4, 8]  # type: ignore[valid-type]
    dp: _degrees(MAX_DEGREE) = [1]  # type: ignore[valid-type]
    batch: _degrees(MAX_BATCH) = DEFAULT_BATCHES  # type: ignore[valid-type]
    chunk_tokens: _degrees(1_048_576) = [512, 1024, 2048, 4096, 8192, 16384]  # type: ignore[valid-type]
    # context-parallel ranks per instance (ring attention over the prompt; perf/context_parallel.py)
    cp: _degrees(MAX_CP) = [1]  # type: ignore[valid-type]
    max_distinct_configs: int | None = Field(None, ge=1, le=1000)

    @field_validator("tp", "pp", "ep", "dp", "batch", "chunk_tokens", "cp")
    @classmethod
    def _unique(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("values must not repeat")
        return sorted(v)


class RatioBound(Strict):
    min: float | None = Field(None, gt=0, le=1e4)
    max: float | None = Field(None, gt=0, le=1e4)

    @model_validator(mode="after")
    def _check(self) -> RatioBound:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) exceeds max ({self.max})")
        return self


class Constraints(Strict):
    @field_validator("safety_margin", mode="before")
    @classmethod
    def _margin_is_a_fraction(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1:
            raise ValueError(f"safety_margin {v:g} is above 1 (100%): it is a fraction, "
                             f"write 0.05 for 5%")
        return v

    prefill_decode_ratio: RatioBound = RatioBound()
    power_kw: float | None = Field(None, gt=0, le=1e7)
    safety_margin: float = Field(0.05, ge=0, le=1, description="a fraction: 0.05 is 5%")
    # schema/fleet.py
    heterogeneous_prefill_decode: bool = True
    survive: Survive | None = None


class Software(Strict):
    """The serving stack the plan is for: selects the engine's calibrated parameters
    (hardware/calibration/<engine>.yaml, or the file `calibration` names); `engine:` fields
    given in the problem override them."""

    engine: Literal["vllm", "sglang", "trtllm"] | None = None
    version: str | None = Field(None, min_length=1, max_length=100)
    calibration: str | None = Field(
        None, min_length=1, max_length=1000,
        description="a calibration file (`fleetplan calibrate --out`; relative to the problem file) "
        "used instead of the shipped one: its parameters, and its validation groups as the plan's "
        "error bands; its engine is the plan's (software.engine, when given, must agree)")


class Problem(Strict):
    name: str = Field(min_length=1, max_length=200)
    objective: Literal["min_cost", "max_throughput"] = "min_cost"
    budget_per_hour: float | None = Field(None, gt=0, le=MAX_BUDGET)
    services: list[Service] = Field(min_length=1, max_length=1000)
    hardware: list[HardwareEntry] = Field(min_length=1, max_length=100)
    search: Search = Search()
    constraints: Constraints = Constraints()
    software: Software = Software()
    engine: EngineParams = EngineParams()
    # schema/fleet.py
    sites: list[Site] | None = Field(None, min_length=1, max_length=MAX_SITES)
    current: list[CurrentPool] | None = Field(None, min_length=1, max_length=10_000)
    transition: Transition | None = None
    # values to plan the problem at (`fleetplan batch`; schema/sweep.py, expanded by sweep.py)
    sweep: Sweep | None = None
    periods: Periods | None = None  # demand over time (schema/periods.py)

    @model_validator(mode="after")
    def _check(self) -> Problem:
        names = [s.name for s in self.services]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise FieldError(f"service name '{n}' repeats services[{names.index(n)}].name; "
                                 "service names must be unique", ("services", i, "name"))
        types = [h.name for h in self.hardware]
        for j, t in enumerate(types):
            if t in types[:j]:
                raise FieldError(f"hardware type '{t}' repeats hardware[{types.index(t)}]; "
                                 "hardware types must be unique", ("hardware", j, "type"))
        check_fleet_fields(self)
        check_period_fields(self)
        if self.objective == "max_throughput":
            finite_supply = all(
                h.supply is not None or (self.sites is not None and all(
                    sh.supply is not None for site in self.sites for sh in site.hardware if sh.type == h.name))
                for h in self.hardware
            )
            site_caps = self.sites is not None and all(site.power_kw is not None for site in self.sites)
            if (self.budget_per_hour is None and not finite_supply and self.constraints.power_kw is None
                    and not site_caps):
                raise FieldError(
                    "max_throughput needs a budget_per_hour, a power_kw cap or a supply for every "
                    "hardware type (otherwise throughput is unbounded)", ("objective",)
                )
        if all(h.supply == 0 for h in self.hardware) or (self.sites is not None and all(
                sh.supply == 0 for site in self.sites for sh in site.hardware)):
            raise FieldError("every hardware type has supply 0: nothing can be planned", ("hardware",))
        return self

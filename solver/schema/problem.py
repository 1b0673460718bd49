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
from solver.schema.prefix import PrefixCache
from solver.schema.routing import Routing
from solver.schema.speculative import Speculative
from solver.schema.sweep import Sweep

# Upper limits that catch absurd input (a typo of several orders of magnitude) early.
MAX_QPS = 1e7
MAX_TOKENS = 10_000_000
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
    histogram: list[tuple[Annotated[float, Field(gt=0, le=MAX_TOKENS)], Annotated[float, Field(gt=0)]]] | None = Field(
        None, min_length=1
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


class Workload(Strict):
    qps: float = Field(gt=0, le=MAX_QPS, description="requests/s; max_throughput: mix weight")
    input_tokens: TokenDist
    output_tokens: TokenDist
    max_context: int | None = Field(None, ge=1, le=MAX_TOKENS, description="tokens")
    prefix_cache: PrefixCache | None = None  # prompts served partly from a prefix cache (schema/prefix.py)

    @model_validator(mode="after")
    def _check(self) -> Workload:
        n = self.prefix_cache.shared_prefix_tokens if self.prefix_cache is not None else None
        if n is not None and n >= self.input_tokens.mean_tokens:
            raise FieldError(f"shared_prefix_tokens ({n}) must be below the mean input tokens "
                             f"({self.input_tokens.mean_tokens:g})", ("prefix_cache", "shared_prefix_tokens"))
        if self.max_context is not None:
            need = self.input_tokens.mean_tokens + self.output_tokens.mean_tokens
            if need > self.max_context:
                raise ValueError(
                    f"input + output tokens ({need:g}) exceed max_context ({self.max_context})"
                )
        return self


class Service(Strict):
    name: str = Field(min_length=1, max_length=200)
    model: ModelRef
    precision: Precision = "bf16"
    kv_precision: Precision | None = None
    workload: Workload
    slo: Slo = Slo()
    runtime: Literal["auto", "colocated", "disaggregated"] = "auto"
    routing: Routing | None = None  # mixture-of-experts models only (schema/routing.py)
    sites: list[str] | None = Field(None, min_length=1, max_length=MAX_SITES)  # pin (schema/fleet.py)
    speculative: Speculative | None = None  # decode speculatively where it pays (schema/speculative.py)


class HardwareEntry(Strict):
    type: HardwareRef
    supply: int | None = Field(None, ge=0, le=MAX_SUPPLY, description="devices available")
    price_per_hour: float | None = Field(None, gt=0, le=MAX_PRICE, description="USD/device-hour")
    power_w: float | None = Field(None, gt=0, le=1e5, description="override the card's power")

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
    prefill_decode_ratio: RatioBound = RatioBound()
    power_kw: float | None = Field(None, gt=0, le=1e7)
    safety_margin: float = Field(0.05, ge=0, le=10)
    # schema/fleet.py
    heterogeneous_prefill_decode: bool = True
    survive: Survive | None = None


class Software(Strict):
    """The serving stack the plan is for: selects the engine's calibrated parameters
    (hardware/calibration/<engine>.yaml); `engine:` fields given in the problem override them."""

    engine: Literal["vllm", "sglang", "trtllm"] | None = None
    version: str | None = Field(None, min_length=1, max_length=100)


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


def check_fleet_fields(p: Problem) -> None:
    """Names used by sites, services[].sites, survive and current must exist."""
    hw_names = [h.name for h in p.hardware]
    site_names = [s.name for s in p.sites or []]
    _check_sites(p, hw_names, site_names)
    _check_service_sites(p, site_names)
    _check_survive(p, site_names)
    _check_transition(p)
    _check_current(p, hw_names, site_names)


def _check_sites(p: Problem, hw_names: list[str], site_names: list[str]) -> None:
    """Site names are unique and their hardware types exist."""
    for i, s in enumerate(p.sites or []):
        if s.name in site_names[:i]:
            raise FieldError(f"site name '{s.name}' repeats sites[{site_names.index(s.name)}].name; "
                             "site names must be unique", ("sites", i, "name"))
        for j, h in enumerate(s.hardware):
            if h.type not in hw_names:
                raise FieldError(f"hardware type '{h.type}' is not in hardware: ({', '.join(hw_names)})",
                                 ("sites", i, "hardware", j, "type"))


def _check_service_sites(p: Problem, site_names: list[str]) -> None:
    """A service's pinned sites exist, once each."""
    for i, svc in enumerate(p.services):
        if svc.sites is None:
            continue
        if not p.sites:
            raise FieldError("services[].sites needs a top-level sites: list", ("services", i, "sites"))
        for j, name in enumerate(svc.sites):
            if name not in site_names:
                raise FieldError(f"site '{name}' is not in sites: ({', '.join(site_names)})",
                                 ("services", i, "sites", j))
            if name in svc.sites[:j]:
                raise FieldError(f"site '{name}' repeats", ("services", i, "sites", j))


def _check_survive(p: Problem, site_names: list[str]) -> None:
    """Losing a site needs a second one."""
    survive = p.constraints.survive
    if survive is not None and survive.lose_site and len(site_names) < 2:
        raise FieldError("lose_site needs at least two sites in sites:",
                         ("constraints", "survive", "lose_site"))


def _check_transition(p: Problem) -> None:
    """current: and transition: come together, and only with objective: min_cost."""
    if (p.current is None) != (p.transition is None):
        given, missing = ("current", "transition") if p.current is not None else ("transition", "current")
        raise FieldError(f"{given}: needs {missing}: too (the deployment today and the cost of "
                         "switching go together)", (given,))
    if p.transition is not None and p.objective != "min_cost":
        raise FieldError("transition planning compares hourly costs; it needs objective: min_cost",
                         ("transition",))


def _check_current(p: Problem, hw_names: list[str], site_names: list[str]) -> None:
    """Each current pool names a service, a hardware type and (with sites) a site that exist."""
    svc_names = [s.name for s in p.services]
    for i, cp in enumerate(p.current or []):
        if cp.service not in svc_names:
            raise FieldError(f"service '{cp.service}' is not in services: ({', '.join(svc_names)})",
                             ("current", i, "service"))
        if cp.hardware not in hw_names:
            raise FieldError(f"hardware type '{cp.hardware}' is not in hardware: ({', '.join(hw_names)})",
                             ("current", i, "hardware"))
        if site_names and cp.site is None:
            raise FieldError("the problem has sites: a current pool needs its site", ("current", i))
        if cp.site is not None and cp.site not in site_names:
            where = f"sites: ({', '.join(site_names)})" if site_names else "sites: (none given)"
            raise FieldError(f"site '{cp.site}' is not in {where}", ("current", i, "site"))

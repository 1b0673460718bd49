"""One pool of a plan (result document, SPEC "Result document"), and the base of the result
models; the decision record (`decision.py`) and the plan (`result.py`) both hold pools."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_serializer

from solver.schema.base import Strict
from solver.schema.cards import Precision

Role = Literal["prefill", "decode", "colocated"]


class Doc(Strict):
    """A result model whose fields named in `_omit_when_none` are left out when None."""

    _omit_when_none: ClassVar[frozenset[str]] = frozenset()

    # no return annotation: pydantic then takes the JSON Schema of a wrap serializer from the model
    # itself (with `-> Any` every result document's published schema was empty)
    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: Any):  # noqa: ANN202
        data = handler(self)
        if isinstance(data, dict):
            for k in self._omit_when_none:
                if k in data and data[k] is None:
                    del data[k]
        return data


LATENCY_DECIMALS = 4  # a plan document's predicted latencies (ms) are rounded to this many
MEMORY_DECIMALS = 3  # and its memory per device (GiB) to this many (solver/plan/pools.py)


def rounding_slack(decimals: int) -> float:
    """The most a value rounded to `decimals` decimals lies above the value it stands for."""
    return 0.5 * 10.0 ** -decimals


class Predicted(Strict):
    ttft_ms: float | None = Field(description="p50 TTFT at the planned load")
    tpot_ms: float | None = Field(description="p50 TPOT at the planned load")
    memory_gib_per_device: float
    # extensions
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None


class CostComponents(Strict):
    """USD per hour by component (extension): rental, amortised capital and network, energy
    (x PUE) and hosting on the devices' power at their caps; they sum to the cost."""

    rental: float
    capital: float
    network: float
    energy: float
    hosting: float


class Pool(Doc):
    _omit_when_none = frozenset({"site", "kv_link_gb_s", "kv_link_latency_us", "kv_transfer_ms",
                                 "cp", "speculative", "power_cap_w", "kv_precision",
                                 "cost_components"})

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
    kv_precision: Precision | None = Field(
        None, description="the KV cache's precision where the service sets one or offers a choice "
        "(`kv_precision`, a list of precisions); absent: the KV cache is stored in `precision`")
    chunk_tokens: int | None = Field(None, description="colocated: prefill tokens per iteration")
    power_kw: float
    capacity_qps_per_instance: float
    # fleet extensions
    site: str | None = Field(None, description="the site of the pool (problems with sites)")
    kv_link_gb_s: float | None = Field(
        None, description="prefill pools of heterogeneous services: the KV link the TTFT was "
        "computed for (GB/s per device); absent: the pool's own card's scale-out link")
    kv_link_latency_us: float | None = None
    kv_transfer_ms: float | None = Field(None, description="KV transfer of a mean prompt, in TTFT")
    # modelling dimensions (issue 15)
    cp: int | None = Field(None, ge=2, description="context-parallel ranks per instance (ring "
                           "attention); absent: 1. devices_per_instance = tp x pp x dp x cp")
    speculative: str | None = Field(None, description="the speculative decoding method the pool "
                                    "runs (the service's `speculative:`); absent: none")
    # choices (extensions): the power limit the devices run at (types with power_caps_w), the
    # KV cache precision (services that give kv_precision), the cost by component (`cost:`)
    power_cap_w: float | None = Field(None, description="board power limit per device, W")
    cost_components: CostComponents | None = None


def parallel_words(p: Pool) -> str:
    """Every parallel dimension of a pool, ep and dp included where they are 1."""
    return (f"tp{p.tp} pp{p.pp} ep{p.ep} dp{p.dp}" + (f" cp{p.cp}" if p.cp else "")
            + (f" +{p.speculative}" if p.speculative else ""))


def pool_phrase(p: Pool, service: str | None = None) -> str:
    """One pool in words, the same wherever a plan is summed up in one line (the runners-up and
    the fallback of the decision record, the reports): its service, role, instances x hardware
    (and power cap), the whole parallelism (tp pp ep dp, cp, speculation), batch, the devices it
    takes and its site. `12 x h100-sxm tp4 ...` never reads as 12 devices: the count follows."""
    par = parallel_words(p)
    cap = f" at {p.power_cap_w:g} W" if p.power_cap_w is not None else ""
    head = f"{service} {p.role}" if service else p.role
    site = f" at site {p.site}" if p.site else ""
    return (f"{head}: {p.instances} x {p.hardware}{cap} {par} batch {p.batch}, "
            f"{p.devices} device{'s' if p.devices != 1 else ''}{site}")

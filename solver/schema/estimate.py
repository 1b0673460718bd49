"""The document `fleetplan estimate` prints (SPEC: at least fits, memory_gib_per_device,
prefill_ms, decode_step_ms, ttft_ms, tpot_ms, throughput_qps, tokens_per_s)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.base import Strict
from solver.schema.cards import Precision


class MemoryBreakdown(Strict):
    weights_gib: float
    kv_cache_gib: float
    activations_gib: float
    reserve_gib: float
    usable_gib: float = Field(description="device memory x gpu_memory_utilization")
    device_gib: float


class TimeBreakdown(Strict):
    """Milliseconds of one iteration on the slowest pipeline stage."""

    gemm_ms: float
    attention_ms: float
    communication_ms: float
    kernel_overhead_ms: float
    pipeline_hop_ms: float


class EstimateResult(Strict):
    model: str
    hardware: str
    tp: int
    pp: int
    ep: int
    dp: int
    cp: int = Field(1, description="context-parallel ranks (ring attention over the prompt)")
    devices_per_instance: int
    precision: Precision
    kv_precision: Precision
    math_precision: Precision = Field(description="bf16 when the device has no native support "
                                      "for the weight precision (weight-only quantisation)")
    stage: Literal["prefill", "decode", "both", "closed_loop"]
    batch: int | None
    concurrency: int | None
    input_tokens: int
    output_tokens: int
    routing: str | None = Field(None, description="routing over experts (MoE models only)")
    speculative: str | None = Field(None, description="the decode step's speculative decoding, "
                                    "METHOD:K:A[:DRAFT]; decode_step_ms and tpot_ms are then per token")
    prefix_hit_rate: float | None = Field(None, description="share of the prompt served from a prefix "
                                          "cache (prefill computes the rest)")
    power_cap_w: float | None = Field(None, description="board power limit (extension); null: full power")
    fits: bool
    memory_gib_per_device: float
    memory: MemoryBreakdown
    prefill_ms: float | None
    decode_step_ms: float | None
    ttft_ms: float | None
    tpot_ms: float | None
    throughput_qps: float
    tokens_per_s: float
    breakdown: TimeBreakdown | None
    operator_sources: dict[str, float] = Field(
        description="share of the operator time that came from measured, interpolated, "
        "extrapolated and roofline-only operators (the profiles' coverage)"
    )
    notes: list[str]

"""Named, explained parameters of the serving engine and the runtime models.

These are the performance model's correction factors. Each has a default with its source; a
problem file or a calibration (see the measured-profiles issue) may override them. Nothing else in
`solver.perf` hides a constant that changes a prediction.
"""

from __future__ import annotations

from pydantic import Field

from solver.schema.base import Strict


class EngineParams(Strict):
    # ---- memory ----------------------------------------------------------------------------
    gpu_memory_utilization: float = Field(
        0.90,
        gt=0.1,
        le=1.0,
        description="share of device memory the engine may use (vLLM's gpu_memory_utilization "
        "default 0.9; SGLang's mem_fraction_static is similar)",
    )
    runtime_reserve_gib: float = Field(
        3.5,
        ge=0,
        description="CUDA context, cuBLAS/cuDNN workspaces, allocator slack per device "
        "(aiconfigurator TRT-LLM backend other_mem, reference/hardware.md 3.4)",
    )
    collective_buffer_gib: float = Field(
        0.4,
        ge=0,
        description="NCCL / custom all-reduce buffers when tp > 1 (aiconfigurator: 342-392 MB)",
    )
    # ---- iteration costs ---------------------------------------------------------------------
    step_overhead_ms: float = Field(
        1.0,
        ge=0,
        description="CPU scheduler / sampling / launch overhead per engine iteration; an "
        "assumption (vLLM V1 with CUDA graphs), to be calibrated on measured end-to-end data",
    )
    kernels_per_layer: float = Field(
        10.0,
        ge=0,
        description="kernels per transformer layer, each paying the card's kernel_overhead_us "
        "(norms x2, qkv, attention, o, gate/up, act, down, 2 collectives)",
    )
    mixed_batch_slowdown: float = Field(
        1.10,
        ge=1.0,
        description="the prefill work an iteration adds on top of its decode batch runs this much "
        "slower than the roofline of the combined batch says (split attention kernels, worse GEMM "
        "tiling for mixed shapes); an assumption, to be calibrated on measured data",
    )
    # ---- colocated runtime --------------------------------------------------------------------
    chunked_prefill: bool = Field(
        True,
        description="False: a whole prompt is prefilled in one iteration (stalls every decoding "
        "sequence for that iteration)",
    )
    max_batched_tokens: int = Field(
        8192,
        ge=16,
        description="token budget per iteration in a closed-loop benchmark (vLLM V1 default "
        "max_num_batched_tokens for online serving on large GPUs)",
    )
    # ---- disaggregated runtime ----------------------------------------------------------------
    decode_slot_fill: float = Field(
        0.92,
        gt=0,
        le=1,
        description="average occupancy of decode batch slots under Poisson arrivals "
        "(aiconfigurator's rate-matching decode factor 0.92, 'not saturating the batch slot')",
    )
    max_utilization: float = Field(
        0.95,
        gt=0,
        lt=1,
        description="highest utilisation a prefill queue is planned at, whatever the SLO",
    )
    kv_transfer_overlap: float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of the prefill->decode KV transfer hidden behind prefill compute by "
        "layer-wise streaming; 0 charges the whole transfer to TTFT (conservative)",
    )


DEFAULT_ENGINE = EngineParams()

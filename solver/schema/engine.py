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
        le=1_000,  # GiB: a device's whole memory (cards.py MAX_MEMORY_GIB) is far beyond any reserve
        description="CUDA context, cuBLAS/cuDNN workspaces, allocator slack per device "
        "(aiconfigurator TRT-LLM backend other_mem; docs/sources.md, activation and runtime memory)",
    )
    collective_buffer_gib: float = Field(
        0.4,
        ge=0,
        le=1_000,  # GiB, as runtime_reserve_gib
        description="NCCL / custom all-reduce buffers when tp > 1 (aiconfigurator: 342-392 MB)",
    )
    # ---- achieved efficiency at model shapes ------------------------------------------------
    gemm_efficiency_factor: float = Field(
        1.0,
        gt=0,
        le=1.5,
        description="achieved GEMM throughput at the model's shapes as a fraction of the card's "
        "best-shape (MAMF) efficiency; an engine property, fitted on measured benchmarks",
    )
    memory_efficiency_factor: float = Field(
        1.0,
        gt=0,
        le=1.5,
        description="achieved HBM bandwidth in the engine's kernels as a fraction of the card's "
        "memory efficiency; fitted on measured benchmarks",
    )
    # ---- iteration costs ---------------------------------------------------------------------
    request_overhead_ms: float = Field(
        0.0,
        ge=0,
        le=1e7,  # ms: as an SLO bound (problem.py LatencyBound)
        description="fixed time every request spends outside the forward passes before its first "
        "token reaches the client (HTTP, tokenisation, scheduling, streaming); part of TTFT",
    )
    step_overhead_ms: float = Field(
        1.0,
        ge=0,
        le=1e7,  # ms: as an SLO bound
        description="CPU scheduler / sampling / launch overhead per engine iteration; an "
        "assumption (vLLM V1 with CUDA graphs), to be calibrated on measured end-to-end data",
    )
    eager_layer_host_ms: float = Field(
        0.0,
        ge=0,
        le=1e3,  # ms per layer: a whole second of host time per layer is far beyond any engine
        description="host (CPU) time to launch one transformer layer's kernels outside a CUDA "
        "graph; an engine that replays CUDA graphs only for decode-only batches (TensorRT-LLM's "
        "PyTorch backend, SGLang) runs every iteration with prompt tokens eagerly, and such an "
        "iteration lasts at least layers x this (solver/replay/steptime.py); 0: not modelled",
    )
    kernels_per_layer: float = Field(
        10.0,
        ge=0,
        le=10_000,  # kernels: a layer launches tens
        description="kernels per transformer layer, each paying the card's kernel_overhead_us "
        "(norms x2, qkv, attention, o, gate/up, act, down, 2 collectives)",
    )
    unmeasured_kernels_per_layer: float = Field(
        3.0,
        ge=0,
        le=10_000,  # as kernels_per_layer
        description="with measured operator tables: kernels per layer that are not measured "
        "and still pay the kernel overhead: two residual add + RMSNorm (fused, vLLM's "
        "fused_add_rms_norm) and the activation; their HBM traffic is charged apart",
    )
    mixed_batch_slowdown: float = Field(
        1.10,
        ge=1.0,
        le=100,  # 100x slower than the roofline would be a different engine
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
        le=10_000_000,  # tokens: as a workload's (problem.py MAX_TOKENS)
        description="token budget per iteration in a closed-loop benchmark (vLLM V1 default "
        "max_num_batched_tokens for online serving on large GPUs)",
    )
    wave_size_coefficient: float = Field(
        1.0,
        gt=0,
        le=8,
        description="closed-loop benchmarks: requests arrive in waves of G = coefficient x "
        "N^exponent (1 <= G <= N) that are prefilled back to back (completions of requests that "
        "shared an iteration stay aligned, so their successors arrive together); 1 and 0 give "
        "no waves (the staggered steady state), 1 and 1 one lockstep wave of all N; fitted per "
        "engine on measured benchmarks, used only by `estimate --concurrency` and `validate`",
    )
    wave_size_exponent: float = Field(
        0.0,
        ge=0,
        le=1,
        description="closed-loop benchmarks: exponent of the wave size G = coefficient x "
        "N^exponent (see wave_size_coefficient); the h100 fits give 0.44 x N^0.68 for vLLM, "
        "0.89 x N^0.46 for TensorRT-LLM and 0.80 x N for SGLang (nearly lockstep)",
    )
    # ---- disaggregated runtime ----------------------------------------------------------------
    decode_slot_fill: float = Field(
        0.92,
        gt=0,
        le=1,
        description="average occupancy of decode batch slots under Poisson arrivals "
        "(aiconfigurator's rate-matching decode factor 0.92, 'not saturating the batch slot'); "
        "online services only: without a TPOT bound (offline) a backlog keeps every slot full (1)",
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

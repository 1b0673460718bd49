"""Model and hardware cards: the typed form of `models/*.yaml` and `hardware/*.yaml`.

Every field carries its unit in its name. Cards are strict (`extra="forbid"`): a misspelt key in
a card is an error, never silently ignored. The same models validate inline cards given in a
problem file.
"""

from __future__ import annotations

import datetime as _dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from solver.schema.base import Strict

Precision = Literal["bf16", "fp8", "fp4"]
PRECISIONS: tuple[Precision, ...] = ("bf16", "fp8", "fp4")

# Upper bounds of card fields: each is far above any published model or device (so none limits a
# real card) yet small enough that the model's arithmetic stays finite and its arrays small.
MAX_LAYERS = 10_000  # the deepest published LLMs have ~200 layers (Llama 3.1 405B: 126)
MAX_WIDTH = 1_048_576  # hidden, FFN, LoRA and head sizes; the widest published are ~53K (GPT-3: 12,288 hidden)
MAX_HEADS = 65_536  # attention heads; published models have at most 128
MAX_VOCAB = 16_777_216  # 2^24 tokens; the largest published vocabularies are ~256K
MAX_CONTEXT = 100_000_000  # tokens; the longest published context is 10M (Llama 4 Scout)
MAX_EXPERTS = 4_096  # as a routing histogram (schema/routing.py); the most of a published MoE is 384 (Kimi K2)
MAX_TOP_K = 1_024  # experts per token; published models route to at most 16
MAX_PARAMS_B = 1_000_000.0  # billions of parameters: a quadrillion, ~500x the largest announced
MAX_MEMORY_GIB = 1_000_000.0  # per device; today's largest is 288 GiB (B300)
MAX_BANDWIDTH_TB_S = 10_000.0  # HBM per device; today's fastest is ~8 TB/s
MAX_TFLOPS = 10_000_000.0  # dense per device; today's fastest is ~10,000 (B300 FP4)
MAX_LINK_GB_S = 1_000_000.0  # one direction per device; NVLink 5 is 900 GB/s
MAX_LATENCY_US = 10_000_000.0  # ten seconds: no interconnect's start-up latency comes close
MAX_DEVICES_PER_NODE = 1_024  # as a problem's override (solver/schema/problem.py MAX_DEGREE)
MAX_DOMAIN_DEVICES = 1_000_000  # the largest NVLink domain announced has 576 devices
MAX_POWER_W = 100_000.0  # 100 kW per device; today's largest is ~1.4 kW
MAX_PRICE_PER_HOUR = 10_000.0  # USD per device-hour, as a problem's (solver/schema/problem.py MAX_PRICE)
MAX_TEXT = 2_000  # characters of a name, source or note


# --------------------------------------------------------------------------------------------
# Model cards
# --------------------------------------------------------------------------------------------


class MlaAttention(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3). Sizes from the HF config."""

    q_lora_rank: int | None = Field(None, ge=1, le=MAX_WIDTH, description="None: queries projected directly")
    kv_lora_rank: int = Field(ge=1, le=MAX_WIDTH)
    qk_nope_head_dim: int = Field(ge=1, le=MAX_WIDTH)
    qk_rope_head_dim: int = Field(ge=0, le=MAX_WIDTH)
    v_head_dim: int = Field(ge=1, le=MAX_WIDTH)


class LocalAttention(Strict):
    """Chunked (Llama 4) or sliding-window (Mistral) attention on some layers.

    A layer i is global (full context) when `global_every` is set and (i + 1) % global_every == 0;
    every other layer attends only within `window_tokens`.
    """

    kind: Literal["chunked", "sliding"]
    window_tokens: int = Field(ge=1, le=MAX_CONTEXT)
    global_every: int | None = Field(None, ge=1, le=MAX_LAYERS, description="None: every layer is local")


class Attention(Strict):
    kind: Literal["gqa", "mla"] = "gqa"
    num_heads: int = Field(ge=1, le=MAX_HEADS, description="query heads")
    num_kv_heads: int = Field(ge=1, le=MAX_HEADS, description="key/value heads (== num_heads for MHA)")
    head_dim: int = Field(ge=1, le=MAX_WIDTH, description="per-head size; not assumed to be hidden/heads")
    mla: MlaAttention | None = None
    local: LocalAttention | None = None

    @model_validator(mode="after")
    def _check(self) -> Attention:
        if self.kind == "mla" and self.mla is None:
            raise ValueError("attention.kind 'mla' needs an 'mla' block")
        if self.kind == "gqa" and self.mla is not None:
            raise ValueError("an 'mla' block needs attention.kind 'mla'")
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        return self


class Moe(Strict):
    """Mixture-of-experts feed-forward.

    Layer i (0-based) is MoE when i >= first_dense_layers and
    (i - first_dense_layers + 1) % every == 0; other layers use the dense MLP of width
    `intermediate_size` of the model.
    """

    num_experts: int = Field(ge=2, le=MAX_EXPERTS)
    experts_per_token: int = Field(ge=1, le=MAX_TOP_K, description="top-k")
    expert_intermediate_size: int = Field(ge=1, le=MAX_WIDTH)
    shared_experts: int = Field(0, ge=0, le=MAX_TOP_K)
    shared_expert_intermediate_size: int | None = Field(
        None, ge=1, le=MAX_WIDTH, description="None: same as expert_intermediate_size"
    )
    first_dense_layers: int = Field(0, ge=0, le=MAX_LAYERS)
    every: int = Field(1, ge=1, le=MAX_LAYERS, description="2: every other layer is MoE (Llama 4 Maverick)")

    @model_validator(mode="after")
    def _check(self) -> Moe:
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token cannot exceed num_experts")
        return self


# how an FP8 checkpoint scales its dense GEMMs (solver/profiles/sources/aic/gemm.py: each format)
Fp8Scaling = Literal["per_tensor_static", "per_tensor_dynamic", "block"]


class ModelCard(Strict):
    name: str = Field(min_length=1, max_length=200)
    source: str = Field(max_length=MAX_TEXT, description="where the numbers come from (published config)")
    num_layers: int = Field(ge=1, le=MAX_LAYERS)
    hidden_size: int = Field(ge=1, le=MAX_WIDTH)
    intermediate_size: int | None = Field(
        None, ge=1, le=MAX_WIDTH, description="dense FFN width; None when every layer is MoE"
    )
    gated_mlp: bool = Field(True, description="SwiGLU-style gate+up+down (3 matrices)")
    vocab_size: int = Field(ge=1, le=MAX_VOCAB)
    tie_word_embeddings: bool = False
    attention: Attention
    moe: Moe | None = None
    max_context_tokens: int = Field(ge=1, le=MAX_CONTEXT)
    fp8_scaling: Fp8Scaling = Field(
        "per_tensor_static",
        description="how the model's FP8 checkpoint scales its dense GEMMs, which measured GEMM "
        "rows an fp8 plan reads: per_tensor_static (per-tensor weights with static input scales, "
        "ModelOpt's FP8 checkpoints), per_tensor_dynamic (per-tensor weights, the input's scale "
        "computed on every call), block (128x128 block-scaled weights, per-token-group input "
        "scales: DeepSeek's and Qwen's own FP8 checkpoints)")
    published_total_params_b: float | None = Field(None, gt=0, le=MAX_PARAMS_B, description="for the card test")
    published_active_params_b: float | None = Field(None, gt=0, le=MAX_PARAMS_B)

    @model_validator(mode="after")
    def _check(self) -> ModelCard:
        dense_layers = self.num_layers - self.num_moe_layers
        if dense_layers > 0 and self.intermediate_size is None:
            raise ValueError("intermediate_size is required when some layers are dense")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise ValueError("moe.first_dense_layers exceeds num_layers")
        return self

    @property
    def num_moe_layers(self) -> int:
        if self.moe is None:
            return 0
        return max(0, (self.num_layers - self.moe.first_dense_layers) // self.moe.every)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None


# --------------------------------------------------------------------------------------------
# Hardware cards
# --------------------------------------------------------------------------------------------


class PeakTflops(Strict):
    """Dense (no 2:4 sparsity) peak tensor throughput, TFLOP/s. None: not supported natively."""

    bf16: float = Field(gt=0, le=MAX_TFLOPS)
    fp8: float | None = Field(None, gt=0, le=MAX_TFLOPS)
    fp4: float | None = Field(None, gt=0, le=MAX_TFLOPS)


class GemmEfficiency(Strict):
    """Achievable fraction of dense peak for large GEMMs (MAMF-style measurements)."""

    bf16: float = Field(gt=0, le=1)
    fp8: float | None = Field(None, gt=0, le=1)
    fp4: float | None = Field(None, gt=0, le=1)


class Efficiency(Strict):
    gemm: GemmEfficiency
    memory: float = Field(gt=0, le=1, description="achievable fraction of HBM bandwidth")
    scale_up: float = Field(gt=0, le=1.2, description="all-reduce busbw / uni link bandwidth")
    scale_out: float = Field(gt=0, le=1, description="achieved / NIC bandwidth, large messages")
    kernel_overhead_us: float = Field(ge=0, le=MAX_LATENCY_US, description="fixed time per kernel (launch, tail)")


class Link(Strict):
    bandwidth_gb_s: float = Field(gt=0, le=MAX_LINK_GB_S, description="per device, one direction, GB/s (1e9)")
    latency_us: float = Field(ge=0, le=MAX_LATENCY_US, description="per-message start-up (alpha)")


class ScaleUp(Link):
    domain_devices: int = Field(ge=1, le=MAX_DOMAIN_DEVICES, description="devices sharing the NVLink-class fabric")
    peer_bandwidth_gb_s: float | None = Field(
        None,
        gt=0,
        le=MAX_LINK_GB_S,
        description="fully connected meshes (xGMI, Gaudi): one-direction bandwidth of the link "
        "to each peer; a group of k devices gets min(bandwidth, (k-1) x peer). None: switched",
    )


class PowerPoint(Strict):
    """One point of a card's power curve: under a board power limit of `power_w`, the sustained
    tensor throughput and HBM bandwidth as fractions of their values at the card's full power."""

    power_w: float = Field(gt=0, le=MAX_POWER_W, description="board power limit, W")
    compute_fraction: float = Field(gt=0, le=1, description="sustained clock / clock at full power")
    memory_fraction: float = Field(1.0, gt=0, le=1, description="HBM bandwidth / full-power bandwidth")


def check_power_curve(points: tuple[PowerPoint, ...], full_power_w: float) -> None:
    """Ascending, distinct powers ending at the card's power with fractions 1, non-decreasing."""
    powers = [p.power_w for p in points]
    if powers != sorted(set(powers)):
        raise ValueError("power_curve: power_w must be strictly increasing")
    top = points[-1]
    if top.power_w != full_power_w or top.compute_fraction != 1 or top.memory_fraction != 1:
        raise ValueError(f"power_curve must end at the card's power ({full_power_w:g} W) with "
                         "compute_fraction and memory_fraction 1")
    for a, b in zip(points, points[1:]):
        if b.compute_fraction < a.compute_fraction or b.memory_fraction < a.memory_fraction:
            raise ValueError("power_curve: fractions must not fall as power rises")


class HardwareCard(Strict):
    name: str = Field(min_length=1, max_length=200)
    vendor: str = Field(max_length=200)
    source: str = Field(max_length=MAX_TEXT)
    memory_gib: float = Field(gt=0, le=MAX_MEMORY_GIB, description="usable HBM per device, GiB")
    hbm_bandwidth_tb_s: float = Field(gt=0, le=MAX_BANDWIDTH_TB_S, description="TB/s (1e12 bytes/s)")
    peak_tflops: PeakTflops
    scale_up: ScaleUp
    scale_out: Link
    devices_per_node: int = Field(ge=1, le=MAX_DEVICES_PER_NODE)
    power_w: float = Field(gt=0, le=MAX_POWER_W, description="board power per device, W")
    price_per_hour: float = Field(gt=0, le=MAX_PRICE_PER_HOUR, description="USD per device-hour (placeholder default)")
    price_source: str = Field(max_length=MAX_TEXT)
    price_date: str = Field(max_length=40, description="when the placeholder price was observed (YYYY-MM-DD)")
    efficiency: Efficiency
    power_curve: tuple[PowerPoint, ...] | None = Field(
        None, min_length=2, max_length=64,
        description="sustained throughput under power limits (power_caps_w in a problem)")
    power_curve_source: str | None = Field(None, max_length=2000)

    @field_validator("price_date", mode="before")
    @classmethod
    def _iso_date(cls, v: object) -> object:
        if isinstance(v, _dt.date):
            v = v.isoformat()
        if isinstance(v, str):
            _dt.date.fromisoformat(v)  # ValueError names the field
        return v

    @model_validator(mode="after")
    def _check(self) -> HardwareCard:
        if self.scale_up.domain_devices < self.devices_per_node:
            # A node's devices always share the node's fabric; an NVL72 domain spans nodes.
            raise ValueError("scale_up.domain_devices must be >= devices_per_node")
        for p in ("fp8", "fp4"):
            if getattr(self.peak_tflops, p) is not None and getattr(self.efficiency.gemm, p) is None:
                raise ValueError(f"efficiency.gemm.{p} is needed when peak_tflops.{p} is set")
        if self.power_curve is not None:
            if self.power_curve_source is None:
                raise ValueError("power_curve needs power_curve_source")
            check_power_curve(self.power_curve, self.power_w)
        return self

    def supports(self, precision: Precision) -> bool:
        return getattr(self.peak_tflops, precision) is not None

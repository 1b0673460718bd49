"""Plain roofline bounds per operator family, from a hardware card's nominal numbers.

Used only in ratios (extrapolation holds the measured efficiency of a boundary point and scales
by roofline(query) / roofline(boundary)), so the card's efficiency factors are left out on
purpose: they would cancel. Kept local to this package so that profiles do not depend on the
internals of `solver.perf`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from solver.schema.cards import HardwareCard

# bytes per element of the table dtypes
DTYPE_BYTES: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_block": 1.0,
    "int8": 1.0,
    "fp4": 0.5 + 1.0 / 16.0,
}
ACT_BYTES = 2.0  # activations in and out are bf16


@dataclass(frozen=True, slots=True)
class Peaks:
    """Nominal peaks of one device (SI units)."""

    flops: tuple[tuple[str, float], ...]  # (dtype, FLOP/s) of tensor math
    hbm_bw: float  # bytes/s
    link_bw: float  # scale-up bytes/s per device, one direction
    link_lat: float  # seconds

    @classmethod
    def from_card(cls, card: HardwareCard) -> Peaks:
        bf16 = card.peak_tflops.bf16 * 1e12
        fp8 = (card.peak_tflops.fp8 or card.peak_tflops.bf16) * 1e12
        fp4 = (card.peak_tflops.fp4 or card.peak_tflops.fp8 or card.peak_tflops.bf16) * 1e12
        return cls(
            flops=(("bf16", bf16), ("fp16", bf16), ("fp8", fp8), ("fp8_block", fp8),
                   ("int8", fp8), ("fp4", fp4)),
            hbm_bw=card.hbm_bandwidth_tb_s * 1e12,
            link_bw=card.scale_up.bandwidth_gb_s * 1e9,
            link_lat=card.scale_up.latency_us * 1e-6,
        )

    def flops_of(self, dtype: str) -> float:
        for name, v in self.flops:
            if name == dtype:
                return v
        return dict(self.flops)["bf16"]


def _bytes(dtype: object) -> float:
    return DTYPE_BYTES.get(str(dtype), 2.0)


def gemm(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    (dtype,) = key
    m, n, k = (np.asarray(x, dtype=float) for x in xs)
    b = _bytes(dtype)
    flops = 2.0 * m * n * k
    traffic = (m * k + n * k) * b + m * n * ACT_BYTES
    return np.maximum(flops / peaks.flops_of(str(dtype)), traffic / peaks.hbm_bw)


def attention_context(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    kv_dtype, heads, kv_heads, head_dim = key
    batch, s = (np.asarray(x, dtype=float) for x in xs)
    pairs = s * (s + 1.0) / 2.0  # causal query-key pairs per prompt
    flops = 4.0 * batch * heads * head_dim * pairs
    traffic = batch * s * head_dim * (2.0 * heads * ACT_BYTES + 2.0 * kv_heads * _bytes(kv_dtype))
    return np.maximum(flops / peaks.flops_of("bf16"), traffic / peaks.hbm_bw)


def attention_generation(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    kv_dtype, heads, kv_heads, head_dim = key
    batch, kv = (np.asarray(x, dtype=float) for x in xs)
    flops = 4.0 * batch * heads * head_dim * kv
    traffic = batch * (kv * 2.0 * kv_heads * head_dim * _bytes(kv_dtype) + 2.0 * heads * head_dim * ACT_BYTES)
    return np.maximum(flops / peaks.flops_of("bf16"), traffic / peaks.hbm_bw)


def allreduce(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    _dtype, n = key
    (size,) = (np.asarray(x, dtype=float) for x in xs)
    n = float(n)
    return peaks.link_lat + 2.0 * (n - 1.0) / n * size / peaks.link_bw


def collectives(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    op, _dtype, n = key
    (size,) = (np.asarray(x, dtype=float) for x in xs)
    n = float(n)
    factor = 2.0 if op == "all_reduce" else 1.0
    return peaks.link_lat + factor * (n - 1.0) / n * size / peaks.link_bw


def moe_experts(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    """Gated experts (gate+up and down: 3 matrices of hidden x inter/moe_tp) on one device.

    Balanced routing as the collectors time it: the device computes tokens * topk / moe_ep
    token-expert pairs and reads the weights of the experts they touch, spread as widely as
    possible (clip(pairs, 1, experts / moe_ep) local experts)."""
    dtype, _distribution, hidden, inter, topk, experts = key
    tokens, tp, ep = (np.asarray(x, dtype=float) for x in xs)
    width = float(inter) / tp
    pairs = tokens * float(topk) / ep
    touched = np.clip(pairs, 1.0, float(experts) / ep)
    flops = 2.0 * pairs * 3.0 * float(hidden) * width
    traffic = (touched * 3.0 * float(hidden) * width * _bytes(dtype)
               + (2.0 * tokens + 2.0 * pairs) * float(hidden) * ACT_BYTES)
    return np.maximum(flops / peaks.flops_of(str(dtype)), traffic / peaks.hbm_bw)


FAMILY_ROOFLINES = {
    "gemm": gemm,
    "attention_context": attention_context,
    "attention_generation": attention_generation,
    "allreduce": allreduce,
    "collectives": collectives,
    "moe_experts": moe_experts,
}

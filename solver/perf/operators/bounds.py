"""The laws the measured tables extrapolate by: plain roofline bounds per table family.

A table answers outside its measured range (and fills the cells a collector skipped) by
holding the achieved efficiency of the nearest measured point and scaling by
bound(query) / bound(point) (solver/profiles/interp.py). The bounds come from the hardware
card's nominal peaks: only their ratios are used, so the card's efficiency factors are left
out (a constant factor cancels). The FLOPs and bytes are those of `counts.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Sequence

import numpy as np

from solver.perf.operators import counts
from solver.perf.operators.counts import Work
from solver.schema.cards import HardwareCard

# bytes per element of the table dtypes
DTYPE_BYTES: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_block": 1.0,
    "fp8_static": 1.0,
    "int8": 1.0,
    "fp4": 0.5 + 1.0 / 16.0,
}


def dtype_bytes(dtype: object) -> float:
    return DTYPE_BYTES.get(str(dtype), 2.0)


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
            flops=(("bf16", bf16), ("fp16", bf16), ("fp8", fp8), ("fp8_block", fp8), ("fp8_static", fp8),
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

    def bound(self, work: Work, dtype: str) -> np.ndarray:
        """max(compute at the dtype's peak, memory at HBM bandwidth)."""
        return np.maximum(work.flops / self.flops_of(dtype), work.bytes / self.hbm_bw)


def _floats(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(x, dtype=float) for x in xs]


def gemm(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    (dtype,) = key
    m, n, k = _floats(xs)
    return peaks.bound(counts.gemm(m, n, k, dtype_bytes(dtype)), str(dtype))


def attention_context(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    kv_dtype, heads, kv_heads, head_dim = key
    batch, s = _floats(xs)
    return peaks.bound(counts.context_attention(batch, s, heads, kv_heads, head_dim, dtype_bytes(kv_dtype)), "bf16")


def attention_generation(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    kv_dtype, heads, kv_heads, head_dim = key
    batch, kv = _floats(xs)
    return peaks.bound(counts.generation_attention(batch, kv, heads, kv_heads, head_dim, dtype_bytes(kv_dtype)),
                       "bf16")


def allreduce(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    """Ring all-reduce on one scale-up link: alpha + 2 (n-1)/n bytes / bandwidth."""
    _dtype, n = key
    (size,) = _floats(xs)
    n = float(n)
    return peaks.link_lat + 2.0 * (n - 1.0) / n * size / peaks.link_bw


def moe_experts(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    dtype, _distribution, hidden, inter, topk, experts = key
    tokens, tp, ep = _floats(xs)
    work = counts.balanced_experts(tokens, tp, ep, hidden, inter, topk, experts, dtype_bytes(dtype))
    return peaks.bound(work, str(dtype))


# DeepSeek-V3's MLA geometry (models/deepseek-v3.yaml: hidden 7168, q_lora_rank 1536,
# kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128), the only model
# aiconfigurator-core 0.12.0 timed the MLA block tables for
_MLA_REPLICATED = 7168 * 1536 + 7168 * (512 + 64)  # q_a and kv_a down-projections, every rank
_MLA_PER_HEAD = 1536 * (128 + 64) + 512 * (128 + 128) + 128 * 7168  # q_b, kv_b, o_proj
_MLA_LATENT = 512 + 64  # cached elements per token


def _mla_params(heads) -> np.ndarray:
    return _MLA_REPLICATED + np.asarray(heads, dtype=float) * _MLA_PER_HEAD


def mla_generation(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    """The block's projections on `batch` tokens plus absorbed latent attention over `kv`."""
    gemm_dtype, kv_dtype, heads = key
    batch, kv = _floats(xs)
    params = _mla_params(heads)
    flops = 2.0 * batch * params + 2.0 * batch * float(heads) * kv * (_MLA_LATENT + 512)
    nbytes = params * dtype_bytes(gemm_dtype) + batch * kv * _MLA_LATENT * dtype_bytes(kv_dtype)
    return peaks.bound(Work(flops, nbytes), str(gemm_dtype))


def mla_context(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    """The block's projections on batch x isl tokens plus causal attention (q.k 192, v 128)."""
    gemm_dtype, _kv_dtype, heads = key
    batch, s = _floats(xs)
    params = _mla_params(heads)
    flops = 2.0 * batch * s * params + 2.0 * batch * float(heads) * s * (s + 1.0) / 2.0 * (192 + 128)
    nbytes = params * dtype_bytes(gemm_dtype) + batch * s * 4.0 * 7168 * 2.0
    return peaks.bound(Work(flops, nbytes), str(gemm_dtype))


def compute_scale(peaks: Peaks, key: tuple, xs: Sequence[np.ndarray]) -> np.ndarray:
    """Reading the m x k bf16 activation once (an amax reduction): HBM time."""
    m, k = _floats(xs)
    return 2.0 * m * k / peaks.hbm_bw


FAMILY_BOUNDS = {
    "mla_generation": mla_generation,
    "compute_scale": compute_scale,
    "mla_context": mla_context,
    "gemm": gemm,
    "attention_context": attention_context,
    "attention_generation": attention_generation,
    "allreduce": allreduce,
    "moe_experts": moe_experts,
}


@dataclass(frozen=True, slots=True)
class CardBounds:
    """The bounds of one card, per table family (hashable: the tables are cached by it)."""

    peaks: Peaks

    @classmethod
    def from_card(cls, card: HardwareCard) -> CardBounds:
        return cls(Peaks.from_card(card))

    def family(self, name: str):
        """bound(key, xs) of the family `name`."""
        return partial(FAMILY_BOUNDS[name], self.peaks)

"""Power-capped devices: a card under a board power limit, for the performance model.

Under a cap the clock falls until the board draws no more than the cap; the card's
`power_curve` gives the sustained compute throughput (and HBM bandwidth) as fractions of their
full-power values, interpolated linearly between its points. The capped card is the card with
its peak tensor throughput and HBM bandwidth scaled by those fractions, and measured operator
tables (taken at full power) are rescaled by how compute-bound each measured kernel is:

    t_capped = t x (1 + f (1/c - 1)),   f = min(1, t_compute / t)

where c is the compute fraction and t_compute the kernel's roofline compute time at full
power (FLOPs / achievable FLOP/s): a kernel limited by its math slows by 1/c, a kernel limited
by memory does not slow (its HBM traffic is scaled by the memory fraction instead, which the
shipped curves keep at 1). Attention over a KV cache during decode is memory-bound and scaled
by the memory fraction; prefill attention and MoE experts are scaled as GEMMs; collectives
run on links a power cap does not slow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.profiles import Estimate
from solver.profiles.operators import OperatorProfiles, _dtype_names
from solver.schema.cards import HardwareCard


def curve_fractions(card: HardwareCard, cap_w: float) -> tuple[float, float]:
    """(compute, memory) fractions of the card's full-power values under `cap_w`: 1 at or
    above the card's power; a card without a curve cannot be capped below it."""
    if cap_w >= card.power_w:
        return 1.0, 1.0
    if card.power_curve is None:
        raise ValueError(f"{card.name} has no power_curve: it cannot be capped at {cap_w:g} W")
    pw = [p.power_w for p in card.power_curve]
    if cap_w < pw[0]:
        raise ValueError(f"{cap_w:g} W is below {card.name}'s power curve ({pw[0]:g} W)")
    cf = float(np.interp(cap_w, pw, [p.compute_fraction for p in card.power_curve]))
    mf = float(np.interp(cap_w, pw, [p.memory_fraction for p in card.power_curve]))
    return cf, mf


def capped_card(card: HardwareCard, cap_w: float) -> HardwareCard:
    """The card as the performance model sees it under a power limit of `cap_w` (its power_w
    is the cap: what the fleet's power constraint counts)."""
    cf, mf = curve_fractions(card, cap_w)
    if cf == 1.0 and mf == 1.0:
        return card if cap_w == card.power_w else card.model_copy(update={"power_w": cap_w})
    pk = card.peak_tflops
    peak = pk.model_copy(update={p: (getattr(pk, p) * cf if getattr(pk, p) is not None else None)
                                 for p in ("bf16", "fp8", "fp4")})
    return card.model_copy(update={"peak_tflops": peak, "hbm_bandwidth_tb_s": card.hbm_bandwidth_tb_s * mf,
                                   "power_w": cap_w})


def _compute_bound_scale(seconds, flops, achievable: np.ndarray, cf: float) -> np.ndarray:
    """1 + f (1/cf - 1) with f the compute-bound share of the measured time."""
    t = np.asarray(seconds, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.clip(np.asarray(flops, dtype=float) / (achievable * t), 0.0, 1.0)
    f = np.where(np.isfinite(f), f, 1.0)
    return 1.0 + f * (1.0 / cf - 1.0)


@dataclass
class CappedProfiles:
    """A full-power card's measured tables, answered as the capped card would run them."""

    inner: OperatorProfiles
    card: HardwareCard  # the full-power card
    compute_fraction: float
    memory_fraction: float

    @property
    def measured(self) -> bool:
        return self.inner.measured

    def __getattr__(self, name: str):  # hardware, framework, bounds, tables, provenance, ...
        return getattr(self.inner, name)

    def _achievable(self, precision) -> np.ndarray:
        names = _dtype_names(precision)
        bf16 = self.card.peak_tflops.bf16 * self.card.efficiency.gemm.bf16
        out = np.full(names.shape, bf16 * 1e12)
        for p in ("fp8", "fp4"):
            peak, eff = getattr(self.card.peak_tflops, p), getattr(self.card.efficiency.gemm, p)
            if peak is not None and eff is not None:
                out = np.where(names == p, peak * eff * 1e12, out)
        return out

    def _scaled(self, est: Estimate, flops, precision) -> Estimate:
        k = _compute_bound_scale(est.seconds, flops, self._achievable(precision), self.compute_fraction)
        return Estimate(est.seconds * k, est.source)

    def gemm(self, m, n, k, precision="bf16") -> Estimate:
        est = self.inner.gemm(m, n, k, precision)
        return self._scaled(est, 2.0 * np.asarray(m) * n * k, precision)

    def attention_context(self, *args, **kw) -> Estimate:
        est = self.inner.attention_context(*args, **kw)
        return Estimate(est.seconds / self.compute_fraction, est.source)

    def attention_generation(self, *args, **kw) -> Estimate:
        est = self.inner.attention_generation(*args, **kw)
        return Estimate(est.seconds / self.memory_fraction, est.source)

    def allreduce(self, message_bytes, num_gpus) -> Estimate:
        return self.inner.allreduce(message_bytes, num_gpus)

    def moe_experts(self, num_tokens, moe_tp, moe_ep, precision="bf16", **kw) -> Estimate:
        est = self.inner.moe_experts(num_tokens, moe_tp, moe_ep, precision, **kw)
        flops = (6.0 * np.asarray(num_tokens, dtype=float) * kw["topk"] * kw["hidden_size"]
                 * kw["inter_size"] / (np.asarray(moe_tp) * np.asarray(moe_ep)))
        return self._scaled(est, flops, precision)


def capped_profiles(inner: OperatorProfiles, card: HardwareCard, cap_w: float):
    """The tables of `card` as they would run under `cap_w` (the tables themselves when the
    cap does not slow the card)."""
    cf, mf = curve_fractions(card, cap_w)
    if cf == 1.0 and mf == 1.0:
        return inner
    return CappedProfiles(inner, card, cf, mf)

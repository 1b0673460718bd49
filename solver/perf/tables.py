"""Struct-of-arrays inputs of the vectorised performance model.

`HardwareTable` turns hardware cards into per-type arrays (SI units: bytes, bytes/s, FLOP/s,
seconds). `Plans` holds one row per parallelism plan; every model function takes a `Plans` and
returns arrays of the same length. Nothing here loops over rows in Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Sequence

import numpy as np

from solver.profiles import ProfileSet
from solver.schema.cards import PRECISIONS, HardwareCard, Precision
from solver.schema.engine import EngineParams

GIB = 1024.0**3

# Bytes per element. fp4 carries one fp8 scale per 16 elements (NVFP4 / MXFP4 block scaling),
# so 0.5 + 1/16 bytes; fp8's per-tensor or per-block scales are negligible.
PRECISION_BYTES = np.array([2.0, 1.0, 0.5 + 1.0 / 16.0])
ACT_BYTES = 2.0  # activations and collectives travel in bf16


def precision_code(p: Precision) -> int:
    return PRECISIONS.index(p)


@dataclass(frozen=True, slots=True)
class HardwareTable:
    """Arrays indexed by hardware type (the `hw` column of `Plans`)."""

    names: tuple[str, ...]
    mem_bytes: np.ndarray
    hbm_bw: np.ndarray  # bytes/s, nominal
    mem_eff: np.ndarray
    gemm_flops: np.ndarray  # (n_hw, 3) achievable FLOP/s per weight precision (peak x eff)
    native: np.ndarray  # (n_hw, 3) bool: math runs natively in that precision
    bf16_flops: np.ndarray  # achievable bf16 FLOP/s (attention math)
    su_bw: np.ndarray  # scale-up bytes/s per device, one direction, x efficiency
    su_peer_bw: np.ndarray  # fully connected meshes: per-peer bytes/s x efficiency; 0 = switched
    su_lat: np.ndarray  # seconds
    su_domain: np.ndarray
    so_bw: np.ndarray  # scale-out bytes/s per device, one direction, x efficiency
    so_lat: np.ndarray
    per_node: np.ndarray
    power_w: np.ndarray
    price: np.ndarray  # USD per device-hour
    kernel_s: np.ndarray  # fixed seconds per kernel
    profiles: ProfileSet | None = None  # measured operator tables per hardware type

    @classmethod
    def from_cards(
        cls,
        cards: Sequence[HardwareCard],
        prices: Sequence[float] | None = None,
        engine: EngineParams | None = None,
        profiles: ProfileSet | None = None,
    ) -> HardwareTable:
        """Arrays of the cards; the engine's efficiency factors scale the cards' efficiencies."""
        g = engine.gemm_efficiency_factor if engine is not None else 1.0
        mf = engine.memory_efficiency_factor if engine is not None else 1.0
        n = len(cards)
        flops = np.zeros((n, 3))
        native = np.zeros((n, 3), dtype=bool)
        for i, c in enumerate(cards):
            bf16 = c.peak_tflops.bf16 * 1e12 * c.efficiency.gemm.bf16 * g
            for j, p in enumerate(PRECISIONS):
                peak = getattr(c.peak_tflops, p)
                eff = getattr(c.efficiency.gemm, p)
                if peak is not None and eff is not None:
                    flops[i, j] = peak * 1e12 * eff * g
                    native[i, j] = True
                else:
                    # Weight-only quantisation (e.g. fp8 Marlin on Ampere): weights are stored and
                    # read at the low precision, the math runs in bf16.
                    flops[i, j] = bf16

        def arr(f) -> np.ndarray:
            return np.array([f(c) for c in cards], dtype=float)

        return cls(
            names=tuple(c.name for c in cards),
            mem_bytes=arr(lambda c: c.memory_gib * GIB),
            hbm_bw=arr(lambda c: c.hbm_bandwidth_tb_s * 1e12),
            mem_eff=arr(lambda c: min(c.efficiency.memory * mf, 1.0)),
            gemm_flops=flops,
            native=native,
            bf16_flops=flops[:, 0].copy(),
            su_bw=arr(lambda c: c.scale_up.bandwidth_gb_s * 1e9 * c.efficiency.scale_up),
            su_peer_bw=arr(
                lambda c: (c.scale_up.peer_bandwidth_gb_s or 0.0) * 1e9 * c.efficiency.scale_up
            ),
            su_lat=arr(lambda c: c.scale_up.latency_us * 1e-6),
            su_domain=arr(lambda c: c.scale_up.domain_devices),
            so_bw=arr(lambda c: c.scale_out.bandwidth_gb_s * 1e9 * c.efficiency.scale_out),
            so_lat=arr(lambda c: c.scale_out.latency_us * 1e-6),
            per_node=arr(lambda c: c.devices_per_node),
            power_w=arr(lambda c: c.power_w),
            price=np.array(prices, dtype=float) if prices is not None else arr(lambda c: c.price_per_hour),
            kernel_s=arr(lambda c: c.efficiency.kernel_overhead_us * 1e-6),
            profiles=profiles,
        )

    def __len__(self) -> int:
        return len(self.names)

    def fabric(self, hw: np.ndarray) -> Fabric:
        """The links seen by each plan's devices."""
        return Fabric(
            su_bw=self.su_bw[hw],
            su_peer_bw=self.su_peer_bw[hw],
            su_lat=self.su_lat[hw],
            su_domain=self.su_domain[hw],
            so_bw=self.so_bw[hw],
            so_lat=self.so_lat[hw],
        )


@dataclass(frozen=True, slots=True)
class Fabric:
    """Scale-up and scale-out links per plan (arrays), bandwidths already x efficiency."""

    su_bw: np.ndarray
    su_peer_bw: np.ndarray
    su_lat: np.ndarray
    su_domain: np.ndarray
    so_bw: np.ndarray
    so_lat: np.ndarray

    def scale_up_bw(self, k: np.ndarray) -> np.ndarray:
        """Per-device bandwidth inside a group of k devices of one scale-up domain.

        On a switched fabric (NVSwitch) every device gets its full link; on a fully connected
        mesh (xGMI, Gaudi) a device reaches each peer over one link, so k devices use k-1 links.
        """
        mesh = np.minimum(self.su_bw, np.maximum(k - 1, 1) * self.su_peer_bw)
        return np.where(self.su_peer_bw > 0, mesh, self.su_bw)


DEFAULTS = {"cp": 1, "spec": 0}  # columns `Plans.of` and `Plans.grid` may be given without


@dataclass(frozen=True, slots=True)
class Plans:
    """One row per (hardware type, tp, pp, ep, dp, batch, precision, cp, speculation) plan of one
    model. `cp` (context-parallel ranks, solver/perf/context_parallel.py) and `spec` (1: decode
    speculatively, solver/perf/speculative.py) default to 1 and 0 in `of` and `grid`."""

    hw: np.ndarray  # index into HardwareTable
    tp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    dp: np.ndarray
    batch: np.ndarray  # sequences per instance (prefill: prompts per forward pass)
    wprec: np.ndarray  # weight/math precision code (index into PRECISIONS)
    kvprec: np.ndarray  # KV cache precision code
    cp: np.ndarray  # context-parallel ranks (ring attention over the prompt, sharded KV)
    spec: np.ndarray  # 1: the service's speculative decoding is on in this plan, 0: off

    def __post_init__(self) -> None:
        n = len(self.hw)
        for f in fields(self):
            a = getattr(self, f.name)
            if not isinstance(a, np.ndarray) or a.shape != (n,):
                raise ValueError(f"Plans.{f.name} must be a 1-D array of length {n}")

    def __len__(self) -> int:
        return len(self.hw)

    @property
    def devices(self) -> np.ndarray:
        """Devices per instance: attention TP x attention DP x context parallel x pipeline stages."""
        return self.tp * self.dp * self.cp * self.pp

    def with_batch(self, batch) -> Plans:
        """The same plans at another batch (scalar or array)."""
        cols = {f.name: getattr(self, f.name) for f in fields(self)}
        cols["batch"] = np.asarray(batch, dtype=float) + np.zeros(len(self))
        return Plans(**cols)

    def take(self, idx: np.ndarray) -> Plans:
        return Plans(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    @classmethod
    def of(cls, **cols) -> Plans:
        """Build from scalars or arrays, broadcasting to a common length."""
        names = [f.name for f in fields(cls)]
        cols = {**DEFAULTS, **cols}
        missing = set(names) - set(cols)
        if missing:
            raise ValueError(f"Plans.of needs {sorted(missing)}")
        arrays = np.broadcast_arrays(*[np.atleast_1d(np.asarray(cols[k])) for k in names])
        kinds = {"hw": int, "tp": int, "pp": int, "ep": int, "dp": int, "wprec": int, "kvprec": int,
                 "cp": int, "spec": int}
        return cls(**{k: np.array(a, dtype=kinds.get(k, float)) for k, a in zip(names, arrays)})

    @classmethod
    def grid(cls, **axes: Sequence) -> Plans:
        """Cartesian product of the given axes (each a sequence of values)."""
        names = [f.name for f in fields(cls)]
        axes = {**{k: [v] for k, v in DEFAULTS.items()}, **axes}
        values = [list(axes[k]) for k in names]
        n = math.prod(len(v) for v in values)
        if n == 0:
            return cls.of(**{k: np.array([], dtype=float) for k in names})
        # itertools.product's order (the last axis fastest), one column at a time: no row tuples
        rows, cols, stride = np.arange(n, dtype=np.int64), {}, n
        for k, v in zip(names, values):
            stride //= len(v)
            cols[k] = np.asarray(v)[(rows // stride) % len(v)]
        return cls.of(**cols)

"""The candidate table: kept candidates as a struct of arrays, what pruning removed, and the KV
links between hardware types (what the fleet model reads)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from solver.perf.tables import HardwareTable
from solver.schema.roles import PREFILL

PRUNE_REASONS = ("invalid", "topology", "memory", "slo", "dominated")
MIN_CAPACITY_QPS = 0.001  # the fleet model counts capacity in milli-QPS


@dataclass(frozen=True, slots=True)
class CandidateTable:
    """Kept candidates, one row each (struct of arrays)."""

    service: np.ndarray
    role: np.ndarray
    hw: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    dp: np.ndarray
    batch: np.ndarray
    chunk: np.ndarray  # prefill tokens per colocated iteration (0 for other roles)
    devices: np.ndarray
    capacity_qps: np.ndarray
    cost_per_hour: np.ndarray
    power_w: np.ndarray
    ttft_p50_ms: np.ndarray
    ttft_p99_ms: np.ndarray
    tpot_p50_ms: np.ndarray
    tpot_p99_ms: np.ndarray
    memory_gib: np.ndarray
    kv_bw: np.ndarray | None = None  # prefill: bytes/s per device of the KV link (NaN otherwise)
    kv_lat: np.ndarray | None = None  # prefill: seconds of latency of the KV link
    kv_ms: np.ndarray | None = None  # prefill: KV transfer time of a mean prompt (part of TTFT)
    cp: np.ndarray | None = None  # context-parallel ranks (1 when not given)
    spec: np.ndarray | None = None  # 1: decodes speculatively (0 when not given)
    # choices beyond parallelism (candidates/variants.py); defaults: not recorded
    power_cap_w: np.ndarray | None = None  # board power limit per device, W (NaN: none given)
    wprec: np.ndarray | None = None  # weight precision code (index into PRECISIONS; -1: unknown)
    kvprec: np.ndarray | None = None  # KV cache precision code
    owned_cost: np.ndarray | None = None  # USD per device-hour beyond the rental price

    def __post_init__(self) -> None:
        n = len(self.service)
        defaults = {"kv_bw": np.nan, "kv_lat": np.nan, "kv_ms": np.nan, "power_cap_w": np.nan,
                    "wprec": -1, "kvprec": -1, "owned_cost": 0.0, "cp": 1, "spec": 0}
        for name, v in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.full(n, v))

    def __len__(self) -> int:
        return len(self.service)

    def take(self, idx) -> CandidateTable:
        return CandidateTable(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    @classmethod
    def concat(cls, parts: list[CandidateTable]) -> CandidateTable:
        if not parts:
            return cls.empty()
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})

    @classmethod
    def empty(cls) -> CandidateTable:
        ints = {"service", "role", "hw", "tp", "pp", "ep", "dp", "batch", "chunk", "devices", "wprec", "kvprec",
                "cp", "spec"}
        return cls(**{f.name: np.zeros(0, dtype=int if f.name in ints else float) for f in fields(cls)})

    def rows(self, service: int, role: int) -> np.ndarray:
        return np.flatnonzero((self.service == service) & (self.role == role))


@dataclass
class PruneStats:
    evaluated: int = 0
    pruned: dict[str, int] = field(default_factory=lambda: {r: 0 for r in PRUNE_REASONS})

    @property
    def kept(self) -> int:
        return self.evaluated - sum(self.pruned.values())


@dataclass(frozen=True)
class CandidateSet:
    table: CandidateTable
    stats: PruneStats
    misses: dict[tuple[int, int], list[str]]  # (service, role) with no candidate -> why
    roles: dict[int, tuple[int, ...]]  # service -> roles considered
    links: np.ndarray | None = None  # (n_hw, n_hw, 2): KV link prefill type -> decode type

    def reach(self, rows: np.ndarray, heterogeneous: bool = True, n_hw: int | None = None) -> np.ndarray:
        """(len(rows), n_hw) bool: the decode types each prefill row can send its KV cache to
        (at least as fast a link as the one it was evaluated for). heterogeneous=False: its
        own type only."""
        t = self.table
        p = t.hw[rows]
        if self.links is None:  # no link information: every prefill row serves every type
            n_hw = n_hw if n_hw is not None else int(t.hw.max(initial=-1)) + 1
            ok = np.ones((len(rows), n_hw), dtype=bool)
        else:
            n_hw = self.links.shape[0]
            lk = self.links[p]  # (rows, n_hw, 2)
            ok = (lk[:, :, 0] >= t.kv_bw[rows, None]) & (lk[:, :, 1] <= t.kv_lat[rows, None])
        if not heterogeneous:
            ok &= np.arange(n_hw)[None, :] == p[:, None]
        return ok & (t.role[rows] == PREFILL)[:, None]


def kv_links(hw: HardwareTable) -> np.ndarray:
    """(n, n, 2) per prefill type p and decode type d: (bytes/s per device, latency s) of the
    link the KV cache crosses. Same type: the card's scale-out link; different types: the
    slower of the two cards' (the lower bandwidth and the higher latency)."""
    bw = np.minimum(hw.so_bw[:, None], hw.so_bw[None, :])
    lat = np.maximum(hw.so_lat[:, None], hw.so_lat[None, :])
    n = len(hw)
    bw[np.arange(n), np.arange(n)] = hw.so_bw
    lat[np.arange(n), np.arange(n)] = hw.so_lat
    return np.stack([bw, lat], axis=-1)

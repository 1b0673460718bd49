"""Measured operator profiles of one (hardware, serving engine), queried on numpy arrays.

    prof = OperatorProfiles.load("h100-sxm", "vllm")
    est = prof.gemm(m=tokens, n=8192, k=8192, precision="fp8")   # Estimate(seconds, source)

Every method takes arrays (broadcast together) and an optional `fallback`: the caller's own
analytic time for the same operator, returned (with source ROOFLINE) where no table covers
the query. Without a fallback the plain roofline of `roofline.py` is returned.
`ProfileSet` does the same over plans that mix hardware types (an index per plan).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from solver.errors import InputError
from solver.profiles import roofline as rl
from solver.profiles.format import (
    FAMILIES,
    Provenance,
    csv_path_of,
    load_table,
    profile_folder,
)
from solver.profiles.interp import ROOFLINE, Estimate, GroupedTable, split_by_keys
from solver.schema.cards import PRECISIONS, HardwareCard

DEFAULT_FRAMEWORK = "vllm"
KV_DTYPES = {"bf16": "bf16", "fp8": "fp8", "fp4": "fp4"}


def _attention_neighbour(key: tuple, known: Sequence[tuple]) -> tuple | None:
    """A measured group standing in for unmeasured heads: same KV dtype and head size, the
    nearest (query heads, KV heads) in log distance."""
    kv_dtype, heads, kv_heads, head_dim = key
    best, best_d = None, math.inf
    for k in known:
        if k[0] != kv_dtype or k[3] != head_dim:
            continue
        d = abs(math.log(k[1] / heads)) + abs(math.log(k[2] / kv_heads))
        if d < best_d or (d == best_d and best is not None and k > best):
            best, best_d = k, d
    return best


_NEIGHBOURS = {
    "attention_context": _attention_neighbour,
    "attention_generation": _attention_neighbour,
}

_CACHE: dict[tuple, tuple[GroupedTable, Provenance]] = {}
_LOCK = threading.Lock()


def build_table(path: Path, peaks: rl.Peaks, verify: bool = True) -> tuple[GroupedTable, Provenance]:
    """Load a profile CSV (hash-checked) into a queryable table; cached per file and peaks."""
    st = path.stat()
    ck = (str(path.resolve()), st.st_mtime_ns, st.st_size, peaks, verify)
    with _LOCK:
        hit = _CACHE.get(ck)
    if hit is not None:
        return hit
    t = load_table(path, verify=verify)
    spec = t.spec
    fam = t.provenance.family
    table = GroupedTable.from_columns(
        spec.keys, spec.axes, t.columns, t.columns[spec.value] * 1e-6,
        partial(rl.FAMILY_ROOFLINES[fam], peaks), _NEIGHBOURS.get(fam),
    )
    with _LOCK:
        _CACHE[ck] = (table, t.provenance)
    return table, t.provenance


def _dtype_names(precision) -> np.ndarray:
    """Precision names or fleetplan precision codes (0 bf16, 1 fp8, 2 fp4) -> names."""
    p = np.asarray(precision)
    if p.dtype.kind in "iu" or (p.dtype.kind == "f" and p.size and np.all(p == np.round(p))):
        return np.asarray(PRECISIONS)[p.astype(int)]
    return p.astype(str)


# fleetplan weight precision -> the MoE table's weight format: FP8 MoE checkpoints are
# block-scaled (DeepSeek-V3/R1, Qwen3-*-FP8: 128x128 blocks), so fp8 reads the fp8_block rows
MOE_DTYPES = {"bf16": "bf16", "fp8": "fp8_block", "fp4": "fp4"}


def _moe_dtype_names(precision) -> np.ndarray:
    names = _dtype_names(precision)
    return np.array([MOE_DTYPES.get(str(p), str(p)) for p in names.ravel()],
                    dtype=object).reshape(names.shape)


@dataclass
class OperatorProfiles:
    """The tables of one hardware type and serving engine (any may be missing)."""

    hardware: str
    framework: str
    peaks: rl.Peaks
    tables: dict[str, GroupedTable] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    folder: Path | None = None

    @classmethod
    def load(
        cls,
        hardware: HardwareCard | str,
        framework: str = DEFAULT_FRAMEWORK,
        root: Path | str | None = None,
        verify: bool = True,
    ) -> OperatorProfiles:
        """The profiles under `<root>/<hardware>/<framework>/` (root: FLEETPLAN_PROFILES or the
        shipped `hardware/profiles`). No folder: an empty set (every query roofline-only)."""
        if isinstance(hardware, str):
            from solver.catalog.shipped import hardware_card

            card = hardware_card(hardware)
        else:
            card = hardware
        peaks = rl.Peaks.from_card(card)
        folder = profile_folder(card.name, framework, root)
        prof = cls(card.name, framework, peaks, folder=folder if folder.is_dir() else None)
        if prof.folder is None:
            if root is not None and not Path(root).is_dir():
                raise InputError(f"{root}: no such profiles folder")
            return prof
        for family in FAMILIES:
            p = csv_path_of(folder, family)
            if p is None:
                continue
            prof.tables[family], prof.provenance[family] = build_table(p, peaks, verify)
        return prof

    @property
    def measured(self) -> bool:
        return bool(self.tables)

    def _query(self, family: str, keys: Mapping[str, object], xs: Sequence, fallback) -> Estimate:
        table = self.tables.get(family)
        if table is None:
            arrays = [np.asarray(x, dtype=float) for x in xs]
            shape = np.broadcast_shapes(*(a.shape for a in arrays),
                                        *(np.shape(v) for v in keys.values()))
            if fallback is not None:
                sec = np.broadcast_to(np.asarray(fallback, dtype=float), shape).astype(float)
            else:
                sec = self._plain_roofline(family, keys, arrays, shape)
            return Estimate(sec, np.full(shape, ROOFLINE, dtype=np.int8))
        return table.query(keys, xs, fallback)

    def _plain_roofline(self, family, keys, arrays, shape) -> np.ndarray:
        spec = FAMILIES[family]
        kv = [np.broadcast_to(np.asarray(keys[k]), shape).ravel() for k in spec.keys]
        xs = [np.broadcast_to(a, shape).ravel() for a in arrays]
        n = int(np.prod(shape)) if shape else 1
        out = np.zeros(n)
        fn = rl.FAMILY_ROOFLINES[family]
        for key, rows in split_by_keys(kv, n):
            out[rows] = fn(self.peaks, key, [x[rows] for x in xs])
        return out.reshape(shape)

    # ---- operators -----------------------------------------------------------------------

    def gemm(self, m, n, k, precision="bf16", fallback=None) -> Estimate:
        """Y[m,n] = X[m,k] W[k,n] with weights (and math) in `precision` (bf16 / fp8 / fp4,
        names or fleetplan precision codes)."""
        return self._query("gemm", {"dtype": _dtype_names(precision)}, [m, n, k], fallback)

    def attention_context(self, batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                          kv_precision="bf16", fallback=None) -> Estimate:
        """Causal prefill attention of `batch` prompts of `isl_tokens` (per-device heads)."""
        keys = {"kv_dtype": _dtype_names(kv_precision), "num_heads": num_heads,
                "num_kv_heads": num_kv_heads, "head_dim": head_dim}
        return self._query("attention_context", keys, [batch, isl_tokens], fallback)

    def attention_generation(self, batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                             kv_precision="bf16", fallback=None) -> Estimate:
        """One decode step of `batch` sequences over `kv_tokens` of cache (per-device heads)."""
        keys = {"kv_dtype": _dtype_names(kv_precision), "num_heads": num_heads,
                "num_kv_heads": num_kv_heads, "head_dim": head_dim}
        return self._query("attention_generation", keys, [batch, kv_tokens], fallback)

    def allreduce(self, message_bytes, num_gpus, fallback=None) -> Estimate:
        """The engine's TP all-reduce of `message_bytes` per GPU (bf16) among `num_gpus`."""
        return self._query("allreduce", {"dtype": "bf16", "num_gpus": num_gpus},
                           [message_bytes], fallback)

    def collective(self, op: str, message_bytes, num_gpus, fallback=None) -> Estimate:
        """NCCL `op` (all_reduce, all_gather, reduce_scatter, alltoall), fp16 payload."""
        return self._query("collectives", {"op": op, "dtype": "fp16", "num_gpus": num_gpus},
                           [message_bytes], fallback)

    def _collective(self, message_bytes, num_gpus, fallback=None, op: str = "all_reduce") -> Estimate:
        return self.collective(op, message_bytes, num_gpus, fallback)

    def moe_experts(self, num_tokens, moe_tp, moe_ep, precision="bf16", *, hidden_size: int,
                    inter_size: int, topk: int, num_experts: int, distribution: str = "balanced",
                    fallback=None) -> Estimate:
        """The routed experts of one MoE layer on one device: `num_tokens` tokens entering the
        layer across the MoE group, experts split `moe_ep` ways, each expert's width split
        `moe_tp` ways (`inter_size` is the whole width). Precision fp8 reads the block-scaled
        FP8 rows (`MOE_DTYPES`). Shapes not measured exactly answer the fallback."""
        keys = {"dtype": _moe_dtype_names(precision), "distribution": distribution,
                "hidden_size": hidden_size, "inter_size": inter_size, "topk": topk,
                "num_experts": num_experts}
        return self._query("moe_experts", keys, [num_tokens, moe_tp, moe_ep], fallback)


@dataclass
class ProfileSet:
    """Profiles per hardware index of a `HardwareTable`, for plans that mix hardware types."""

    members: tuple[OperatorProfiles, ...]

    @classmethod
    def load(cls, cards: Sequence[HardwareCard], framework: str = DEFAULT_FRAMEWORK,
             root: Path | str | None = None) -> ProfileSet:
        return cls(tuple(OperatorProfiles.load(c, framework, root) for c in cards))

    def _each(self, method: str, hw, args: Sequence, fallback, **kw) -> Estimate:
        hw = np.asarray(hw, dtype=int)
        arrays = [np.asarray(a) for a in args]
        shape = np.broadcast_shapes(hw.shape, *(a.shape for a in arrays),
                                    *(() if fallback is None else (np.shape(fallback),)))
        hw_b = np.broadcast_to(hw, shape)
        seconds = np.zeros(shape)
        source = np.full(shape, ROOFLINE, dtype=np.int8)
        fb = None if fallback is None else np.broadcast_to(np.asarray(fallback, dtype=float), shape)
        for i in np.unique(hw_b):
            sel = hw_b == i
            sub = [np.broadcast_to(a, shape)[sel] for a in arrays]
            est = getattr(self.members[i], method)(*sub, fallback=None if fb is None else fb[sel], **kw)
            seconds[sel], source[sel] = est.seconds, est.source
        return Estimate(seconds, source)

    def gemm(self, hw, m, n, k, precision, fallback=None) -> Estimate:
        return self._each("gemm", hw, [m, n, k, _dtype_names(precision)], fallback)

    def attention_context(self, hw, batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                          kv_precision, fallback=None) -> Estimate:
        return self._each("attention_context", hw,
                          [batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                           _dtype_names(kv_precision)], fallback)

    def attention_generation(self, hw, batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                             kv_precision, fallback=None) -> Estimate:
        return self._each("attention_generation", hw,
                          [batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                           _dtype_names(kv_precision)], fallback)

    def allreduce(self, hw, message_bytes, num_gpus, fallback=None) -> Estimate:
        return self._each("allreduce", hw, [message_bytes, num_gpus], fallback)

    def collective(self, hw, op: str, message_bytes, num_gpus, fallback=None) -> Estimate:
        return self._each("_collective", hw, [message_bytes, num_gpus], fallback, op=op)

    def moe_experts(self, hw, num_tokens, moe_tp, moe_ep, precision, *, hidden_size: int,
                    inter_size: int, topk: int, num_experts: int, distribution: str = "balanced",
                    fallback=None) -> Estimate:
        return self._each("moe_experts", hw, [num_tokens, moe_tp, moe_ep, _dtype_names(precision)],
                          fallback, hidden_size=hidden_size, inter_size=inter_size, topk=topk,
                          num_experts=num_experts, distribution=distribution)

"""Measured operator profiles of one (hardware, serving engine), queried on numpy arrays.

    prof = OperatorProfiles.load("h100-sxm", "vllm", bounds=...)  # see solver/perf/operators/tables.py
    est = prof.gemm(m=tokens, n=8192, k=8192, precision="fp8")   # Estimate(seconds, source)

Every method takes arrays (broadcast together). Where no table covers a query the answer is
NaN seconds with source ROOFLINE: the operator model (solver/perf/operators/measured.py) puts
its own roofline there. `ProfileSet` does the same over plans that mix hardware types (an
index per plan).

Extrapolation beyond a table's measured range, the filling of unmeasured grid cells and the
stand-in for an unmeasured attention group scale by a bound per table family (`TableBounds`):
the operator model's plain roofline of the card (solver/perf/operators/bounds.py), passed in
or, by default, built from the card.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from solver.errors import InputError
from solver.profiles.format import Provenance, csv_path_of, load_table, profile_folder
from solver.profiles.interp import EXTRAPOLATED, ROOFLINE, Estimate, GroupedTable, GroupRoofline
from solver.schema.cards import PRECISIONS, HardwareCard

DEFAULT_FRAMEWORK = "vllm"
# the families the operator model draws time from, and so the ones loaded (and listed in a
# plan's assumptions). The `collectives` tables (nccl-tests all-reduce, all-gather,
# reduce-scatter, all-to-all inside one NVLink domain) stay in the file format for collectors
# and `profiles check`, but no operator asks them: the TP all-reduce reads the engine's own
# `allreduce` table, and the MoE dispatch/combine of attention data parallelism stays on its
# link model (the engines dispatch with their own kernels, not NCCL's all-to-all, and wide
# expert parallelism spans nodes, beyond what one domain's table covers).
QUERIED_FAMILIES = ("gemm", "attention_context", "attention_generation", "allreduce", "moe_experts",
                    "mla_generation", "mla_context", "compute_scale")


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


def _gemm_neighbour(key: tuple, known: Sequence[tuple]) -> tuple | None:
    """The measured per-tensor FP8 rows standing in for block-scaled ones a table lacks (tables
    converted before fp8_block rows were kept): the same weight bytes and peak, so the
    stand-in's time itself, flagged extrapolated."""
    (dtype,) = key
    if str(dtype) == "fp8_block" and ("fp8",) in known:
        return ("fp8",)
    return None


_NEIGHBOURS = {
    "attention_context": _attention_neighbour,
    "attention_generation": _attention_neighbour,
    "gemm": _gemm_neighbour,
}

class TableBounds(Protocol):
    """The bound each table family scales by (hashable: tables are cached per bounds)."""

    def family(self, name: str) -> GroupRoofline: ...


_CACHE: dict[tuple, tuple[GroupedTable, Provenance]] = {}
_LOCK = threading.Lock()


def build_table(path: Path, bounds: TableBounds, verify: bool = True) -> tuple[GroupedTable, Provenance]:
    """Load a profile CSV (hash-checked) into a queryable table; cached per file and bounds."""
    st = path.stat()
    ck = (str(path.resolve()), st.st_mtime_ns, st.st_size, bounds, verify)
    with _LOCK:
        hit = _CACHE.get(ck)
    if hit is not None:
        return hit
    t = load_table(path, verify=verify)
    spec = t.spec
    fam = t.provenance.family
    table = GroupedTable.from_columns(
        spec.keys, spec.axes, t.columns, t.columns[spec.value] * 1e-6,
        bounds.family(fam), _NEIGHBOURS.get(fam),
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
    bounds: TableBounds
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
        *,
        bounds: Callable[[HardwareCard], TableBounds],
    ) -> OperatorProfiles:
        """The profiles under `<root>/<hardware>/<framework>/` (root: FLEETPLAN_PROFILES or the
        shipped `hardware/profiles`). No folder: an empty set (no query answered). `bounds`: the
        laws the tables extrapolate by, per card (the performance model's, given by
        `solver/perf/operators/tables.py`)."""
        if isinstance(hardware, str):
            from solver.catalog.shipped import hardware_card

            card = hardware_card(hardware)
        else:
            card = hardware
        card_law = bounds(card)
        folder = profile_folder(card.name, framework, root)
        prof = cls(card.name, framework, card_law, folder=folder if folder.is_dir() else None)
        if prof.folder is None:
            if root is not None and not Path(root).is_dir():
                raise InputError(f"{root}: no such profiles folder")
            return prof
        for family in QUERIED_FAMILIES:
            p = csv_path_of(folder, family)
            if p is None:
                continue
            prof.tables[family], prof.provenance[family] = build_table(p, card_law, verify)
        return prof

    @property
    def measured(self) -> bool:
        return bool(self.tables)

    def _query(self, family: str, keys: Mapping[str, object], xs: Sequence) -> Estimate:
        table = self.tables.get(family)
        if table is None:
            shape = np.broadcast_shapes(*(np.shape(x) for x in xs), *(np.shape(v) for v in keys.values()))
            return Estimate(np.full(shape, np.nan), np.full(shape, ROOFLINE, dtype=np.int8))
        return table.query(keys, xs)

    # ---- operators -----------------------------------------------------------------------

    def gemm(self, m, n, k, precision="bf16") -> Estimate:
        """Y[m,n] = X[m,k] W[k,n] with weights (and math) in `precision` (bf16 / fp8 / fp4,
        names or fleetplan precision codes; fp8 is per-tensor FP8 with the input's scale
        computed per call, fp8_static the same with a static input scale, fp8_block 128x128
        block-scaled: solver/profiles/sources/aic/gemm.py).

        fp8_static is composed as aiconfigurator composes it: the fp8 row less the measured
        compute-scale kernel at the same (m, k), floored at the GEMM's roofline; the answer's
        source is the worse of the two. Without a `compute_scale` table the fp8 row stands
        (flagged extrapolated)."""
        names = _dtype_names(precision)
        static = names == "fp8_static"
        if not np.any(static):
            return self._query("gemm", {"dtype": names}, [m, n, k])
        base = self._query("gemm", {"dtype": np.where(static, "fp8", names)}, [m, n, k])
        shape = base.seconds.shape
        if "compute_scale" not in self.tables:
            src = np.where(static & (base.source != ROOFLINE), np.maximum(base.source, EXTRAPOLATED), base.source)
            return Estimate(base.seconds, src.astype(np.int8))
        scale = self._query("compute_scale", {"dtype": "fp8"}, [m, k])
        xs = [np.broadcast_to(np.asarray(x, dtype=float), shape) for x in (m, n, k)]
        floor = np.asarray(self.tables["gemm"].roofline(("fp8_static",), xs), dtype=float)
        usable = np.broadcast_to(static, shape) & (base.source != ROOFLINE) & (scale.source != ROOFLINE)
        seconds = np.where(usable, np.maximum(base.seconds - scale.seconds, floor), base.seconds)
        source = np.where(usable, np.maximum(base.source, scale.source), base.source)
        return Estimate(seconds, source.astype(np.int8))

    def attention_context(self, batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                          kv_precision="bf16") -> Estimate:
        """Causal prefill attention of `batch` prompts of `isl_tokens` (per-device heads)."""
        keys = {"kv_dtype": _dtype_names(kv_precision), "num_heads": num_heads,
                "num_kv_heads": num_kv_heads, "head_dim": head_dim}
        return self._query("attention_context", keys, [batch, isl_tokens])

    def attention_generation(self, batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                             kv_precision="bf16") -> Estimate:
        """One decode step of `batch` sequences over `kv_tokens` of cache (per-device heads)."""
        keys = {"kv_dtype": _dtype_names(kv_precision), "num_heads": num_heads,
                "num_kv_heads": num_kv_heads, "head_dim": head_dim}
        return self._query("attention_generation", keys, [batch, kv_tokens])

    def mla_generation(self, batch, kv_tokens, num_heads, precision="bf16", kv_precision="bf16") -> Estimate:
        """One decode step of DeepSeek-V3's MLA block (one layer, `num_heads` heads per device,
        projection weights in `precision`: fp8 reads the block-scaled rows)."""
        keys = {"gemm_dtype": _moe_dtype_names(precision), "kv_dtype": _dtype_names(kv_precision),
                "num_heads": num_heads}
        return self._query("mla_generation", keys, [batch, kv_tokens])

    def mla_context(self, batch, isl_tokens, num_heads, precision="bf16", kv_precision="bf16") -> Estimate:
        """One prefill pass of DeepSeek-V3's MLA block over `batch` prompts of `isl_tokens`."""
        keys = {"gemm_dtype": _moe_dtype_names(precision), "kv_dtype": _dtype_names(kv_precision),
                "num_heads": num_heads}
        return self._query("mla_context", keys, [batch, isl_tokens])

    def allreduce(self, message_bytes, num_gpus) -> Estimate:
        """The engine's TP all-reduce of `message_bytes` per GPU (bf16) among `num_gpus`."""
        return self._query("allreduce", {"dtype": "bf16", "num_gpus": num_gpus},
                           [message_bytes])

    def moe_experts(self, num_tokens, moe_tp, moe_ep, precision="bf16", *, hidden_size: int,
                    inter_size: int, topk: int, num_experts: int, distribution: str = "balanced",
                    ) -> Estimate:
        """The routed experts of one MoE layer on one device: `num_tokens` tokens entering the
        layer across the MoE group, experts split `moe_ep` ways, each expert's width split
        `moe_tp` ways (`inter_size` is the whole width). Precision fp8 reads the block-scaled
        FP8 rows (`MOE_DTYPES`). Shapes not measured exactly have no answer."""
        keys = {"dtype": _moe_dtype_names(precision), "distribution": distribution,
                "hidden_size": hidden_size, "inter_size": inter_size, "topk": topk,
                "num_experts": num_experts}
        return self._query("moe_experts", keys, [num_tokens, moe_tp, moe_ep])


@dataclass
class ProfileSet:
    """Profiles per hardware index of a `HardwareTable`, for plans that mix hardware types."""

    members: tuple[OperatorProfiles, ...]

    @classmethod
    def load(cls, cards: Sequence[HardwareCard], framework: str = DEFAULT_FRAMEWORK,
             root: Path | str | None = None, *,
             bounds: Callable[[HardwareCard], TableBounds]) -> ProfileSet:
        return cls(tuple(OperatorProfiles.load(c, framework, root, bounds=bounds) for c in cards))

    def _each(self, method: str, hw, args: Sequence, **kw) -> Estimate:
        hw = np.asarray(hw, dtype=int)
        arrays = [np.asarray(a) for a in args]
        shape = np.broadcast_shapes(hw.shape, *(a.shape for a in arrays))
        hw_b = np.broadcast_to(hw, shape)
        seconds = np.zeros(shape)
        source = np.full(shape, ROOFLINE, dtype=np.int8)
        for i in np.unique(hw_b):
            sel = hw_b == i
            sub = [np.broadcast_to(a, shape)[sel] for a in arrays]
            est = getattr(self.members[i], method)(*sub, **kw)
            seconds[sel], source[sel] = est.seconds, est.source
        return Estimate(seconds, source)

    def gemm(self, hw, m, n, k, precision) -> Estimate:
        return self._each("gemm", hw, [m, n, k, _dtype_names(precision)])

    def attention_context(self, hw, batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                          kv_precision) -> Estimate:
        return self._each("attention_context", hw,
                          [batch, isl_tokens, num_heads, num_kv_heads, head_dim,
                           _dtype_names(kv_precision)])

    def attention_generation(self, hw, batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                             kv_precision) -> Estimate:
        return self._each("attention_generation", hw,
                          [batch, kv_tokens, num_heads, num_kv_heads, head_dim,
                           _dtype_names(kv_precision)])

    def mla_generation(self, hw, batch, kv_tokens, num_heads, precision, kv_precision) -> Estimate:
        return self._each("mla_generation", hw, [batch, kv_tokens, num_heads, _dtype_names(precision),
                                                 _dtype_names(kv_precision)])

    def mla_context(self, hw, batch, isl_tokens, num_heads, precision, kv_precision) -> Estimate:
        return self._each("mla_context", hw, [batch, isl_tokens, num_heads, _dtype_names(precision),
                                              _dtype_names(kv_precision)])

    def allreduce(self, hw, message_bytes, num_gpus) -> Estimate:
        return self._each("allreduce", hw, [message_bytes, num_gpus])

    def moe_experts(self, hw, num_tokens, moe_tp, moe_ep, precision, *, hidden_size: int,
                    inter_size: int, topk: int, num_experts: int, distribution: str = "balanced",
                    ) -> Estimate:
        return self._each("moe_experts", hw, [num_tokens, moe_tp, moe_ep, _dtype_names(precision)],
                          hidden_size=hidden_size, inter_size=inter_size, topk=topk,
                          num_experts=num_experts, distribution=distribution)

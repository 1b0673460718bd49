"""Vectorised interpolation of measured operator tables.

A table of one operator family splits into groups (the categorical keys: dtype, heads, GPUs...).
Inside a group the measured points lie on a grid over the numeric axes (GEMM: m, n, k;
attention: batch, tokens; collectives: bytes). Each group becomes a dense array of log-latency
over the log of each axis, and a query is answered by multilinear interpolation in that log-log
space, i.e. piecewise-linear in log space along each measured axis.

Every answer carries a source code:

    0 MEASURED      the query is a measured point
    1 INTERPOLATED  inside the measured range, from measured points only
    2 EXTRAPOLATED  outside the measured range on some axis, or it leans on a grid cell the
                    collector did not measure (filled at load time, see below), or the group
                    itself was not measured and a neighbouring group stood in
    3 ROOFLINE      no table for this operator: no number here (NaN); the operator model
                    answers with its roofline

Outside the measured range the achieved efficiency of the nearest boundary point is held:
eff = roofline(boundary) / measured(boundary), and the answer is roofline(query) / eff. The same
rule fills the holes of a partly measured grid (collectors skip large batch x long sequence
cells): a hole takes the efficiency of the nearest measured cell along the first axis that has
one (then the next axis, ...), so interpolation never mixes in a made-up number unflagged.

`roofline` here is a bound the table's owner passes in per group (the operator model's plain
max(FLOPs / peak, bytes / HBM bandwidth) from the hardware card's nominal numbers, links:
alpha + bytes / bandwidth; solver/perf/operators/bounds.py); only its ratios are used, so any
constant efficiency factor cancels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

MEASURED, INTERPOLATED, EXTRAPOLATED, ROOFLINE = 0, 1, 2, 3
SOURCE_NAMES: tuple[str, ...] = ("measured", "interpolated", "extrapolated", "roofline")

# a grid coordinate is "on" a measured value when within this relative distance (log space)
_ON_GRID = 1e-9

RooflineFn = Callable[[Sequence[np.ndarray]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Estimate:
    """Seconds per query and where each number came from (source codes above)."""

    seconds: np.ndarray
    source: np.ndarray  # int8

    def __len__(self) -> int:
        return int(self.seconds.size)

    def share(self) -> dict[str, float]:
        """Fraction of the total time per source (all queries together)."""
        total = float(self.seconds.sum())
        out = {}
        for code, name in enumerate(SOURCE_NAMES):
            part = float(self.seconds[self.source == code].sum())
            out[name] = part / total if total > 0 else 0.0
        return out


@dataclass
class SourceTally:
    """Accumulates operator times per source, per plan: which share of a stage's time came from
    measured, interpolated, extrapolated or roofline-only operators."""

    n: int
    seconds: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.seconds = np.zeros((len(SOURCE_NAMES), self.n))

    def add(self, est: Estimate, weight=1.0) -> None:
        t = np.broadcast_to(est.seconds * weight, (self.n,))
        src = np.broadcast_to(est.source, (self.n,))
        for code in range(len(SOURCE_NAMES)):
            self.seconds[code] += np.where(src == code, t, 0.0)

    def add_roofline(self, seconds, weight=1.0) -> None:
        self.seconds[ROOFLINE] += np.broadcast_to(np.asarray(seconds, dtype=float) * weight, (self.n,))

    @property
    def total(self) -> np.ndarray:
        return self.seconds.sum(axis=0)

    def shares(self) -> dict[str, np.ndarray]:
        tot = self.total
        safe = np.where(tot > 0, tot, 1.0)
        return {name: np.where(tot > 0, self.seconds[c] / safe, 0.0) for c, name in enumerate(SOURCE_NAMES)}


# ---------------------------------------------------------------------------------------------
# one group: a dense grid
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """Log-latency on a dense grid over the group's axes.

    `axes[a]` are the measured values of axis a (sorted, positive); `logt` has one cell per
    combination (holes filled at build time), `measured` marks the cells that were measured.
    """

    axes: tuple[np.ndarray, ...]
    logt: np.ndarray
    measured: np.ndarray
    roofline: RooflineFn

    @classmethod
    def build(cls, coords: Sequence[np.ndarray], seconds: np.ndarray, roofline: RooflineFn) -> Grid:
        """From scattered measured points (`coords[a][i]`, `seconds[i]`) on a grid."""
        coords = [np.asarray(c, dtype=float) for c in coords]
        seconds = np.asarray(seconds, dtype=float)
        if seconds.size == 0:
            raise ValueError("a grid needs at least one measured point")
        axes = []
        idx = []
        for c in coords:
            vals, inv = np.unique(c, return_inverse=True)
            axes.append(vals)
            idx.append(inv)
        shape = tuple(len(a) for a in axes)
        flat = np.ravel_multi_index(tuple(idx), shape)
        # duplicate points: geometric mean
        sums = np.bincount(flat, weights=np.log(seconds), minlength=int(np.prod(shape)))
        counts = np.bincount(flat, minlength=int(np.prod(shape)))
        measured = (counts > 0).reshape(shape)
        logt = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).reshape(shape)
        grid = cls(tuple(axes), logt, measured, roofline)
        return grid._filled()

    def _log_roofline_on_grid(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        r = np.asarray(self.roofline([m.ravel() for m in mesh]), dtype=float).reshape(self.logt.shape)
        return np.log(np.maximum(r, 1e-30))

    def _filled(self) -> Grid:
        """Fill holes by holding the efficiency of the nearest known cell, axis by axis."""
        if self.measured.all():
            return self
        logt = self.logt.copy()
        known = self.measured.copy()
        logr = self._log_roofline_on_grid()
        for a in range(logt.ndim):
            if known.all():
                break
            la = np.log(self.axes[a])
            t = np.moveaxis(logt, a, -1).reshape(-1, len(la))
            k = np.moveaxis(known, a, -1).reshape(-1, len(la))
            r = np.moveaxis(logr, a, -1).reshape(-1, len(la))
            pos = np.arange(len(la))
            prev = np.maximum.accumulate(np.where(k, pos, -1), axis=1)
            nxt = np.minimum.accumulate(np.where(k, pos, len(la))[:, ::-1], axis=1)[:, ::-1]
            has_prev, has_next = prev >= 0, nxt < len(la)
            d_prev = np.where(has_prev, la[pos] - la[np.clip(prev, 0, None)], np.inf)
            d_next = np.where(has_next, la[np.clip(nxt, None, len(la) - 1)] - la[pos], np.inf)
            src = np.where(d_next <= d_prev, nxt, prev)  # ties: the larger (more saturated) one
            fill = ~k & (has_prev | has_next)
            if not fill.any():
                continue
            rows = np.nonzero(fill)[0]
            cols = np.nonzero(fill)[1]
            s = src[rows, cols]
            t[rows, cols] = t[rows, s] + r[rows, cols] - r[rows, s]
            k[rows, cols] = True
            shape_moved = np.moveaxis(logt, a, -1).shape
            logt = np.moveaxis(t.reshape(shape_moved), -1, a).copy()
            known = np.moveaxis(k.reshape(shape_moved), -1, a).copy()
        if not known.all():  # cannot happen for a non-empty grid, kept as a guard
            raise ValueError("grid has cells no sweep could reach")
        return Grid(self.axes, logt, self.measured, self.roofline)

    def without(self, axis: int, i: int) -> Grid:
        """The grid with the i-th value of `axis` removed (leave-one-out)."""
        axes = list(self.axes)
        axes[axis] = np.delete(axes[axis], i)
        return Grid(tuple(axes), np.delete(self.logt, i, axis=axis),
                    np.delete(self.measured, i, axis=axis), self.roofline)

    def query(self, xs: Sequence[np.ndarray]) -> Estimate:
        """Seconds at points `xs` (one array per axis, same shape); vectorised."""
        xs = [np.asarray(x, dtype=float) for x in xs]
        shape = np.broadcast_shapes(*(x.shape for x in xs)) if xs else ()
        xs = [np.broadcast_to(x, shape).ravel() for x in xs]
        n = xs[0].size if xs else 1
        positive = np.ones(n, dtype=bool)
        for x in xs:
            positive &= x > 0
        lo_idx, w_hi, outside, exact = [], [], np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
        clamped = []
        for a, x in enumerate(xs):
            g = np.log(self.axes[a])
            lx = np.log(np.where(x > 0, x, 1.0))
            lc = np.clip(lx, g[0], g[-1])
            outside |= np.abs(lx - lc) > _ON_GRID
            clamped.append(np.exp(lc))
            if len(g) == 1:
                lo_idx.append(np.zeros(n, dtype=np.int64))
                w_hi.append(np.zeros(n))
                continue
            i = np.clip(np.searchsorted(g, lc, side="right") - 1, 0, len(g) - 2)
            w = (lc - g[i]) / (g[i + 1] - g[i])
            w = np.where(w < _ON_GRID, 0.0, np.where(w > 1.0 - _ON_GRID, 1.0, w))
            exact &= (w == 0.0) | (w == 1.0)
            lo_idx.append(i)
            w_hi.append(w)
        d = len(xs)
        val = np.zeros(n)
        leans_on_fill = np.zeros(n, dtype=bool)
        for corner in range(1 << d):
            weight = np.ones(n)
            idx = []
            for a in range(d):
                hi = (corner >> a) & 1
                if len(self.axes[a]) == 1:
                    if hi:
                        weight = np.zeros(n)
                    idx.append(lo_idx[a])
                    continue
                weight = weight * (w_hi[a] if hi else 1.0 - w_hi[a])
                idx.append(lo_idx[a] + hi)
            used = weight > 0
            if not used.any():
                continue
            cell = tuple(idx)
            val += np.where(used, weight * self.logt[cell], 0.0)
            leans_on_fill |= used & ~self.measured[cell]
        seconds = np.exp(val)
        if outside.any():
            r_q = np.asarray(self.roofline(xs), dtype=float)
            r_b = np.asarray(self.roofline(clamped), dtype=float)
            scale = np.where(outside, r_q / np.maximum(r_b, 1e-30), 1.0)
            seconds = seconds * scale
        source = np.where(
            outside | leans_on_fill, EXTRAPOLATED, np.where(exact, MEASURED, INTERPOLATED)
        ).astype(np.int8)
        seconds = np.where(positive, seconds, 0.0)
        source = np.where(positive, source, MEASURED).astype(np.int8)
        return Estimate(seconds.reshape(shape), source.reshape(shape))


# ---------------------------------------------------------------------------------------------
# a whole table: groups by key
# ---------------------------------------------------------------------------------------------

GroupKey = tuple
GroupRoofline = Callable[[GroupKey, Sequence[np.ndarray]], np.ndarray]
Neighbour = Callable[[GroupKey, Sequence[GroupKey]], "GroupKey | None"]


@dataclass(frozen=True)
class GroupedTable:
    """Grids per group key; queries may mix keys (vectorised per distinct key)."""

    keys: tuple[str, ...]
    axes: tuple[str, ...]
    groups: Mapping[GroupKey, Grid]
    roofline: GroupRoofline
    neighbour: Neighbour | None = None  # a stand-in group when the key was not measured

    @classmethod
    def from_columns(
        cls,
        keys: Sequence[str],
        axes: Sequence[str],
        columns: Mapping[str, np.ndarray],
        seconds: np.ndarray,
        roofline: GroupRoofline,
        neighbour: Neighbour | None = None,
    ) -> GroupedTable:
        n = len(seconds)
        groups = {}
        for key, r in split_by_keys([np.asarray(columns[k]) for k in keys], n):
            groups[key] = Grid.build(
                [np.asarray(columns[a], dtype=float)[r] for a in axes],
                np.asarray(seconds, dtype=float)[r],
                _bind(roofline, key),
            )
        return cls(tuple(keys), tuple(axes), groups, roofline, neighbour)

    def query(
        self,
        key_values: Mapping[str, object],
        xs: Sequence[np.ndarray],
    ) -> Estimate:
        """Seconds at `xs` for the groups named by `key_values` (scalars or arrays).

        Keys with no table and no stand-in have no answer: NaN seconds, source ROOFLINE."""
        arrays = [np.asarray(x, dtype=float) for x in xs]
        kv = [np.asarray(key_values[k]) for k in self.keys]
        shape = np.broadcast_shapes(*(a.shape for a in arrays + kv)) if (arrays or kv) else ()
        arrays = [np.broadcast_to(a, shape).ravel() for a in arrays]
        kv = [np.broadcast_to(k, shape).ravel() for k in kv]
        n = int(np.prod(shape)) if shape else 1
        seconds = np.zeros(n)
        source = np.full(n, ROOFLINE, dtype=np.int8)
        parts = split_by_keys(kv, n)
        for key, rows in parts:
            sub = [a[rows] for a in arrays]
            grid = self.groups.get(key)
            if grid is not None:
                est = grid.query(sub)
                seconds[rows], source[rows] = est.seconds, est.source
                continue
            other = self.neighbour(key, list(self.groups)) if self.neighbour else None
            if other is not None:
                est = self.groups[other].query(sub)
                r_q = np.asarray(self.roofline(key, sub), dtype=float)
                r_o = np.asarray(self.roofline(other, sub), dtype=float)
                seconds[rows] = est.seconds * r_q / np.maximum(r_o, 1e-30)
                source[rows] = EXTRAPOLATED
                continue
            seconds[rows] = np.nan
            source[rows] = ROOFLINE
        return Estimate(seconds.reshape(shape), source.reshape(shape))


def _key_codes(col: np.ndarray) -> tuple[list, np.ndarray]:
    """Distinct values (plain Python scalars) of one key column and each row's index into them."""
    a = col
    if a.dtype.kind == "O":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            a = a.astype(str)
    if a.size == 0:
        return [], np.zeros(0, dtype=np.int64)
    if a.dtype.kind in "iuf":
        constant = a.min() == a.max()
    else:
        constant = bool((a == a[0]).all())
    if constant:  # the common case (one model, one precision): no sort
        return [_py(a[0])], np.zeros(a.size, dtype=np.int64)
    uniq, inv = np.unique(a, return_inverse=True)
    return [_py(u) for u in uniq], inv.ravel()


def split_by_keys(columns: Sequence[np.ndarray], n: int) -> list[tuple[GroupKey, np.ndarray]]:
    """Rows grouped by their key tuple, vectorised (a Python loop over distinct keys only)."""
    if not columns:
        return [((), np.arange(n))]
    code = np.zeros(n, dtype=np.int64)
    values = []
    for col in columns:
        uniq, inv = _key_codes(np.asarray(col).ravel())
        code = code * len(uniq) + inv
        values.append(uniq)
    order = np.argsort(code, kind="stable")
    distinct, starts = np.unique(code[order], return_index=True)
    bounds = list(starts[1:]) + [n]
    out = []
    for c, lo, hi in zip(distinct, starts, bounds):
        key = []
        rest = int(c)
        for uniq in reversed(values):
            rest, j = divmod(rest, len(uniq))
            key.append(uniq[j])
        out.append((tuple(reversed(key)), order[lo:hi]))
    return out


def _py(v: object) -> object:
    """Key values compare as plain Python scalars (numpy ints/floats -> int when whole)."""
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return int(f) if f.is_integer() else f
    if isinstance(v, np.str_):
        return str(v)
    return v


def _bind(roofline: GroupRoofline, key: GroupKey) -> RooflineFn:
    return lambda xs: roofline(key, xs)

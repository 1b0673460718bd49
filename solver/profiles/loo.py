"""Leave-one-out accuracy of the interpolation on a measured table.

Every interior measured point (one with a measured neighbour on each side along an axis) is
dropped and predicted from the rest by the same `Grid.query` the planner uses: the grid without
that axis value, queried at the dropped point's exact coordinates, interpolates between the two
neighbours in log-log space. Only predictions made from measured points alone count (source
INTERPOLATED); points whose neighbours were never measured are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.profiles.interp import INTERPOLATED, GroupedTable


@dataclass(frozen=True)
class LooResult:
    """Relative errors (predicted / measured - 1) per axis of one table."""

    errors: dict[str, np.ndarray]

    @property
    def all(self) -> np.ndarray:
        parts = [e for e in self.errors.values() if e.size]
        return np.concatenate(parts) if parts else np.zeros(0)

    def stats(self, axis: str | None = None) -> dict[str, float]:
        e = np.abs(self.all if axis is None else self.errors[axis])
        if e.size == 0:
            return {"points": 0, "median": float("nan"), "mean": float("nan"), "p90": float("nan"),
                    "max": float("nan")}
        return {
            "points": int(e.size),
            "median": float(np.median(e)),
            "mean": float(np.mean(e)),
            "p90": float(np.percentile(e, 90)),
            "max": float(np.max(e)),
        }


def leave_one_out(table: GroupedTable) -> LooResult:
    errors: dict[str, list[np.ndarray]] = {a: [] for a in table.axes}
    for grid in table.groups.values():
        d = len(grid.axes)
        for a in range(d):
            size = len(grid.axes[a])
            for i in range(1, size - 1):
                plane = np.atleast_1d(np.take(grid.measured, i, axis=a))
                if not plane.any():
                    continue
                reduced = grid.without(a, i)
                idx = np.nonzero(plane)  # indices over the other axes
                count = idx[0].size
                coords = []
                j = 0
                for b in range(d):
                    if b == a:
                        coords.append(np.full(count, grid.axes[a][i]))
                    else:
                        coords.append(grid.axes[b][idx[j]])
                        j += 1
                est = reduced.query(coords)
                actual = np.exp(np.atleast_1d(np.take(grid.logt, i, axis=a))[idx])
                ok = est.source == INTERPOLATED
                errors[table.axes[a]].append(est.seconds[ok] / actual[ok] - 1.0)
    return LooResult({a: (np.concatenate(v) if v else np.zeros(0)) for a, v in errors.items()})

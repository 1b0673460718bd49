"""Several sources (one per service, say) feeding one replay through one request table."""

from __future__ import annotations

import numpy as np

from solver.replay.requests import NOT_YET, RequestTable, Source
from solver.replay.sources.open_loop import measurement_window


class MergedSource:
    """The union of `sources`, which must all write to the same `table`: arrivals in time order
    across them, each finish routed to the source that sent the request. `owner(n)` is the index
    of the source of each of the table's first n rows (-1: not handed out yet), the mask a
    per-service report selects with (`owner(len(table)) == i`)."""

    def __init__(self, sources: list[Source], labels: list[str] | None = None) -> None:
        if not sources:
            raise ValueError("MergedSource needs at least one source")
        self.table: RequestTable = sources[0].table
        if any(s.table is not self.table for s in sources):
            raise ValueError("MergedSource: every source must write to the same RequestTable")
        self.sources = list(sources)
        self.labels = labels or [getattr(s, "describe", lambda: type(s).__name__)() for s in sources]
        self._owner = np.full(max(len(self.table), 16), -1, dtype=np.int64)

    def next_arrival_s(self) -> float:
        return min((s.next_arrival_s() for s in self.sources), default=NOT_YET)

    def take(self, until_s: float) -> np.ndarray:
        parts = []
        for i, s in enumerate(self.sources):
            ids = s.take(until_s)
            if len(ids):
                self._mark(ids, i)
                parts.append(ids)
        if not parts:
            return np.empty(0, dtype=np.int64)
        ids = np.concatenate(parts)
        return ids[np.argsort(self.table.arrival_s[ids], kind="stable")]

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        own = self._owner[ids]
        for i, s in enumerate(self.sources):
            mine = ids[own == i]
            if len(mine):
                s.finished(mine, t_s)

    def done(self) -> bool:
        return all(s.done() for s in self.sources)

    def owner(self, n: int | None = None) -> np.ndarray:
        """Source index per table row (the first `n`, default all rows)."""
        n = len(self.table) if n is None else n
        out = np.full(n, -1, dtype=np.int64)
        k = min(n, len(self._owner))
        out[:k] = self._owner[:k]
        return out

    def window(self) -> tuple[float, float]:
        """First send to last finish over every source's measured requests."""
        return measurement_window(self.table)

    def describe(self) -> str:
        return "; ".join(self.labels)

    def _mark(self, ids: np.ndarray, i: int) -> None:
        need = int(ids.max()) + 1
        if need > len(self._owner):
            grown = np.full(max(need, 2 * len(self._owner)), -1, dtype=np.int64)
            grown[: len(self._owner)] = self._owner
            self._owner = grown
        self._owner[ids] = i

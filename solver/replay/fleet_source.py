"""One source made of one source per service, for a fleet: its requests in one request table.

Each service's source keeps its own table (its own ids); the fleet source copies each request
it hands out into the fleet's table (a new id there), tags it with its service
(`Tags.service`, which `Fleet` routes by), and translates finished ids back, so a closed loop
of one service reacts to its own requests only. `scatter_back()` copies the outcome columns
into the services' tables when the replay is done, for metrics per service.

(`solver.replay.sources.MergedSource` merges sources that already write to one shared
table; this one takes sources as they come, each with its own table, so every source of the
replay works in a fleet unchanged.)
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from solver.replay.fleet import Tags
from solver.replay.requests import RequestTable, Source

_OUTCOMES = ("first_token_s", "finish_s", "queued_s", "preemptions", "instance")


def _top(local: np.ndarray) -> int:
    """The largest id of a non-empty take (one request, the usual case, without a reduction)."""
    return int(local[0]) if len(local) == 1 else int(local.max())


class FleetSource:
    """Sources of several services as one `Source` over `table` (the fleet's).

    `on_finished(k)`: called with the number of requests that finished (a progress bar)."""

    def __init__(self, sources: Sequence[Source], tags: Tags, table: RequestTable | None = None,
                 on_finished: Callable[[int], None] | None = None) -> None:
        self.sources = list(sources)
        self.table = table if table is not None else RequestTable()
        self.tags = tags
        self.on_finished = on_finished
        # per source: rows copied so far, and the fleet id of each copied local row
        self._copied = [0] * len(self.sources)
        self._fleet_of = [np.zeros(0, dtype=np.int64) for _ in self.sources]
        # per source: its next arrival as last asked. A source's next arrival changes only when
        # it hands requests out (`take`) or hears of finishes (`finished`, a closed loop sends),
        # so it is asked again after those only: the loop reads the fleet's next arrival at
        # every event. None until the first read (the sources are complete by then).
        self._arrivals: list[float] | None = None

    def _next_of(self) -> list[float]:
        if self._arrivals is None:
            self._arrivals = [s.next_arrival_s() for s in self.sources]
        return self._arrivals

    def next_arrival_s(self) -> float:
        return min(self._next_of(), default=np.inf)

    def take(self, until_s: float) -> np.ndarray:
        parts = []
        arrivals = self._next_of()
        for k, src in enumerate(self.sources):
            if arrivals[k] > until_s:
                continue
            local = np.asarray(src.take(until_s), dtype=np.int64)
            arrivals[k] = src.next_arrival_s()
            if len(local) == 0:
                continue
            if _top(local) >= self._copied[k]:
                self._copy(k)
            parts.append(self._fleet_of[k][local])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        ids = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if len(ids) == 1:  # the usual arrival: one request, nothing to order
            return ids
        return ids[np.argsort(self.table._arrival_s[ids], kind="stable")]

    def _copy(self, k: int) -> None:
        """Copy the rows source k's table has gained (an open loop's all at once, a closed
        loop's as it sends) into the fleet's table; ids are rows, so the order of copying is
        free (arrivals are handed out by time all the same)."""
        t = self.sources[k].table
        local = np.arange(self._copied[k], len(t))
        ids = self.table.add(t.arrival_s[local], t.prompt_tokens[local], t.output_tokens[local],
                             t.prefix_id[local], t.prefix_tokens[local], t.measured[local])
        self.tags.set("service", ids, k)
        self.tags.set("local", ids, local)
        self._fleet_of[k] = np.concatenate([self._fleet_of[k], ids])
        self._copied[k] = len(t)

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        svc = self.tags.at("service", ids)
        local = self.tags.at("local", ids)
        ks = svc.tolist()
        distinct = set(ks)
        arrivals = self._next_of()
        for k in sorted(distinct):  # by service, as np.unique ordered them
            self.sources[k].finished(local if len(distinct) == 1 else local[svc == k], t_s)
            arrivals[k] = self.sources[k].next_arrival_s()
        if self.on_finished is not None:
            self.on_finished(len(ids))

    def done(self) -> bool:
        return all(s.done() for s in self.sources)

    def rows_of(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(fleet ids, their ids in service k's table) of service k's requests."""
        fleet = self._fleet_of[k]
        return fleet, np.arange(len(fleet))

    def scatter_back(self) -> None:
        """Copy the outcome columns of every request into its service's table."""
        for k, src in enumerate(self.sources):
            ids, local = self.rows_of(k)
            for name in _OUTCOMES:
                getattr(src.table, name)[local] = getattr(self.table, name)[ids]

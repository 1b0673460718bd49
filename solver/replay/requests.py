"""The request table of one replay, and the protocols of what feeds and serves requests.

Every request has an integer id, its row in `RequestTable`. Sources append rows (open-loop
sources all at once, closed loops as their clients send); servers fill in the timing columns.
Times are seconds of simulated time from 0; token counts are whole numbers.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

NOT_YET = np.inf  # a timing column not reached (yet)


def _length(col) -> int | None:
    """Length of a 1-D column, None for a scalar (cheap: `add` runs once per closed-loop send)."""
    if isinstance(col, np.ndarray):
        if col.ndim > 1:
            raise ValueError(f"RequestTable.add: a column of shape {col.shape}, expected 1-D")
        return col.size if col.ndim else None
    if isinstance(col, (list, tuple, range)):
        return len(col)
    return None


class RequestTable:
    """Struct of arrays over requests, growable (amortised doubling), ids = row numbers.

    Inputs (set by the source): `arrival_s` (when the client sends it), `prompt_tokens`,
    `output_tokens`, `prefix_id` (-1: none; requests with one id share their first
    `prefix_tokens` prompt tokens), `measured` (inside the harness's measurement window).
    Outcomes (set by the servers): `first_token_s` (the first output token reaches the client),
    `finish_s` (the last), `preemptions`, `instance` (index of the instance that decoded it, -1
    before), `queued_s` (time from arrival to its first scheduled iteration).
    """

    _FLOAT = ("arrival_s", "first_token_s", "finish_s", "queued_s")
    _INT = ("prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "preemptions", "instance")

    def __init__(self, capacity: int = 1024) -> None:
        self._n = 0
        cap = max(int(capacity), 16)
        for name in self._FLOAT:
            setattr(self, "_" + name, np.full(cap, NOT_YET))
        for name in self._INT:
            setattr(self, "_" + name, np.full(cap, -1 if name in ("prefix_id", "instance") else 0,
                                              dtype=np.int64))
        self._measured = np.ones(cap, dtype=bool)

    def __len__(self) -> int:
        return self._n

    def _grow(self, need: int) -> None:
        cap = len(self._arrival_s)
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in self._FLOAT + self._INT + ("measured",):
            old = getattr(self, "_" + name)
            fill = NOT_YET if name in self._FLOAT else (-1 if name in ("prefix_id", "instance") else 0)
            arr = np.full(new, fill, dtype=old.dtype) if name != "measured" else np.ones(new, bool)
            arr[:cap] = old
            setattr(self, "_" + name, arr)

    def add(self, arrival_s, prompt_tokens, output_tokens, prefix_id=-1, prefix_tokens=0,
            measured=True) -> np.ndarray:
        """Append requests (arrays or scalars, broadcast); returns their ids."""
        cols = (arrival_s, prompt_tokens, output_tokens, prefix_id, prefix_tokens, measured)
        sizes = {n for n in map(_length, cols) if n is not None}
        k = max(sizes, default=1)
        if not sizes <= {1, k}:
            raise ValueError(f"RequestTable.add: columns of sizes {sorted(sizes)} do not broadcast to one length")
        lo = self._n
        self._grow(lo + k)
        # slice assignment broadcasts scalars and length-1 arrays (as np.broadcast_arrays did,
        # at a tenth of its cost: closed loops add one request per finish)
        self._arrival_s[lo:lo + k] = arrival_s
        self._prompt_tokens[lo:lo + k] = prompt_tokens
        self._output_tokens[lo:lo + k] = output_tokens
        self._prefix_id[lo:lo + k] = prefix_id
        self._prefix_tokens[lo:lo + k] = prefix_tokens
        self._measured[lo:lo + k] = measured
        self._n = lo + k
        return np.arange(lo, lo + k)

    def __getattr__(self, name: str) -> np.ndarray:
        # the public column views: table.arrival_s, table.finish_s, ... (length len(table))
        if name in self._FLOAT + self._INT + ("measured",):
            return object.__getattribute__(self, "_" + name)[: self._n]
        raise AttributeError(name)


class Source(Protocol):
    """Feeds requests into a replay; owns the request table's input columns."""

    table: RequestTable

    def next_arrival_s(self) -> float:
        """Arrival time of the next request not yet handed out (inf: none until some finish)."""

    def take(self, until_s: float) -> np.ndarray:
        """Ids of the requests arriving at or before `until_s` not yet handed out, by arrival."""

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        """Requests whose last token reached the client at `t_s` (a closed loop sends more)."""

    def done(self) -> bool:
        """No request will ever arrive again."""


class Server(Protocol):
    """One instance, or a pool / fleet behind its router; owns the table's outcome columns."""

    def submit(self, ids: np.ndarray, t_s: float) -> None:
        """Requests that reach the server at `t_s` (their arrival time, or later)."""

    def next_event_s(self) -> float:
        """When the server next completes something a source may react to (inf: idle)."""

    def advance(self, t_s: float) -> np.ndarray:
        """Simulate up to `t_s`; ids of requests that finished in that time, by finish time."""

"""Stand-ins for the replay's engine instances and sources, for the fleet tests: a FIFO server
with a fixed service time per request, and a source of fixed requests.

`FifoServer(table, service_s, role)`: one request at a time, in arrival order, each taking
`service_s` seconds. colocated: its first and last tokens reach the client when it is done;
prefill: it leaves then with its first token sampled (first_token_s = finish_s = done); decode:
finish_s = done, and first_token_s is (wrongly, on purpose) overwritten with the start, which
the fleet must undo. `reject_prompt_over`: prompts longer are rejected (returned by the next
advance with no token, as an engine rejects a request whose KV can never fit). `load()` reports running (0/1), waiting and one KV block per request held.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from solver.replay.requests import RequestTable
from solver.replay.router import Load


class FifoServer:
    def __init__(self, table: RequestTable, service_s: float, role: str = "colocated", index: int = 0,
                 kv_total_blocks: int = 100, reject_prompt_over: int | None = None) -> None:
        self.table = table
        self.service_s = service_s
        self.role = role
        self.index = index
        self.kv_total_blocks = kv_total_blocks
        self.queue: deque[int] = deque()
        self.current: int | None = None
        self.ends_s = np.inf
        self.submitted: list[tuple[float, int]] = []  # (t, id) as they came
        self.reject_prompt_over = reject_prompt_over
        self.rejected: list[int] = []  # returned by the next advance, no token produced
        self.reject_s = np.inf

    def submit(self, ids, t_s: float) -> None:
        for i in np.asarray(ids).tolist():
            self.submitted.append((t_s, i))
            if self.reject_prompt_over is not None and self.table.prompt_tokens[i] > self.reject_prompt_over:
                self.rejected.append(i)
                self.reject_s = t_s
            else:
                self.queue.append(i)
        self._start(t_s)

    def _start(self, t_s: float) -> None:
        if self.current is None and self.queue:
            self.current = self.queue.popleft()
            self.ends_s = t_s + self.service_s
            self.table.queued_s[self.current] = t_s - self.table.arrival_s[self.current]
            if self.role == "decode":
                self.table.first_token_s[self.current] = t_s

    def next_event_s(self) -> float:
        return min(self.ends_s, self.reject_s)

    def advance(self, t_s: float) -> np.ndarray:
        done, self.rejected, self.reject_s = self.rejected, [], np.inf
        while self.current is not None and self.ends_s <= t_s:
            i, end = self.current, self.ends_s
            if self.role != "decode":
                self.table.first_token_s[i] = end
            self.table.finish_s[i] = end
            self.table.instance[i] = self.index
            done.append(i)
            self.current, self.ends_s = None, np.inf
            self._start(end)
        return np.array(done, dtype=np.int64)

    def load(self) -> Load:
        running = 0 if self.current is None else 1
        return Load(running=running, waiting=len(self.queue), kv_used_blocks=running + len(self.queue),
                    kv_total_blocks=self.kv_total_blocks)


class FixedSource:
    """Open-loop requests given up front: arrivals, prompt and output tokens."""

    def __init__(self, arrival_s, prompt_tokens, output_tokens) -> None:
        self.table = RequestTable()
        self.ids = self.table.add(arrival_s, prompt_tokens, output_tokens)
        self._pos = 0
        self.finished_at: list[tuple[float, int]] = []

    def next_arrival_s(self) -> float:
        return float(self.table.arrival_s[self._pos]) if self._pos < len(self.ids) else np.inf

    def take(self, until_s: float) -> np.ndarray:
        end = int(np.searchsorted(self.table.arrival_s, until_s, side="right"))
        out = self.ids[self._pos:end]
        self._pos = max(self._pos, end)
        return out

    def finished(self, ids, t_s: float) -> None:
        self.finished_at.extend((t_s, int(i)) for i in ids)

    def done(self) -> bool:
        return self._pos >= len(self.ids)

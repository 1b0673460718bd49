"""A stand-in for `StepTimes` with fixed iteration seconds, for hand-computed schedules, and a
tiny open-loop source (the replay tests of the instance, the schedulers and the KV cache)."""

from __future__ import annotations

import numpy as np

from solver.replay.instance import Instance
from solver.replay.kv import KVCache
from solver.replay.requests import RequestTable


class FixedSteps:
    """`decode_s` for an iteration of decodes only, `prefill_s` for one carrying prefill."""

    pp = 1
    spec_k, spec_gain = 0, 1.0  # no speculation (StepTimes' defaults)
    eager_s = 0.0  # no eager-launch host time (StepTimes' default)

    def __init__(self, decode_s: float = 0.01, prefill_s: float = 0.05) -> None:
        self.decode_s, self.prefill_s = decode_s, prefill_s
        self.calls = 0

    def decode_cycle_s(self, n: int, ctx: float) -> float:
        self.calls += 1
        return self.decode_s

    def decode_cycles_s(self, n: int, ctx0: float, k: int) -> np.ndarray:
        self.calls += 1
        return np.full(k, self.decode_s)

    def cycle_s(self, n, ctx, t=0, s=0.0, completing=0, pieces=0) -> float:
        self.calls += 1
        return self.prefill_s if t else self.decode_s


class ListSource:
    """Requests given up front (arrival, prompt, output), handed out by arrival time."""

    def __init__(self, table: RequestTable, arrivals, prompts, outputs, prefix_id=-1, prefix_tokens=0) -> None:
        self.table = table
        table.add(arrivals, prompts, outputs, prefix_id, prefix_tokens)
        self._t = np.asarray(table.arrival_s).tolist()
        self._i = 0

    def next_arrival_s(self) -> float:
        return self._t[self._i] if self._i < len(self._t) else np.inf

    def take(self, until_s: float) -> np.ndarray:
        lo = hi = self._i
        while hi < len(self._t) and self._t[hi] <= until_s:
            hi += 1
        self._i = hi
        return np.arange(lo, hi)

    def finished(self, ids, t_s: float) -> None:
        pass

    def done(self) -> bool:
        return self._i >= len(self._t)


def instance(policy, blocks: int = 100_000, steps=None, role: str = "colocated", table=None) -> Instance:
    table = table if table is not None else RequestTable()
    return Instance(table, steps or FixedSteps(), policy, KVCache(blocks, policy.block_tokens), role=role)

"""Capacity factors on candidate rows: the planner's way to take a replayed shortfall into the
fleet model (solver/decision/replayed.py).

The fleet model reads a row's capacity from `CandidateTable.capacity_qps` only (integerized in
solver/fleet/integerize.py `capacity`), so a per-row factor applied to that column is the whole
input: `derate(cs, factor)` returns the same candidate set with capacity x factor, every other
column (latencies, cost, memory) and the pruning statistics unchanged. Rows whose derated
capacity falls below the model's resolution (`MIN_CAPACITY_QPS`) keep that floor, as the build
keeps it. Pruning ran on the analytic capacities: a row that dominance removed stays removed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solver.candidates.table import MIN_CAPACITY_QPS, CandidateSet, CandidateTable


def config_rows(t: CandidateTable, service: int, role: int, hw: int, tp: int, pp: int, ep: int, dp: int,
                batch: int, chunk: int, cp: int = 1, spec: int = 0) -> np.ndarray:
    """Indices of the rows of one configuration (service, role, hardware, parallelism, batch,
    chunk; chunk is 0 for prefill and decode rows; context parallelism, speculation on/off)."""
    return np.flatnonzero((t.service == service) & (t.role == role) & (t.hw == hw) & (t.tp == tp) & (t.pp == pp)
                          & (t.ep == ep) & (t.dp == dp) & (t.batch == batch) & (t.chunk == chunk)
                          & (t.cp == cp) & (t.spec == spec))


def derate(cs: CandidateSet, factor: np.ndarray) -> CandidateSet:
    """`cs` with every row's capacity multiplied by `factor` (one per row, in (0, 1])."""
    f = np.asarray(factor, dtype=float)
    if f.shape != (len(cs.table),):
        raise ValueError(f"derate: {f.shape} factors for {len(cs.table)} candidate rows")
    if np.any(~np.isfinite(f)) or np.any(f <= 0) or np.any(f > 1):
        raise ValueError("derate: capacity factors must lie in (0, 1]")
    cap = np.maximum(cs.table.capacity_qps * f, MIN_CAPACITY_QPS)
    return replace(cs, table=replace(cs.table, capacity_qps=cap))

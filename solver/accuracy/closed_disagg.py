"""Measured disaggregated benchmarks predicted in closed form: the planner's role formulas
(solver/perf/runtime.py `prefill_role`, `decode_role`, `kv_transfer_s`, `queue_wait`) in the
row's closed loop.

A closed loop of N clients over `prefill_workers` prefill and `decode_workers` decode instances
(rows: solver/accuracy/disagg_rows.py):
- TPOT: `decode_role`'s decode cycle of a decode instance running its share of the clients
  up to its limit, B = min(decode_batch x decode_dp, ceil(N / decode_workers)) sequences at the
  mean context (clients beyond the decode slots wait there; the closed form does not charge that
  wait, the replay does: solver/accuracy/replay_disagg.py);
- TTFT: the M/D/1 median wait at the prefill instances' utilization, plus `prefill_role`'s
  prompt latency, the KV transfer and the engine's request overhead (the terms of
  `prefill_role`'s TTFT), where each client sends a request every TTFT + (output - 1) x TPOT, so
  the prefill utilization is rho = N / (TTFT + (output - 1) TPOT) / prefill_workers x the
  prefill instance's seconds per request (its stage time over its batch). The fixed point in
  TTFT is found by bisection (TTFT grows with rho, rho falls as TTFT grows).
No harness waves are modelled: the closed form's fitted arrival-wave law describes one
colocated instance (solver/perf/closed_loop.py).
"""

from __future__ import annotations

import numpy as np

from solver.catalog.calibration import engine_params
from solver.perf import runtime as rt
from solver.perf.stages import Load, stage_time
from solver.perf.workload import Slo

from .disagg_rows import DisaggRow, role_setup
from .replay_rows import DEFAULT_ENGINE

_ITERS = 60  # bisection steps on TTFT: the bracket shrinks 2^60-fold


def _prefill_terms(s, wl: rt.Workload, params, decode_tp: int) -> tuple[float, float]:
    """(TTFT without the queue wait, s; seconds of the instance per request) of a prefill role
    shipping its KV to decode instances of attention tensor-parallel size `decode_tp`."""
    role = rt.prefill_role(s.arch, s.hw, s.plan, wl, Slo(), params)
    kv = float(rt.kv_transfer_s(s.arch, s.hw, s.plan, wl.input_tokens, params, decode_tp=decode_tp)[0])
    st = stage_time(s.arch, s.hw, s.plan, Load.prefill(s.plan.batch / s.plan.dp, wl.input_tokens), params)
    per_request = float((st.stage_s[0] + params.step_overhead_ms * 1e-3) / s.batch)
    return float(role.prefill_ms[0]) * 1e-3 + kv + params.request_overhead_ms * 1e-3, per_request


def closed_form_row(path: str, r: DisaggRow) -> tuple[float, float]:
    """Predicted (ttft_ms, tpot_ms) of one row (module docstring)."""
    engine = r.engine or DEFAULT_ENGINE
    params = engine_params(engine)
    n, out = r.ints["concurrency"], r.ints["output_tokens"]
    wl = rt.Workload(np.array([float(r.ints["input_tokens"])]), np.array([float(out)]))
    pre = role_setup(path, r, "prefill", params, engine)
    dec = role_setup(path, r, "decode", params, engine, running=-(-n // r.ints["decode_workers"]))
    tpot = float(rt.decode_role(dec.arch, dec.hw, dec.plan, wl, Slo(), params).tpot_p50_ms[0]) * 1e-3
    base, per_request = _prefill_terms(pre, wl, params, int(dec.plan.tp[0]))

    def excess(ttft: float) -> float:  # > 0 where the guess is above what it implies
        rho = n / (ttft + (out - 1) * tpot) / r.ints["prefill_workers"] * per_request
        return ttft - (base + float(rt.queue_wait(np.array([rho]), per_request, 0.5)[0]))

    lo, hi = base, base + n * per_request  # the wait never exceeds a full queue of N prompts
    for _ in range(_ITERS):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if excess(mid) >= 0 else (mid, hi)
    return hi * 1e3, tpot * 1e3


def closed_form_disagg(path: str, rows: list[DisaggRow]) -> tuple[np.ndarray, np.ndarray]:
    out = np.array([closed_form_row(path, r) for r in rows]).reshape(len(rows), 2)
    return out[:, 0], out[:, 1]


__all__ = ["closed_form_disagg", "closed_form_row"]

"""Measured drift applied to the candidates of a re-plan (`fleetplan plan --current RESULT.json
--measured FILES`, solver/accuracy/drift.py): a pool measured slower (or faster) than predicted,
beyond its error band, runs every iteration `factor` times as long as the performance model
says, on that service, role and hardware type.

Time dilation: at the same utilisation every time of the role scales by the factor (prefill
pass, decode step, TTFT and TPOT percentiles, queueing waits, which are multiples of the
service time) and the rate one instance sustains by its inverse; the SLO check is then made
again on the dilated latencies with the problem's safety margin, so a plan that met a bound
only on the old prediction is no longer a candidate. This is a correction of one pool's
measured behaviour, not a change of the engine's calibration, which every other pool shares
(docs/calibrate.md, Drift).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from solver.perf import runtime as rt
from solver.perf.tables import HardwareTable, Plans
from solver.schema.roles import ROLES

Scale = tuple[tuple[str, str, str, float], ...]  # (service, role, hardware card, factor)


def _within(value: np.ndarray, bound: float | None, margin: float) -> np.ndarray:
    if bound is None:
        return np.ones(np.shape(value), dtype=bool)
    return np.nan_to_num(value, nan=np.inf) * (1.0 + margin) <= bound


def dilate(scale: Scale, service: str, role: int, hw: HardwareTable, plans: Plans, m: rt.RoleMetrics,
           slo: rt.Slo) -> rt.RoleMetrics:
    """`m` with the rows of the scaled hardware types dilated (module docstring)."""
    f = np.ones(len(plans))
    names = np.array([n.split("@")[0] for n in hw.names])[plans.hw]
    for svc, role_name, hardware, factor in scale:
        if svc == service and role_name == ROLES[role]:
            f = np.where(names == hardware, factor, f)
    if np.all(f == 1.0):
        return m
    t = {k: getattr(m, k) * f for k in ("prefill_ms", "decode_step_ms", "ttft_p50_ms", "ttft_p99_ms",
                                          "tpot_p50_ms", "tpot_p99_ms")}
    ok = (m.slo_ok & _within(t["ttft_p50_ms"], slo.ttft_p50_ms, slo.safety_margin)
          & _within(t["ttft_p99_ms"], slo.ttft_p99_ms, slo.safety_margin)
          & _within(t["tpot_p50_ms"], slo.tpot_p50_ms, slo.safety_margin)
          & _within(t["tpot_p99_ms"], slo.tpot_p99_ms, slo.safety_margin))
    return dataclasses.replace(m, **t, capacity_qps=m.capacity_qps / f, tokens_per_s=m.tokens_per_s / f, slo_ok=ok)

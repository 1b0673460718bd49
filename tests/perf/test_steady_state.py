"""Steady state at large batch: the KV cache an instance is sized for, and the slot fill capacity
counts on (hand-computed from the Llama-3.1-70B card and the H100 card, no measured tables)."""

from __future__ import annotations

import numpy as np

from solver.perf import runtime as rt
from solver.perf.colocated import colocated_role
from solver.perf.tables import Plans
from solver.schema.engine import EngineParams

E = EngineParams()  # decode_slot_fill 0.92


def _plans(batch, tp=8) -> Plans:
    return Plans.of(hw=0, tp=tp, pp=1, ep=1, dp=1, batch=batch, wprec=0, kvprec=0)


def test_slot_fill_rule():
    assert rt.slot_fill(rt.Slo(), E) == 1.0  # offline: no TPOT bound
    assert rt.slot_fill(rt.Slo(ttft_p50_ms=60_000.0), E) == 1.0  # a TTFT bound alone is still offline
    assert rt.slot_fill(rt.Slo(tpot_p99_ms=50.0), E) == 0.92
    assert rt.slot_fill(rt.Slo(tpot_p50_ms=30.0), E.model_copy(update={"decode_slot_fill": 0.8})) == 0.8


def test_decode_kv_cache_holds_the_mean_context(a70, h100):
    # 2048 prompt + 1024 output tokens: a decoding sequence holds on average 2048 + 512 = 2560
    # tokens; tp8 bf16 KV per token: 80 layers x 2 x 1 KV head x 128 x 2 B = 40,960 B
    wl = rt.Workload(2048.0, 1024.0)
    r = rt.decode_role(a70, h100, _plans([64, 256]), wl, rt.Slo(), E)
    assert list(r.memory.kv_cache) == [64 * 2560 * 40_960, 256 * 2560 * 40_960]


def test_colocated_kv_cache_holds_the_mean_context(a70, h100):
    wl = rt.Workload(2048.0, 1024.0)
    r = colocated_role(a70, h100, _plans([128]), wl, rt.Slo(), E, np.array([8192.0]))
    assert r.memory.kv_cache[0] == 128 * 2560 * 40_960


def test_offline_colocated_capacity_is_the_saturated_batch(a70, h100):
    """Offline, capacity = B / (o x mean iteration); online it is derated by the slot fill."""
    wl = rt.Workload(2048.0, 1024.0)
    p, c = _plans([64, 128]), np.array([8192.0, 8192.0])
    off = colocated_role(a70, h100, p, wl, rt.Slo(ttft_p50_ms=60_000.0), E, c)
    on = colocated_role(a70, h100, p, wl, rt.Slo(ttft_p50_ms=60_000.0, tpot_p50_ms=1e9), E, c)
    tau = off.tpot_p50_ms / 1e3  # the mean iteration (same in both: it does not depend on the fill)
    np.testing.assert_allclose(on.tpot_p50_ms, off.tpot_p50_ms, rtol=1e-12)
    full = np.array([64.0, 128.0]) / (1024.0 * tau)
    # offline the fill runs up to every slot, short of it only by the wait for a slot at the
    # TTFT bound (solver/perf/slots.py slot_wait grows without bound as the fill reaches 1)
    assert np.all(off.capacity_qps <= full) and np.all(off.capacity_qps >= 0.99 * full)
    np.testing.assert_allclose(on.capacity_qps, 0.92 * full, rtol=1e-9)
    # the prefill lane works harder when the slots are full: rho scales with the fill
    np.testing.assert_allclose(on.utilization / on.capacity_qps, off.utilization / off.capacity_qps, rtol=1e-9)

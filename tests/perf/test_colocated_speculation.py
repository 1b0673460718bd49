"""Speculative decoding in colocated (chunked-prefill) instances, solver/perf/colocated.py,
against hand-computed numbers.

The stub iteration of tests/perf/test_speculative.py: T(m) = max(2 P m / F, P b / BW) over the m
tokens a forward pass carries (P = 1e9 parameters at 1 byte, F = 1e15 FLOP/s, BW = 2e12 B/s:
weight-bound up to m* = 250 tokens, T = 0.5 ms there). n-gram drafting (no proposer cost), k = 3,
a = 0.6: E = (1 - 0.6^4) / 0.4 = 2.176 tokens per decoder per iteration, v = k + 1 = 4 tokens of
the budget per decoder (vLLM's `num_tokens_with_spec - num_computed_tokens`).
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf import runtime as rt
from solver.perf import speculative as spm
from solver.perf.colocated import colocated_role, mixed_verify_load, spec_iterations
from solver.perf.stages import Load
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams
from tests.perf.test_speculative import ENGINE, plans_at, stub_cycle

SLOW = ENGINE.mixed_batch_slowdown  # 1.10


def T(m: float) -> float:
    return max(2e9 * m / 1e15, 1e9 / 2e12)


def test_colocated_speculative_iteration_by_hand(a70):
    # batch 64, budget 2048, s = 1024, o = 256. Decoders the budget feeds:
    # floor(o c / (E s + v o)) = floor(524288 / (2228.224 + 1024)) = 161 >= 64, so n = 64;
    # the drafts and sampled tokens take 4 x 64 = 256 of the budget: c = 1792 prefill tokens
    sp = spm.Speculation("ngram", 3, 0.6)
    wl = rt.Workload(1024.0, 256.0, speculation=sp)
    it = spec_iterations(a70, None, plans_at(np.array([64.0])), wl, ENGINE, np.array([2048.0]), sp, stub_cycle)
    e = 2.176
    assert it.n[0] == 64 and it.c[0] == 1792 and it.gain[0] == pytest.approx(e) and it.verify[0] == 4
    # f = n E s / (o c) = 64 x 2.176 x 1024 / (256 x 1792) = 0.310857
    assert it.f[0] == pytest.approx(64 * e * 1024 / (256 * 1792))
    assert it.f[0] == pytest.approx(0.310857, abs=1e-6)
    # decode-only: the verification of 64 x 4 = 256 positions, T(256) = 0.512 ms (just compute-bound)
    assert it.tau_d[0] == pytest.approx(T(256)) and T(256) == pytest.approx(0.512e-3)
    # mixed: 256 + 1792 = 2048 tokens in one pass, T = 4.096 ms; the chunk's 3.584 ms x 1.1
    assert it.tau_m[0] == pytest.approx(0.512e-3 + SLOW * (4.096e-3 - 0.512e-3))
    assert it.tau_m[0] == pytest.approx(4.4544e-3)
    # the prompt: floor(1024 / 1792) = 0 full chunks, its 1024 tokens 1024/1792 of one more
    assert it.lat[0] == pytest.approx(0.512e-3 + 1024 / 1792 * (4.4544e-3 - 0.512e-3))


def test_colocated_tpot_per_token_and_the_plain_comparison(a70):
    # the same point without speculation: n = 64 (floor(256 x 2048 / 1280) = 409), c = 1984,
    # f = 64 x 1024 / (256 x 1984) = 0.129032; tau_d = T(64) = 0.5 ms (weight-bound), tau_m =
    # 0.5 + 1.1 x (4.096 - 0.5) = 4.4556 ms. TPOT plain = f tau_m + (1 - f) tau_d = 1.0104 ms;
    # speculating: (0.310857 x 4.4544 + 0.689143 x 0.512) / 2.176 ms = 0.79849 ms: pays
    f0 = 64 * 1024 / (256 * 1984)
    plain = f0 * (0.5e-3 + SLOW * (4.096e-3 - 0.5e-3)) + (1 - f0) * 0.5e-3
    assert plain == pytest.approx(1.0104e-3, rel=1e-5)
    f1 = 64 * 2.176 * 1024 / (256 * 1792)
    spec = (f1 * 4.4544e-3 + (1 - f1) * 0.512e-3) / 2.176
    assert spec == pytest.approx(0.79849e-3, rel=1e-5)
    # at batch 256 the verification is compute-bound: n = 256, c = 2048 - 1024 = 1024,
    # f = 256 x 2.176 x 1024 / (256 x 1024) = 2.176 > 1: the budget cannot feed 256 decoders
    # that speculate; the engine keeps n = floor(o c / (E s + v o)) = 161 (c = 1404):
    sp = spm.Speculation("ngram", 3, 0.6)
    wl = rt.Workload(1024.0, 256.0, speculation=sp)
    it = spec_iterations(a70, None, plans_at(np.array([256.0])), wl, ENGINE, np.array([2048.0]), sp, stub_cycle)
    assert it.n[0] == 161 and it.c[0] == 2048 - 4 * 161
    assert it.tau_d[0] == pytest.approx(T(644))  # 161 x 4 positions


def test_mixed_verify_load_adds_the_drafted_positions_to_the_chunk():
    ld = mixed_verify_load(8.0, 1000.0, 3, 512.0, 2048.0)
    assert float(ld.dec_seqs) == 8 and float(ld.pre_tokens) == 24 + 512
    # pairs add: 24 tokens at the equivalent prompt 1999 and 512 at 2048
    assert float(ld.pre_prompt) == pytest.approx((24 * 1999 + 512 * 2048) / 536)
    assert float(ld.logits) == pytest.approx(32 + 512 / 2048)


def _role(a70, hw, sp, batch, slo=None, chunk=2048.0):
    p = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=np.asarray(batch, dtype=float), wprec=1, kvprec=1,
                 spec=np.array([0, 1]).repeat(len(np.atleast_1d(batch)) // 2))
    wl = rt.Workload(2048.0, 256.0, speculation=sp)
    return colocated_role(a70, hw, p, wl, slo or rt.Slo(), EngineParams(), np.full(len(p), chunk))


def test_colocated_role_real_model_pays_small_and_loses_large(a70):
    # llama-3.1-70b fp8 tp4 on h100-sxm, EAGLE k 3 at 0.75 (E = 2.734): at 8 decoders the
    # verification costs about one weight-bound step, so TPOT falls by nearly E; at 256 the
    # budget (2048) cannot feed the 4 x 256 verified positions and a prompt stream: fewer
    # decoders, and the compute-bound verification loses
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=EngineParams())
    sp = spm.Speculation("eagle", 3, 0.75)
    r = _role(a70, hw, sp, [8.0, 256.0, 8.0, 256.0])
    small = r.tpot_p50_ms[2] / r.tpot_p50_ms[0]
    assert 1 / 2.734 < small < 0.6
    assert r.capacity_qps[3] < r.capacity_qps[1]
    # the speculating row's memory carries the head's weights; its activations the whole budget
    assert r.memory.weights[2] > r.memory.weights[0]


def test_colocated_plan_without_spec_is_unchanged(a70):
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=EngineParams())
    p = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=32.0, wprec=1, kvprec=1)
    wl = rt.Workload(2048.0, 256.0)
    base = colocated_role(a70, hw, p, wl, rt.Slo(), EngineParams(), np.array([2048.0]))
    wl_sp = rt.Workload(2048.0, 256.0, speculation=spm.Speculation("eagle", 3, 0.75))
    same = colocated_role(a70, hw, p, wl_sp, rt.Slo(), EngineParams(), np.array([2048.0]))
    assert same.tpot_p50_ms[0] == base.tpot_p50_ms[0] and same.capacity_qps[0] == base.capacity_qps[0]
    tau_d, _ = rt.cycle(a70, hw, p, Load.decode(32.0, wl.decode_context), EngineParams())
    assert base.decode_step_ms[0] == pytest.approx(tau_d[0] * 1e3)

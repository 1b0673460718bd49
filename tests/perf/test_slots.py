"""Decode slots under Poisson arrivals (solver/perf/slots.py): hand-computed Erlang C and waits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.perf import runtime as rt
from solver.perf.colocated import colocated_role
from solver.perf.slots import budget_decoders, erlang_c, slot_wait


def test_erlang_c_hand_values():
    # c = 16, rho = 0.9: beta = 0.1 x 4 = 0.4, Phi(0.4) = 0.655422, exp(0.08) = 1.083287
    # C = 1 / (1 + 2.506628 x 0.4 x 0.655422 x 1.083287) = 1 / 1.711880 = 0.584154
    assert erlang_c(0.9, 16) == pytest.approx(0.584154, rel=1e-5)
    # one server: C = rho exactly; Halfin-Whitt within 2.5 %
    assert erlang_c(np.array([0.5, 0.9]), 1) == pytest.approx([0.5, 0.9], rel=0.025)


def test_slot_wait_hand_values():
    # D = 10 s, c = 16, rho = 0.9: W50 = 10 / (2 x 16 x 0.1) x ln(0.584154 / 0.5) = 0.4861 s (C rounded to 6 digits)
    assert slot_wait(0.9, 16, 10.0, 0.5) == pytest.approx(3.125 * math.log(0.584154 / 0.5), rel=1e-3)
    # W99 = 3.125 x ln(0.584154 / 0.01) = 12.7163 s
    assert slot_wait(0.9, 16, 10.0, 0.99) == pytest.approx(3.125 * math.log(58.4154), rel=1e-5)
    # 256 slots at 0.92: beta = 1.28, C = 0.13 < 0.5: the median request does not wait
    assert slot_wait(0.92, 256, 10.0, 0.5) == 0.0


def test_one_slot_is_the_md1_queue_of_runtime():
    rho = np.array([0.3, 0.6, 0.9])
    # the same tail; Halfin-Whitt's C at one slot is 23 % high at rho 0.3: the p99 wait 6 % long
    assert slot_wait(rho, 1, 2.0, 0.99) == pytest.approx(rt.queue_wait(rho, 2.0, 0.99), rel=0.07)


@given(st.floats(0.05, 0.98), st.integers(1, 512), st.integers(1, 512))
def test_more_slots_wait_less(rho, c1, c2):
    lo, hi = sorted((c1, c2))
    assert erlang_c(rho, hi) <= erlang_c(rho, lo) + 1e-12
    assert slot_wait(rho, hi, 5.0, 0.99) <= slot_wait(rho, lo, 5.0, 0.99) + 1e-9


def test_budget_decoders():
    # o c / (s + o) = 128 x 512 / 2176 = 30.1 -> 30; the batch caps it; unchunked: the batch
    assert budget_decoders(np.array([64.0, 16.0]), 512.0, 2048.0, 128.0, True) == pytest.approx([30.0, 16.0], abs=0)
    assert budget_decoders(np.array([64.0]), 512.0, 2048.0, 128.0, False) == pytest.approx([64.0], abs=0)


# ---- bursty arrivals: Kingman / Whitt's (ca^2 + cs^2) / 2 on the waits -------------------------


def test_bursty_arrivals_scale_the_waits_by_ca2_hand_values():
    # G/D/1, rho 0.8, S = 0.1 s, q = 0.99: Poisson 0.1 / (2 x 0.2) x ln(0.8 / 0.01) = 0.25 ln 80 = 1.095507 s
    assert rt.queue_wait(0.8, 0.1, 0.99) == pytest.approx(0.25 * math.log(80.0), rel=1e-12)
    assert rt.queue_wait(0.8, 0.1, 0.99) == pytest.approx(1.095507, rel=1e-6)
    # arrival CV 1.5: ca^2 = 2.25 (cs = 0): 2.25 x 1.095507 = 2.464890 s
    assert rt.queue_wait(0.8, 0.1, 0.99, 2.25) == pytest.approx(2.464890, rel=1e-6)
    # smoother than Poisson (CV 0.5): a quarter of it
    assert rt.queue_wait(0.8, 0.1, 0.99, 0.25) == pytest.approx(0.25 * 1.095507, rel=1e-6)
    # M/D/c slots: 16 slots, rho 0.9, D = 10 s: W99 = 3.125 ln(58.4154) = 12.7163 s; ca^2 = 4: 50.865 s
    assert slot_wait(0.9, 16, 10.0, 0.99, 4.0) == pytest.approx(4 * 3.125 * math.log(58.4154), rel=1e-5)
    # the probability of waiting is kept: no wait stays no wait
    assert slot_wait(0.92, 256, 10.0, 0.5, 9.0) == 0.0


def test_bursty_arrivals_lower_the_slo_bound_capacity():
    from solver.catalog import shipped
    from solver.perf.arch import ModelArch
    from solver.perf.tables import HardwareTable, Plans
    from solver.schema.engine import EngineParams

    arch = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")])
    p = Plans.of(hw=0, tp=8, pp=1, ep=1, dp=1, batch=[1, 4], wprec=0, kvprec=0)
    slo, e = rt.Slo(ttft_p99_ms=1500.0), EngineParams()
    caps = [rt.prefill_role(arch, hw, p, rt.Workload(2048.0, 150.0, arrival_cv=cv), slo, e).capacity_qps
            for cv in (0.5, 1.0, 2.0)]
    assert np.all(caps[0] > caps[1]) and np.all(caps[1] > caps[2]) and np.all(caps[2] > 0)
    cp = [colocated_role(arch, hw, Plans.of(hw=0, tp=8, pp=1, ep=1, dp=1, batch=[64], wprec=0, kvprec=0),
                            rt.Workload(2048.0, 150.0, arrival_cv=cv), rt.Slo(ttft_p99_ms=1500.0, tpot_p99_ms=100.0),
                            e, np.array([4096.0])).capacity_qps[0] for cv in (1.0, 3.0)]
    # (TPOT p99 100 ms: this plan's p99 step is 64 ms with the norms' HBM traffic; the TTFT bound binds)
    assert cp[0] > cp[1] > 0

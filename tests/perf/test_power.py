"""Power-capped devices: the card's power curve by hand, the capped card and tables, and the
candidate rows per cap (solver/perf/power.py, solver/candidates/variants.py)."""

from __future__ import annotations

import numpy as np
import pytest

from solver.candidates.build import build_candidates
from solver.catalog.shipped import hardware_card
from solver.perf.power import _compute_bound_scale, capped_card, curve_fractions
from solver.problem.load import parse_problem
from solver.schema.roles import DECODE, PREFILL

H100 = hardware_card("h100-sxm")


def test_curve_points_and_interpolation_by_hand():
    # the card's measured points (MLPerf v4.0 MaxQ / MaxP throughput, hardware/h100-sxm.yaml):
    # 178.896 / 239.895 = 0.7457 at 350 W, 17561.6 / 21805.8 = 0.8054 at 450 W, floored; HBM unchanged
    assert curve_fractions(H100, 350) == (0.745, 1.0)
    assert curve_fractions(H100, 450) == (0.805, 1.0)
    # 400 W is halfway between 350 (0.745) and 450 (0.805): 0.775
    assert curve_fractions(H100, 400)[0] == pytest.approx(0.775, abs=1e-12)
    # 550 W is 100 / 250 of the way from 450 (0.805) to 700 (1.0): 0.805 + 0.4 x 0.195 = 0.883
    assert curve_fractions(H100, 550)[0] == pytest.approx(0.883, abs=1e-12)
    assert curve_fractions(H100, 700) == (1.0, 1.0)
    assert curve_fractions(H100, 800) == (1.0, 1.0)  # no faster above the card's power
    with pytest.raises(ValueError, match="below h100-sxm's power curve"):
        curve_fractions(H100, 300)  # below the lowest measured cap, 350 W
    with pytest.raises(ValueError, match="no power_curve"):
        curve_fractions(hardware_card("a100-sxm"), 300)


def test_h200_curve_by_hand():
    h200 = hardware_card("h200-sxm")
    # MLPerf v4.1 MaxQ / MaxP: 189.806 / 291.103 = 0.6520 at 350 W, 25262.1 / 31302.7 = 0.8070 at 500 W
    assert curve_fractions(h200, 350) == (0.652, 1.0) and curve_fractions(h200, 500) == (0.807, 1.0)
    # 400 W: 0.652 + (50 / 150) x 0.155 = 0.703667; 600 W: 0.807 + (100 / 200) x 0.193 = 0.9035
    assert curve_fractions(h200, 400)[0] == pytest.approx(0.7036667, abs=1e-6)
    assert curve_fractions(h200, 600)[0] == pytest.approx(0.9035, abs=1e-12)


def test_capped_card_scales_tensor_peaks_not_memory():
    c = capped_card(H100, 550)
    assert c.peak_tflops.bf16 == pytest.approx(873.287)  # 989 x 0.883
    assert c.peak_tflops.fp8 == pytest.approx(1747.457)  # 1979 x 0.883
    assert c.peak_tflops.fp4 is None
    assert c.hbm_bandwidth_tb_s == 3.35
    assert c.power_w == 550
    assert capped_card(H100, 700) is H100


def test_measured_time_scales_by_its_compute_bound_share():
    ach = np.array([1e15])
    # all of the 1 s is math at the achievable rate: 1 / 0.883 = 1.132503
    assert _compute_bound_scale([1.0], [1e15], ach, 0.883)[0] == pytest.approx(1.1325028, abs=1e-6)
    # half of it: 1 + 0.5 (1/0.883 - 1) = 1.066251
    assert _compute_bound_scale([1.0], [5e14], ach, 0.883)[0] == pytest.approx(1.0662514, abs=1e-6)
    assert _compute_bound_scale([1.0], [0.0], ach, 0.883)[0] == 1.0  # memory-bound: no slower


PROBLEM = """
name: caps
services:
  - name: s
    model: llama-3.1-8b
    workload: {qps: 10, input_tokens: 8000, output_tokens: 100}
    runtime: disaggregated
hardware:
  - type: h100-sxm
    power_caps_w: [700, 550]
search: {tp: [1], pp: [1], batch: [1]}
"""


def test_each_cap_is_a_row_prefill_slows_decode_does_not():
    cs = build_candidates(parse_problem(PROBLEM))
    t = cs.table
    assert sorted(set(t.power_cap_w.tolist())) == [550.0, 700.0]
    assert set(t.hw.tolist()) == {0}  # both caps are rows of the one hardware entry
    pre = {float(t.power_cap_w[r]): r for r in t.rows(0, PREFILL)}
    dec = {float(t.power_cap_w[r]): r for r in t.rows(0, DECODE)}
    ratio = t.ttft_p50_ms[pre[550.0]] / t.ttft_p50_ms[pre[700.0]]
    # an 8K-token prefill is mostly math: slower, by at most the clock ratio 1/0.883 at 550 W
    assert 1.05 < ratio <= 1 / 0.883 + 1e-9
    assert t.tpot_p50_ms[dec[550.0]] / t.tpot_p50_ms[dec[700.0]] == pytest.approx(1.0, abs=0.01)
    # power counts the cap; a rented device costs the same at any cap
    assert t.power_w[pre[550.0]] == 550.0 and t.power_w[pre[700.0]] == 700.0
    assert t.cost_per_hour[pre[550.0]] == t.cost_per_hour[pre[700.0]] == 4.25


def test_estimate_under_a_power_cap():
    from solver.catalog.shipped import model_card
    from solver.errors import InputError
    from solver.perf.estimate import estimate

    m = model_card("llama-3.1-8b")
    full = estimate(m, H100, stage="prefill", batch=4, input_tokens=8000)
    capped = estimate(m, H100, stage="prefill", batch=4, input_tokens=8000, power_cap_w=550)
    assert full.power_cap_w is None and capped.power_cap_w == 550
    # 32K prompt tokens of an 8B model: almost all math, slowed by nearly 1/0.883 = 1.1325
    assert 1.10 < capped.prefill_ms / full.prefill_ms <= 1 / 0.883 + 1e-9
    dec = [estimate(m, H100, stage="decode", batch=8, power_cap_w=c).decode_step_ms for c in (None, 400)]
    assert dec[1] / dec[0] == pytest.approx(1.0, abs=0.02)  # decode reads memory: barely slower
    with pytest.raises(InputError, match="--power-cap: 200 W is below"):
        estimate(m, H100, stage="prefill", batch=1, power_cap_w=200)


def test_roofline_rates_of_the_capped_card_by_hand():
    from solver.perf.tables import HardwareTable

    full = HardwareTable.from_cards([H100])
    cap = HardwareTable.from_cards([capped_card(H100, 550)])
    # achievable bf16 = peak x MAMF efficiency: 989 x 0.80 = 791.2 TFLOP/s; at 550 W x 0.883 = 698.6296
    assert full.gemm_flops[0, 0] == pytest.approx(791.2e12)
    assert cap.gemm_flops[0, 0] == pytest.approx(698.6296e12)
    # fp8: 1979 x 0.71 x 0.883 = 1240.69447 TFLOP/s; HBM 3.35 TB/s unchanged; power the cap
    assert cap.gemm_flops[0, 1] == pytest.approx(1240.69447e12)
    assert cap.hbm_bw[0] == full.hbm_bw[0] == 3.35e12
    assert cap.power_w[0] == 550

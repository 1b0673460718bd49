"""The TTFT-in-prefill-passes diagnostic (benchmarks/ttft_prefill_units.py) and the batched
prefill comparison's table (benchmarks/aic_batched_prefill.py), hand-computed."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.aic_batched_prefill import render
from benchmarks.ttft_prefill_units import prefill_pass_ms, report
from solver.accuracy.validate import Row
from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.stages import Load, stage_time
from solver.perf.tables import HardwareTable, Plans, precision_code


def _row(model, isl, c, ttft, tp=1, pp=1, precision="bf16"):
    ints = dict(input_tokens=isl, output_tokens=128, concurrency=c, tp=tp, pp=pp, ep=1, dp=1)
    return Row(1, {}, model, "h100-sxm", precision, "trtllm", ints, float(ttft), 10.0)


def test_report_k_per_length_and_the_line_through_the_rows():
    # model m, C = 8: p = 100 and 200 ms at 1024 and 2048 in; TTFT = 50 + 4 p = 450 and 850 ms:
    # k = 4.5 and 4.25, the line's intercept 50 ms and slope 4
    rows = [_row("m", 1024, 8, 450.0), _row("m", 2048, 8, 850.0)]
    text = report(rows, np.array([100.0, 200.0]))
    line = [ln for ln in text.splitlines() if ln.startswith("| m |")][0]
    assert line == "| m | 8 | 2 | 4.50 | 4.25 | 50 | 4.00 |"


def test_report_median_over_rows_of_one_length_and_dash_where_none():
    # C = 16: two rows at 1024 in (k = 3 and 5: median 4), none at 2048
    rows = [_row("m", 1024, 16, 300.0), _row("m", 1024, 16, 500.0), _row("m", 2048, 8, 400.0)]
    text = report(rows, np.array([100.0, 100.0, 100.0]))
    line = [ln for ln in text.splitlines() if ln.startswith("| m | 16 |")][0]
    assert line.startswith("| m | 16 | 2 | 4.00 | - |")


def test_prefill_pass_is_one_prompts_stage_time_without_step_overhead():
    row = _row("llama-3.1-8b", 2048, 8, 100.0, tp=2)
    got = prefill_pass_ms([row])[0]
    params = engine_params("trtllm")
    card = shipped.hardware_card("h100-sxm")
    hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], "trtllm"))
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-8b"))
    plan = Plans.of(hw=0, tp=2, pp=1, ep=1, dp=1, batch=1, wprec=precision_code("bf16"), kvprec=precision_code("bf16"))
    want = stage_time(arch, hw, plan, Load.prefill(np.ones(1), 2048.0), params).stage_s[0] * 1e3
    assert got == pytest.approx(want, rel=1e-9)
    assert 20.0 < got < 40.0  # 2 x 8e9 x 2048 FLOP over two H100s: tens of ms (28.5 ms on the tables)


def test_batched_prefill_table_ratios():
    # one shape, AIC 100 ms = gemm 60 (qkv 20 + ffn 40) + attention 20 + all-reduce 10 + norms 10;
    # fleetplan 90 ms = gemm 60, attention 15, comm 10, small 5: pass 0.9, classes 1, 0.75, 1, 0.5
    ops = {
        "context_qkv_gemm": 20.0,
        "context_ffn1_gemm": 40.0,
        "context_attention": 20.0,
        "context_ar_1": 10.0,
        "context_add_norm_1": 10.0,
    }
    cache = {"m fp8 1 1024 2": [100.0, ops]}
    fp = {"m fp8 1 1024 2": dict(total=90.0, gemm=60.0, attention=15.0, comm=10.0, small=5.0)}
    line = render(cache, fp).splitlines()[2]
    assert line == "| m | fp8 | 2 | 1 | 0.900 | 0.900 | 0.900 | 1.000 | 0.750 | 1.000 | 0.500 |"

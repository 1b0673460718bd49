"""Which measured tables ship, and that B200 and SGLang plans now read them.

aiconfigurator-core 0.12.0 ships measured data for b200_sxm (vLLM 0.24.0, SGLang 0.5.14,
TensorRT-LLM 1.3.0rc20) and SGLang 0.5.14 on h200_sxm; fleetplan converts them
(`fleetplan profiles import-aic`). The expected numbers are rows of the shipped CSVs."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.operators import operator_times
from solver.perf.operators.measured import MeasuredTimes
from solver.perf.operators.tables import load_tables, measured_tables
from solver.perf.tables import HardwareTable, Plans
from solver.profiles import MEASURED, ROOFLINE, SourceTally
from solver.profiles.format import available, shipped_root
from solver.schema.engine import EngineParams

FAMILIES = {"gemm", "attention_context", "attention_generation", "allreduce", "collectives", "moe_experts",
            "compute_scale"}
MLA = {"mla_generation", "mla_context"}  # DeepSeek-V3's MLA block: TensorRT-LLM and vLLM only


@pytest.mark.parametrize("hardware,framework", [
    ("b200", "trtllm"), ("b200", "vllm"), ("b200", "sglang"), ("h200-sxm", "sglang"),
    ("h100-sxm", "vllm"), ("h100-sxm", "trtllm"), ("h200-sxm", "vllm"), ("h200-sxm", "trtllm"),
])
def test_every_family_ships(hardware, framework):
    have = {fam for hw, fw, fam in available(shipped_root()) if (hw, fw) == (hardware, framework)}
    assert have == FAMILIES | (set() if framework == "sglang" else MLA)


def test_h100_sglang_is_not_shipped_until_the_sglang_calibration_is_refitted():
    # the sglang calibration is fitted on the h100 rows with the roofline; tables there would
    # move the fitted predictions (tests/accuracy/test_calibration_files.py)
    assert not any((hw, fw) == ("h100-sxm", "sglang") for hw, fw, _ in available(shipped_root()))


def test_b200_gemm_row_is_answered_exactly():
    prof = load_tables("b200", "trtllm")
    est = prof.gemm([16.0, 17.0], 10240, 8192, "bf16")  # rows bf16,16,10240,8192 and 17
    np.testing.assert_allclose(est.seconds, [33.808e-6, 36.997e-6], rtol=1e-9)
    assert (est.source == MEASURED).all()


def test_h200_sglang_moe_row_is_answered_exactly():
    prof = load_tables("h200-sxm", "sglang")
    # DeepSeek-V3's experts, 64 tokens, EP 8: row fp8_block,balanced,7168,2048,8,256,64,1,8,392.13
    est = prof.moe_experts([64.0], 1, 8, "fp8", hidden_size=7168, inter_size=2048, topk=8, num_experts=256)
    assert est.seconds[0] == pytest.approx(392.13e-6, rel=1e-9) and est.source[0] == MEASURED


@pytest.mark.parametrize("hardware,engine", [("b200", "trtllm"), ("b200", "vllm"), ("b200", "sglang"),
                                             ("h200-sxm", "sglang")])
def test_b200_and_sglang_plans_use_tables(hardware, engine):
    card = shipped.hardware_card(hardware)
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=measured_tables([card], engine))
    arch = ModelArch.from_card(shipped.model_card("qwen3-235b-a22b"))
    plans = Plans.of(hw=0, tp=8, pp=1, ep=8, dp=1, batch=64, wprec=1, kvprec=0)  # fp8 weights
    tally = SourceTally(1)
    times = operator_times(arch, hw, plans, tally)
    assert isinstance(times, MeasuredTimes)
    tokens = np.array([64.0])
    times.projections(tokens)
    times.decode_attention(tokens, np.array([2048.0]), None)
    times.moe_block(tokens)
    times.tp_all_reduce(tokens)
    for op in ("projections", "decode_attention", "moe_block", "tp_all_reduce"):
        assert times.sources[op][0] < ROOFLINE, op
    assert tally.shares()["roofline"][0] < 0.05


def _deepseek(hardware: str, engine: str):
    card = shipped.hardware_card(hardware)
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=measured_tables([card], engine))
    arch = ModelArch.from_card(shipped.model_card("deepseek-v3"))
    plans = Plans.of(hw=0, tp=8, pp=1, ep=8, dp=1, batch=4, wprec=1, kvprec=0)  # fp8 weights, bf16 KV
    tally = SourceTally(1)
    return operator_times(arch, hw, plans, tally), tally


def test_deepseek_mla_block_comes_from_its_table():
    times, tally = _deepseek("h200-sxm", "trtllm")
    # the block's projections are inside the measured block: none charged apart
    assert times.projections(np.array([4.0]))[0] == 0.0 and times.sources["projections"][0] == MEASURED
    # 16 heads per device (128 / TP 8), row fp8_block,bf16,16,4,1025,57.5
    dec = times.decode_attention(np.array([4.0]), np.array([1025.0]), None)
    assert dec[0] == pytest.approx(57.5e-6, rel=1e-9) and times.sources["decode_attention"][0] == MEASURED
    # one 1024-token prompt, row fp8_block,bf16,16,1,1024,168.8; a 512-token chunk of it: half
    pre = times.prefill_attention(np.array([1024.0]), np.array([1024.0]), np.array([1024.0]), None)
    assert pre[0] == pytest.approx(168.8e-6, rel=1e-9)
    half = times.prefill_attention(np.array([512.0]), np.array([1024.0]), np.array([512.0]), None)
    assert half[0] == pytest.approx(168.8e-6 / 2, rel=1e-9)
    assert tally.shares()["roofline"][0] == 0.0


def test_without_an_mla_table_the_roofline_block_stands():
    times, _ = _deepseek("h200-sxm", "sglang")  # SGLang ships no MLA block table
    proj = times.projections(np.array([4.0]))
    assert proj[0] == times.roofline.projections(np.array([4.0]))[0] > 0
    assert times.sources["projections"][0] == ROOFLINE

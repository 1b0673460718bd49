"""Operator times behind one interface (solver/perf/operators/): hand-computed FLOPs and bytes,
and the measured implementation's sources (table where one covers, roofline where none)."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.catalog.shipped import hardware_card
from solver.perf.arch import ModelArch
from solver.perf.operators import MeasuredTimes, RooflineTimes, counts, operator_times
from solver.perf.operators.measured import MLA_OPERATOR_FAMILY, OPERATOR_FAMILY, families_asked
from solver.perf.operators.tables import load_table_set
from solver.perf.tables import HardwareTable, Plans
from solver.profiles import ROOFLINE, SourceTally
from solver.schema.engine import EngineParams


def test_gemm_flops_and_bytes_by_precision():
    # Y[16, 8192] = X[16, 4096] W[4096, 8192]
    w = counts.gemm(np.array([16.0]), 8192.0, 4096.0, 1.0)  # fp8: 1 byte in, bf16 out
    assert w.flops[0] == 2 * 16 * 8192 * 4096 == 1_073_741_824
    assert w.bytes[0] == (16 * 4096 + 8192 * 4096) * 1 + 16 * 8192 * 2 == 33_882_112
    bf16 = counts.gemm(np.array([16.0]), 8192.0, 4096.0, 2.0)
    assert bf16.bytes[0] == (16 * 4096 + 8192 * 4096) * 2 + 16 * 8192 * 2 == 67_502_080


def test_stage_operator_counts_by_hand():
    a = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))  # h 8192, 64 q / 8 kv heads of 128
    tp = np.array([8.0])
    # decode: 32 sequences over 1000 cached tokens; 8 q heads and 1 KV head per device
    shape = counts.AttentionShape.of(a, tp)
    dec = counts.decode_attention(shape, np.array([32.0]), np.array([1000.0]), None, 2.0)
    assert dec.flops[0] == 2 * 32 * 1000 * 8 * (128 + 128)
    assert dec.bytes[0] == 32 * 1000 * (2 * 1 * 128) * 2  # K and V, bf16
    # a 4-token window bounds the keys: 4 (4 + 1) / 2 + (10 - 4) 4 = 34 pairs of a 10-token prompt
    assert counts.window_pairs(np.array([10.0]), np.array([10.0]), 4)[0] == pytest.approx(34.0)
    assert counts.window_pairs(np.array([10.0]), np.array([10.0]), None)[0] == 55.0
    # the GEMMs the engines run at TP 8: fused QKV (8 + 2 x 1) x 128 = 1280 columns and the
    # output projection 8192 x 1024; the LM head's 128256 / 8 = 16032 vocabulary columns
    (qkv, out) = counts.projection_gemms(a, tp, np.array([4.0]))
    assert (qkv[1][0], qkv[2], out[1], out[2][0]) == (1280.0, 8192.0, 8192.0, 1024.0)
    m, n, k = counts.lm_head_gemm(a, tp, np.array([4.0]))
    head = counts.gemm(m, n, k, 2.0)
    assert head.flops[0] == 2 * 4 * 16032 * 8192
    assert head.bytes[0] == (4 * 8192 + 16032 * 8192) * 2 + 4 * 16032 * 2
    # gate+up fused (2 x 28672 / 8 = 7168 columns) and down (8192 x 3584)
    (up, down) = counts.mlp_gemms(a, tp, np.array([4.0]), a.dense_mlp_params)
    assert (up[1][0], up[2], down[1], down[2][0]) == (7168.0, 8192.0, 8192.0, 3584.0)
    # a TP all-reduce message: one bf16 hidden vector per token
    assert counts.hidden_bytes(a, np.array([3.0]))[0] == 3 * 8192 * 2


def _times(hw_name: str, model: str):
    card = hardware_card(hw_name)
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=load_table_set([card], "vllm"))
    arch = ModelArch.from_card(shipped.model_card(model))
    plans = Plans.of(hw=0, tp=np.array([4, 4]), pp=1, ep=1, dp=np.array([1, 2]), batch=1,
                     wprec=np.array([0, 2]), kvprec=0)  # bf16 (tables on H100), fp4 (none)
    tally = SourceTally(len(plans))
    return MeasuredTimes(RooflineTimes(arch, hw, plans), hw.profiles, tally), RooflineTimes(arch, hw, plans), tally


def test_measured_reports_tables_where_they_cover_and_roofline_elsewhere():
    times, roofline, tally = _times("h100-sxm", "llama-3.1-70b")
    tokens = np.array([512.0, 512.0])
    proj = times.projections(tokens)
    # bf16 GEMMs have a table on H100, fp4 ones do not: the roofline stands there, exactly
    assert times.sources["projections"][0] < ROOFLINE and times.sources["projections"][1] == ROOFLINE
    assert proj[1] == roofline.projections(tokens)[1] and proj[0] != roofline.projections(tokens)[0]
    # the all-to-all has no queried table at all
    a2a = times.moe_all_to_all(tokens)
    assert (times.sources["moe_all_to_all"] == ROOFLINE).all()
    np.testing.assert_array_equal(a2a, roofline.moe_all_to_all(tokens))
    shares = tally.shares()
    assert shares["roofline"][1] == 1.0 and shares["roofline"][0] < 1.0


def test_without_profiles_the_roofline_answers_and_is_charged():
    card = hardware_card("b200")
    hw = HardwareTable.from_cards([card], engine=EngineParams())
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-8b"))
    plans = Plans.of(hw=0, tp=1, pp=1, ep=1, dp=1, batch=1, wprec=0, kvprec=0)
    tally = SourceTally(1)
    times = operator_times(arch, hw, plans, tally)
    assert isinstance(times, RooflineTimes)
    times.decode_attention(np.array([8.0]), np.array([100.0]), None, count=3.0)
    assert tally.shares()["roofline"][0] == 1.0 and tally.shares()["measured"][0] == 0.0


@pytest.mark.parametrize("model", ["llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3"])
@pytest.mark.parametrize("tp", [1, 4])
def test_families_asked_are_the_tables_that_answered(model, tp):
    """`families_asked` (what a plan's assumptions list) names every table family a measured
    answer came from, for a plan that both prefills and decodes; for the dense GQA model on
    H100, whose shipped tables cover these shapes, it names exactly those."""
    card = hardware_card("h100-sxm")
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=load_table_set([card], "vllm"))
    arch = ModelArch.from_card(shipped.model_card(model))
    ep = 8 if arch.moe_layers else 1
    plans = Plans.of(hw=0, tp=tp, pp=1, ep=ep, dp=ep // tp if ep > tp else 1, batch=8, wprec=0, kvprec=0)
    times = MeasuredTimes(RooflineTimes(arch, hw, plans), hw.profiles, SourceTally(1))
    t = np.array([256.0])
    seconds = {
        "projections": times.projections(t), "dense_mlp": times.dense_mlp(t), "lm_head": times.lm_head(t),
        "tp_all_reduce": times.tp_all_reduce(t), "prefill_attention": times.prefill_attention(t, t, t, None),
        "decode_attention": times.decode_attention(np.array([8.0]), np.array([512.0]), None),
    }
    if arch.moe_layers:
        seconds["moe_block"] = times.moe_block(t)
    # a table drew time where it answered (not the roofline) with a positive time (TP 1's
    # all-reduce is a measured zero)
    family = MLA_OPERATOR_FAMILY if arch.mla_latent else OPERATOR_FAMILY
    answered = {family[n] for n, src in times.sources.items()
                if n in family and ((np.asarray(src) != ROOFLINE) & (seconds[n] > 0)).any()}
    asked = families_asked(arch, prefills=True, decodes=True, tp=tp, domain=card.scale_up.domain_devices)
    assert answered <= asked, (answered, asked)
    if model == "llama-3.1-70b":
        assert answered == asked


@pytest.mark.parametrize("model,extra", [("llama-3.1-70b", {"compute_scale"}), ("qwen3-32b", set())])
def test_families_asked_by_an_fp8_plan_name_the_compute_scale_table_of_static_scaling(model, extra):
    """An fp8 plan of a per-tensor static checkpoint (the Llama cards) also draws the
    compute-scale table (its GEMMs are the dynamic rows less that kernel); a block-scaled one
    (Qwen3) reads the fp8_block GEMM rows alone."""
    card = hardware_card("h200-sxm")
    hw = HardwareTable.from_cards([card], engine=EngineParams(), profiles=load_table_set([card], "trtllm"))
    arch = ModelArch.from_card(shipped.model_card(model))
    plans = Plans.of(hw=0, tp=2, pp=1, ep=1, dp=1, batch=8, wprec=1, kvprec=1)
    times = MeasuredTimes(RooflineTimes(arch, hw, plans), hw.profiles, SourceTally(1))
    times.dense_mlp(np.array([16.0]))
    base = families_asked(arch, prefills=True, decodes=True, tp=2, domain=8)
    got = families_asked(arch, prefills=True, decodes=True, tp=2, domain=8, fp8=True)
    assert got - base == extra
    assert (times.sources["dense_mlp"] != ROOFLINE).all()

"""The routed-expert (MoE) tables: hand-checked rows of the shipped conversion, interpolation
between measured points, extrapolation, no answer from `hooks.moe_experts` where no table covers,
and the measured MoE block of the operator model (solver/perf/operators/measured.py).

The literal latencies below are rows of hardware/profiles/h100-sxm/<engine>/moe_experts.csv.gz,
checked by hand against aiconfigurator-core 0.12.0's moe_perf.parquet (milliseconds there):
TRT-LLM 1.3.0rc20, fp8_block, Qwen3-235B-A22B's experts (hidden 4096, width 1536, top-8 of 128),
moe_tp 1, moe_ep 8, balanced: 1024 tokens 0.18143 ms, 2048 tokens 0.23206 ms, 3072 tokens
0.33222 ms, 16384 tokens 1.4552 ms; vLLM 0.24.0, bf16, Llama-4-Maverick's experts (5120, 8192,
top-1 of 128): 64 tokens at (tp 1, ep 1) 5.2637 ms, (tp 1, ep 2) 2.6577 ms, (tp 2, ep 1) 2.654 ms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from solver.catalog.shipped import hardware_card
from solver.perf.operators.tables import load_table_set, load_tables
from solver.profiles import hooks
from solver.profiles.interp import EXTRAPOLATED, INTERPOLATED, MEASURED, ROOFLINE
from tests.support.binomial import binomial_expected_max

QWEN = dict(hidden_size=4096, inter_size=1536, topk=8, num_experts=128)
MAVERICK = dict(hidden_size=5120, inter_size=8192, topk=1, num_experts=128)


@pytest.fixture(scope="module")
def trt():
    return load_tables("h100-sxm", "trtllm")


@pytest.fixture(scope="module")
def vllm():
    return load_tables("h100-sxm", "vllm")


def test_measured_rows_read_back_exactly(trt, vllm):
    est = trt.moe_experts(np.array([1024.0, 2048.0, 3072.0, 16384.0]), 1, 8, "fp8", **QWEN)
    np.testing.assert_allclose(est.seconds * 1e6, [181.43, 232.06, 332.22, 1455.2], rtol=1e-12)
    assert (est.source == MEASURED).all()
    est = vllm.moe_experts(64.0, np.array([1, 1, 2]), np.array([1, 2, 1]), "bf16", **MAVERICK)
    np.testing.assert_allclose(est.seconds * 1e6, [5263.7, 2657.7, 2654.0], rtol=1e-12)
    assert (est.source == MEASURED).all()
    # fleetplan's precision codes work too (0 bf16, 1 fp8 -> the block-scaled rows)
    coded = trt.moe_experts(np.array([2048.0]), 1, 8, np.array([1]), **QWEN)
    assert coded.seconds[0] == pytest.approx(232.06e-6)


def test_interpolation_is_linear_in_log_log_between_measured_points(trt, vllm):
    est = trt.moe_experts(2500.0, 1, 8, "fp8", **QWEN)
    w = math.log(2500 / 2048) / math.log(3072 / 2048)
    by_hand = math.exp(math.log(232.06) + w * math.log(332.22 / 232.06))  # 276.85 us
    assert est.seconds * 1e6 == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(276.85, abs=0.01)
    assert est.source == INTERPOLATED
    # between expert-parallel degrees 1 and 2 (vLLM: measured at ep 1 and 2, tp 1)
    mid = vllm.moe_experts(64.0, 1, math.sqrt(2.0), "bf16", **MAVERICK)
    assert mid.seconds * 1e6 == pytest.approx(math.sqrt(5263.7 * 2657.7), rel=1e-9)
    assert mid.source == INTERPOLATED


def test_outside_the_measured_range_holds_efficiency_and_scales_by_the_roofline(trt, vllm):
    # 32768 tokens, past the last measured 16384: both points are compute-bound on the card's
    # roofline (2 x pairs x 3 x 4096 x 1536 FLOP at 1979 TFLOP/s beats the bytes at 3.35 TB/s),
    # so the roofline doubles and the answer is twice the boundary's measurement
    est = trt.moe_experts(32768.0, 1, 8, "fp8", **QWEN)
    assert est.seconds * 1e6 == pytest.approx(2 * 1455.2, rel=1e-9)
    assert est.source == EXTRAPOLATED
    # vLLM never combines expert TP with EP: (tp 2, ep 2) leans on a filled cell
    both = vllm.moe_experts(64.0, 2, 2, "bf16", **MAVERICK)
    assert both.source == EXTRAPOLATED
    assert 0.4 * 2654.0e-6 < both.seconds < 2654.0e-6


def test_hook_has_no_answer_where_no_table_covers_the_shape():
    ps = load_table_set([hardware_card("h100-sxm"), hardware_card("mi300x")], "trtllm")
    hw = np.array([0, 0, 1, 0, 0])
    tokens = np.array([2048.0, 2048.0, 2048.0, 0.0, 2048.0])
    prec = np.array([1, 2, 1, 1, 1])  # fp8, fp4 (no fp4 MoE table on Hopper), fp8 ...
    est = hooks.moe_experts(ps, hw, tokens, 4096, 1536, 128, 8, np.ones(5), np.full(5, 8), prec)
    assert est.seconds[0] == pytest.approx(232.06e-6) and est.source[0] == MEASURED
    assert np.isnan(est.seconds[1]) and est.source[1] == ROOFLINE  # fp4
    assert np.isnan(est.seconds[2]) and est.source[2] == ROOFLINE  # mi300x: no tables
    assert est.seconds[3] == 0.0 and est.source[3] == MEASURED  # no tokens, no time
    # a shape no card has (hidden 8192): no answer, not a neighbour's number
    other = hooks.moe_experts(ps, hw[:1], tokens[:1], 8192, 1536, 128, 8, np.ones(1), np.full(1, 8),
                              prec[:1])
    assert np.isnan(other.seconds[0]) and other.source[0] == ROOFLINE


def test_the_table_covers_every_moe_card_on_both_engines():
    from solver.catalog import shipped
    from solver.profiles.sources.shapes import moe_shapes

    cards = [shipped.model_card(n) for n in shipped.names("models")]
    shapes = [s for c in cards for s in moe_shapes(c)]
    assert len(shapes) == 6
    for fw in ("vllm", "trtllm"):
        for hw in ("h100-sxm", "h200-sxm"):
            prof = load_tables(hw, fw)
            for s in shapes:
                kw = dict(hidden_size=s.hidden_size, inter_size=s.inter_size, topk=s.topk,
                          num_experts=s.num_experts)
                est = prof.moe_experts(np.array([1.0, 512.0]), 1, 8, "fp8", **kw)
                assert (est.source == MEASURED).all(), (hw, fw, s)
            meta = prof.provenance["moe_experts"]
            assert "balanced only" in meta.selection and meta.source.path.endswith("moe_perf.parquet")


# ---- the operator model's measured MoE block (solver/perf/operators/measured.py) -------------


def _moe_block(routing=None, tokens=16384.0, wprec=1, hw_name="h100-sxm"):
    """`MeasuredTimes.moe_block` for Qwen3-235B at TP 8 / EP 8 (moe_tp 1), one rank's `tokens`;
    with the router's table time, the busiest rank's share and the block's own roofline."""
    from solver.catalog import shipped
    from solver.perf.arch import ModelArch
    from solver.perf.operators import MeasuredTimes, RooflineTimes
    from solver.perf.tables import HardwareTable, Plans
    from solver.profiles.interp import SourceTally
    from solver.schema.engine import EngineParams

    card = hardware_card(hw_name)
    hw = HardwareTable.from_cards([card], engine=EngineParams(),
                                  profiles=load_table_set([card], "trtllm"))
    arch = ModelArch.from_card(shipped.model_card("qwen3-235b-a22b")).with_routing(routing)
    plans = Plans.of(hw=0, tp=8, pp=1, ep=8, dp=1, batch=1, wprec=wprec, kvprec=wprec)
    tok = np.array([tokens])
    tally = SourceTally(1)
    roofline = RooflineTimes(arch, hw, plans)
    out = MeasuredTimes(roofline, hw.profiles, tally).moe_block(tok)
    router = hw.profiles.gemm(plans.hw, tok, 128, 4096, "bf16").seconds
    busiest = arch.expert_routing.busiest_share(plans.ep)
    return out, tally, router, busiest, roofline.moe_block(tok)


def test_balanced_prefill_takes_the_measured_experts_unchanged():
    out, tally, router, _, _ = _moe_block()
    # 16384 tokens: every local expert is read under both routings and the pairs are equal
    np.testing.assert_allclose(out, 1455.2e-6 + router, rtol=1e-12)
    shares = tally.shares()
    assert shares["roofline"][0] == 0.0 and shares["extrapolated"][0] == 0.0


def test_balanced_decode_reads_fewer_experts_than_the_collectors_spread():
    out, tally, router, _, _ = _moe_block(tokens=16.0)
    # table: 16 tokens x top-8 / EP 8 = 16 pairs spread over all 16 local experts; uniform
    # routing touches each with h = 1 - (120/128)^16, a rank 10.30 of them on average and the
    # busiest of 8 ranks 12.92 (E[max] of 8 Binomial(16, h)). Memory-bound (fp8 weights):
    w = 3 * 4096 * 1536  # one expert's parameters
    act = 16 * 2 * 4096 * 2  # pairs x (in + out) x hidden x bf16
    touched = binomial_expected_max(16, 1 - (120 / 128) ** 16, 8)
    factor = (touched * w + act) / (16 * w + act)
    assert factor == pytest.approx(0.8078, abs=1e-4)
    np.testing.assert_allclose(out, 123.92e-6 * factor + router, rtol=1e-9)
    assert tally.shares()["extrapolated"][0] > 0.9


def test_skewed_prefill_scales_by_the_busiest_rank_share():
    from solver.schema.routing import Routing

    out, tally, router, busiest, _ = _moe_block(Routing(kind="hottest", hottest_share=0.07))
    # compute-bound at 16384 tokens: the busiest rank computes busiest x 8 times the even share
    assert busiest[0] * 8 == pytest.approx(1.087, abs=1e-3)  # 13.6% of the pairs on one rank of 8
    np.testing.assert_allclose(out, 1455.2e-6 * busiest[0] * 8 + router, rtol=1e-9)
    assert tally.shares()["extrapolated"][0] > 0.9


def test_without_a_moe_table_the_block_roofline_stands():
    out, tally, _, _, block = _moe_block(wprec=2)  # fp4: no MoE table on Hopper
    assert out[0] == block[0] and tally.shares()["roofline"][0] == 1.0
    out, tally, _, _, block = _moe_block(hw_name="mi300x")  # no tables at all
    assert out[0] == block[0] and tally.shares()["roofline"][0] == 1.0


# ---- TensorRT-LLM's block-FP8 experts on Blackwell (solver/profiles/sources/aic/moe.py) --------

DEEPSEEK = dict(hidden_size=7168, inter_size=2048, topk=8, num_experts=256)


def test_b200_trtllm_block_fp8_split_experts_are_the_trtllm_gen_kernel():
    """Rows checked by hand against aiconfigurator-core 0.12.0 (ms there): DeepSeek-V3's experts,
    fp8_block, balanced. At moe_tp 8 / ep 1 the shipped TensorRT-LLM table carries SGLang's
    FlashInfer trtllm-gen rows (b200_sxm/moe/sglang/0.5.14: 0.036 ms at 1 token, 0.136 at 32;
    the collector's own DeepGEMM rows were 0.106 and 0.421); at moe_tp 1 / ep 8 it keeps DeepGEMM
    (b200_sxm/moe/trtllm/1.3.0rc20: 0.046 and 0.267); Hopper keeps its own collection."""
    b200 = load_tables("b200", "trtllm")
    split = b200.moe_experts(np.array([1.0, 32.0]), 8, 1, "fp8", **DEEPSEEK)
    assert (split.source == MEASURED).all()
    np.testing.assert_allclose(split.seconds * 1e6, [36.0, 136.0], atol=0.5)
    ep = b200.moe_experts(np.array([1.0, 32.0]), 1, 8, "fp8", **DEEPSEEK)
    np.testing.assert_allclose(ep.seconds * 1e6, [46.0, 267.0], atol=0.5)
    assert "sglang_flashinfer_trtllm_moe" in b200.provenance["moe_experts"].selection
    h200 = load_tables("h200-sxm", "trtllm").provenance["moe_experts"].selection
    assert "sglang_flashinfer_trtllm_moe" not in h200 and "Blackwell" not in h200

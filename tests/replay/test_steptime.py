"""Iteration times from the grids against direct calls of the performance model."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.runtime import cycle
from solver.perf.stages import Load, pass_latency, stage_time
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay.steptime import Limits, StepTimes

LIMITS = Limits(max_seqs=256, max_tokens=8192, max_context=8192)


@lru_cache(maxsize=None)
def _setup(hardware: str = "h100-sxm", model: str = "llama-3.1-70b"):
    engine = engine_params("vllm")
    card = shipped.hardware_card(hardware)
    hw = HardwareTable.from_cards([card], engine=engine, profiles=measured_tables([card], "vllm"))
    return ModelArch.from_card(shipped.model_card(model)), hw, engine


def _plan(tp=4, pp=1, dp=1):
    return Plans.of(hw=0, tp=tp, pp=pp, ep=1, dp=dp, batch=256, wprec=precision_code("fp8"),
                    kvprec=precision_code("fp8"))


@lru_cache(maxsize=None)
def llama_steps(pp=1, tp=4, hardware="h100-sxm", dp=1) -> StepTimes:
    arch, hw, engine = _setup(hardware)
    return StepTimes.build(arch, hw, _plan(tp, pp, dp), engine, LIMITS)


def _direct(n, ctx, t, s, logits, pp=1, hardware="h100-sxm"):
    arch, hw, engine = _setup(hardware)
    rows = _plan(pp=pp).take(np.zeros(len(n), dtype=np.int64))
    load = Load(n, ctx, t, s, np.minimum(t, s), logits)
    return stage_time(arch, hw, rows, load, engine).stage_s


@pytest.mark.parametrize("hardware", ["h100-sxm", "mi300x"])  # measured tables; roofline only
def test_grid_matches_the_model_off_the_nodes(hardware):
    steps = llama_steps(hardware=hardware)
    rng = np.random.default_rng(3)
    k = 400
    n = rng.integers(0, 257, k).astype(float)
    ctx = rng.uniform(1.0, 8192.0, k)
    t = np.where(rng.random(k) < 0.3, 0.0, rng.integers(1, 8000, k).astype(float))
    n[(n == 0) & (t == 0)] = 1.0
    s = rng.uniform(1.0, 16000.0, k)
    logits = n + rng.integers(0, 3, k)
    got = steps.stage_s(n, ctx, t, s, logits)
    want = _direct(n, ctx, t, s, logits, hardware=hardware)
    assert np.max(np.abs(got / want - 1.0)) < 0.01  # stated bound: 1% (measured ~0.2%)


def test_exact_at_the_gemm_table_step():
    # the measured GEMM tables step between 512 and 513 rows (53 us -> 100 us on h100-sxm): every
    # integer token count is a node of the token terms, so the step is reproduced, not smeared
    arch, hw, engine = _setup()
    steps = llama_steps()
    x = np.array([511.0, 512.0, 513.0, 514.0, 4097.0])
    rows = _plan().take(np.zeros(len(x), dtype=np.int64))
    st = stage_time(arch, hw, rows, Load(0 * x, 0 * x, x, x, x, 0 * x), engine)
    want = st.gemm_s + st.comm_s + st.overhead_s
    assert steps.tokens_s(x) == pytest.approx(want, rel=1e-12)
    assert want[2] - want[1] > 5 * (want[1] - want[0])  # the step is real


def test_decode_cycle_is_the_pass_latency_with_the_step_overhead():
    arch, hw, engine = _setup()
    steps = llama_steps()
    for n, ctx in ((1, 100.0), (37, 3000.5), (200, 6000.0)):
        st = stage_time(arch, hw, _plan(), Load.decode(float(n), ctx), engine)
        want = float(pass_latency(_plan(), st, engine)[0])
        assert steps.decode_cycle_s(n, ctx) == pytest.approx(want, rel=2e-3)
        assert steps.cycle_s(n, ctx) == steps.decode_cycle_s(n, ctx)
    assert steps.step_s == engine.step_overhead_ms * 1e-3


def test_decode_cycles_vectorised_equals_scalar():
    steps = llama_steps()
    v = steps.decode_cycles_s(100, 2000.0, 50)
    assert v == pytest.approx([steps.decode_cycle_s(100, 2000.0 + j) for j in range(50)], rel=1e-12)


def test_mixed_iteration_charges_the_slowdown_on_the_prefill_share():
    arch, hw, engine = _setup()
    steps = llama_steps()
    n, ctx, t, s = 64, 2000.0, 1024, 3000.0
    dec = float(stage_time(arch, hw, _plan(), Load.decode(float(n), ctx), engine).stage_s[0])
    mixed = float(_direct(np.array([n]), np.array([ctx]), np.array([float(t)]), np.array([s]),
                          np.array([n + 1.0]))[0])
    want = dec + engine.mixed_batch_slowdown * (mixed - dec) + steps.step_s
    assert steps.cycle_s(n, ctx, t, s, completing=1, pieces=1) == pytest.approx(want, rel=3e-3)


@pytest.mark.parametrize("pp", [2, 4])
def test_pipeline_decode_cycle_is_the_models_cycle(pp):
    # equal micro-batches: the cycle is one micro-batch's pass (solver/perf/runtime.py `cycle`)
    arch, hw, engine = _setup()
    steps = llama_steps(pp=pp)
    n, ctx = 128, 2500.0
    want, _ = cycle(arch, hw, _plan(pp=pp), Load.decode(float(n), ctx), engine)
    assert steps.decode_cycle_s(n, ctx) == pytest.approx(float(want[0]), rel=3e-3)


def test_data_parallel_ranks_take_the_busiest_share():
    steps = llama_steps(tp=2, dp=2)
    # 101 sequences over 2 ranks: the iteration waits for the rank with 51
    assert steps.decode_cycle_s(101, 1000.0) == pytest.approx(
        float(steps.stage_s(51.0, 1000.0)) + steps.step_s, rel=1e-6)


@pytest.mark.parametrize("pp, dp", [(1, 1), (1, 2), (2, 1)])
def test_vectorised_iterations_equal_the_scalar_lookups(pp, dp):
    steps = llama_steps(pp=pp, tp=4 // dp, dp=dp)
    rng = np.random.default_rng(5)
    n = rng.integers(0, 200, 60)
    t = np.where(rng.random(60) < 0.5, 0, rng.integers(1, 4000, 60))
    n[(n == 0) & (t == 0)] = 3
    ctx, s = rng.uniform(10, 6000, 60), rng.uniform(10, 8000, 60)
    c = (t > 0).astype(int)
    got = steps.iterations_s(n, ctx, t, s, c)
    want = [steps.cycle_s(int(a), float(b), int(d), float(e), int(f)) for a, b, d, e, f in zip(n, ctx, t, s, c)]
    assert got == pytest.approx(want, rel=2e-3)


def _dp_steps(dp: int) -> StepTimes:
    """A stage costs 10 us per token of the rank's own load, of which 4 us are MoE group terms
    (grp_s), and 1 ms per iteration; no attention, logits or eager floor."""
    tok = np.arange(0.0, 20_001.0)
    n = np.arange(0.0, 65.0)
    ctx = np.array([1.0, 2.0, 16_384.0])
    ap_t, ap_p = np.array([0.0, 1.0, 20_000.0]), np.array([1.0, 32_768.0])
    return StepTimes(pp=1, dp=dp, step_s=0.001, slowdown=1.0, tok_x=tok, tok_s=tok * 1e-5,
                     hop_s=np.zeros_like(tok), lm_s=np.zeros_like(tok), ad_n=n, ctx_x=ctx,
                     ad_s=np.zeros((len(n), len(ctx))), ap_t=ap_t, ap_p=ap_p, ap_s=np.zeros((3, 2)),
                     grp_s=tok * 4e-6)


def test_attention_dp_rank_runs_whole_prompts():
    """Hand-computed: an attention-DP rank serves whole requests; the MoE terms see every rank's
    tokens (solver/replay/steptime.py module docstring)."""
    st = _dp_steps(4)
    # one 8000-token prompt: on one rank, 8000 x 6 us own + (8000 / 4) x 4 us MoE + 1 ms = 57 ms
    # (split evenly, as before, it was 2000 x 10 us + 1 ms = 21 ms)
    assert st.cycle_s(0, 0.0, 8000, 8000.0, 1, pieces=1) == pytest.approx(0.057)
    # eight 1000-token prompts: two per rank, 2000 tokens on the busiest: 21 ms
    assert st.cycle_s(0, 0.0, 8000, 1000.0, 8, pieces=8) == pytest.approx(0.021)
    # two prompts of 4000: one per rank on two ranks: 4000 x 6 + 2000 x 4 us + 1 ms = 33 ms
    assert st.cycle_s(0, 0.0, 8000, 4000.0, 2, pieces=2) == pytest.approx(0.033)
    # 40 decoders beside one 1000-token prompt: the busiest rank 10 + 1000 tokens, the group 1040:
    # 1010 x 6 us + 260 x 4 us + 1 ms = 8.1 ms; the vectorised path (one piece) agrees
    assert st.cycle_s(40, 10.0, 1000, 1000.0, 1, pieces=1) == pytest.approx(0.0081)
    assert st.iterations_s([40], [10.0], [1000], [1000.0], [1]) == pytest.approx([0.0081])
    # one rank: unchanged, 8000 x 10 us + 1 ms
    assert _dp_steps(1).cycle_s(0, 0.0, 8000, 8000.0, 1) == pytest.approx(0.081)

"""Eager iterations (no CUDA graph for a batch with prompt tokens) and the overlap scheduler's late
first tokens: hand-computed step times and a three-request schedule."""

from __future__ import annotations

import numpy as np
import pytest

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay.loop import run
from solver.replay.schedulers import make_policy
from solver.replay.steptime import Limits, StepTimes
from tests.replay.steps_stub import ListSource, instance


def linear_steps(eager_s: float, step_s: float = 0.001) -> StepTimes:
    """A stage costs 10 us per token (nothing else), `step_s` per iteration, and an eager
    stage (one carrying prompt tokens) lasts at least `eager_s`."""
    tok = np.arange(0.0, 20_001.0)
    n = np.arange(0.0, 65.0)
    ctx = np.array([1.0, 2.0, 16_384.0])
    ap_t, ap_p = np.array([0.0, 1.0, 20_000.0]), np.array([1.0, 32_768.0])
    return StepTimes(pp=1, dp=1, step_s=step_s, slowdown=1.0, tok_x=tok, tok_s=tok * 1e-5,
                     hop_s=np.zeros_like(tok), lm_s=np.zeros_like(tok), ad_n=n, ctx_x=ctx,
                     ad_s=np.zeros((len(n), len(ctx))), ap_t=ap_t, ap_p=ap_p, ap_s=np.zeros((3, 2)),
                     eager_s=eager_s)


def test_eager_stage_is_floored_at_the_host_launch_time():
    st = linear_steps(eager_s=0.005)
    # decode only (a CUDA graph): 2 tokens x 10 us + 1 ms step, no floor
    assert st.decode_cycle_s(2, 10.0) == pytest.approx(0.00102)
    # 100 prompt tokens: 1 ms of GPU work, launched eagerly in 5 ms: max(1, 5) + 1 = 6 ms
    assert st.cycle_s(0, 0.0, 100, 100.0, 1) == pytest.approx(0.006)
    # 1 decoder + 1000 prompt tokens: 10.01 ms of GPU work, above the 5 ms launch: 11.01 ms
    assert st.cycle_s(1, 10.0, 1000, 1000.0, 1) == pytest.approx(0.01101)
    # the vectorised path agrees (pure decode, small and large prefills)
    got = st.iterations_s([2, 0, 1], [10.0, 0.0, 10.0], [0, 100, 1000], [1.0, 100.0, 1000.0], [0, 1, 1])
    assert got == pytest.approx([0.00102, 0.006, 0.01101])
    # without the floor: 2 ms for the small prefill
    assert linear_steps(eager_s=0.0).cycle_s(0, 0.0, 100, 100.0, 1) == pytest.approx(0.002)


def test_build_charges_the_layers_of_one_stage():
    # llama-3.1-8b has 32 layers: 0.5 ms each -> 16 ms per eager pass; with pp 2, 16 layers per stage
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-8b"))
    engine = engine_params("trtllm").model_copy(update={"eager_layer_host_ms": 0.5})
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=engine)
    lim = Limits(max_seqs=4, max_tokens=64, max_context=64)
    for pp, want in ((1, 0.016), (2, 0.008)):
        plan = Plans.of(hw=0, tp=1, pp=pp, ep=1, dp=1, batch=4, wprec=precision_code("bf16"),
                        kvprec=precision_code("bf16"))
        assert StepTimes.build(arch, hw, plan, engine, lim).eager_s == pytest.approx(want)


def _schedule(overlap: bool, eager_s: float):
    # 150 tokens per iteration, no context chunking: two 100-token prompts cannot share one
    policy = make_policy("trtllm", 256, 150, overlap=overlap, chunked=False)
    inst = instance(policy, steps=linear_steps(eager_s))
    # A and B at t=0 (100 + 3 and 100 + 2 tokens), C at t=0.1 s (100 + 1) at an idle engine
    run(ListSource(inst.table, [0.0, 0.0, 0.1], [100, 100, 100], [3, 2, 1]), inst)
    return inst.table


def test_three_requests_eager_and_late_first_token_hand_computed():
    # eager 5 ms, step 1 ms, 10 us per token. A prefills alone [0, 6 ms] (max(1, 5) + 1; B's
    # prompt does not fit beside it); B prefills with A's decode [6, 12 ms] (max(1.01, 5) + 1);
    # one decode of both [12, 13.02 ms] (2 x 10 us + 1 ms) ends A (3 tokens) and B (2); C, at
    # an idle engine: [100, 106 ms]. Overlap off: each first token at its iteration's end.
    tab = _schedule(overlap=False, eager_s=0.005)
    assert tab.first_token_s == pytest.approx([0.006, 0.012, 0.106])
    assert tab.finish_s == pytest.approx([0.01302, 0.01302, 0.106])
    # overlap on: A's first token goes out once the next iteration (B's prompt: eager) is
    # launched, 5 ms after A's prefill ended: 11 ms; after B's the next is a graphed decode (no
    # delay, 12 ms); after C nothing is launched (106 ms). The schedule itself is the same.
    tab = _schedule(overlap=True, eager_s=0.005)
    assert tab.first_token_s == pytest.approx([0.011, 0.012, 0.106])
    assert tab.finish_s == pytest.approx([0.01302, 0.01302, 0.106])
    # no eager launch time: 2 ms prefills ([0, 2], [2, 4.01] with A's decode), nothing late
    tab = _schedule(overlap=True, eager_s=0.0)
    assert tab.first_token_s == pytest.approx([0.002, 0.00401, 0.102])

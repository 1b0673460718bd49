"""The calibration fit through the replay (`benchmarks/calibrate.py --model replay`) and the
engine limits the replay gives each measured row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solver.accuracy.fit import robust_loss
from solver.accuracy.replay_fit import EAGER_LAYER_HOST_MS, REPLAY_BOUNDS, best_request_overhead, golden, subsample
from solver.accuracy.replay_rows import CHUNK_TOKENS, _group_plan, generator_limits
from solver.accuracy.validate import parse_measured
from solver.catalog import shipped
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay.kv import KVCache
from solver.schema.engine import EngineParams

HEADER = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,engine\n"


def test_request_overhead_is_solved_exactly():
    # predicted TTFTs without the overhead 10, 20, 30 ms against measured 15, 25, 35: 5 ms makes
    # every row exact, so the TTFT part of the loss is 0 there
    r, part = best_request_overhead(np.array([10.0, 20.0, 30.0]), np.array([15.0, 25.0, 35.0]))
    assert r == pytest.approx(5.0, abs=1e-9)
    assert part == pytest.approx(0.0, abs=1e-12)


def test_request_overhead_stays_in_its_range():
    # measured 100 ms above every prediction: the grid's top (50 ms) is the best it may give
    r, part = best_request_overhead(np.array([10.0, 10.0]), np.array([110.0, 110.0]))
    assert r == 50.0
    # |log(60 / 110)| on both rows: median + 0.1 x the capped mean (log 3 = 1.0986 caps nothing)
    e = abs(math.log(60.0 / 110.0))
    assert part == pytest.approx(1.1 * e, rel=1e-12)


def test_robust_loss_counts_unpredicted_rows_as_capped():
    # a nan (a row whose replay finished no request) counts as log 3 off; the medians of
    # [0, log 3] and [0, 0] are log 3 / 2 and 0, the capped means log 3 / 2 and 0
    cap = math.log(3.0)
    loss = robust_loss(np.array([0.0, np.nan]), np.array([0.0, 0.0]))
    assert loss == pytest.approx(cap / 2 + 0.1 * cap / 2, rel=1e-12)


def test_golden_section_finds_a_parabola_minimum():
    seen = []

    def f(x):
        seen.append(x)
        return (x - 2.0) ** 2

    x = golden(f, 0.0, 8.0, 30)
    assert len(seen) == 30
    assert x == pytest.approx(2.0, abs=1e-4)


def test_subsample_is_deterministic_and_spreads_over_groups():
    text = HEADER + "".join(
        f"qwen3-32b,h100-sxm,bf16,colocated,1024,128,{c},{tp},1,1,1,100,10,vllm\n"
        for tp in (8, 2) for c in (64, 8, 16, 32))
    _, rows = parse_measured("m.csv", text)
    got = [(r.ints["tp"], r.ints["concurrency"]) for r in subsample(rows, 3)]
    # sorted by (tp, concurrency): (2,8) (2,16) (2,32) (2,64) (8,8) (8,16) (8,32) (8,64)
    assert got == [(2, 8), (2, 64), (8, 32)]
    assert got == [(r.ints["tp"], r.ints["concurrency"]) for r in subsample(rows, 3)]


def test_replay_bounds_are_physical_ranges():
    bounds = {n: (lo, hi) for n, lo, hi in REPLAY_BOUNDS}
    assert set(bounds) == {"gemm_efficiency_factor", "memory_efficiency_factor", "step_overhead_ms"}
    assert bounds["gemm_efficiency_factor"][1] == 1.0  # the card's MAMF is a ceiling
    assert all(0.0 <= lo < hi for lo, hi in bounds.values())
    # the eager launch time per layer (phase 2b, TensorRT-LLM): from a host that always runs
    # ahead (0) to 1.5 ms per layer (tens of ops at ~5-40 us of Python dispatch each)
    assert EAGER_LAYER_HOST_MS == (0.0, 1.5)


@pytest.mark.parametrize(("tool", "engine", "conc", "isl", "budget"), [
    ("aiconfigurator", "vllm", 64, 1024, 512 + 1024 + 1500),  # max_num_seqs 512 below 512
    ("aiconfigurator", "vllm", 600, 4096, 1200 + 4096 + 1500),  # 2x the batch from 512 on
    # batch + isl + 1500, up to the 32-token block: 2588 -> 2592, 2020 -> 2048, 8704 stays
    ("aiconfigurator", "trtllm", 64, 1024, 2592),
    ("aiconfigurator", "trtllm", 8, 512, 2048),
    ("aiconfigurator", "trtllm", 128, 7076, 8704),
    ("inferencex", "trtllm", 64, 1024, CHUNK_TOKENS),  # TensorRT-LLM's own default
    ("aiconfigurator", "sglang", 64, 1024, CHUNK_TOKENS),
    ("inferencex", "vllm", 64, 1024, CHUNK_TOKENS),  # vLLM's own default
])
def test_generator_limits(tool, engine, conc, isl, budget):
    assert generator_limits(tool, engine, conc, isl) == budget


def _kv_total(model, precision, tp, conc, block=16):
    arch = ModelArch.from_card(shipped.model_card(model))
    prm = EngineParams()
    hw = HardwareTable.from_cards([shipped.hardware_card("h100-sxm")], engine=prm)
    plan = Plans.of(hw=0, tp=tp, pp=1, ep=1, dp=1, batch=conc, wprec=precision_code(precision),  # type: ignore[arg-type]
                    kvprec=precision_code(precision))  # type: ignore[arg-type]
    return KVCache.for_plan(arch, hw, plan, prm, CHUNK_TOKENS, block).total


def test_kv_blocks_are_the_memory_models_when_one_client_fits():
    # qwen3-32b bf16 on one h100 leaves room for fewer than 16 clients of 2048 + 256 tokens:
    # the replay keeps the memory model's blocks (clients beyond them wait, as in the engine)
    text = HEADER + "qwen3-32b,h100-sxm,bf16,colocated,2048,256,16,1,1,1,1,30000,25,vllm\n"
    _, rows = parse_measured("m.csv", text)
    total = _kv_total("qwen3-32b", "bf16", 1, 16)
    assert (2048 + 256 + 16) / 16 < total < 16 * (2048 + 256 + 16) / 16
    ip = _group_plan("m.csv", rows, [0], EngineParams(), "vllm", True, 1.0)
    assert ip.kv_blocks == total

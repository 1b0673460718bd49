"""InferenceX's TensorRT-LLM launches, as its scripts set them for the rows they measured."""

from __future__ import annotations

import pytest

from solver.accuracy.inferencex import ADP_BALANCE, Launch, sglang_launch, trtllm_launch
from solver.accuracy.measured import benchmark_tool
from solver.accuracy.replay_rows import generator_sglang_launch, replay_row, row_launch
from solver.accuracy.validate import parse_measured
from solver.replay.instance import InstancePlan
from tests.accuracy.test_replay_rows import fixed_steps

WAIT_70B = {"batch_wait_max_tokens_ratio": 0.9, "batch_wait_timeout_iters": 20}


@pytest.mark.parametrize("args, tokens, policy", [
    # Llama-3.1-70B: 16384 tokens; batch waiting at 1k/1k below TP 8 only
    (("llama-3.1-70b", "h200-sxm", "fp8", "", "2025-10-29", 1024, 1024, 4, 1, 1), 16384, WAIT_70B),
    (("llama-3.1-70b", "b200", "fp4", "", "2025-10-29", 1024, 1024, 64, 4, 1), 16384, WAIT_70B),
    (("llama-3.1-70b", "h200-sxm", "fp8", "", "2025-10-29", 1024, 1024, 4, 8, 1), 16384, {}),
    (("llama-3.1-70b", "h200-sxm", "fp8", "", "2025-10-29", 1024, 8192, 4, 1, 1), 16384, {}),
    # DeepSeek-R1: (C + ISL + 64) up to a multiple of 64; at least 8192 from 2026-01-21
    (("deepseek-v3", "h200-sxm", "fp8", "", "2025-11-02", 1024, 1024, 4, 8, 1), 1152, {}),
    (("deepseek-v3", "h200-sxm", "fp8", "", "2026-01-28", 1024, 1024, 4, 8, 1), 8192, {}),
    (("deepseek-v3", "b200", "fp8", "1.2.0rc6.post2", "2026-01-29", 8192, 1024, 256, 8, 1), 8512, {}),
    # ... per attention-DP rank: the instance gets dp times that, and balancing
    (("deepseek-v3", "h200-sxm", "fp8", "", "2025-12-15", 1024, 1024, 64, 1, 8), 8 * 1152,
     {**ADP_BALANCE, "adp_ranks": 8}),
    # B200 fp8 from 1.2.0rc6: batch waiting at 1k/1k from 64 clients, never under attention DP
    (("deepseek-v3", "b200", "fp8", "1.2.0rc6.post2", "2026-01-29", 1024, 1024, 64, 8, 1), 8192,
     {"batch_wait_timeout_iters": 40, "batch_wait_max_tokens_ratio": 0.8}),
    (("deepseek-v3", "b200", "fp8", "1.2.0rc6.post2", "2026-01-29", 1024, 1024, 32, 8, 1), 8192, {}),
    (("deepseek-v3", "b200", "fp8", "1.2.0rc6.post2", "2026-01-29", 1024, 1024, 256, 1, 8), 8 * 8192,
     {**ADP_BALANCE, "adp_ranks": 8}),
    (("deepseek-v3", "b200", "fp8", "1.1.0rc2.post2", "2025-12-15", 1024, 1024, 64, 8, 1), 1152, {}),
    # another model: nothing known but the engine's defaults
    (("qwen3-32b", "h200-sxm", "fp8", "", "2026-01-14", 1024, 1024, 64, 1, 1), None, {}),
])
def test_launch_per_script(args, tokens, policy):
    # no script enables context chunking: TensorRT-LLM's default, off
    assert trtllm_launch(*args) == Launch(tokens, {"chunked": False, **policy})


@pytest.mark.parametrize("args, launch", [
    # MTP 3: ((3 + 1) x 64 + 1024 + 64) = 1344, a multiple of 64; 64 running; no delay batching
    (("b200", "fp8", 1024, 1024, 64, 8, 1), Launch(1344, {"chunked": False}, 64, ("mtp", 3))),
    (("b200", "fp4", 8192, 1024, 4, 8, 1), Launch(8320, {"chunked": False}, 4, ("mtp", 3))),
    # attention DP: MTP 1, C / 8 (fp8) or C / 4 (fp4) per rank, C itself below that; x dp
    (("b200", "fp8", 1024, 1024, 256, 1, 8), Launch(8 * 1152, {"chunked": False, **ADP_BALANCE, "adp_ranks": 8},
                                                    256, ("mtp", 1))),
    (("b200", "fp4", 1024, 1024, 2, 1, 4), Launch(4 * 1152, {"chunked": False, **ADP_BALANCE, "adp_ranks": 4},
                                                  8, ("mtp", 1))),
])
def test_b200_mtp_container_rows_take_the_mtp_scripts_launch(args, launch):
    hw, prec, isl, osl, conc, tp, dp = args
    assert trtllm_launch("deepseek-v3", hw, prec, "1.2.0rc6.post3", "2026-02-05", isl, osl, conc, tp, dp) == launch


@pytest.mark.parametrize("args, launch", [
    # PR 392's merge sweep (the MTP configurations): MTP 3, C running, the MTP token budget
    (("h200-sxm", 1024, 8192, 4, 8, 1), Launch(1152, {"chunked": False}, 4, ("mtp", 3))),
    (("b200", 8192, 1024, 32, 8, 1), Launch(8384, {"chunked": False}, 32, ("mtp", 3))),
    # attention DP: MTP 1 and C / (TP x DP) per rank: 256 / 8 = 32, (2 x 32 + 8192 + 64) -> 8320
    (("h200-sxm", 8192, 1024, 256, 1, 8), Launch(8 * 8320, {"chunked": False, **ADP_BALANCE, "adp_ranks": 8},
                                                 256, ("mtp", 1))),
])
def test_the_mtp_sweep_of_2026_01_14_takes_the_mtp_scripts_launch(args, launch):
    hw, isl, osl, conc, tp, dp = args
    assert trtllm_launch("deepseek-v3", hw, "fp8", "1.1.0rc2.post2", "2026-01-14", isl, osl, conc, tp, dp) == launch
    # the same container on another day ran the plain scripts
    assert trtllm_launch("deepseek-v3", hw, "fp8", "1.1.0rc2.post2", "2026-01-28", isl, osl, conc, tp, dp).speculation is None


@pytest.mark.parametrize("args, launch", [
    # B200 fp4: receive every 30 decode iterations from 16 clients (10 below), 256 running
    (("deepseek-v3", "b200", "fp4", "2026-03-25", 1024, 1024, 16, 8), Launch(16384, {"recv_interval": 30}, 256)),
    (("deepseek-v3", "b200", "fp4", "2025-11-10", 8192, 1024, 8, 4), Launch(16384, {"recv_interval": 10}, 256)),
    # B200 fp8: 128 running at TP 8, 32 at TP 4 (interval 10 there)
    (("deepseek-v3", "b200", "fp8", "2026-03-25", 1024, 1024, 512, 8), Launch(32768, {"recv_interval": 30}, 128)),
    (("deepseek-v3", "b200", "fp8", "2026-03-25", 8192, 1024, 32, 4), Launch(8192, {"recv_interval": 10}, 32)),
    # H200 fp8: no receive interval; 512 running at 1k/1k, 256 otherwise
    (("deepseek-v3", "h200-sxm", "fp8", "2026-03-25", 1024, 1024, 64, 8), Launch(32768, {}, 512)),
    (("deepseek-v3", "h200-sxm", "fp8", "2026-03-25", 8192, 1024, 64, 8), Launch(32768, {}, 256)),
    (("qwen3-235b-a22b", "h200-sxm", "fp8", "2026-03-25", 1024, 1024, 64, 8), Launch()),
])
def test_sglang_launch_per_script(args, launch):
    assert sglang_launch(*args) == launch


def test_rows_take_their_launch_only_from_inferencex_trtllm():
    head = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,engine,source_id\n"
    text = head + (
        "llama-3.1-70b,h200-sxm,fp8,colocated,1024,1024,4,2,1,1,1,340,12,trtllm,2026_04_06_llama_3_1_70b_c4\n"
        "llama-3.1-70b,h200-sxm,fp8,colocated,1024,1024,4,2,1,1,1,340,12,vllm,2026_04_06_llama_3_1_70b_c4\n"
        "llama-3.1-70b,h200-sxm,fp8,colocated,1024,1024,4,2,1,1,1,340,12,trtllm,meta_llama_gap_c4\n")
    _, rows = parse_measured("<rows>", text)
    launches = [row_launch(r, tool, r.engine) for r, tool in zip(rows, ("inferencex", "inferencex", "aiconfigurator"))]
    assert launches == [Launch(16384, {"chunked": False, **WAIT_70B}), Launch(), Launch()]


def test_generated_sglang_workers_mix_chunks_from_dynamo_08_releases():
    # aiconfigurator's generator: --enable-mixed-chunk and --max-prefill-tokens isl + 1500 for
    # SGLang 0.5.6.post2 (Dynamo 0.8) and later; SGLang's defaults for earlier releases, an
    # unknown version, and the InferenceX rows of any release
    head = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,"
            "engine,source_id,engine_version\n")
    text = head + "".join(
        f"llama-3.1-8b,h200-sxm,fp8,colocated,2000,100,64,1,1,1,1,300,20,sglang,{sid},{version}\n"
        for sid, version in (("gap_a", "0.5.6.post2"), ("gap_b", "0.5.8.post1"), ("gap_c", "0.5.10"),
                             ("gap_d", "0.5.1.post1"), ("gap_e", ""), ("2026_04_06_llama_c64", "0.5.9")))
    _, rows = parse_measured("<rows>", text)
    launches = [row_launch(r, benchmark_tool(r.raw), r.engine) for r in rows]
    mixed = Launch(policy={"mixed_chunk": True, "max_prefill_tokens": 3500})
    assert launches == [mixed, mixed, mixed, Launch(), Launch(), Launch()]
    assert generator_sglang_launch("0.5.6.post2", 1000).policy["max_prefill_tokens"] == 2500


def test_batch_waiting_delays_first_tokens_only_beside_running_decodes():
    # 10 ms per iteration, no overlap. Fixed lengths (vllm bench serve): the two clients stay
    # in lockstep, every prompt arrives when nothing decodes, so nothing waits. InferenceX's
    # spread lengths stagger them: a prompt that arrives while the other client decodes waits
    # up to the timeout, 20 iterations (200 ms); the TPOT stays one iteration
    ip = InstancePlan(fixed_steps(0.010), kv_blocks=100_000, engine="trtllm", batch=2, chunk=16384)
    plain = {"overlap": False, "late_first_token": False}
    waits = {**plain, **WAIT_70B}
    for tool in ("vllm", "inferencex"):
        base = replay_row(ip, tool, 2, 1000, 40, launch=Launch(16384, plain))
        held = replay_row(ip, tool, 2, 1000, 40, launch=Launch(16384, waits))
        assert base[1] == pytest.approx(10.0, abs=1e-6) and held[1] == pytest.approx(10.0, abs=1e-6)
        if tool == "vllm":
            assert held[0] == pytest.approx(base[0], abs=1e-9) == pytest.approx(10.0, abs=1e-6)
        else:
            assert 100.0 <= held[0] - base[0] <= 200.0

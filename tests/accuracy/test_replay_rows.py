"""`fleetplan validate --model replay`: each row's benchmark replayed on one simulated instance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from solver.accuracy.replay_disagg import parse_disagg, replay_disagg
from solver.accuracy.replay_rows import benchmark_tool, replay_row, replay_rows
from solver.accuracy.validate import parse_measured, validate_text
from solver.cli.main import main
from solver.errors import InputError
from solver.replay.instance import InstancePlan
from solver.replay.steptime import StepTimes
from tests.support.cli import cli

HEADER = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,"
          "engine,source_id\n")
ROWS = (
    "llama-3.1-8b,h100-sxm,bf16,colocated,512,16,2,1,1,1,1,40.0,8.0,vllm,2026_04_06_llama_c2\n"
    "llama-3.1-8b,h100-sxm,bf16,colocated,256,8,4,1,1,1,1,50.0,9.0,vllm,qwen_gap_c4\n"
)


def fixed_steps(step_s: float) -> StepTimes:
    """Every iteration takes `step_s`, whatever its batch (all model terms zero)."""
    tok = np.arange(0.0, 20_001.0)
    n = np.arange(0.0, 65.0)
    ctx = np.array([1.0, 2.0, 16_384.0])
    ap_t, ap_p = np.array([0.0, 1.0, 20_000.0]), np.array([1.0, 32_768.0])
    return StepTimes(pp=1, dp=1, step_s=step_s, slowdown=1.0, tok_x=tok, tok_s=np.zeros_like(tok),
                     hop_s=np.zeros_like(tok), lm_s=np.zeros_like(tok), ad_n=n, ctx_x=ctx,
                     ad_s=np.zeros((len(n), len(ctx))), ap_t=ap_t, ap_p=ap_p, ap_s=np.zeros((3, 2)))


def test_fixed_step_replay_matches_hand_computed_closed_loop():
    # vllm bench serve, C = 2 clients, 20 requests of 100 prompt + 5 output tokens, 10 ms per
    # iteration: both prompts fit one iteration (200 <= 8192 tokens), so each wave's first tokens
    # come at the end of its first iteration (TTFT 10 ms) and the 4 further tokens one iteration
    # each (TPOT 40 ms / 4 = 10 ms); the engine's request overhead (3 ms) adds to the TTFT.
    ip = InstancePlan(fixed_steps(0.010), kv_blocks=100_000, engine="vllm", batch=2, chunk=8192)
    ttft, tpot = replay_row(ip, "vllm", 2, 100, 5, request_overhead_ms=3.0)
    assert ttft == pytest.approx(13.0, abs=1e-6)
    assert tpot == pytest.approx(10.0, abs=1e-6)


def test_fixed_step_replay_chunked_prompts():
    # C = 2, 20 requests of 6000 prompt + 2 output tokens, 10 ms per iteration, a budget of 8192
    # tokens per iteration (vLLM chunked prefill, first come first served). Iteration k runs
    # [10(k-1), 10k] ms. 1: A's prompt + 2192 of B's (A's first token at 10); 2: A's decode + the
    # rest of B's (A done at 20, B's first token at 20); a request sent at a boundary whose next
    # iteration is already scheduled waits for the one after (solver/replay/instance.py), so
    # A' (sent at 20) waits out 3 (B's decode, B done at 30) and prefills in 4 (TTFT 20), B'
    # (sent at 30) prefills in 5 alongside A's decode (TTFT 20), and so on: every request after
    # A waits 20 ms. Mean TTFT (19 x 20 + 10) / 20 = 19.5 ms; every TPOT is one iteration, 10 ms.
    ip = InstancePlan(fixed_steps(0.010), kv_blocks=100_000, engine="vllm", batch=2, chunk=8192)
    ttft, tpot = replay_row(ip, "vllm", 2, 6000, 2)
    assert ttft == pytest.approx(19.5, abs=1e-6)
    assert tpot == pytest.approx(10.0, abs=1e-6)
    med_ttft, _ = replay_row(ip, "vllm", 2, 6000, 2, statistic="median")
    assert med_ttft == pytest.approx(20.0, abs=1e-6)


@pytest.mark.parametrize("raw, tool", [
    ({"source_id": "dsr1_h200_sglang_fp8_agg_1024x1024_c4_cfg81"}, "inferencex"),  # InferenceX db dump
    ({"source_id": "2026_04_06_deepseek_r1_h200_sxm_trtllm_fp8_agg_8192x1024_c4_tp8_ep1_1"}, "inferencex"),
    ({"source_id": "qwen_qwen3_32b_h100_sxm_trtllm_agg_1024x128_c8_tp2"}, "aiconfigurator"),  # gap analysis
    ({"source_id": ""}, "vllm"),
    ({}, "vllm"),
    ({"source_id": "x_cfg3", "benchmark": "sglang"}, "sglang"),  # an explicit column wins
])
def test_tool_per_row_source(raw, tool):
    assert benchmark_tool(raw) == tool


def test_unknown_benchmark_names_file_line_and_field():
    text = HEADER.replace("source_id", "benchmark") + ROWS.replace("2026_04_06_llama_c2", "vllm").replace(
        "qwen_gap_c4", "locust")
    _, rows = parse_measured("m.csv", text)
    with pytest.raises(InputError, match=r"m\.csv:3: benchmark: .*'locust'"):
        replay_rows("m.csv", rows)


def test_bad_plan_names_line_under_replay():
    bad = ROWS.splitlines(keepends=True)[0] + ROWS.splitlines(keepends=True)[1].replace(",4,1,1,1,1,", ",4,3,1,1,1,")
    with pytest.raises(InputError, match=r"m\.csv:3: tp/pp/ep/dp"):
        validate_text("m.csv", HEADER + bad, model="replay")


def test_replay_rows_share_one_grid_and_are_positive():
    _, rows = parse_measured("m.csv", HEADER + ROWS)
    ttft, tpot = replay_rows("m.csv", rows)
    assert ttft.shape == tpot.shape == (2,)
    assert np.all(ttft > 0) and np.all(tpot > 0)
    # more clients on shorter prompts: each wave's prefill of 4 x 256 tokens vs 2 x 512, so
    # TTFTs stay within a factor 2 of each other; TPOT grows with the batch
    assert 0.5 < ttft[1] / ttft[0] < 2.0


def test_cli_model_flag(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + ROWS)
    assert main(["validate", str(path), "--model", "replay", "--format", "json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["validate", str(path), "--model", "closed-form", "--format", "json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a.keys() == b.keys() and len(a["rows"]) == len(b["rows"]) == 2
    assert [r["predicted_ttft_ms"] for r in a["rows"]] != [r["predicted_ttft_ms"] for r in b["rows"]]
    assert main(["validate", str(path), "--format", "json"]) == 0  # the replay is the default
    assert json.loads(capsys.readouterr().out)["rows"] == a["rows"]
    assert main(["validate", str(path), "--model", "magic"]) == 2


def test_cli_replay_bad_file_exit_2(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER.replace("source_id", "benchmark") + ROWS.replace("2026_04_06_llama_c2", "wrk"))
    r = cli("validate", str(path), "--model", "replay")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{path}:2: benchmark" in r.stderr


def test_unknown_predictor():
    with pytest.raises(InputError, match="--model"):
        validate_text("m.csv", HEADER + ROWS, model="magic")


DISAGG_HEADER = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,prefill_tp,prefill_pp,"
                 "prefill_ep,prefill_dp,prefill_workers,prefill_batch,decode_tp,decode_pp,decode_ep,decode_dp,"
                 "decode_workers,decode_batch,ttft_ms,tpot_ms,engine,source_id\n")
DISAGG_ROW = "llama-3.1-8b,h100-sxm,bf16,disaggregated,512,8,2,1,1,1,1,1,1,1,1,1,1,2,2,40.0,8.0,vllm,x_cfg1\n"


def test_disagg_row_replays_through_prefill_and_decode_pools():
    rows = parse_disagg("d.csv", DISAGG_HEADER + DISAGG_ROW)
    assert rows[0].ints["decode_workers"] == 2 and benchmark_tool(rows[0].raw) == "inferencex"
    ttft, tpot = replay_disagg("d.csv", rows)
    # one prompt per prefill forward pass of 512 tokens of an 8B model on one H100: more than the
    # 1 ms floor of step overhead; the decode pool's 2 workers hold one or two sequences each
    assert np.isfinite(ttft[0]) and ttft[0] > 1.0
    assert np.isfinite(tpot[0]) and 1.0 < tpot[0] < ttft[0]


@pytest.mark.parametrize("old, new, field", [
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",1,1,1,1,0,1,1,1,1,1,2,2,", "prefill_workers"),
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",1,1,1,1,nan,1,1,1,1,1,2,2,", "prefill_workers"),
    (",1,1,1,1,1,1,1,1,1,1,2,2,", ",1,1,1,1,inf,1,1,1,1,1,2,2,", "prefill_workers"),
    ("disaggregated", "colocated", "mode"),
    (",40.0,", ",-1,", "ttft_ms"),
    ("x_cfg1", "x_cfg1,extra", "more values"),
])
def test_disagg_csv_errors_name_file_line_and_field(old, new, field):
    text = DISAGG_HEADER + DISAGG_ROW + DISAGG_ROW.replace(old, new, 1)
    with pytest.raises(InputError, match=rf"d\.csv:3: {field}"):
        parse_disagg("d.csv", text)


MTP_HEADER = ("model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms,"
              "engine,source_id,engine_version,measured,speculative\n")
MTP_ROW = ("deepseek-v3,b200,fp4,colocated,1024,1024,4,8,1,1,1,210.0,4.3,trtllm,"
           "dsr1_b200_trtllm_fp4_agg_1024x1024_c4_cfg1,{version},2026-02-06,{spec}\n")


def test_inferencex_mtp_container_rows_need_their_acceptance_rate():
    # InferenceX ran its B200 MTP scripts in 1.2.0rc6.post3 (solver/accuracy/inferencex.py)
    text = MTP_HEADER + MTP_ROW.format(version="1.2.0rc6.post3", spec="")
    _, rows = parse_measured("m.csv", text)
    ttft, tpot = replay_rows("m.csv", rows)
    assert np.isnan(ttft[0]) and np.isnan(tpot[0])
    with pytest.raises(InputError, match=r"m\.csv:2: no row could be predicted \(ran speculative decoding mtp:3 "
                                         r"\(its inferencex launch script"):
        validate_text("m.csv", text, "replay")
    # with the rate given, the row replays with MTP; the plain container's row without it
    text = (MTP_HEADER + MTP_ROW.format(version="1.2.0rc6.post3", spec="mtp:3:0.3")
            + MTP_ROW.format(version="1.2.0rc6.post3", spec="mtp:3:0.8")
            + MTP_ROW.format(version="1.2.0rc6.post2", spec=""))
    low, high, plain = validate_text("m.csv", text, "replay").rows
    assert low.speculative == "mtp:3:0.3" and plain.speculative is None
    # more tokens accepted per verification: a shorter TPOT, and below the plain decode at 0.8
    assert high.predicted_tpot_ms < low.predicted_tpot_ms
    assert high.predicted_tpot_ms < plain.predicted_tpot_ms

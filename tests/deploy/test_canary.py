"""The canary protocol of the hand-made plan (tests/deploy/plans.py): the benchmark commands
exactly, the rate (one instance's planned capacity), the lengths (the workload's means) and the
bounds it must meet (prediction x (1 + the decision record's band), and the SLO)."""

from __future__ import annotations

import pytest

from solver.deploy.canary import Check, protocol, to_markdown
from solver.deploy.facts import load_plan
from solver.errors import InputError
from tests.deploy.plans import result, write


@pytest.fixture
def plan(tmp_path):
    return load_plan(str(write(tmp_path, result(record=True))))


CHAT = "chat-colocated-h100-sxm-tp2pp1ep1dp1"


def test_aiperf_command(plan):
    assert protocol(plan, "aiperf", 120).pools[0].shell == (
        "aiperf profile --model meta-llama/Llama-3.1-8B --url http://localhost:8000 --endpoint-type completions "
        "--streaming --tokenizer meta-llama/Llama-3.1-8B --synthetic-input-tokens-mean 1024 "
        "--synthetic-input-tokens-stddev 0 --output-tokens-mean 128 --output-tokens-stddev 0 --request-rate 12.5 "
        f"--benchmark-duration 120 --random-seed 0 --artifact-dir canary/{CHAT}")


def test_vllm_bench_command(plan):
    # vllm bench serve has no duration: 12.5 QPS x 120 s = 1500 prompts
    assert protocol(plan, "vllm", 120, "http://10.0.0.7:8000").pools[0].shell == (
        "vllm bench serve --backend openai --base-url http://10.0.0.7:8000 --endpoint /v1/completions "
        "--model meta-llama/Llama-3.1-8B --dataset-name random --random-input-len 1024 --random-output-len 128 "
        "--random-range-ratio 0 --request-rate 12.5 --num-prompts 1500 --seed 0 --ignore-eos "
        "--percentile-metrics ttft,tpot --metric-percentiles 50,99 --save-result "
        f"--result-filename canary-{CHAT}.json")


def test_guidellm_command(plan):
    assert protocol(plan, "guidellm", 120).pools[0].shell == (
        "guidellm benchmark run --target http://localhost:8000 --model meta-llama/Llama-3.1-8B "
        "--processor meta-llama/Llama-3.1-8B --data prompt_tokens=1024,output_tokens=128 --rate-type constant "
        f"--rate 12.5 --max-seconds 120 --random-seed 0 --output-path canary-{CHAT}.json")


def test_rates_lengths_and_bounds_per_pool(plan):
    pools = protocol(plan).pools
    assert [(p.facts.where, p.rate_qps, p.input_tokens, p.output_tokens) for p in pools] == [
        ("services[0].pools[0]", 12.5, 1024, 128), ("services[1].pools[0]", 3.25, 4000, 200),
        ("services[1].pools[1]", 6.5, 4000, 200), ("services[2].pools[0]", 1.5, 2048, 256)]
    # chat's band: TTFT 20 %, TPOT 10 % (the decision record): 120 x 1.2, 400 x 1.2, 20 x 1.1, 35 x 1.1
    assert pools[0].checks == [Check("ttft_p50_ms", 120.0, 20.0, 144.0, 300.0),
                               Check("ttft_p99_ms", 400.0, 20.0, 480.0, 1000.0),
                               Check("tpot_p50_ms", 20.0, 10.0, 22.0, 40.0),
                               Check("tpot_p99_ms", 35.0, 10.0, 38.5, 60.0)]
    assert pools[1].checks == [Check("ttft_p50_ms", 500.0, None, 500.0, 800.0)]  # prefill: TTFT only
    assert pools[2].checks == [Check("tpot_p50_ms", 30.0, None, 30.0, 50.0)]  # decode: TPOT only


def test_runbook_markdown(plan):
    md = to_markdown(protocol(plan, "aiperf", 120))
    assert md.startswith("# Canary runbook: hand-made\n")
    assert "- input sha256 " + "ab" * 32 + " (decision.input_sha256)" in md
    assert md.count("```\naiperf profile ") == 4
    assert "| ttft_p50_ms | 120.00 | 20% | 144.00 | 300.00 |" in md
    assert "| tpot_p50_ms | 30.00 | - | 30.00 | 50.00 |" in md
    assert "rate 3.25 QPS (services[1].pools[0].capacity_qps_per_instance)" in md
    assert to_markdown(protocol(plan, "aiperf", 120)) == md


def test_a_plan_without_workloads_is_refused(tmp_path):
    d = result()
    d["assumptions"]["workloads"] = []
    with pytest.raises(InputError, match="assumptions.workloads has no workload of service 'chat'"):
        protocol(load_plan(str(write(tmp_path, d))))


def test_unknown_hardware_does_not_stop_the_canary(tmp_path):
    d = result()
    d["services"][0]["pools"][0]["hardware"] = "my-asic"
    c = protocol(load_plan(str(write(tmp_path, d))))
    assert c.pools[0].facts.vendor == "unknown" and c.pools[0].rate_qps == 12.5

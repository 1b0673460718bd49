"""Engine launch commands of the hand-made plan (tests/deploy/plans.py), asserted flag by flag:
the values are the plan's fields (hand-computed where derived), each with its source path."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from solver.deploy.engines import sglang_args, trtllm_args, trtllm_options, vllm_args
from solver.deploy.facts import load_plan, pool_facts
from solver.deploy.render import files
from solver.errors import InputError
from tests.deploy.plans import INPUT_SHA, result, variant, write


@pytest.fixture
def facts(tmp_path):
    return pool_facts(load_plan(str(write(tmp_path, result(record=True)))))


def argv(args) -> list[str]:
    out = []
    for a in args:
        out += [a.flag] if a.value is None else [a.flag, a.value]
    return out


def test_vllm_colocated_pool(facts):
    chat = facts[0]
    assert argv(vllm_args(chat)) == [
        "--tensor-parallel-size", "2", "--pipeline-parallel-size", "1", "--data-parallel-size", "1",
        "--max-num-seqs", "64", "--enable-chunked-prefill", "--max-num-batched-tokens", "2048",
        "--dtype", "bfloat16", "--quantization", "fp8", "--kv-cache-dtype", "fp8", "--port", "8000"]
    wheres = {a.flag: a.where for a in vllm_args(chat)}
    assert wheres["--max-num-seqs"] == "services[0].pools[0].batch"
    assert wheres["--max-num-batched-tokens"] == "services[0].pools[0].chunk_tokens"


def test_vllm_disaggregated_pools(facts):
    prefill, decode = facts[1], facts[2]
    # prefill: batch 4 x the workload's p99 prompt (8000 tokens) = 32000 tokens per pass
    assert argv(vllm_args(prefill)) == [
        "--tensor-parallel-size", "1", "--pipeline-parallel-size", "2", "--data-parallel-size", "1",
        "--max-num-seqs", "4", "--max-num-batched-tokens", "32000", "--dtype", "bfloat16",
        "--kv-cache-dtype", "fp8", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
        "--port", "8000"]
    assert {a.flag: a.where for a in vllm_args(prefill)}["--kv-cache-dtype"] == "services[1].pools[0].kv_precision"
    assert "--max-num-batched-tokens" not in argv(vllm_args(decode))
    assert argv(vllm_args(decode))[:8] == ["--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
                                           "--data-parallel-size", "1", "--max-num-seqs", "128"]


def test_vllm_multi_node_instance(facts):
    big = facts[3]
    assert big.spans_nodes and big.nodes_per_instance == 2  # 16 devices on 8-device h100 nodes
    assert argv(vllm_args(big))[-4:] == ["--distributed-executor-backend", "ray", "--port", "8000"]


def test_sglang_world_size_and_disaggregation(facts):
    assert argv(sglang_args(facts[2])) == [
        "--tp-size", "4", "--pp-size", "1", "--max-running-requests", "128", "--dtype", "bfloat16",
        "--kv-cache-dtype", "fp8_e4m3", "--disaggregation-mode", "decode",
        "--disaggregation-transfer-backend", "nixl", "--host", "0.0.0.0", "--port", "8000"]
    big = argv(sglang_args(facts[3], "$(LWS_WORKER_INDEX)", "$(LWS_LEADER_ADDRESS)"))
    assert big[big.index("--nnodes") + 1] == "2"
    assert big[big.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
    assert big[big.index("--dist-init-addr") + 1] == "$(LWS_LEADER_ADDRESS):20000"
    assert big[big.index("--chunked-prefill-size") + 1] == "4096"


def test_sglang_pass_above_its_default_prompt_cap_sets_max_prefill_tokens(facts):
    # the prefill pool's pass, batch 4 x p99 prompt 8000 = 32000 tokens, is above SGLang's
    # default --max-prefill-tokens (16384), which would otherwise stop each batch there
    args = sglang_args(facts[1])
    flat = argv(args)
    assert flat[flat.index("--chunked-prefill-size") + 1] == "32000"
    assert flat[flat.index("--max-prefill-tokens") + 1] == "32000"
    assert "16384" in {a.flag: a.where for a in args}["--max-prefill-tokens"]
    assert "--max-prefill-tokens" not in argv(sglang_args(facts[3]))  # 4096: the default holds


def test_moe_pool_maps_expert_and_data_parallel(tmp_path):
    def moe(doc):
        doc["services"][0]["pools"][0].update(tp=2, dp=4, ep=8, devices_per_instance=8, devices=24)
    f = pool_facts(load_plan(str(write(tmp_path, variant(moe)))))[0]
    v = vllm_args(f)
    assert argv(v)[:6] == ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "1", "--data-parallel-size", "4"]
    assert "--enable-expert-parallel" in argv(v)  # vLLM's EP group = tp x dp = 8 = the plan's ep
    assert "vLLM's expert-parallel group" not in {a.flag: a.where for a in v}["--enable-expert-parallel"]
    s = argv(sglang_args(f))
    assert s[:8] == ["--tp-size", "8", "--pp-size", "1", "--ep-size", "8", "--max-running-requests", "64"]
    assert s[8:11] == ["--dp-size", "4", "--enable-dp-attention"]
    assert ("enable_attention_dp", True, "services[0].pools[0].dp = 4") in trtllm_options(f)


def test_trtllm_command_and_options(facts):
    chat = facts[0]
    assert argv(trtllm_args(chat, "opts.yaml")) == [
        "--backend", "pytorch", "--tp_size", "2", "--pp_size", "1", "--max_batch_size", "64",
        "--max_num_tokens", "2048", "--enable_chunked_prefill", "--extra_llm_api_options", "opts.yaml",
        "--host", "0.0.0.0", "--port", "8000"]
    assert [(k, v) for k, v, _ in trtllm_options(facts[2])] == [
        ("kv_cache_config.dtype", "fp8"), ("cache_transceiver_config.backend", "DEFAULT")]


def test_script_text_is_exact_and_names_the_plan(tmp_path):
    plan = load_plan(str(write(tmp_path, result(record=True))))
    text = files(plan, pool_facts(plan), "vllm", "vllm")["chat-colocated-h100-sxm-tp2pp1ep1dp1.sh"]
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert f"# input sha256 {INPUT_SHA} (decision.input_sha256)" in lines
    assert lines[-1] == 'exec vllm serve "$MODEL" "${args[@]}" "$@"'
    assert lines[lines.index("set -euo pipefail") + 1].startswith("MODEL=${MODEL:-meta-llama/Llama-3.1-8B}  # ")
    body = lines[lines.index("args=(") + 1:lines.index(")")]
    assert all("  # services[0].pools[0]." in x or "fleetplan's serving port" in x for x in body)
    run = shlex.split(" ".join(x.split("  #")[0] for x in body))
    assert run == argv(vllm_args(pool_facts(plan)[0]))


def test_fp4_kv_is_refused_where_the_engine_cannot_store_it(tmp_path):
    def fp4(doc):
        doc["services"][0]["pools"][0]["precision"] = "fp4"
    f = pool_facts(load_plan(str(write(tmp_path, variant(fp4)))))[0]
    with pytest.raises(InputError, match=r"services\[0\].pools\[0\]: the plan stores the KV cache in fp4"):
        vllm_args(f)
    with pytest.raises(InputError, match="fp4"):
        trtllm_options(f)


def test_fp4_weights_on_amd_are_refused(tmp_path):
    def fp4(doc):
        doc["services"][1]["pools"][1]["precision"] = "fp4"
    f = pool_facts(load_plan(str(write(tmp_path, variant(fp4)))))[2]
    with pytest.raises(InputError, match="no fp4 quantisation of vllm is pinned for amd devices"):
        vllm_args(f)


def test_a_model_name_cannot_inject_shell(tmp_path):
    """A model without a shipped card is served under the plan's name, which comes from a file:
    the script must hand it to the engine as one word and run nothing of it."""
    d = result()
    d["services"][0]["model"] = "x$(touch pwned)'; touch pwned2 #"
    plan = load_plan(str(write(tmp_path, d)))
    text = files(plan, pool_facts(plan), "vllm", "vllm")[f"{pool_facts(plan)[0].name}.sh"]
    script = tmp_path / "run.sh"
    # stand in for the engine: print the arguments it would get
    script.write_text(text.replace("exec vllm serve", 'printf "%s\\n"'))
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "x$(touch pwned)'; touch pwned2 #"
    assert out.stdout.splitlines()[1:5] == ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "1"]
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_trtllm_moe_backend_follows_the_measured_kernel(tmp_path):
    """Block-FP8 experts split over tensor ranks on Blackwell are timed with the trtllm-gen kernels
    (solver/profiles/sources/aic/moe.py), so the pool is launched on the TRTLLM MoE backend; expert
    parallel layouts, Hopper and dense models are left at the engine's default."""
    def layout(hw, model, tp, ep, dp=1):
        def edit(doc):
            doc["services"][0]["model"] = model
            doc["services"][0]["pools"][0].update(hardware=hw, tp=tp, ep=ep, dp=dp, precision="fp8",
                                                   devices_per_instance=tp * dp, devices=3 * tp * dp)
        return pool_facts(load_plan(str(write(tmp_path, variant(edit)))), need_hardware=False)[0]

    def backend(f):
        return {k: (v, w) for k, v, w in trtllm_options(f)}.get("moe_config.backend")

    value, where = backend(layout("b200", "deepseek-v3", 8, 1))
    assert value == "TRTLLM" and "experts split 8 ways" in where
    assert backend(layout("b200", "deepseek-v3", 2, 2, dp=4))[0] == "TRTLLM"  # 8 / 2 = 4 ways
    assert backend(layout("b200", "deepseek-v3", 1, 8, dp=8)) is None  # experts whole: moe_tp 1
    assert backend(layout("h200-sxm", "deepseek-v3", 8, 1)) is None
    assert backend(layout("b200", "llama-3.1-70b", 8, 1)) is None

"""Each pool's engine arguments: flag, value and where in the plan the value comes from.

A pool field that maps one to one onto an engine flag is a row of `DIRECT` (add a row, and the
flag to solver/deploy/flags.py, to map a new field); the rest (precision, KV cache, chunking,
disaggregation, nodes) is spelled out per engine below. Only flags listed in flags.py are emitted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Callable

from solver.deploy.facts import PoolFacts
from solver.deploy.flags import SGLANG, TRTLLM, VLLM, Tool
from solver.errors import InputError


@dataclass(frozen=True)
class Arg:
    flag: str
    value: str | None  # None: a switch
    where: str  # where the value comes from (a field of the result document, or why it is set)


# (pool field, flag, value of the field for the engine); the value is emitted when it is not None.
Direct = tuple[str, str, Callable[[PoolFacts], int | None]]
DIRECT: dict[str, list[Direct]] = {
    "vllm": [
        ("tp", "--tensor-parallel-size", lambda f: f.pool.tp),
        ("pp", "--pipeline-parallel-size", lambda f: f.pool.pp),
        ("dp", "--data-parallel-size", lambda f: f.pool.dp),
        ("batch", "--max-num-seqs", lambda f: f.pool.batch),
    ],
    "sglang": [
        ("pp", "--pp-size", lambda f: f.pool.pp),
        ("ep", "--ep-size", lambda f: f.pool.ep if f.pool.ep > 1 else None),
        ("batch", "--max-running-requests", lambda f: f.pool.batch),
    ],
    "trtllm": [
        ("pp", "--pp_size", lambda f: f.pool.pp),
        ("ep", "--ep_size", lambda f: f.pool.ep if f.pool.ep > 1 else None),
        ("batch", "--max_batch_size", lambda f: f.pool.batch),
    ],
}
# The KV connector of disaggregated vLLM pools: NIXL, as llm-d's and Dynamo's vLLM examples use it
# (llm-d/llm-d guides/pd-disaggregation/ms-pd/values.yaml at the commit of flags.LLMD).
NIXL = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
PORT = 8000  # the port every generated server listens on (the manifests' containerPort)
DIST_PORT = 20000  # SGLang's --dist-init-addr port between the nodes of one instance


def _direct(engine: str, f: PoolFacts) -> list[Arg]:
    out = []
    for fld, flag, value in DIRECT[engine]:
        v = value(f)
        if v is not None:
            out.append(Arg(flag, str(v), f.at(fld)))
    return out


def prefill_tokens(f: PoolFacts) -> tuple[int, str] | None:
    """Tokens one forward pass takes: the colocated chunk, or a prefill pool's batch of p99 prompts."""
    if f.pool.chunk_tokens is not None:
        return f.pool.chunk_tokens, f.at("chunk_tokens")
    if f.pool.role == "prefill" and f.workload is not None:
        n = f.pool.batch * math.ceil(f.workload.input_tokens_p99)
        return n, f"{f.at('batch')} x {f.workload_at}.input_tokens_p99 (rounded up)"
    return None


def _kv_unsupported(f: PoolFacts, engine: str) -> InputError:
    return InputError(f"{f.where}: the plan stores the KV cache in {f.kv_precision}, which {engine} "
                      "(the pinned version) cannot; plan with kv_precision fp8 or bf16")


def _quant(f: PoolFacts, engine: str) -> list[Arg]:
    """--dtype, --quantization and --kv-cache-dtype of vLLM and SGLang."""
    out = [Arg("--dtype", "bfloat16", f"{f.at('precision')}: activations in bf16")]
    prec = f.pool.precision
    if prec == "fp8":
        out.append(Arg("--quantization", "fp8", f"{f.at('precision')} (fp8 weights)"))
    elif prec == "fp4":
        if f.vendor != "nvidia":
            raise InputError(f"{f.where}: fp4 weights on {f.pool.hardware}: no fp4 quantisation of "
                             f"{engine} is pinned for {f.vendor} devices")
        out.append(Arg("--quantization", "modelopt_fp4", f"{f.at('precision')}: an NVFP4 (ModelOpt) checkpoint"))
    kv = f.kv_precision
    kv_at = f.at("kv_precision") if f.pool.kv_precision else f"{f.at('precision')} (the KV cache's too)"
    names = {"vllm": {"bf16": "auto", "fp8": "fp8"}, "sglang": {"bf16": "auto", "fp8": "fp8_e4m3"}}[engine]
    if kv not in names:
        raise _kv_unsupported(f, engine)
    out.append(Arg("--kv-cache-dtype", names[kv], kv_at))
    return out


def vllm_args(f: PoolFacts) -> list[Arg]:
    out = _direct("vllm", f)
    p = f.pool
    if p.ep > 1:
        group = p.tp * p.dp
        note = "" if group == p.ep else f"; vLLM's expert-parallel group is tp x dp = {group}"
        out.append(Arg("--enable-expert-parallel", None, f.at("ep") + f" = {p.ep}{note}"))
    tokens = prefill_tokens(f)
    if p.chunk_tokens is not None:
        out.append(Arg("--enable-chunked-prefill", None, f"{f.at('chunk_tokens')} is set (colocated)"))
    if tokens is not None:
        out.append(Arg("--max-num-batched-tokens", str(tokens[0]), tokens[1]))
    out += _quant(f, "vllm")
    if p.role != "colocated":
        out.append(Arg("--kv-transfer-config", NIXL, f"{f.at('role')} = {p.role}: NIXL KV connector"))
    if f.spans_nodes:
        out.append(Arg("--distributed-executor-backend", "ray",
                       f"{f.at('devices_per_instance')} = {p.devices_per_instance} > "
                       f"{f.devices_per_node} devices per node: one Ray cluster per instance"))
    out.append(Arg("--port", str(PORT), "fleetplan's serving port"))
    return out


# SGLang's default --max-prefill-tokens (python/sglang/srt/server_args.py `max_prefill_tokens: int =
# 16384`): a prefill batch's prompt tokens stop there whatever --chunked-prefill-size allows
# (PrefillAdder; the replay's copy of the rule: solver/replay/schedulers/sglang.py)
SGLANG_MAX_PREFILL_TOKENS = 16384


def sglang_args(f: PoolFacts, node_rank: str = "${NODE_RANK}", leader: str = "${LEADER_ADDRESS}") -> list[Arg]:
    p = f.pool
    out = [Arg("--tp-size", str(p.tp * p.dp), f"{f.at('tp')} x {f.at('dp')} (SGLang's tp is the world size)")]
    out += _direct("sglang", f)
    if p.dp > 1:
        out.append(Arg("--dp-size", str(p.dp), f.at("dp")))
        out.append(Arg("--enable-dp-attention", None, f"{f.at('dp')} = {p.dp}: data-parallel attention"))
    tokens = prefill_tokens(f)
    if tokens is not None:
        out.append(Arg("--chunked-prefill-size", str(tokens[0]), tokens[1]))
        if tokens[0] > SGLANG_MAX_PREFILL_TOKENS:  # else the default caps the pass below the plan's
            out.append(Arg("--max-prefill-tokens", str(tokens[0]),
                           f"{tokens[1]}: above SGLang's default {SGLANG_MAX_PREFILL_TOKENS} prompt tokens per batch"))
    out += _quant(f, "sglang")
    if p.role != "colocated":
        out.append(Arg("--disaggregation-mode", p.role, f.at("role")))
        out.append(Arg("--disaggregation-transfer-backend", "nixl", f"{f.at('role')} = {p.role}: NIXL KV transfer"))
    if f.spans_nodes:
        out.append(Arg("--nnodes", str(f.nodes_per_instance),
                       f"{f.at('devices_per_instance')} / {f.devices_per_node} devices per node"))
        out.append(Arg("--node-rank", node_rank, "this node's index in the instance"))
        out.append(Arg("--dist-init-addr", f"{leader}:{DIST_PORT}", "the instance's first node"))
    out.append(Arg("--host", "0.0.0.0", "listen on every interface"))
    out.append(Arg("--port", str(PORT), "fleetplan's serving port"))
    return out


def trtllm_args(f: PoolFacts, options_file: str) -> list[Arg]:
    p = f.pool
    out = [Arg("--backend", "pytorch", "TensorRT-LLM's PyTorch backend (no engine build)"),
           Arg("--tp_size", str(p.tp * p.dp), f"{f.at('tp')} x {f.at('dp')} (attention DP runs within tp_size)")]
    out += _direct("trtllm", f)
    tokens = prefill_tokens(f)
    if tokens is not None:
        out.append(Arg("--max_num_tokens", str(tokens[0]), tokens[1]))
    if p.chunk_tokens is not None:
        out.append(Arg("--enable_chunked_prefill", None, f"{f.at('chunk_tokens')} is set (colocated)"))
    out.append(Arg("--extra_llm_api_options", options_file, "the LLM API options written next to this file"))
    out.append(Arg("--host", "0.0.0.0", "listen on every interface"))
    out.append(Arg("--port", str(PORT), "fleetplan's serving port"))
    return out


# Blackwell cards on which fleetplan's TensorRT-LLM tables time block-FP8 experts split over tensor
# ranks with the trtllm-gen kernels of TensorRT-LLM's TRTLLM MoE backend (the recipes' choice;
# solver/profiles/sources/aic/moe.py TRTLLM_GEN_SYSTEMS), so such pools are launched with it
TRTLLM_GEN_MOE_HARDWARE = frozenset({"b200", "b300", "gb200-nvl72"})


def trtllm_options(f: PoolFacts) -> list[tuple[str, object, str]]:
    """(dotted key, value, where) of the --extra_llm_api_options file."""
    kv = f.kv_precision
    if kv not in ("bf16", "fp8"):
        raise _kv_unsupported(f, "TensorRT-LLM")
    kv_at = f.at("kv_precision") if f.pool.kv_precision else f"{f.at('precision')} (the KV cache's too)"
    out: list[tuple[str, object, str]] = [("kv_cache_config.dtype", "fp8" if kv == "fp8" else "auto", kv_at)]
    if f.pool.dp > 1:
        out.append(("enable_attention_dp", True, f"{f.at('dp')} = {f.pool.dp}"))
    if f.pool.role != "colocated":
        out.append(("cache_transceiver_config.backend", "DEFAULT", f"{f.at('role')} = {f.pool.role}: KV transfer"))
    p = f.pool
    if f.moe and p.precision == "fp8" and p.hardware in TRTLLM_GEN_MOE_HARDWARE and p.tp * p.dp > p.ep:
        out.append(("moe_config.backend", "TRTLLM",
                    f"{f.at('hardware')} = {p.hardware}, {f.at('precision')} = fp8, experts split "
                    f"{p.tp * p.dp // p.ep} ways ({f.at('tp')} x {f.at('dp')} / {f.at('ep')}): the trtllm-gen "
                    "MoE kernels the plan's iteration times were measured with"))
    return out


def trtllm_checkpoint_note(f: PoolFacts) -> str | None:
    if f.pool.precision == "bf16":
        return None
    return (f"{f.at('precision')} = {f.pool.precision}: serve a checkpoint quantised to {f.pool.precision} "
            "(NVIDIA ModelOpt); TensorRT-LLM reads the quantisation from the checkpoint")


ENGINE_TOOLS: dict[str, Tool] = {"vllm": VLLM, "sglang": SGLANG, "trtllm": TRTLLM}

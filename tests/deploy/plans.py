"""A small hand-made result document for the deploy and canary tests (no solving).

Service 'chat' (llama-3.1-8b) runs one colocated pool on h100-sxm (tp2, batch 64, chunk 2048,
3 instances, fp8); service 'rag' (llama-3.1-70b) is disaggregated: a prefill pool on h100-sxm
(tp1 pp2, batch 4, 2 instances) and a decode pool on mi300x (tp4, batch 128, 1 instance), both
bf16 weights with an fp8 KV cache; service 'big' (llama-3.1-405b) decodes on h100-sxm with
tp8 pp2 (16 devices: two 8-device nodes per instance, 2 instances).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path


def _pool(role, hw, tp, pp, inst, batch, qps_per, ttft, tpot, precision="fp8", chunk=None, kv=None,
          ep=1, dp=1, ttft99=None, tpot99=None):
    dev = tp * pp * dp
    p = {"role": role, "hardware": hw, "tp": tp, "pp": pp, "ep": ep, "dp": dp, "devices_per_instance": dev,
         "instances": inst, "devices": dev * inst, "batch": batch, "capacity_qps": qps_per * inst,
         "cost_per_hour": 2.0 * dev * inst,
         "predicted": {"ttft_ms": ttft, "tpot_ms": tpot, "memory_gib_per_device": 40.0,
                       "ttft_p99_ms": ttft99, "tpot_p99_ms": tpot99},
         "precision": precision, "power_kw": 0.7 * dev * inst, "capacity_qps_per_instance": qps_per}
    if chunk is not None:
        p["chunk_tokens"] = chunk
    if kv is not None:
        p["kv_precision"] = kv
    return p


def _service(name, model, runtime, pools, qps, slo):
    return {"name": name, "model": model, "demand_qps": qps, "capacity_qps": sum(p["capacity_qps"] for p in pools),
            "runtime": runtime, "prefill_decode_ratio": 2.0 if runtime == "disaggregated" else None, "pools": pools,
            "colocated_qps": qps if runtime == "colocated" else 0.0,
            "disaggregated_qps": qps if runtime == "disaggregated" else 0.0, "slo": slo,
            "cost_per_hour": sum(p["cost_per_hour"] for p in pools), "devices": sum(p["devices"] for p in pools)}


def _workload(service, model, qps, isl, osl, slo):
    return {"service": service, "model": model, "qps": qps, "input_tokens_mean": isl, "input_tokens_p99": isl * 2,
            "output_tokens_mean": osl, "output_tokens_p99": osl * 2, "slo": slo}


SLO_CHAT = {"ttft_p50_ms": 300.0, "ttft_p99_ms": 1000.0, "tpot_p50_ms": 40.0, "tpot_p99_ms": 60.0}
SLO_RAG = {"ttft_p50_ms": 800.0, "ttft_p99_ms": None, "tpot_p50_ms": 50.0, "tpot_p99_ms": None}
SLO_BIG = {"ttft_p50_ms": None, "ttft_p99_ms": None, "tpot_p50_ms": 80.0, "tpot_p99_ms": None}
INPUT_SHA = "ab" * 32


def result(record: bool = False) -> dict:
    """The document; `record`: with a decision record (error bands, the input hash)."""
    services = [
        _service("chat", "llama-3.1-8b", "colocated",
                 [_pool("colocated", "h100-sxm", 2, 1, 3, 64, 12.5, 120.0, 20.0, chunk=2048, ttft99=400.0,
                        tpot99=35.0)], 30.0, SLO_CHAT),
        _service("rag", "llama-3.1-70b", "disaggregated",
                 [_pool("prefill", "h100-sxm", 1, 2, 2, 4, 3.25, 500.0, None, precision="bf16", kv="fp8"),
                  _pool("decode", "mi300x", 4, 1, 1, 128, 6.5, None, 30.0, precision="bf16", kv="fp8")],
                 6.0, SLO_RAG),
        _service("big", "llama-3.1-405b", "colocated",
                 [_pool("colocated", "h100-sxm", 8, 2, 2, 32, 1.5, 700.0, 60.0, chunk=4096)], 3.0, SLO_BIG),
    ]
    doc = {
        "problem": "hand-made", "status": "optimal", "objective": {"kind": "min_cost", "value": 1.0},
        "cost_per_hour": sum(s["cost_per_hour"] for s in services),
        "total_devices": sum(s["devices"] for s in services),
        "devices_by_type": {"h100-sxm": 42, "mi300x": 4}, "services": services, "infeasible_because": [],
        "solver": {"wall_s": None, "candidates_evaluated": 10, "candidates_in_model": 4, "gap": 0.0,
                   "pruned": {"invalid": 0, "topology": 0, "memory": 0, "slo": 0, "dominated": 0},
                   "stages": [], "seed": 0, "workers": 1, "time_limit_s": 60.0, "version": "0.1.0"},
        "power_kw": 32.2,
        "assumptions": {
            "engine": "vllm", "engine_version": None, "calibration": None, "profiles": [],
            "hardware_without_profiles": [], "remeasure_after_days": 180,
            "workloads": [_workload("chat", "llama-3.1-8b", 30.0, 1024.0, 128.0, SLO_CHAT),
                          _workload("rag", "llama-3.1-70b", 6.0, 4000.0, 200.0, SLO_RAG),
                          _workload("big", "llama-3.1-405b", 3.0, 2048.0, 256.0, SLO_BIG)]},
    }
    if record:
        doc["decision"] = {
            "uncertainty": {"pools": [
                {"service": "chat", "role": "colocated", "hardware": "h100-sxm", "band_ttft_pct": 20.0,
                 "band_tpot_pct": 10.0, "band_source": "test rows", "checks": []}], "central_only": []},
            "runners_up": [], "fallback": None, "validity": None, "input_sha256": INPUT_SHA,
            "fleetplan_version": "0.1.0"}
    return doc


def write(tmp: Path, doc: dict | None = None, name: str = "result.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc if doc is not None else result(), indent=2))
    return path


def variant(edit) -> dict:
    """A copy of the document changed by `edit(doc)`."""
    doc = copy.deepcopy(result())
    edit(doc)
    return doc

"""MoE models (DeepSeek-V3, Qwen3-235B-A22B) against AIConfigurator's static estimates, per system
and engine, at TP 8 / EP 8, fp8 weights, bf16 KV cache, balanced expert routing.

    # AIC's side (needs aiconfigurator 0.12.0, not a fleetplan dependency), once per config:
    python benchmarks/compare_aic_moe.py aic MODEL SYSTEM BACKEND OUT.json
    # fleetplan's side against those files:
    python benchmarks/compare_aic_moe.py compare OUT_DIR/*.json

AIC: `InferenceSession.run_static` (aiconfigurator 0.12.0) in `static_gen` (batch 4 and 64,
isl 1024, osl 1024, stride 32; per-step = the generation latency / (osl - 1)) and `static_ctx`
(one 1024-token prompt), with its per-operator breakdown. fleetplan: `stage_time` of
`Load.decode(batch, 1536)` (the mean context of that decode) and `Load.prefill(1, 1024)`,
without the engine's step overhead (AIC's static mode has none).
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout

HW = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200"}
MODEL = {"deepseek-ai/DeepSeek-V3": "deepseek-v3", "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b"}
POINTS = (("static_gen", 4), ("static_gen", 64), ("static_ctx", 1))


def aic(model: str, system: str, backend: str, out: str) -> None:
    from aiconfigurator.cli.api import _build_model_config
    from aiconfigurator.sdk import config as C
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.inference_session import InferenceSession
    from aiconfigurator.sdk.models import get_model
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    mc = _build_model_config(8, 1, 1, 1, 8, "fp8", "bfloat16", "bfloat16", "fp8_block", None)
    mc.workload_distribution = "balanced"
    ver = get_latest_database_version(system=system, backend=backend)
    sess = InferenceSession(get_model(model, mc, backend),
                            get_database_view(system, backend, ver, database_mode="SILICON"), get_backend(backend))
    doc = {"model": model, "system": system, "backend": backend, "version": ver}
    for mode, bs in POINTS:
        osl = 1024 if mode == "static_gen" else 2
        with redirect_stdout(io.StringIO()):
            s = sess.run_static(runtime_config=C.RuntimeConfig(batch_size=bs, isl=1024, osl=osl), mode=mode, stride=32)
        ops = s.get_generation_latency_dict() if mode == "static_gen" else s.get_context_latency_dict()
        doc[f"{mode}_{bs}"] = {k: v / (osl - 1) if mode == "static_gen" else v for k, v in ops.items()}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


def fleetplan_ms(model: str, hardware: str, backend: str) -> dict[str, float]:
    from solver.catalog import shipped
    from solver.catalog.calibration import engine_params
    from solver.perf.arch import ModelArch
    from solver.perf.operators.tables import measured_tables
    from solver.perf.stages import Load, stage_time
    from solver.perf.tables import HardwareTable, Plans, precision_code

    eng, card = engine_params(backend), shipped.hardware_card(hardware)
    hw = HardwareTable.from_cards([card], engine=eng, profiles=measured_tables([card], backend))
    arch = ModelArch.from_card(shipped.model_card(model))
    out = {}
    for mode, bs in POINTS:
        load = Load.decode(bs, 1536.0) if mode == "static_gen" else Load.prefill(bs, 1024.0)
        plans = Plans.of(hw=0, tp=8, pp=1, ep=8, dp=1, batch=bs, wprec=precision_code("fp8"),
                         kvprec=precision_code("bf16"))
        out[f"{mode}_{bs}"] = float(stage_time(arch, hw, plans, load, eng).stage_s[0]) * 1e3
    return out


def compare(paths: list[str]) -> None:
    print("| model | hardware | engine | point | fleetplan ms | AIC ms | ratio |\n|---|---|---|---|---|---|---|")
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        model, hw = MODEL[doc["model"]], HW[doc["system"]]
        fp = fleetplan_ms(model, hw, doc["backend"])
        for key, ms in fp.items():
            ref = sum(doc[key].values())
            print(f"| {model} | {hw} | {doc['backend']} | {key} | {ms:.2f} | {ref:.2f} | {ms / ref:.3f} |")


if __name__ == "__main__":
    if sys.argv[1] == "aic":
        aic(*sys.argv[2:6])
    else:
        compare(sys.argv[2:])

"""fleetplan's decode step and prefill time against AIConfigurator's static estimates.

    pip install aiconfigurator==0.12.0   # not a fleetplan dependency; Apache-2.0, NVIDIA
    python benchmarks/compare_aiconfigurator.py [--out FILE.md] [--json FILE.json] [--quick]

Both tools read the same measured operator tables where fleetplan ships them (h100-sxm and
h200-sxm, vLLM and TensorRT-LLM, converted from aiconfigurator-core 0.12.0): the comparison
checks how fleetplan assembles an iteration from them, not the tables. b200 has no fleetplan
tables (its roofline and card efficiencies stand against AIConfigurator's measured B200
database), so it is its own group.

AIConfigurator's side: `aiconfigurator.cli.api.cli_estimate` (aiconfigurator 0.12.0,
cli/api.py) in mode `static_gen` (a static batch of `batch_size` sequences per attention-DP
rank decoded from isl to isl + osl; TPOT = the generation latency / (osl - 1), every step's
operators summed, `stride` steps apart) and `static_ctx` (one prefill pass of the batch),
through `InferenceSession.run_static` (sdk/inference_session.py) and the Rust step estimator of
aiconfigurator-core 0.12.0 (sdk/backends/base_backend.py `_run_static_breakdown`). Neither adds a
CPU step overhead: the per-operator latencies sum to the reported TPOT.

fleetplan's side: `solver.perf.runtime.cycle` on `Load.decode(batch x dp, isl + osl / 2)` (the
mean context of the same decode) and `pass_latency` of `Load.prefill(batch, isl)`, with the
engine's calibration. Reported twice: the forward pass alone (without the engine's
`step_overhead_ms`, which AIConfigurator's static mode does not have) and the whole iteration.
Each operator class (GEMMs, attention, communication, small kernels) is compared as well, so a
difference can be traced to an operator.

Prints one markdown table per group: median and worst (largest |log|) ratio fleetplan / AIC.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.stages import Load, pass_latency, stage_time
from solver.perf.tables import HardwareTable, Plans, precision_code


@dataclass(frozen=True)
class Case:
    """One configuration both tools evaluate: model, system, engine, precision, parallelism."""

    aic_model: str
    model: str
    aic_system: str
    hardware: str
    backend: str
    precision: str  # fleetplan's weight precision
    aic_quant: str | None  # AIC gemm/moe quant mode (None: the checkpoint's default)
    tp: int
    ep: int = 1
    dp: int = 1


L8, L70, Q32, Q235 = ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B", "Qwen/Qwen3-32B",
                      "Qwen/Qwen3-235B-A22B-FP8")
L70_FP8 = "nvidia/Llama-3.1-70B-Instruct-FP8"
CASES = [
    Case(L8, "llama-3.1-8b", sys_, hw, be, "bf16", None, tp)
    for sys_, hw in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"), ("b200_sxm", "b200"))
    for be in ("vllm", "trtllm") for tp in (1, 2)
] + [
    Case(L70, "llama-3.1-70b", sys_, hw, be, "bf16", None, tp)
    for sys_, hw in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"), ("b200_sxm", "b200"))
    for be in ("vllm", "trtllm") for tp in (4, 8)
] + [
    Case(aic_model, "llama-3.1-70b", sys_, hw, "trtllm", "fp8", quant, 4)
    for sys_, hw in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"))
    # AIC's dynamic mode on the BF16 config, and the ModelOpt checkpoint whose static input
    # scales AIC reads as fp8_static (its model_configs/nvidia--Llama-3.1-70B-Instruct-FP8_*)
    for aic_model, quant in ((L70, "fp8"), (L70_FP8, None))
] + [
    Case(Q32, "qwen3-32b", sys_, hw, "vllm", "bf16", None, tp)
    for sys_, hw in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"), ("b200_sxm", "b200")) for tp in (2, 4)
] + [
    Case(Q235, "qwen3-235b-a22b", sys_, hw, "trtllm", "fp8", "fp8_block", 8, ep=8)
    for sys_, hw in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"))
]  # ep 1 (experts split 8 ways) is rejected by AIC for block-scaled fp8: 1536 / 8 is not a multiple of 128
# AIC's gemm quant mode -> the model card's FP8 checkpoint format of the same GEMM rows
# (solver/profiles/sources/aic/gemm.py): AIC's `fp8` is its dynamic per-tensor mode
AIC_FP8_SCALING = {"fp8": "per_tensor_dynamic", "fp8_static": "per_tensor_static", "fp8_block": "block"}
DECODE_BATCHES = (1, 8, 32, 128, 256, 512)
PREFILL_BATCHES = (1, 4)
LENGTHS = ((1024, 256), (4096, 512))  # (isl, osl)
QUICK_LENGTHS = ((1024, 256),)


def _balanced_routing() -> None:
    """AIC's MoE models default to its power-law expert load (`ModelConfig.workload_distribution
    = "power_law"`, aiconfigurator-core 0.12.0 sdk/config.py), timed on skewed draws that
    fleetplan cannot reproduce; fleetplan's cards default to balanced routing. Both are put on
    AIC's balanced rows (the rows fleetplan's MoE table was converted from)."""
    from aiconfigurator.cli import api

    if getattr(api, "_fleetplan_balanced", False):
        return
    build = api._build_model_config

    def balanced(*args, **kwargs):
        cfg = build(*args, **kwargs)
        cfg.workload_distribution = "balanced"
        return cfg

    api._build_model_config = balanced
    api._fleetplan_balanced = True


def _aic(case: Case, mode: str, batch: int, isl: int, osl: int) -> tuple[float, dict[str, float]]:
    """AIC's static estimate (ms per decode step or per prefill pass) and its operator breakdown.
    The KV cache and attention run in bf16, as fleetplan's side (AIC would pick fp8 for an fp8
    checkpoint)."""
    from aiconfigurator.cli.api import cli_estimate

    _balanced_routing()
    kw = dict(gemm_quant_mode=case.aic_quant, moe_quant_mode=case.aic_quant) if case.aic_quant else {}
    kw.update(kvcache_quant_mode="bfloat16", fmha_quant_mode="bfloat16")
    if case.ep > 1 or case.model.startswith("qwen3-235b"):
        kw.update(moe_ep_size=case.ep, moe_tp_size=case.tp * case.dp // case.ep)
    r = cli_estimate(case.aic_model, case.aic_system, mode=mode, backend_name=case.backend, isl=isl, osl=osl,
                     batch_size=batch, tp_size=case.tp, attention_dp_size=case.dp, stride=32, **kw)
    if mode == "static_gen":
        ops = r.summary.get_generation_latency_dict()
        return float(r.tpot), {k: v / (osl - 1) for k, v in ops.items()}
    return float(r.ttft), dict(r.summary.get_context_latency_dict())


def aic_classes(ops: dict[str, float]) -> dict[str, float]:
    """AIC's operators in fleetplan's breakdown classes (ms)."""
    out: dict[str, float] = defaultdict(float)
    for name, ms in ops.items():
        op = name.split("_", 1)[1]
        if op.endswith("gemm") or op == "moe":
            out["gemm"] += ms
        elif op == "attention":
            out["attention"] += ms
        elif op.startswith(("ar", "embedding_ar", "moe_pre", "moe_post", "p2p")) or "dispatch" in op:
            out["comm"] += ms
        else:  # embedding, add_norm, act_gate: the small kernels
            out["small"] += ms
    return dict(out)


def _fleetplan(case: Case, mode: str, batches, isl: int, osl: int) -> list[dict]:
    """fleetplan's times (ms) over the batches, vectorised: forward, with step overhead, classes."""
    engine = engine_params(case.backend)
    card = shipped.hardware_card(case.hardware)
    hw = HardwareTable.from_cards([card], engine=engine, profiles=measured_tables([card], case.backend))
    mcard = shipped.model_card(case.model)
    if case.aic_quant in AIC_FP8_SCALING:  # fleetplan's FP8 GEMM rows: the mode AIC is asked for
        mcard = mcard.model_copy(update={"fp8_scaling": AIC_FP8_SCALING[case.aic_quant]})
    arch = ModelArch.from_card(mcard)
    b = np.asarray(batches, dtype=float)
    plans = Plans.of(hw=0, tp=case.tp, pp=1, ep=case.ep, dp=case.dp, batch=(b * case.dp).astype(int),
                     wprec=precision_code(case.precision), kvprec=precision_code("bf16"))
    step = engine.step_overhead_ms
    if mode == "static_gen":
        total, st = rt.cycle(arch, hw, plans, Load.decode(b * case.dp, isl + osl / 2.0), engine)
    else:
        st = stage_time(arch, hw, plans, Load.prefill(b, float(isl)), engine)
        total = pass_latency(plans, st, engine)
    rows = []
    for i in range(len(b)):
        rows.append(dict(total=float(total[i]) * 1e3, forward=float(total[i]) * 1e3 - step,
                         gemm=float(st.gemm_s[i]) * 1e3, attention=float(st.attention_s[i]) * 1e3,
                         comm=float(st.comm_s[i]) * 1e3, small=float(st.overhead_s[i]) * 1e3))
    return rows


def collect(cases, lengths, cache: dict, save=None) -> list[dict]:
    """One record per (case, phase, batch, lengths): both tools' times and breakdowns. AIC's
    answers are kept in `cache` (they do not change when fleetplan's model does); `save()` is
    called after each case."""
    out = []
    for case in cases:
        if save is not None:
            save()
        for isl, osl in lengths:
            for mode, batches in (("static_gen", DECODE_BATCHES), ("static_ctx", PREFILL_BATCHES)):
                fp = _fleetplan(case, mode, batches, isl, osl)
                for bs, f in zip(batches, fp):
                    key = json.dumps([case.__dict__, mode, bs, isl, osl], sort_keys=True)
                    if key not in cache:
                        try:
                            cache[key] = _aic(case, mode, bs, isl, osl)
                        except Exception as exc:  # AIC rejects some configurations (OOM, no data)
                            print(f"  skip {case.model} {case.hardware} {mode} bs{bs}: {exc}"[:200])
                            cache[key] = (0.0, {})
                    ms, ops = cache[key]
                    if not ms > 0:
                        continue
                    out.append(dict(case=case.__dict__, phase="decode" if mode == "static_gen" else "prefill",
                                    batch=bs, isl=isl, osl=osl, aic_ms=ms, aic=aic_classes(ops), fleetplan=f))
    return out


def _group(r: dict) -> tuple:
    c = r["case"]
    kind = "moe" if c["model"].startswith("qwen3-235b") else "dense"
    tables = "same tables" if c["hardware"] in ("h100-sxm", "h200-sxm") else "fp roofline vs AIC tables"
    return (c["hardware"], c["backend"], kind, r["phase"], tables)


def _stats(ratios) -> tuple[str, str]:
    """Median ratio (geometric) and the worst one (largest |log|)."""
    lr = np.log(np.asarray(ratios))
    worst = float(np.exp(lr[np.argmax(np.abs(lr))]))
    return f"{float(np.exp(np.median(lr))):.3f}", f"{worst:.3f}"


def render(records: list[dict], title: str) -> str:
    groups: dict[tuple, list] = defaultdict(list)
    for r in records:
        groups[_group(r)].append(r)
    lines = [f"### {title}", "",
             "ratio = fleetplan / AIConfigurator static (median | worst); forward = without fleetplan's "
             "step overhead; classes: GEMMs, attention, communication, small kernels", "",
             "| hardware | engine | models | phase | tables | n | forward median | forward worst | "
             "with step median | with step worst | gemm | attention | comm | small |", "|" + "---|" * 14]
    for key in sorted(groups):
        rs = groups[key]
        cells = [str(len(rs)), *_stats([r["fleetplan"]["forward"] / r["aic_ms"] for r in rs]),
                 *_stats([r["fleetplan"]["total"] / r["aic_ms"] for r in rs])]
        for cls in ("gemm", "attention", "comm", "small"):
            pairs = [(r["fleetplan"][cls], r["aic"].get(cls, 0.0)) for r in rs]
            pairs = [(a, b) for a, b in pairs if a > 0 and b > 0]
            cells.append(_stats([a / b for a, b in pairs])[0] if pairs else "-")
        lines.append("| " + " | ".join(list(key) + cells) + " |")
    allr = [r["fleetplan"]["forward"] / r["aic_ms"] for r in records if _group(r)[4] == "same tables"]
    if allr:
        lines += ["", f"same tables, all rows ({len(allr)}): forward median ratio "
                      f"{math.exp(float(np.median(np.log(allr)))):.3f}"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write the markdown tables here")
    ap.add_argument("--json", type=Path, default=None, help="write the records here")
    ap.add_argument("--title", default="fleetplan vs AIConfigurator 0.12.0 static mode")
    ap.add_argument("--quick", action="store_true", help="one (isl, osl) pair only")
    ap.add_argument("--aic-cache", type=Path, default=None,
                    help="AIC's answers, read if present and written back (fleetplan is re-run each time)")
    ap.add_argument("--only", default=None, help="cases whose model or hardware contains this string")
    a = ap.parse_args()
    logging.disable(logging.WARNING)
    cache = json.loads(a.aic_cache.read_text()) if a.aic_cache and a.aic_cache.exists() else {}
    cases = [c for c in CASES if a.only is None or a.only in (c.model, c.hardware, c.backend)]
    save = (lambda: a.aic_cache.write_text(json.dumps(cache))) if a.aic_cache else None
    records = collect(cases, QUICK_LENGTHS if a.quick else LENGTHS, cache, save)
    if save is not None:
        save()
    text = render(records, a.title)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    if a.json:
        a.json.write_text(json.dumps(records))


if __name__ == "__main__":
    main()

"""A batched context iteration (several whole prompts in one pass) against AIConfigurator's
static estimate of the same shape, per operator class.

    pip install aiconfigurator==0.12.0   # into a separate venv; not a fleetplan dependency
    python benchmarks/aic_batched_prefill.py --aic-cache FILE.json [--out FILE.md]
    # the AIC side needs the aiconfigurator venv; fleetplan's side this repository's:
    /tmp/aicvenv/bin/python benchmarks/aic_batched_prefill.py --aic-only --aic-cache FILE.json
    PYTHONPATH=$PWD .venv/bin/python benchmarks/aic_batched_prefill.py --aic-cache FILE.json

The shapes are those of the h100-sxm TensorRT-LLM rows' prefill-bound iterations: b = 1, 2, 4, 8
prompts of isl = 1024, 2048, 4096 tokens in one pass, tp = 1, 2, 4, 8, Qwen3-32B (fp8 GEMMs and
KV as the rows ran, and bf16) and Llama-3.1-8B (bf16), TensorRT-LLM tables on h100_sxm.
AIConfigurator: `cli_estimate(mode="static_ctx", batch_size=b, isl=isl)` (aiconfigurator 0.12.0
cli/api.py; one prefill pass of the batch, its operators summed; FMHA in bf16).
fleetplan: `stage_time` of `Load.prefill(b, isl)` (solver/perf/stages.py), the forward pass
without the step overhead: GEMMs looked up at b x isl rows, the context attention table at
(batch b, isl) (solver/profiles/hooks.py `prefill_attention`: per-sequence causal pairs, not
the batch's total tokens squared), the all-reduces at b x isl tokens. Prints per (model,
precision, b) the median ratio fleetplan / AIC of the pass and of each operator class
(`compare_aiconfigurator.aic_classes`), and the range of the pass ratio.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections import defaultdict
from pathlib import Path

import numpy as np

CASES = (
    ("Qwen/Qwen3-32B", "qwen3-32b", "fp8"),
    ("Qwen/Qwen3-32B", "qwen3-32b", "bf16"),
    ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b", "bf16"),
)
TPS = (1, 2, 4, 8)
LENGTHS = (1024, 2048, 4096)
BATCHES = (1, 2, 4, 8)
CLASSES = ("gemm", "attention", "comm", "small")


def _key(model: str, prec: str, tp: int, isl: int, b: int) -> str:
    return f"{model} {prec} {tp} {isl} {b}"


def aic_side(cache: dict) -> None:
    """AIC's pass (ms) and operator breakdown per shape, into `cache` (skipped if present)."""
    from aiconfigurator.cli.api import cli_estimate

    for aic_model, model, prec in CASES:
        kw = dict(kvcache_quant_mode="fp8" if prec == "fp8" else "bfloat16", fmha_quant_mode="bfloat16")
        if prec == "fp8":
            kw["gemm_quant_mode"] = "fp8"
        for tp in TPS:
            for isl in LENGTHS:
                for b in BATCHES:
                    k = _key(model, prec, tp, isl, b)
                    if k not in cache:
                        r = cli_estimate(
                            aic_model,
                            "h100_sxm",
                            mode="static_ctx",
                            backend_name="trtllm",
                            isl=isl,
                            osl=2,
                            batch_size=b,
                            tp_size=tp,
                            stride=32,
                            **kw,
                        )
                        cache[k] = [float(r.ttft), dict(r.summary.get_context_latency_dict())]


def fleetplan_side() -> dict[str, dict[str, float]]:
    """fleetplan's pass (ms, no step overhead) and operator classes per shape."""
    from solver.catalog import shipped
    from solver.catalog.calibration import engine_params
    from solver.perf.arch import ModelArch
    from solver.perf.operators.tables import measured_tables
    from solver.perf.stages import Load, stage_time
    from solver.perf.tables import HardwareTable, Plans, precision_code

    engine = engine_params("trtllm")
    card = shipped.hardware_card("h100-sxm")
    hw = HardwareTable.from_cards([card], engine=engine, profiles=measured_tables([card], "trtllm"))
    out = {}
    for _, model, prec in CASES:
        arch = ModelArch.from_card(shipped.model_card(model))
        for tp in TPS:
            for isl in LENGTHS:
                b = np.array(BATCHES, dtype=float)
                plans = Plans.of(
                    hw=0,
                    tp=tp,
                    pp=1,
                    ep=1,
                    dp=1,
                    batch=b.astype(int),
                    wprec=precision_code(prec),
                    kvprec=precision_code(prec),
                )
                st = stage_time(arch, hw, plans, Load.prefill(b, float(isl)), engine)
                for i, bb in enumerate(BATCHES):
                    out[_key(model, prec, tp, isl, bb)] = dict(
                        total=st.stage_s[i] * 1e3,
                        gemm=st.gemm_s[i] * 1e3,
                        attention=st.attention_s[i] * 1e3,
                        comm=st.comm_s[i] * 1e3,
                        small=st.overhead_s[i] * 1e3,
                    )
    return out


def render(cache: dict, fp: dict) -> str:
    from benchmarks.compare_aiconfigurator import aic_classes

    groups: dict[tuple, list] = defaultdict(list)
    for k, (ms, ops) in cache.items():
        model, prec, _tp, _isl, b = k.split()
        f, a = fp[k], aic_classes(ops)
        ratios = [f["total"] / ms] + [f[c] / a[c] if a.get(c, 0) > 0 and f[c] > 0 else np.nan for c in CLASSES]
        groups[(model, prec, int(b))].append(ratios)
    lines = [
        "| model | precision | prompts per pass | shapes | pass median | pass min | pass max | "
        + " | ".join(CLASSES)
        + " |",
        "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(CLASSES),
    ]
    for (model, prec, b), rs in sorted(groups.items()):
        r = np.array(rs)
        med = np.nanmedian(r, axis=0)
        lines.append(
            f"| {model} | {prec} | {b} | {len(rs)} | {med[0]:.3f} | {r[:, 0].min():.3f} | "
            f"{r[:, 0].max():.3f} | " + " | ".join(f"{m:.3f}" for m in med[1:]) + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aic-cache", type=Path, required=True, help="AIC's answers (written by --aic-only)")
    ap.add_argument("--aic-only", action="store_true", help="run AIC's side only (in its venv) and exit")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    logging.disable(logging.WARNING)
    cache = json.loads(a.aic_cache.read_text()) if a.aic_cache.exists() else {}
    if a.aic_only:
        aic_side(cache)
        a.aic_cache.write_text(json.dumps(cache))
        return
    text = render(cache, fleetplan_side())
    print(text)
    if a.out:
        a.out.write_text(text)


if __name__ == "__main__":
    main()

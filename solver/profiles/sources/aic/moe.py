"""MoE experts: moe/<fw>/<v'>/moe_perf.parquet (vLLM, TensorRT-LLM, SGLang) -> the `moe_experts` table
(balanced routing; bf16, fp8_block and nvfp4 (as fp4); gated (SwiGLU) kernels; the (hidden, expert width, top-k,
experts) of the MoE model cards; every measured token count, moe_tp and moe_ep)."""

from __future__ import annotations

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import dominant, file_sha256, one, read_rows, us
from solver.profiles.sources.aic.source import newest_table
from solver.profiles.sources.shapes import moe_shapes

# MoE weight formats kept. Per-tensor "fp8" is left out: the FP8 checkpoints of the MoE cards
# (DeepSeek-V3/R1, Qwen3-235B-A22B-FP8) are 128x128 block-scaled, DeepSeek-V3's shape is
# measured only as fp8_block, and vLLM's per-tensor rows time ModelOpt's FlashInfer-CUTLASS
# path (slower than bf16 at decode on Hopper), not what a block-FP8 checkpoint runs.
# NVFP4 (Blackwell's block-scaled FP4, what the FP4 checkpoints of the MoE cards run: NVIDIA's
# DeepSeek-R1-FP4 experts) is kept under fleetplan's fp4 label; before, fp4 MoE layers had no
# measured row and fell to the roofline, several times too fast at small batches, where the
# measured kernels cost about what the fp8_block ones do.
_MOE_DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8_block", "nvfp4": "fp4"}
_MOE_DISTRIBUTIONS = ("balanced",)

# TensorRT-LLM on Blackwell runs block-FP8 experts split over tensor ranks (moe_tp > 1) on its
# TRTLLM MoE backend (the trtllm-gen kernels), not on DeepGEMM, the one kernel aiconfigurator's
# TensorRT-LLM collector timed for fp8_block there (b200_sxm 1.3.0rc20: kernel_source deepgemm
# only). Sources: NVIDIA's DeepSeek-R1 FP8 B200 recipes (NVIDIA/srt-slurm
# recipes/trtllm/b200-fp8/1k1k/stp/ctx1_gen3_tp8_batch1024_eplb0_mtp0_4*.yaml: the TP8 decode
# worker `moe_config.backend: TRTLLM`, the attention-DP EP8 prefill worker DEEPGEMM) and
# InferenceX's single-node DeepSeek-R1 FP8 B200 TensorRT-LLM script
# (https://github.com/SemiAnalysisAI/InferenceX/blob/ec7bafaae/benchmarks/dsr1_fp8_b200_trt.sh:
# `MOE_BACKEND="TRTLLM"` from that commit, 2026-01-29, for 1k1k and 8k1k; still so at 843c6254f). The same trtllm-gen block-FP8 MoE kernels are what aiconfigurator's SGLang collector
# timed on these GPUs (FlashInfer's TensorRT-LLM-gen MoE, kernel_source
# sglang_flashinfer_trtllm_moe, timed from router logits like TensorRT-LLM's module), so the
# TensorRT-LLM table takes its fp8_block rows at moe_tp > 1 from there, shape by shape; EP-only
# layouts (moe_tp = 1), where the recipes differ, keep the collector's DeepGEMM rows (the two
# kernels are within ~1.5x there: DeepSeek-V3 at moe_ep 8, 46 against 69 us at one token, 267
# against 270 us at 32). solver/deploy/engines.py launches those pools with that backend.
TRTLLM_GEN_SYSTEMS = frozenset({"b200_sxm", "b300_sxm", "gb200", "gb300"})
# TensorRT-LLM's NVFP4 experts: its TRTLLM MoE backend (the trtllm-gen kernels; collector label
# moe_torch_flow_min_latency, within a few percent of the SGLang collection's
# sglang_flashinfer_trtllm_moe NVFP4 rows at every DeepSeek-V3 layout up to 1024 tokens), not the
# more numerous CUTLASS rows (1.7-3.5x slower below 64 tokens): InferenceX's DeepSeek-R1 FP4
# B200 script defaults to `MOE_BACKEND="TRTLLM"` (CUTLASS only under attention DP;
# https://github.com/SemiAnalysisAI/InferenceX/blob/6eecc0e66/benchmarks/dsr1_fp4_b200_trt.sh).
_PREFERRED_KERNEL = {("trtllm", "nvfp4"): "moe_torch_flow_min_latency"}
_TRTLLM_GEN_KERNEL = "sglang_flashinfer_trtllm_moe"

COLUMNS = {
    "dtype": "bf16 | fp8_block (128x128 block-scaled FP8 weights, FP8 activations) | fp4 (NVFP4: "
             "16-element block-scaled FP4 weights and activations)",
    "distribution": "synthetic routing during the timing: balanced (round-robin top-k)",
    "hidden_size": "model hidden size",
    "inter_size": "one expert's intermediate width (whole, before moe_tp splits it)",
    "topk": "experts per token",
    "num_experts": "routed experts of the layer (all devices together)",
    "num_tokens": "tokens entering the layer across the MoE group (source num_tokens)",
    "moe_tp": "tensor parallelism inside each expert (source moe_tp_size)",
    "moe_ep": "expert parallelism: the device holds num_experts / moe_ep experts",
    "latency_us": "GPU time of the device's routed-expert computation, microseconds",
}

_MOE_METHOD = (
    "aiconfigurator collect_moe.py ({fw}; one GPU, one process, no communication): the engine's "
    "fused MoE expert kernel on num_tokens bf16 tokens (the tokens entering the layer across the "
    "MoE group; aiconfigurator queries it with per-rank tokens x attention-DP size) with "
    "synthetic routing (balanced: token i takes experts i + j * ceil(E / topk) mod E, spread "
    "evenly when tokens are few); the device holds the num_experts / moe_ep experts of EP rank "
    "0, each inter_size / moe_tp wide, and computes only the token-expert pairs routed to them. "
    "{timed} Not timed: the router GEMM, shared experts, dispatch/combine all-to-all and the TP "
    "all-reduce. CUDA graph where it captures (else eager), 3 warm-ups, 6 timed runs; "
    "milliseconds per call"
)
_MOE_TIMED = {
    "trtllm": "Timed: the TensorRT-LLM MoE module forward from router logits (top-k "
              "renormalize routing, activation quantisation, permute, grouped gate/up GEMM, "
              "SwiGLU, grouped down GEMM, finalize: un-permute and top-k weighted sum; "
              "reduce_results off).",
    "vllm": "Timed: vLLM's fused experts with precomputed top-k ids and weights (activation "
            "quantisation, align/permute, grouped gate/up GEMM, SiLU-and-mul, grouped down "
            "GEMM, top-k weighted sum); top-k selection is outside the timing.",
    "sglang": "Timed: SGLang's fused MoE from router logits (top-k selection, activation "
              "quantisation, align/permute, grouped gate/up GEMM, SiLU-and-mul, grouped down "
              "GEMM, top-k weighted sum; Triton kernels on Hopper, FlashInfer TensorRT-LLM-gen "
              "kernels on Blackwell, named per row in kernel_source).",
}


def _shape(r: dict) -> tuple[int, int, int, int]:
    return (int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]), int(r["num_experts"]))


def _keep_shapes(measured: set[tuple], cards, all_shapes: bool) -> tuple[set, str]:
    """The MoE shapes kept and the selection's words."""
    if all_shapes:
        return measured, "every measured MoE shape"
    need = sorted({(m.hidden_size, m.inter_size, m.topk, m.num_experts)
                   for c in cards for m in moe_shapes(c)})
    keep = {n for n in need if n in measured}
    missing = [n for n in need if n not in measured]
    selection = (
        "the (hidden, expert width, top-k, experts) of the MoE model cards "
        f"{', '.join(c.name for c in cards if moe_shapes(c))}"
        + (f"; not measured (answered by the roofline): {missing}" if missing else "")
    )
    return keep, selection


def _one_per_point(rows: list[dict], framework: str = "") -> dict[tuple, dict]:
    """One row per point: where two kernels timed the same point, the dtype's preferred kernel
    (`_PREFERRED_KERNEL`), else its dominant one."""
    dominant_kernel = {d: _PREFERRED_KERNEL.get((framework, d))
                       or dominant((r for r in rows if r["moe_dtype"] == d), "kernel_source")
                       for d in _MOE_DTYPES}
    best: dict[tuple, dict] = {}
    for r in rows:
        k = (r["moe_dtype"], r.get("distribution", "balanced"), *_shape(r), int(r["num_tokens"]),
             int(r["moe_tp_size"]), int(r["moe_ep_size"]))
        if k not in best or (r["kernel_source"] == dominant_kernel[r["moe_dtype"]]
                             and best[k]["kernel_source"] != dominant_kernel[r["moe_dtype"]]):
            best[k] = r
    return best


def _kernels(best: dict[tuple, dict]) -> str:
    return "; ".join(
        f"{_MOE_DTYPES[d]}: " + ", ".join(sorted({r['kernel_source'] for r in best.values() if r['moe_dtype'] == d}))
        for d in _MOE_DTYPES if any(r["moe_dtype"] == d for r in best.values()))


def convert_moe(systems, system, framework, version, cards, all_shapes, pkg_version) -> Converted | None:
    """The routed-expert table (balanced routing, bf16, fp8_block and nvfp4, gated kernels).

    The collectors' timed region is described in the provenance (`_MOE_TIMED`). SGLang's rows
    (aiconfigurator-core 0.12.0 `systems/data/<system>/moe/sglang/0.5.14/moe_perf.parquet`)
    use the same dtype labels (bfloat16, fp8_block) and columns as the other two; like
    TensorRT-LLM's they include the top-k selection, a kernel of a few microseconds."""
    if framework not in _MOE_TIMED:
        return None
    base = systems / "data" / system / "moe" / framework
    v = newest_table(base, "moe_perf.parquet", at_most=version)
    if v is None:
        return None
    path = base / v / "moe_perf.parquet"
    rows = [r for r in read_rows(path)
            if r.get("distribution", "balanced") in _MOE_DISTRIBUTIONS
            and r["moe_dtype"] in _MOE_DTYPES
            and "nongated" not in str(r.get("kernel_source", ""))]
    keep, selection = _keep_shapes({_shape(r) for r in rows}, cards, all_shapes)
    rows = [r for r in rows if _shape(r) in keep]
    if not rows:
        return None  # no MoE model among the cards, or none of their shapes measured
    best = _one_per_point(rows, framework)
    gen = _trtllm_gen_rows(systems, system, keep) if framework == "trtllm" else None
    if gen is not None:
        best = {k: r for k, r in best.items()
                if not (k[0] == "fp8_block" and k[7] > 1 and _shape(r) in gen[1])} | gen[0]
    out = sorted((_MOE_DTYPES[k[0]], k[1], *k[2:], us(r["latency"])) for k, r in best.items())
    text = csv_text("moe_experts", out)
    prov = provenance(
        "moe_experts", text, len(out), columns=COLUMNS, systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework=framework,
        version=v, method=_MOE_METHOD.format(fw=framework, timed=_MOE_TIMED[framework]),
        selection=(
            f"kernels {_kernels(best)}; routing {', '.join(_MOE_DISTRIBUTIONS)} only (the power-law "
            "rows time random skewed draws with the most loaded EP rank moved to rank 0, not a "
            "parameterised routing fleetplan can match); weight formats "
            f"{', '.join(_MOE_DTYPES.values())} (per-tensor fp8 left out); gated kernels only; "
            f"{selection}; every measured num_tokens, moe_tp and moe_ep"
            + ("" if v == version else f"; newest table at or before {framework} {version}")
            + ("" if gen is None else "; " + gen[2])
        ),
    )
    return Converted("moe_experts", text, prov)


def _trtllm_gen_rows(systems, system: str, keep: set) -> tuple[dict, set, str] | None:
    """TensorRT-LLM's block-FP8 rows at moe_tp > 1 on Blackwell (`TRTLLM_GEN_SYSTEMS`): the
    trtllm-gen kernel's rows of the SGLang collection of the same GPU, one per point, for the
    kept shapes it measured; with the shapes they replace and the selection's words. None where
    the system is not Blackwell or no such rows exist."""
    if system not in TRTLLM_GEN_SYSTEMS:
        return None
    base = systems / "data" / system / "moe" / "sglang"
    v = newest_table(base, "moe_perf.parquet")
    if v is None:
        return None
    path = base / v / "moe_perf.parquet"
    rows = [r for r in read_rows(path)
            if r.get("distribution", "balanced") in _MOE_DISTRIBUTIONS and r["moe_dtype"] == "fp8_block"
            and r.get("kernel_source") == _TRTLLM_GEN_KERNEL and int(r["moe_tp_size"]) > 1 and _shape(r) in keep]
    if not rows:
        return None
    best = _one_per_point(rows)
    shapes = {_shape(r) for r in rows}
    words = (f"fp8_block at moe_tp > 1: the trtllm-gen kernel TensorRT-LLM's TRTLLM MoE backend runs on "
             f"Blackwell ({_TRTLLM_GEN_KERNEL} rows of {path.relative_to(systems).as_posix()}, sha256 "
             f"{file_sha256(path)}; solver/profiles/sources/aic/moe.py TRTLLM_GEN_SYSTEMS) for the shapes "
             f"{sorted(shapes)}")
    return best, shapes, words

"""DeepSeek-V3's whole MLA attention block: mla/<fw>/<v>/mla_{generation,context}_module_perf.parquet
(TensorRT-LLM, vLLM) -> the `mla_generation` and `mla_context` tables.

aiconfigurator-core 0.12.0 times the engine's MLA attention module of DeepSeek-V3 on one GPU
with `num_heads` (128 / TP) query heads: from the layer's normed hidden states to the output
projection's result (q down-projection and its norm, q up-projection, the compressed KV
down-projection and its norm, RoPE, the absorbed up-projection batched GEMMs, the attention
kernel over the latent cache, the output projection), before the TP all-reduce. Its own
models use these rows in place of the granular operators when the model is DeepSeek-V3's
shape (aiconfigurator-core 0.12.0 `sdk/models/deepseek.py`, `MLAModule`). SGLang 0.5.14 ships
only the attention kernel (`generation_mla_perf`), not the module, and is not converted."""

from __future__ import annotations

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import dominant, one, read_rows, us
from solver.profiles.sources.aic.source import newest_table

FRAMEWORKS = ("trtllm", "vllm")
_GEMM_DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8_block", "nvfp4": "fp4"}
_KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
MODEL = "deepseek-ai/DeepSeek-V3"  # the only model the module tables were timed for

_COMMON = {
    "gemm_dtype": "projection weights: bf16 | fp8_block (128x128 block-scaled) | fp4 (NVFP4)",
    "kv_dtype": "latent KV cache element type: bf16 | fp8",
    "num_heads": "query heads on the device (128 / TP for DeepSeek-V3)",
    "batch": "sequences in the call",
}
COLUMNS = {
    "mla_generation": _COMMON | {
        "kv_tokens": "cached tokens per sequence (source isl + step)",
        "latency_us": "GPU time of one decode step of the MLA block (one layer), microseconds",
    },
    "mla_context": _COMMON | {
        "isl_tokens": "tokens per prompt (all new, causal)",
        "latency_us": "GPU time of one prefill pass of the MLA block (one layer), microseconds",
    },
}


def _one_per_point(rows: list[dict]) -> tuple[dict[tuple, dict], str]:
    """One row per point; where several attention backends timed it, the dominant one."""
    main = dominant(rows, "kernel_source") or ""
    best: dict[tuple, dict] = {}
    for r in rows:
        k = (r["gemm_type"], r["kv_cache_dtype"], int(r["num_heads"]), int(r["batch_size"]),
             int(r["isl"]) + int(r["step"]))
        if k not in best or (r["kernel_source"] == main and best[k]["kernel_source"] != main):
            best[k] = r
    return best, main


def convert_mla(systems, system, framework, version, phase, pkg_version) -> Converted | None:
    """The MLA block table of one phase ('generation' or 'context'), or None where the
    package has none for this system and framework."""
    if framework not in FRAMEWORKS:
        return None
    base = systems / "data" / system / "mla" / framework
    name = f"mla_{phase}_module_perf.parquet"
    v = newest_table(base, name, at_most=version)
    if v is None:
        return None
    path = base / v / name
    rows = [r for r in read_rows(path) if r.get("model", MODEL) == MODEL
            and r["gemm_type"] in _GEMM_DTYPES and r["kv_cache_dtype"] in _KV_DTYPES]
    if not rows:
        return None
    best, kernel = _one_per_point(rows)
    out = sorted((_GEMM_DTYPES[k[0]], _KV_DTYPES[k[1]], *k[2:], us(r["latency"])) for k, r in best.items())
    family = f"mla_{phase}"
    text = csv_text(family, out)
    prov = provenance(
        family, text, len(out), columns=COLUMNS[family], systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework=framework,
        version=v, method=(
            f"aiconfigurator collector ({framework}, one GPU, tp_size 1 with num_heads = 128 / TP): "
            "the engine's MLA attention module of DeepSeek-V3 (down- and up-projections, norms, "
            "RoPE, absorbed batched GEMMs, the attention kernel on the latent cache, output "
            "projection; no all-reduce), timed with CUDA events; the source logs milliseconds per call"
        ),
        selection=(f"model {MODEL}; dominant attention backend {kernel} where several timed a point; "
                   "every measured dtype, head count, batch and length"
                   + ("" if v == version else f"; newest table at or before {framework} {version}")),
    )
    return Converted(family, text, prov)

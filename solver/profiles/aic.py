"""Convert the measured database of NVIDIA's aiconfigurator-core into fleetplan profiles.

    fleetplan profiles import-aic --system h200_sxm --framework vllm [--version V]
                                  [--source DIR] [--out DIR]

aiconfigurator-core (Apache-2.0, https://github.com/ai-dynamo/aiconfigurator) ships per-kernel
latency tables collected on real GPUs under `systems/data/<system>/<family>/<framework>/
<version>/*.parquet`. It is an optional extra (`pip install fleetplan[aic]`, which also brings
pyarrow to read Parquet); nothing here is imported unless the converter runs.

What is converted (latencies: milliseconds per call in the source, microseconds here):

| fleetplan family       | source table                                   | kept                  |
|------------------------|------------------------------------------------|-----------------------|
| gemm                   | gemm/<fw>/<v>/gemm_perf.parquet                | bf16 and fp8 (per-tensor) rows of the framework's main kernel for each dtype; every m; the (n, k) pairs that bracket the shipped model cards' matrices at TP 1/2/4/8 |
| attention_context      | attention/<fw>/<v>/context_attention_perf      | full attention (window 0), bf16 math (fp8 math where the engine quantises queries with an fp8 cache), the dominant kernel; the per-device (heads, kv heads, head_dim) of the model cards (+ the nearest measured group when one is missing) |
| attention_generation   | attention/<fw>/<v>/generation_attention_perf   | as above; kv_tokens = isl + step |
| allreduce              | comm/<fw>/<v'>/custom_allreduce_perf           | bf16, CUDA-graph variant when present; v' = newest version <= v that has the table |
| collectives            | comm/nccl/<newest>/nccl_perf                   | all ops, fp16 and int8 |
| moe_experts            | moe/<fw>/<v'>/moe_perf (vllm, trtllm)          | balanced routing; bf16 and fp8_block; gated (SwiGLU) kernels; the (hidden, expert width, top-k, experts) of the MoE model cards; every measured token count, moe_tp and moe_ep; v' = newest version <= v that has the table |

`--all-shapes` keeps every GEMM shape, attention group and MoE shape (for users importing for their own
models); the shipped files use the model-card filter.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from solver.errors import InputError
from solver.profiles.format import (
    Provenance,
    Source,
    csv_text,
    sha256_text,
    write_profile,
)
from solver.profiles.shapes import (
    AttentionGroup,
    attention_groups,
    bracket,
    gemm_shapes,
    moe_shapes,
)

CONVERTER = "fleetplan solver.profiles.aic/1"
AIC_URL = "https://github.com/ai-dynamo/aiconfigurator"
AIC_COPYRIGHT = "Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved."
FRAMEWORKS = ("vllm", "sglang", "trtllm")

# AIC system name -> fleetplan hardware card name, where they differ beyond '_' -> '-'
SYSTEM_TO_HARDWARE = {
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200-nvl72",
}

_GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
_KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
# MoE weight formats kept. Per-tensor "fp8" is left out: the FP8 checkpoints of the MoE cards
# (DeepSeek-V3/R1, Qwen3-235B-A22B-FP8) are 128x128 block-scaled, DeepSeek-V3's shape is
# measured only as fp8_block, and vLLM's per-tensor rows time ModelOpt's FlashInfer-CUTLASS
# path (slower than bf16 at decode on Hopper), not what a block-FP8 checkpoint runs.
_MOE_DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8_block"}
_MOE_DISTRIBUTIONS = ("balanced",)


def hardware_name(system: str) -> str:
    return SYSTEM_TO_HARDWARE.get(system, system.replace("_", "-"))


# ---------------------------------------------------------------------------------------------
# finding the source
# ---------------------------------------------------------------------------------------------


def find_systems_dir(source: str | Path | None = None) -> Path:
    """The `systems/` folder of aiconfigurator-core: `source` (that folder, the package folder
    above it, or a site-packages folder holding the package), else AIC_SYSTEMS_DIR, else the
    installed package."""
    candidates: list[Path] = []
    if source is not None:
        s = Path(source)
        candidates += [s, s / "systems", s / "aiconfigurator_core" / "systems"]
    else:
        env = os.environ.get("AIC_SYSTEMS_DIR")
        if env:
            candidates.append(Path(env))
        spec = importlib.util.find_spec("aiconfigurator_core")
        if spec is not None and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                candidates.append(Path(loc) / "systems")
    for c in candidates:
        if (c / "data").is_dir():
            return c
    if source is not None:
        raise InputError(f"{source}: not an aiconfigurator-core systems folder (no data/ inside)")
    raise InputError(
        "aiconfigurator-core is not installed: pip install 'fleetplan[aic]' "
        "(or give --source PATH to its systems/ folder)"
    )


def package_version(systems: Path) -> str | None:
    """The aiconfigurator-core version the `systems/` folder belongs to, if recorded."""
    site = systems.parent.parent
    for meta in sorted(site.glob("aiconfigurator_core-*.dist-info/METADATA")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    try:
        from importlib.metadata import version

        return version("aiconfigurator-core")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return None


def _version_key(v: str):
    try:
        from packaging.version import Version

        return (0, Version(v))
    except Exception:  # noqa: BLE001 - odd version strings sort after, by their digits
        return (1, tuple(int(x) for x in re.findall(r"\d+", v)))


def _versions(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted((p.name for p in folder.iterdir() if p.is_dir()), key=_version_key)


def _current_version(systems: Path, system: str, framework: str) -> str | None:
    """aiconfigurator's own 'current' version for (system, framework), if it says."""
    path = systems / "query_versions.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return None
    slot = ((doc.get("overrides") or {}).get(system) or {}).get(framework)
    if slot is None:
        slot = (doc.get("defaults") or {}).get(framework)
    return (slot or {}).get("current") if isinstance(slot, dict) else None


def resolve_version(systems: Path, system: str, framework: str, version: str | None) -> str:
    data = systems / "data" / system
    if not data.is_dir():
        known = ", ".join(sorted(p.name for p in (systems / "data").iterdir() if p.is_dir()))
        raise InputError(f"aiconfigurator-core has no system '{system}' (known: {known})")
    have = _versions(data / "gemm" / framework)
    if not have:
        raise InputError(f"aiconfigurator-core has no {framework} GEMM data for {system}")
    if version is not None:
        if version not in have:
            raise InputError(f"{system}/{framework}: no version {version} (have: {', '.join(have)})")
        return version
    current = _current_version(systems, system, framework)
    if current in have and (data / "attention" / framework / current).is_dir():
        return current
    return have[-1]


# ---------------------------------------------------------------------------------------------
# reading Parquet (optional dependency)
# ---------------------------------------------------------------------------------------------


def read_parquet(path: Path) -> dict[str, list]:
    """Columns of a Parquet file as lists (pyarrow, else pandas)."""
    try:
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pydict()
    except ImportError:
        pass
    try:
        import pandas as pd

        df = pd.read_parquet(path)
        return {c: df[c].tolist() for c in df.columns}
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 - pandas without a Parquet engine
        raise InputError(f"{path}: cannot read Parquet ({exc}); pip install 'fleetplan[aic]'") from None
    raise InputError(f"{path}: reading Parquet needs pyarrow: pip install 'fleetplan[aic]'")


def _rows(cols: dict[str, list]) -> list[dict]:
    names = list(cols)
    return [dict(zip(names, vals)) for vals in zip(*(cols[n] for n in names))]


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _collection_meta(folder: Path) -> dict:
    path = folder / "collection_meta.yaml"
    if not path.is_file():
        return {}
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return {}


def _software(meta: dict) -> dict[str, str]:
    """Scalar runtime facts of a collection_meta.yaml (image, torch, CUDA, driver...)."""
    out: dict[str, str] = {}
    runtime = meta.get("runtime") or {}
    for k in ("image", "source_commit"):
        if isinstance(runtime.get(k), (str, int, float)):
            out[k] = str(runtime[k])
    abi = runtime.get("abi") or {}
    for k in ("torch", "cuda", "driver", "nccl", "nvshmem", "gpu_name", "compute_capability"):
        if isinstance(abi.get(k), (str, int, float)):
            out[k] = str(abi[k])
    if meta.get("provenance"):
        out["aic_provenance"] = str(meta["provenance"])
    return out


def _collected_on(meta: dict, table: str) -> str | None:
    t = ((meta.get("tables") or {}).get(table) or {})
    v = t.get("collected_at")
    return str(v) if v else None


# ---------------------------------------------------------------------------------------------
# the conversion
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Converted:
    family: str
    text: str
    provenance: Provenance


def _cards(models: Sequence[str] | None):
    from solver.catalog import shipped

    names = list(models) if models else shipped.names("models")
    return [shipped.model_card(n) for n in names]


def _dominant(rows: Iterable[dict], column: str) -> str | None:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[column]] = counts.get(r[column], 0) + 1
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _one(rows: list[dict], column: str) -> str | None:
    vals = sorted({str(r[column]) for r in rows if column in r})
    return vals[0] if len(vals) == 1 else (", ".join(vals) if vals else None)


def _us(ms: float) -> float:
    return float(ms) * 1000.0


def _source(systems: Path, path: Path, version: str | None) -> Source:
    return Source(
        name="NVIDIA AIConfigurator (aiconfigurator-core) measured performance database",
        package="aiconfigurator-core",
        package_version=version,
        url=AIC_URL,
        path=str(path.relative_to(systems.parent)).replace(os.sep, "/"),
        file_sha256=_file_sha256(path),
        licence="Apache-2.0",
        copyright=AIC_COPYRIGHT,
    )


_MODIFIED = (
    "Derived from aiconfigurator-core (Apache-2.0) by fleetplan's converter: rows selected, "
    "columns renamed, latency converted from ms to us (5 significant digits). See NOTICE."
)


def convert_gemm(systems, system, framework, version, cards, all_shapes, pkg_version) -> Converted:
    folder = systems / "data" / system / "gemm" / framework / version
    path = folder / "gemm_perf.parquet"
    rows = _rows(read_parquet(path))
    kernels = {}
    for src_dtype in _GEMM_DTYPES:
        kernels[src_dtype] = _dominant((r for r in rows if r["gemm_dtype"] == src_dtype), "kernel_source")
    rows = [r for r in rows if r["gemm_dtype"] in _GEMM_DTYPES
            and r["kernel_source"] == kernels[r["gemm_dtype"]]]
    grid_n = sorted({int(r["n"]) for r in rows})
    grid_k = sorted({int(r["k"]) for r in rows})
    if all_shapes:
        keep_pairs = None
        selection = "every measured shape"
    else:
        keep_pairs = set()
        for card in cards:
            for s in gemm_shapes(card):
                for n in bracket([s.n], grid_n):
                    for k in bracket([s.k], grid_k):
                        keep_pairs.add((n, k))
        selection = (
            f"(n, k) pairs bracketing the per-device weight matrices of the model cards "
            f"{', '.join(c.name for c in cards)} at TP 1/2/4/8 (the measured n and k on each "
            f"side of every needed value); every measured m"
        )
    out = []
    for r in rows:
        n, k = int(r["n"]), int(r["k"])
        if keep_pairs is not None and (n, k) not in keep_pairs:
            continue
        out.append((_GEMM_DTYPES[r["gemm_dtype"]], int(r["m"]), n, k, _us(r["latency"])))
    out.sort()
    text = csv_text("gemm", out)
    meta = _collection_meta(folder)
    kern = "; ".join(f"{_GEMM_DTYPES[d]}: {k}" for d, k in kernels.items() if k)
    prov = _provenance(
        "gemm", text, len(out), systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=_one(rows, "device"), framework=framework,
        version=version, software=_software(meta),
        collected_on=_collected_on(meta, "gemm_perf"),
        method=(
            f"aiconfigurator collector ({framework} GEMM kernels, one GPU): each (m, n, k) "
            f"timed with CUDA events over repeated runs; the source logs milliseconds per call"
        ),
        selection=f"kernels {kern}; {selection}",
    )
    return Converted("gemm", text, prov)


def _provenance(family: str, text: str, rows_kept: int, *, systems, path, pkg_version,
                system: str, device: str | None, framework: str, version: str, software,
                collected_on, method: str, selection: str) -> Provenance:
    """The sidecar every converted AIC table carries (licence, source, hash, converter)."""
    return Provenance(
        family=family,  # type: ignore[arg-type]
        hardware=hardware_name(system),
        device_name=device,
        framework=framework,
        framework_version=version,
        software=software,
        collected_on=collected_on,
        collection_method=method,
        source=_source(systems, path, pkg_version),
        selection=selection,
        columns=_columns(family),
        rows=rows_kept,
        licence="Apache-2.0",
        content_sha256=sha256_text(text),
        converter=CONVERTER,
        notes=[_MODIFIED],
    )


def _columns(family: str) -> dict[str, str]:
    return {
        "gemm": {
            "dtype": "bf16 | fp8 (per-tensor scaled FP8 inputs, bf16 output)",
            "m": "rows of the activation: tokens",
            "n": "output features (columns of W)",
            "k": "input features (reduction length)",
            "latency_us": "GPU time of one call, microseconds",
        },
        "attention_context": {
            "kv_dtype": "KV cache element type: bf16 | fp8",
            "num_heads": "query heads on the device",
            "num_kv_heads": "key/value heads on the device",
            "head_dim": "elements per head",
            "batch": "prompts in the call",
            "isl_tokens": "tokens per prompt (all new, causal)",
            "latency_us": "GPU time of one call, microseconds",
        },
        "attention_generation": {
            "kv_dtype": "KV cache element type: bf16 | fp8",
            "num_heads": "query heads on the device",
            "num_kv_heads": "key/value heads on the device",
            "head_dim": "elements per head",
            "batch": "sequences decoding one token each",
            "kv_tokens": "cached tokens attended per sequence (source isl + step)",
            "latency_us": "GPU time of one call, microseconds",
        },
        "allreduce": {
            "dtype": "payload element type (bf16)",
            "num_gpus": "GPUs in the all-reduce (one NVLink domain)",
            "message_bytes": "bytes reduced per GPU (source message_size elements x 2)",
            "latency_us": "time of one all-reduce, microseconds",
        },
        "moe_experts": {
            "dtype": "bf16 | fp8_block (128x128 block-scaled FP8 weights, FP8 activations)",
            "distribution": "synthetic routing during the timing: balanced (round-robin top-k)",
            "hidden_size": "model hidden size",
            "inter_size": "one expert's intermediate width (whole, before moe_tp splits it)",
            "topk": "experts per token",
            "num_experts": "routed experts of the layer (all devices together)",
            "num_tokens": "tokens entering the layer across the MoE group (source num_tokens)",
            "moe_tp": "tensor parallelism inside each expert (source moe_tp_size)",
            "moe_ep": "expert parallelism: the device holds num_experts / moe_ep experts",
            "latency_us": "GPU time of the device's routed-expert computation, microseconds",
        },
        "collectives": {
            "op": "all_reduce | all_gather | reduce_scatter | alltoall",
            "dtype": "payload element type: fp16 | int8",
            "num_gpus": "GPUs in the collective (one NVLink domain)",
            "message_bytes": "nccl-tests size in bytes (source message_size elements x element bytes)",
            "latency_us": "time of one collective, microseconds",
        },
    }[family]


def _attention_rows(rows: list[dict]) -> tuple[list[dict], str, dict[str, str]]:
    """Window-0 rows of the dominant kernel, one math dtype per KV dtype."""
    full = [r for r in rows if int(r.get("window_size", 0) or 0) == 0 and int(r.get("beam_width", 1)) == 1]
    kernel = _dominant(full, "kernel_source")
    full = [r for r in full if r["kernel_source"] == kernel]
    have = {(r["attn_dtype"], r["kv_cache_dtype"]) for r in full}
    choice: dict[str, str] = {}
    for kv in _KV_DTYPES:
        if ("bfloat16", kv) in have:
            choice[kv] = "bfloat16"
        elif (kv, kv) in have:
            choice[kv] = kv  # the engine runs the math in the cache's type (fp8 with fp8 KV)
    kept = [r for r in full if r["kv_cache_dtype"] in choice and r["attn_dtype"] == choice[r["kv_cache_dtype"]]]
    return kept, kernel or "", {_KV_DTYPES[k]: v for k, v in choice.items()}


def _nearest_group(g: AttentionGroup, measured: set[tuple[int, int, int]]) -> tuple[int, int, int] | None:
    best, best_d = None, math.inf
    for h, kv, d in sorted(measured):
        if d != g.head_dim:
            continue
        dist = abs(math.log(h / g.num_heads)) + abs(math.log(kv / g.num_kv_heads))
        if dist < best_d:
            best, best_d = (h, kv, d), dist
    return best


def convert_attention(systems, system, framework, version, phase, cards, all_shapes, pkg_version) -> Converted:
    family = f"attention_{phase}"
    folder = systems / "data" / system / "attention" / framework / version
    path = folder / f"{phase}_attention_perf.parquet"
    rows_all = _rows(read_parquet(path))
    rows, kernel, math_dtypes = _attention_rows(rows_all)
    measured = {(int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"])) for r in rows}
    if all_shapes:
        keep = measured
        selection = "every measured head geometry"
    else:
        need = sorted({g for c in cards for g in attention_groups(c)})
        keep = set()
        stand_ins = []
        for g in need:
            t = (g.num_heads, g.num_kv_heads, g.head_dim)
            if t in measured:
                keep.add(t)
            else:
                near = _nearest_group(g, measured)
                if near is not None:
                    keep.add(near)
                    stand_ins.append(f"{t} -> {near}")
        selection = (
            f"per-device (heads, kv heads, head_dim) of the GQA model cards "
            f"{', '.join(c.name for c in cards if attention_groups(c))} at TP 1/2/4/8"
            + (f"; unmeasured groups kept as their nearest measured group: {'; '.join(stand_ins)}"
               if stand_ins else "")
        )
    out = []
    for r in rows:
        t = (int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"]))
        if t not in keep:
            continue
        tokens = int(r["isl"]) if phase == "context" else int(r["isl"]) + int(r["step"])
        out.append((_KV_DTYPES[r["kv_cache_dtype"]], t[0], t[1], t[2], int(r["batch_size"]), tokens,
                    _us(r["latency"])))
    out.sort()
    text = csv_text(family, out)
    meta = _collection_meta(folder)
    math_txt = ", ".join(f"kv {kv}: math {m}" for kv, m in sorted(math_dtypes.items()))
    prov = _provenance(
        family, text, len(out), systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=_one(rows, "device"), framework=framework,
        version=version, software=_software(meta),
        collected_on=_collected_on(meta, f"{phase}_attention_perf"),
        method=(
            f"aiconfigurator collector ({framework} attention backend, one GPU): the attention "
            f"kernel alone on a paged KV cache, timed with CUDA events; the source logs "
            f"milliseconds per call"
        ),
        selection=f"kernel {kernel}; window_size 0 (full attention); {math_txt}; {selection}",
    )
    return Converted(family, text, prov)


def convert_allreduce(systems, system, framework, version, pkg_version) -> Converted | None:
    base = systems / "data" / system / "comm" / framework
    usable = [v for v in _versions(base)
              if (base / v / "custom_allreduce_perf.parquet").is_file()
              and _version_key(v) <= _version_key(version)]
    if not usable:
        return None
    v = usable[-1]
    path = base / v / "custom_allreduce_perf.parquet"
    rows = [r for r in _rows(read_parquet(path)) if str(r.get("allreduce_dtype")) == "bfloat16"]
    graph = [r for r in rows if "graph" in str(r.get("kernel_source", "")).lower()]
    if graph:
        rows = graph
    kernel = _one(rows, "kernel_source")
    out = sorted(("bf16", int(r["num_gpus"]), int(r["message_size"]) * 2, _us(r["latency"])) for r in rows)
    text = csv_text("allreduce", out)
    meta = _collection_meta(base / v)
    prov = _provenance(
        "allreduce", text, len(out), systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=_one(rows, "device"), framework=framework,
        version=v, software=_software(meta) | ({"source_framework_label": _one(rows, "framework") or ""}),
        collected_on=_collected_on(meta, "custom_allreduce_perf"),
        method=(
            "aiconfigurator collect_all_reduce.py: the engine's all-reduce on a bf16 tensor of "
            "message_size elements, replayed many times inside one CUDA graph interleaved with a "
            "small matmul whose own time is subtracted; best of 3; milliseconds per call"
        ),
        selection=f"kernel {kernel}; bf16; all sizes and GPU counts"
        + ("" if v == version else f"; newest table at or before {framework} {version}"),
    )
    return Converted("allreduce", text, prov)


def convert_collectives(systems, system, pkg_version) -> Converted | None:
    base = systems / "data" / system / "comm" / "nccl"
    usable = [v for v in _versions(base) if (base / v / "nccl_perf.parquet").is_file()]
    if not usable:
        return None
    v = usable[-1]
    path = base / v / "nccl_perf.parquet"
    rows = _rows(read_parquet(path))
    elem = {"half": ("fp16", 2), "int8": ("int8", 1)}
    out = sorted(
        (str(r["op_name"]), elem[r["nccl_dtype"]][0], int(r["num_gpus"]),
         int(r["message_size"]) * elem[r["nccl_dtype"]][1], _us(r["latency"]))
        for r in rows if r["nccl_dtype"] in elem
    )
    text = csv_text("collectives", out)
    meta = _collection_meta(base / v)
    labels = _one(rows, "version")
    prov = _provenance(
        "collectives", text, len(out), systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=_one(rows, "device"), framework="nccl",
        version=v, software=_software(meta) | ({"nccl_version_in_rows": labels} if labels else {}),
        collected_on=_collected_on(meta, "nccl_perf"),
        method=(
            "aiconfigurator collect_nccl.py: nccl-tests (<op>_perf -b size -e size -t num_gpus), "
            "out-of-place time; the source logs milliseconds and the size in elements"
        ),
        selection="all ops, fp16 and int8, all sizes and GPU counts of the newest NCCL table",
    )
    return Converted("collectives", text, prov)


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
}


def convert_moe(systems, system, framework, version, cards, all_shapes, pkg_version) -> Converted | None:
    """The routed-expert table (balanced routing, bf16 and fp8_block, gated kernels).

    vLLM and TensorRT-LLM only: their collectors' timed region is described in the provenance
    (`_MOE_TIMED`). SGLang's moe_perf is not converted: its collector times a different region
    (top-k selection inside, its own repeat loop) with its own dtype labels, not checked here."""
    if framework not in _MOE_TIMED:
        return None
    base = systems / "data" / system / "moe" / framework
    usable = [v for v in _versions(base)
              if (base / v / "moe_perf.parquet").is_file() and _version_key(v) <= _version_key(version)]
    if not usable:
        return None
    v = usable[-1]
    path = base / v / "moe_perf.parquet"
    rows = [r for r in _rows(read_parquet(path))
            if r.get("distribution", "balanced") in _MOE_DISTRIBUTIONS
            and r["moe_dtype"] in _MOE_DTYPES
            and "nongated" not in str(r.get("kernel_source", ""))]
    shape = lambda r: (int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]),  # noqa: E731
                       int(r["num_experts"]))
    measured = {shape(r) for r in rows}
    if all_shapes:
        keep = measured
        selection = "every measured MoE shape"
    else:
        need = sorted({(m.hidden_size, m.inter_size, m.topk, m.num_experts)
                       for c in cards for m in moe_shapes(c)})
        keep = {n for n in need if n in measured}
        missing = [n for n in need if n not in measured]
        selection = (
            "the (hidden, expert width, top-k, experts) of the MoE model cards "
            f"{', '.join(c.name for c in cards if moe_shapes(c))}"
            + (f"; not measured (answered by the roofline): {missing}" if missing else "")
        )
    rows = [r for r in rows if shape(r) in keep]
    if not rows:
        return None  # no MoE model among the cards, or none of their shapes measured
    # one row per point: where two kernels timed the same point, the dtype's dominant kernel
    dominant = {d: _dominant((r for r in rows if r["moe_dtype"] == d), "kernel_source") for d in _MOE_DTYPES}
    best: dict[tuple, dict] = {}
    for r in rows:
        k = (r["moe_dtype"], r.get("distribution", "balanced"), *shape(r), int(r["num_tokens"]),
             int(r["moe_tp_size"]), int(r["moe_ep_size"]))
        if k not in best or (r["kernel_source"] == dominant[r["moe_dtype"]]
                             and best[k]["kernel_source"] != dominant[r["moe_dtype"]]):
            best[k] = r
    out = sorted((_MOE_DTYPES[k[0]], k[1], *k[2:], _us(r["latency"])) for k, r in best.items())
    text = csv_text("moe_experts", out)
    meta = _collection_meta(base / v)
    kernels = "; ".join(
        f"{_MOE_DTYPES[d]}: " + ", ".join(sorted({r['kernel_source'] for r in best.values() if r['moe_dtype'] == d}))
        for d in _MOE_DTYPES if any(r["moe_dtype"] == d for r in best.values()))
    prov = _provenance(
        "moe_experts", text, len(out), systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=_one(rows, "device"), framework=framework,
        version=v, software=_software(meta), collected_on=_collected_on(meta, "moe_perf"),
        method=_MOE_METHOD.format(fw=framework, timed=_MOE_TIMED[framework]),
        selection=(
            f"kernels {kernels}; routing {', '.join(_MOE_DISTRIBUTIONS)} only (the power-law rows "
            "time random skewed draws with the most loaded EP rank moved to rank 0, not a "
            "parameterised routing fleetplan can match); weight formats "
            f"{', '.join(_MOE_DTYPES.values())} (per-tensor fp8 left out); gated kernels only; "
            f"{selection}; every measured num_tokens, moe_tp and moe_ep"
            + ("" if v == version else f"; newest table at or before {framework} {version}")
        ),
    )
    return Converted("moe_experts", text, prov)


def convert_aic(
    system: str,
    framework: str,
    version: str | None = None,
    source: str | Path | None = None,
    models: Sequence[str] | None = None,
    all_shapes: bool = False,
) -> list[Converted]:
    """The converted tables (in memory) of one AIC system and framework."""
    if framework not in FRAMEWORKS:
        raise InputError(f"unknown framework '{framework}' (one of {', '.join(FRAMEWORKS)})")
    systems = find_systems_dir(source)
    v = resolve_version(systems, system, framework, version)
    pkg = package_version(systems)
    cards = _cards(models)
    out = [convert_gemm(systems, system, framework, v, cards, all_shapes, pkg)]
    for phase in ("context", "generation"):
        if (systems / "data" / system / "attention" / framework / v / f"{phase}_attention_perf.parquet").is_file():
            out.append(convert_attention(systems, system, framework, v, phase, cards, all_shapes, pkg))
    ar = convert_allreduce(systems, system, framework, v, pkg)
    if ar is not None:
        out.append(ar)
    coll = convert_collectives(systems, system, pkg)
    if coll is not None:
        out.append(coll)
    moe = convert_moe(systems, system, framework, v, cards, all_shapes, pkg)
    if moe is not None:
        out.append(moe)
    return out


def import_aic(
    system: str,
    framework: str,
    version: str | None = None,
    source: str | Path | None = None,
    out_dir: str | Path | None = None,
    hardware: str | None = None,
    models: Sequence[str] | None = None,
    all_shapes: bool = False,
    compress: bool = False,
) -> list[Path]:
    """Convert and write `<out_dir>/<hardware>/<framework>/<family>.csv` + `.meta.json`.

    out_dir defaults to FLEETPLAN_PROFILES when set, else the shipped `hardware/profiles/`.
    Returns the CSV paths written."""
    from solver.profiles.format import default_root

    tables = convert_aic(system, framework, version, source, models, all_shapes)
    hw = hardware or hardware_name(system)
    folder = Path(out_dir if out_dir is not None else default_root()) / hw / framework
    written = []
    for t in tables:
        prov = t.provenance if hw == t.provenance.hardware else t.provenance.model_copy(update={"hardware": hw})
        written.append(write_profile(folder, t.family, t.text, prov, compress=compress))
    return written


def summary(paths: Sequence[Path]) -> str:
    lines = []
    for p in paths:
        meta = json.loads(p.with_name(p.name.split(".csv")[0] + ".meta.json").read_text())
        lines.append(f"{p}  {meta['rows']} rows  {p.stat().st_size / 1024:.0f} KiB  "
                     f"{meta['framework']} {meta['framework_version']}")
    return "\n".join(lines)



"""GEMM: gemm/<fw>/<v>/gemm_perf.parquet -> the `gemm` table (bf16, per-tensor fp8 and
block-scaled fp8 rows of the framework's kernels; every m; the (n, k) pairs that bracket the
model cards' matrices at TP 1/2/4/8); quantize/<fw>/<v>/computescale_perf.parquet -> the
`compute_scale` table.

FP8 activation scaling (what the rows mean):
- `fp8`: per-tensor FP8 weights, the activation's scale computed on every call (an amax
  reduction over the input, then the quantisation): aiconfigurator's collector loads FP8 weights
  without an input scale, so TensorRT-LLM's FP8 linear takes its dynamic-quantisation path and
  the row includes the compute-scale kernel (ai-dynamo/aiconfigurator
  collector/trtllm/collect_gemm.py, 095f58a5: "the collected fp8 GEMM includes the
  compute-scale overhead");
- a checkpoint with static input scales (ModelOpt's per-tensor FP8 checkpoints,
  nvidia/Llama-3.3-70B-Instruct-FP8) skips that kernel. aiconfigurator derives this mode
  (`fp8_static`) at query time rather than collecting it: the `fp8` row less the measured
  compute-scale kernel at the same m and k, floored at the GEMM's speed of light
  (aic-core/rust/aiconfigurator-core/src/operators/gemm.rs `GemmOp::query`); so the tables keep
  the kernel as measured (`compute_scale`, per framework: vLLM's is the per-token dynamic quant
  less the static one, SGLang's is zero) and `solver/profiles/operators.py` composes the mode;
- `fp8_block`: 128x128 block-scaled weights with per-token-group activation scales (DeepSeek-V3/
  R1 and Qwen3's own FP8 checkpoints), measured; where the framework timed several kernels
  (vLLM: DeepGEMM, FlashInfer, CUTLASS by shape) one row per (m, n, k), the commonest kernel's
  where they overlap. vLLM's rows are flat in m and about 5x TensorRT-LLM's block kernel at
  small m (a 4096 x 4096 GEMM: 57-95 us from 1 to 1024 tokens on H100/H200, 155-190 us on
  B200, against 9-12 us at one token); kept as measured, as aiconfigurator uses them.
"""

from __future__ import annotations

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import dominant, one, read_rows, us
from solver.profiles.sources.shapes import bracket, gemm_shapes

_GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block"}
_MULTI_KERNEL = {"fp8_block"}  # dtypes whose kernels split the shapes between them
COLUMNS = {
    "dtype": ("bf16 | fp8 (per-tensor FP8, the activation's scale computed per call) | fp8_block "
              "(128x128 block-scaled FP8)"),
    "m": "rows of the activation: tokens",
    "n": "output features (columns of W)",
    "k": "input features (reduction length)",
    "latency_us": "GPU time of one call, microseconds",
}


def _keep_pairs(rows: list[dict], cards, all_shapes: bool) -> tuple[set | None, str]:
    """The (n, k) pairs kept (None: all) and the selection's words."""
    if all_shapes:
        return None, "every measured shape"
    grid_n = sorted({int(r["n"]) for r in rows})
    grid_k = sorted({int(r["k"]) for r in rows})
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
    return keep_pairs, selection


def _one_per_point(rows: list[dict], kernels: dict[str, str | None]) -> list[dict]:
    """One row per (dtype, m, n, k): the dtype's commonest kernel where several timed a point."""
    best: dict[tuple, dict] = {}
    for r in rows:
        key = (r["gemm_dtype"], int(r["m"]), int(r["n"]), int(r["k"]))
        if key not in best or r["kernel_source"] == kernels[r["gemm_dtype"]]:
            best[key] = r
    return list(best.values())


def convert_gemm(systems, system, framework, version, cards, all_shapes, pkg_version) -> Converted:
    path = systems / "data" / system / "gemm" / framework / version / "gemm_perf.parquet"
    rows = read_rows(path)
    kernels = {}
    for src_dtype in _GEMM_DTYPES:
        kernels[src_dtype] = dominant((r for r in rows if r["gemm_dtype"] == src_dtype), "kernel_source")
    rows = _one_per_point([r for r in rows if r["gemm_dtype"] in _GEMM_DTYPES
                           and (r["gemm_dtype"] in _MULTI_KERNEL or r["kernel_source"] == kernels[r["gemm_dtype"]])],
                          kernels)
    keep_pairs, selection = _keep_pairs(rows, cards, all_shapes)
    rows = [r for r in rows if keep_pairs is None or (int(r["n"]), int(r["k"])) in keep_pairs]
    out = [(_GEMM_DTYPES[r["gemm_dtype"]], int(r["m"]), int(r["n"]), int(r["k"]), us(r["latency"])) for r in rows]
    out.sort()
    used = {}
    for r in rows:
        used.setdefault(_GEMM_DTYPES[r["gemm_dtype"]], set()).add(r["kernel_source"])
    kern = "; ".join(f"{d}: {', '.join(sorted(ks))}" for d, ks in sorted(used.items()))
    return _converted("gemm", out, COLUMNS, systems, path, pkg_version, system, rows, framework, version, (
        f"aiconfigurator collector ({framework} GEMM kernels, one GPU): each (m, n, k) "
        f"timed with CUDA events over repeated runs; the source logs milliseconds per call"
    ), f"kernels {kern}; {selection}")


def _converted(family, out, columns, systems, path, pkg_version, system, rows, framework, version,
               method, selection) -> Converted:
    """The table `family` of the sorted rows `out`, with its sidecar."""
    text = csv_text(family, out)
    return Converted(family, text, provenance(
        family, text, len(out), columns=columns, systems=systems, path=path, pkg_version=pkg_version,
        system=system, device=one(rows, "device"), framework=framework, version=version,
        method=method, selection=selection))


SCALE_FLOOR_US = 0.001  # a kernel timed at zero (below): one nanosecond
SCALE_COLUMNS = {
    "dtype": "fp8 (per-tensor FP8 activations)",
    "m": "rows of the activation: tokens",
    "k": "input features",
    "latency_us": "GPU time of the kernel computing the activation's scale, microseconds",
}


def convert_compute_scale(systems, system, framework, version, pkg_version) -> Converted | None:
    """quantize/<fw>/<v>/computescale_perf.parquet -> `compute_scale`: the kernel a per-tensor
    FP8 GEMM with dynamic input scales runs before it (module docstring), every (m, k); None
    where the version has no such table."""
    path = systems / "data" / system / "quantize" / framework / version / "computescale_perf.parquet"
    if not path.is_file():
        return None
    rows = [r for r in read_rows(path) if str(r.get("quant_dtype", "fp8")) == "fp8"]
    kernel = dominant(rows, "kernel_source")
    rows = [r for r in rows if r["kernel_source"] == kernel]
    # zero: aiconfigurator's clip of a difference at or below zero (vLLM's is the dynamic quant
    # less the static one; SGLang's collection is zero almost everywhere, its fp8 rows being the
    # static path already); kept at the floor below, which the table format needs positive
    out = sorted(("fp8", int(r["m"]), int(r["k"]), max(us(r["latency"]), SCALE_FLOOR_US)) for r in rows)
    zeros = sum(1 for r in rows if us(r["latency"]) < SCALE_FLOOR_US)
    method = (f"aiconfigurator collector ({framework} FP8 quantisation kernels, one GPU): the "
              f"activation-scale computation of a dynamically scaled FP8 GEMM timed alone per (m, k); "
              f"the source logs milliseconds per call")
    selection = f"kernel {kernel}; every measured m and k" + (
        f"; {zeros} rows timed at zero kept at {SCALE_FLOOR_US} us" if zeros else "")
    return _converted("compute_scale", out, SCALE_COLUMNS, systems, path, pkg_version, system, rows,
                      framework, version, method, selection)

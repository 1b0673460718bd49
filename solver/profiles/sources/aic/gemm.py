"""GEMM: gemm/<fw>/<v>/gemm_perf.parquet -> the `gemm` table (bf16 and per-tensor fp8 rows of
the framework's main kernel for each dtype; every m; the (n, k) pairs that bracket the model
cards' matrices at TP 1/2/4/8)."""

from __future__ import annotations

from solver.profiles.format import csv_text
from solver.profiles.sources.aic.provenance import Converted, provenance
from solver.profiles.sources.aic.reading import dominant, one, read_rows, us
from solver.profiles.sources.shapes import bracket, gemm_shapes

_GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}

COLUMNS = {
    "dtype": "bf16 | fp8 (per-tensor scaled FP8 inputs, bf16 output)",
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


def convert_gemm(systems, system, framework, version, cards, all_shapes, pkg_version) -> Converted:
    path = systems / "data" / system / "gemm" / framework / version / "gemm_perf.parquet"
    rows = read_rows(path)
    kernels = {}
    for src_dtype in _GEMM_DTYPES:
        kernels[src_dtype] = dominant((r for r in rows if r["gemm_dtype"] == src_dtype), "kernel_source")
    rows = [r for r in rows if r["gemm_dtype"] in _GEMM_DTYPES
            and r["kernel_source"] == kernels[r["gemm_dtype"]]]
    keep_pairs, selection = _keep_pairs(rows, cards, all_shapes)
    out = []
    for r in rows:
        n, k = int(r["n"]), int(r["k"])
        if keep_pairs is not None and (n, k) not in keep_pairs:
            continue
        out.append((_GEMM_DTYPES[r["gemm_dtype"]], int(r["m"]), n, k, us(r["latency"])))
    out.sort()
    text = csv_text("gemm", out)
    kern = "; ".join(f"{_GEMM_DTYPES[d]}: {k}" for d, k in kernels.items() if k)
    prov = provenance(
        "gemm", text, len(out), columns=COLUMNS, systems=systems, path=path,
        pkg_version=pkg_version, system=system, device=one(rows, "device"), framework=framework,
        version=version, method=(
            f"aiconfigurator collector ({framework} GEMM kernels, one GPU): each (m, n, k) "
            f"timed with CUDA events over repeated runs; the source logs milliseconds per call"
        ),
        selection=f"kernels {kern}; {selection}",
    )
    return Converted("gemm", text, prov)

"""The fastest measured GEMM of each precision in aiconfigurator-core's tables, per system.

    pip install aiconfigurator-core==0.12.0   # or: pip install 'fleetplan[aic]'
    python benchmarks/aic_gemm_peaks.py [b200_sxm b300_sxm gb200 h100_sxm ...]

NVIDIA's collector times each (m, n, k) GEMM kernel alone on one GPU
(systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet, latency in ms); the
achieved rate is 2 m n k / latency. The largest one over the table is the best-shape ceiling the
hardware cards' GEMM efficiencies are (peak achieved / dense datasheet peak), like the MAMF
figures for the other precisions. A kernel microbenchmark: no end-to-end measurement is read.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> None:
    import pyarrow.parquet as pq

    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("aiconfigurator-core is not installed: pip install 'fleetplan[aic]'")
    data = Path(list(spec.submodule_search_locations)[0]) / "systems" / "data"
    for system in sys.argv[1:] or ["b200_sxm", "b300_sxm", "gb200", "h100_sxm", "h200_sxm"]:
        for f in sorted((data / system / "gemm").glob("*/*/gemm_perf.parquet")):
            t = pq.read_table(f, columns=["gemm_dtype", "m", "n", "k", "latency"]).to_pandas()
            t["tflops"] = 2.0 * t.m * t.n * t.k / (t.latency * 1e-3) / 1e12
            best = t.groupby("gemm_dtype").tflops.max().round(0).astype(int).to_dict()
            print(f"{system} {f.parent.parent.name} {f.parent.name}: best TFLOPS {best}")


if __name__ == "__main__":
    main()

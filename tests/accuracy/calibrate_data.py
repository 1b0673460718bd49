"""Measured rows generated from a known calibration by the predictor (`fleetplan calibrate`'s
tests): llama-3.1-8b on a100-sxm (a card without measured tables, so every fitted parameter
moves the prediction) across concurrencies, lengths and tensor-parallel sizes."""

from __future__ import annotations

import csv
import io

from solver.accuracy.validate import parse_measured, predict_rows
from solver.schema.engine import EngineParams

HEADER = ["model", "hardware", "precision", "mode", "input_tokens", "output_tokens", "concurrency",
          "tp", "pp", "ep", "dp", "ttft_ms", "tpot_ms", "engine"]
# the calibration the rows are generated from (inside every bound of solver/accuracy/user_fit.py)
TRUTH = EngineParams(gemm_efficiency_factor=0.78, memory_efficiency_factor=0.9, step_overhead_ms=2.5,
                     request_overhead_ms=12.0, mixed_batch_slowdown=1.0)
GRID = [(tp, c, isl, osl) for tp in (1, 2) for c in (1, 4, 16, 64) for isl, osl in ((512, 128), (2048, 256), (4096, 64))]


def rows_text(grid=GRID, params: EngineParams = TRUTH, hardware: str = "a100-sxm", scale: dict | None = None) -> str:
    """A validate CSV of `grid` whose latencies are the closed form's with `params` (times
    `scale[k]` on row k, a deliberate change)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for tp, c, isl, osl in grid:
        w.writerow(["llama-3.1-8b", hardware, "bf16", "colocated", isl, osl, c, tp, 1, 1, 1, 1.0, 1.0, "vllm"])
    _, rows = parse_measured("gen.csv", out.getvalue())
    ttft, tpot = predict_rows("gen.csv", rows, lambda _e: params)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for k, (tp, c, isl, osl) in enumerate(grid):
        f = (scale or {}).get(k, 1.0)
        w.writerow(["llama-3.1-8b", hardware, "bf16", "colocated", isl, osl, c, tp, 1, 1, 1,
                    f"{ttft[k] * f:.6f}", f"{tpot[k] * f:.6f}", "vllm"])
    return out.getvalue()

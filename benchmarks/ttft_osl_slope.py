"""How measured TTFT grows with the output length at a fixed prompt, per model (a diagnostic).

    python benchmarks/ttft_osl_slope.py [--csv benchmarks/data/silicon_sample_validate.csv]
        [--hardware h100-sxm] [--engine-version 1.0.0rc3] [--max-concurrency 32]

For every (model, isl, concurrency C, tp) group measured at both 128 and 512 output tokens:

    slope = (TTFT_512 - TTFT_128) / ((E2E_512 - E2E_128) / C),  E2E = TTFT + (osl - 1) x TPOT

all measured. In a closed loop of C clients an engine that keeps only C - 1 requests in service
makes each new request wait one inter-completion gap; by Little's law (C - 1 in service for
E2E - W out of every E2E) the wait is W = E2E / C, so the slope is about 1. An engine that
serves all C at once gives a TTFT that does not depend on the output length: slope about 0.
Only measured numbers enter; nothing is fitted (benchmarks/replay_accuracy.md, branch ttft-slot).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHORT, LONG = 128, 512  # the two output lengths every aiconfigurator 1.0.0rc3 h100 group has


def e2e_ms(ttft_ms: float, tpot_ms: float, osl: int) -> float:
    """End-to-end latency of one request: first token, then osl - 1 inter-token gaps."""
    return ttft_ms + (osl - 1) * tpot_ms


def slope(c: int, short: tuple[float, float], long: tuple[float, float]) -> float:
    """TTFT growth from SHORT to LONG output tokens in units of the E2E / C growth.

    short and long are (ttft_ms, tpot_ms) of the same (model, isl, C, tp)."""
    d_ttft = long[0] - short[0]
    d_gap = (e2e_ms(*long, LONG) - e2e_ms(*short, SHORT)) / c
    return d_ttft / d_gap


def group_slopes(rows: list[dict], hardware: str, version: str, max_c: int) -> dict[str, list[float]]:
    """Slopes per model over the groups of rows that have both output lengths."""
    points: dict[tuple, dict[int, tuple[float, float]]] = defaultdict(dict)
    for r in rows:
        if r["hardware"] != hardware or r["engine_version"] != version or int(r["concurrency"]) > max_c:
            continue
        osl = int(r["output_tokens"])
        if osl in (SHORT, LONG):
            key = (r["model"], int(r["input_tokens"]), int(r["concurrency"]), int(r["tp"]))
            points[key][osl] = (float(r["ttft_ms"]), float(r["tpot_ms"]))
    out: dict[str, list[float]] = defaultdict(list)
    for (model, _isl, c, _tp), by_osl in sorted(points.items()):
        if SHORT in by_osl and LONG in by_osl:
            out[model].append(slope(c, by_osl[SHORT], by_osl[LONG]))
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=ROOT / "benchmarks/data/silicon_sample_validate.csv")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--engine-version", default="1.0.0rc3")
    ap.add_argument("--max-concurrency", type=int, default=32)
    a = ap.parse_args()
    with a.csv.open() as f:
        rows = list(csv.DictReader(f))
    print("| model | groups | min | median | max |")
    print("|---|---:|---:|---:|---:|")
    for model, s in sorted(group_slopes(rows, a.hardware, a.engine_version, a.max_concurrency).items()):
        v = np.array(s)
        print(f"| {model} | {len(v)} | {v.min():.2f} | {np.median(v):.2f} | {v.max():.2f} |")


if __name__ == "__main__":
    main()

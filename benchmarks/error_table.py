"""Side-by-side error tables of `fleetplan validate` runs, per system, engine, mode and dense/MoE.

    fleetplan validate benchmarks/data/silicon_sample_validate.csv --format json --out before.json
    ... change the model ...
    fleetplan validate benchmarks/data/silicon_sample_validate.csv --format json --out after.json
    python benchmarks/error_table.py before.json after.json [--by-dp]

Prints one markdown table: median |error| of TTFT and TPOT per group in each run, and whether the
group is fitted (h100-sxm dense rows, the only rows benchmarks/calibrate.py fits on) or held out.
The runs are matched by their rows' source id, so a regenerated CSV (e.g. other concurrencies)
still lines up. `--by-dp` splits each group into rows with and without attention data
parallelism.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from solver.catalog import shipped
from solver.perf.arch import ModelArch

FIT_HARDWARE = "h100-sxm"


def _dense(model: str, cache: dict) -> bool:
    if model not in cache:
        cache[model] = ModelArch.from_card(shipped.model_card(model)).moe_layers == 0
    return cache[model]


def group_errors(doc: dict, by_dp: bool) -> dict[tuple, dict]:
    """Median |% error| of TTFT and TPOT per (hardware, engine, kind[, dp]) of one validate run."""
    cache: dict = {}
    groups: dict[tuple, list] = defaultdict(list)
    for r in doc["rows"]:
        kind = "dense" if _dense(r["model"], cache) else "moe"
        key = (r["hardware"], r["engine"], kind) + ((("dp" if r["dp"] > 1 else "no-dp"),) if by_dp else ())
        groups[key].append(r)
    out = {}
    for key, rs in groups.items():
        e1 = [abs(r["predicted_ttft_ms"] / r["measured_ttft_ms"] - 1) * 100 for r in rs]
        e2 = [abs(r["predicted_tpot_ms"] / r["measured_tpot_ms"] - 1) * 100 for r in rs]
        out[key] = dict(rows=len(rs), ttft=float(np.median(e1)), tpot=float(np.median(e2)))
    return out


def render(runs: list[tuple[str, dict]], by_dp: bool) -> str:
    tables = [group_errors(doc, by_dp) for _, doc in runs]
    keys = sorted(set().union(*tables))
    head = ["hardware", "engine", "models"] + (["dp"] if by_dp else []) + ["fitted"]
    for name, _ in runs:
        head += [f"{name} rows", f"{name} TTFT", f"{name} TPOT"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        fitted = "fitted" if (k[0] == FIT_HARDWARE and k[2] == "dense") else "held out"
        cells = list(k) + [fitted]
        for t in tables:
            g = t.get(k)
            cells += ["-", "-", "-"] if g is None else [str(g["rows"]), f"{g['ttft']:.1f}%", f"{g['tpot']:.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="validate --format json outputs (name = file stem)")
    ap.add_argument("--by-dp", action="store_true")
    a = ap.parse_args()
    runs = [(p.stem, json.loads(p.read_text())) for p in a.runs]
    print(render(runs, a.by_dp))


if __name__ == "__main__":
    main()

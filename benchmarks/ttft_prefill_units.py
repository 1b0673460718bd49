"""Measured TTFT in units of one prompt's prefill pass, per model and concurrency (a diagnostic).

    python benchmarks/ttft_prefill_units.py [--csv benchmarks/data/silicon_sample_validate.csv]
        [--hardware h100-sxm] [--engine trtllm] [--engine-version 1.0.0rc3] [--max-concurrency 64]

For every measured row: p = the performance model's time of ONE prefill pass of one prompt of
the row's input length on the row's plan (`stage_time` of `Load.prefill(1, isl)`, the measured
operator tables, every pipeline stage, no step overhead; it agrees with AIConfigurator's static estimate of the same
pass within 2-9%, benchmarks/replay_accuracy.md), and k = measured TTFT / p. Per (model, C):

- k over the input lengths (median over tp and output lengths): a TTFT made of prefill passes
  alone is k p with k set by the schedule (how many prompts' passes a request waits for), the
  same at every isl and tp when the schedule is; a per-request constant (tokenisation, an eager
  launch, a late first token) shows as k falling with the input length;
- a least-squares line TTFT = a + b p over the group's rows: a, the constant the measurements
  carry, in ms.

Only the measured TTFT and the model's pass time enter; nothing is fitted to the rows.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from solver.accuracy.validate import parse_measured
from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.stages import Load, pass_latency, stage_time
from solver.perf.tables import HardwareTable, Plans, precision_code

ROOT = Path(__file__).resolve().parents[1]


def prefill_pass_ms(rows: list) -> np.ndarray:
    """One prompt's prefill pass (ms) on each row's plan: one vectorised call per (model,
    hardware, precision, engine)."""
    out = np.full(len(rows), np.nan)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        groups[(r.model, r.hardware, r.precision, r.engine)].append(k)
    for (model, hardware, precision, engine), idx in groups.items():
        params = engine_params(engine)
        card = shipped.hardware_card(hardware)
        hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], engine))
        arch = ModelArch.from_card(shipped.model_card(model))
        ints = [rows[k].ints for k in idx]
        code = precision_code(precision)
        plans = Plans.of(
            hw=0,
            tp=[i["tp"] for i in ints],
            pp=[i["pp"] for i in ints],
            ep=[i["ep"] for i in ints],
            dp=[i["dp"] for i in ints],
            batch=[1] * len(ints),
            wprec=code,
            kvprec=code,
        )
        isl = np.array([float(i["input_tokens"]) for i in ints])
        st = stage_time(arch, hw, plans, Load.prefill(np.ones(len(ints)), isl), params)
        out[idx] = (pass_latency(plans, st, params) - params.step_overhead_ms * 1e-3) * 1e3
    return out


def report(rows: list, p_ms: np.ndarray) -> str:
    by: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        by[(r.model, r.ints["concurrency"])].append(k)
    lengths = sorted({r.ints["input_tokens"] for r in rows})
    head = " | ".join(f"k at {n} in" for n in lengths)
    out = [f"| model | C | rows | {head} | a (ms) | b |", "|---|---:|---:|" + "---:|" * (len(lengths) + 2)]
    for (model, c), idx in sorted(by.items()):
        ttft = np.array([rows[k].ttft_ms for k in idx])
        p = p_ms[idx]
        cells = []
        for n in lengths:
            sel = [j for j, k in enumerate(idx) if rows[k].ints["input_tokens"] == n]
            cells.append(f"{np.median(ttft[sel] / p[sel]):.2f}" if sel else "-")
        b, a = np.polyfit(p, ttft, 1) if len(set(p.round(3))) > 1 else (np.nan, np.nan)
        out.append(f"| {model} | {c} | {len(idx)} | " + " | ".join(cells) + f" | {a:.0f} | {b:.2f} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=ROOT / "benchmarks" / "data" / "silicon_sample_validate.csv")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--engine", default="trtllm")
    ap.add_argument("--engine-version", default="1.0.0rc3")
    ap.add_argument("--max-concurrency", type=int, default=64)
    a = ap.parse_args()
    _, rows = parse_measured(str(a.csv), a.csv.read_text())
    rows = [
        r
        for r in rows
        if r.hardware == a.hardware
        and r.engine == a.engine
        and r.raw.get("engine_version") == a.engine_version
        and r.ints["concurrency"] <= a.max_concurrency
        and r.raw.get("mode", "colocated") == "colocated"
    ]
    print(report(rows, prefill_pass_ms(rows)))


if __name__ == "__main__":
    main()

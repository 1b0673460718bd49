"""Replay vs closed form on the measured sample: median |error| per system, engine, mode and
dense/MoE, for TTFT and TPOT, side by side.

    python benchmarks/replay_accuracy.py [--csv benchmarks/data/silicon_sample_validate.csv]
        [--hardware h100-sxm] [--statistic mean|median] [--slowdown 1.0|calibrated] [--out FILE.md]
        [--before OLD.md]
    python benchmarks/replay_accuracy.py --disagg benchmarks/data/silicon_sample_disagg_validate.csv
        [--max-concurrency 64] [--every 3] [--out FILE.md]

Each row is predicted by `solver.accuracy.validate.predict_rows` (closed form) and by
`solver.accuracy.replay_rows.replay_rows` (the row's benchmark replayed on one simulated
instance), with the shipped calibrations. Only the h100-sxm rows are the calibration's fitted
rows; the others are held out. `--disagg`: the disaggregated rows instead, closed form
(solver/accuracy/closed_disagg.py) and replay, on h100-sxm, h200-sxm and b200, at most
`--max-concurrency` clients, every `--every`-th row (a replay of 10 x C requests over prefill
and decode pools costs seconds per row). Prints (and writes with --out) a markdown table and the replay's
wall time. `--before OLD.md` (a table this script wrote earlier, e.g. with the previous
calibrations) adds a second table: each group's four numbers then and now side by side.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from solver.accuracy.closed_disagg import closed_form_disagg
from solver.accuracy.disagg_rows import parse_disagg
from solver.accuracy.replay_disagg import replay_disagg
from solver.accuracy.replay_rows import replay_rows
from solver.accuracy.validate import parse_measured, predict_rows
from solver.catalog import shipped

FIT_HARDWARE = "h100-sxm"


def _med(pred: np.ndarray, meas: np.ndarray) -> float:
    return float(np.nanmedian(np.abs(pred / meas - 1.0)) * 100.0)


def table(rows, cf: tuple, rp: tuple) -> str:
    meas = (np.array([r.ttft_ms for r in rows]), np.array([r.tpot_ms for r in rows]))
    groups: dict[tuple, list[int]] = defaultdict(list)
    moe: dict[str, bool] = {}
    for k, r in enumerate(rows):
        if r.model not in moe:
            moe[r.model] = shipped.model_card(r.model).moe is not None
        key = (r.hardware, r.engine or "-", r.raw.get("mode", "colocated"), "MoE" if moe[r.model] else "dense")
        groups[key].append(k)
        groups[(r.hardware, "all", "all", "all")].append(k)
    out = ["| system | engine | mode | models | rows | TTFT closed-form | TTFT replay | TPOT closed-form | TPOT replay |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    done = np.isfinite(rp[0])  # rows validate cannot predict (solver/accuracy/validate.py) count in none
    for key in sorted(groups, key=lambda k: (k[0], k[1] == "all", k)):
        i = np.array([k for k in groups[key] if done[k]])
        if not len(i):
            continue
        fit = " (fitted)" if key[0] == FIT_HARDWARE else ""
        cells = [_med(p[0][i], meas[0][i]) for p in (cf, rp)] + [_med(p[1][i], meas[1][i]) for p in (cf, rp)]
        out.append(f"| {key[0]}{fit} | {key[1]} | {key[2]} | {key[3]} | {len(i)} | "
                   + " | ".join(f"{c:.1f}%" for c in cells) + " |")
    return "\n".join(out) + "\n"


def _cells(text: str) -> dict[tuple, list[str]]:
    """The groups of a table `table` wrote: (system, engine, mode, models) -> its four numbers."""
    out = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) == 9 and cols[4].isdigit():
            out[(cols[0].replace(" (fitted)", ""), *cols[1:4])] = [cols[4], *cols[5:]]
    return out


def before_after(before: str, after: str) -> str:
    """Old and new numbers of every group in both tables (`_cells`), side by side."""
    old, new = _cells(before), _cells(after)
    out = ["| system | engine | mode | models | rows | TTFT closed-form (old -> new) | TTFT replay (old -> new) "
           "| TPOT closed-form (old -> new) | TPOT replay (old -> new) |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for key, n in new.items():
        o = old.get(key)
        if o is None:
            continue
        fit = " (fitted)" if key[0] == FIT_HARDWARE else ""
        out.append(f"| {key[0]}{fit} | {key[1]} | {key[2]} | {key[3]} | {n[0]} | "
                   + " | ".join(f"{a} -> {b}" for a, b in zip(o[1:], n[1:])) + " |")
    return "\n".join(out) + "\n"


def disagg_table(path: Path, max_conc: int, every: int) -> str:
    rows = [r for r in parse_disagg(str(path), path.read_text())
            if r.raw["hardware"] in ("h100-sxm", "h200-sxm", "b200") and r.ints["concurrency"] <= max_conc][::every]
    cf = closed_form_disagg(str(path), rows)
    t0 = time.perf_counter()
    rp = replay_disagg(str(path), rows)
    wall = time.perf_counter() - t0
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        groups[(r.raw["hardware"], r.raw.get("engine") or "-")].append(k)
        groups[(r.raw["hardware"], "all")].append(k)
        groups[("all", "all")].append(k)
    meas = (np.array([r.ttft_ms for r in rows]), np.array([r.tpot_ms for r in rows]))
    out = [f"{len(rows)} disaggregated rows of {path.name} (<= {max_conc} clients, every {every}th): "
           f"replay {wall:.0f} s wall\n",
           "| system | engine | rows | TTFT closed-form | TTFT replay | TTFT replay signed | TPOT closed-form "
           "| TPOT replay | TPOT replay signed |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key in sorted(groups, key=lambda k: (k[0] == "all", k[0], k[1] == "all", k)):
        i = np.array(groups[key])
        cells = []
        for m in range(2):
            cells += [f"{_med(cf[m][i], meas[m][i]):.1f}%", f"{_med(rp[m][i], meas[m][i]):.1f}%",
                      f"{np.nanmedian(rp[m][i] / meas[m][i] - 1) * 100:+.1f}%"]
        out.append(f"| {key[0]} | {key[1]} | {len(i)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=Path(__file__).parent / "data" / "silicon_sample_validate.csv")
    ap.add_argument("--hardware", default=None, help="only this hardware's rows")
    ap.add_argument("--statistic", choices=["mean", "median"], default="mean")
    ap.add_argument("--slowdown", default="1.0", help="mixed-batch slowdown of the replay: a number or 'calibrated'")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--before", type=Path, default=None, help="a table this script wrote before: old vs new")
    ap.add_argument("--disagg", type=Path, default=None, help="a disaggregated CSV (silicon_disagg_to_validate.py)")
    ap.add_argument("--max-concurrency", type=int, default=64)
    ap.add_argument("--every", type=int, default=3)
    a = ap.parse_args()
    if a.disagg:
        text = disagg_table(a.disagg, a.max_concurrency, a.every)
        print(text)
        if a.out:
            a.out.write_text(text)
        return
    _, rows = parse_measured(str(a.csv), a.csv.read_text())
    if a.hardware:
        rows = [r for r in rows if r.hardware == a.hardware]
    cf = predict_rows(str(a.csv), rows)
    t0 = time.perf_counter()
    slowdown = None if a.slowdown == "calibrated" else float(a.slowdown)
    rp = replay_rows(str(a.csv), rows, statistic=a.statistic, slowdown=slowdown)
    wall = time.perf_counter() - t0
    skipped = int((~np.isfinite(rp[0])).sum())
    text = (f"{len(rows)} rows of {a.csv.name} ({skipped} not predicted: speculative decoding at an "
            f"unrecorded acceptance rate, or no request finished); replay ({a.statistic} over requests, mixed-batch slowdown "
            f"{a.slowdown}): {wall:.0f} s wall\n\n" + table(rows, cf, rp))
    if a.before:
        text += f"\nBefore ({a.before.name}) and now:\n\n" + before_after(a.before.read_text(), text)
    print(text)
    if a.out:
        a.out.write_text(text)


if __name__ == "__main__":
    main()

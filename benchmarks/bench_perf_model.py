"""Benchmark: 1,000,000 candidate rows through the full performance model.

Target (issue): <= 10 s wall and <= 1.5 GiB peak RSS on a 2-core machine.

Rows are llama-3.1-70b plans over every shipped hardware card, tp in {1, 2, 4, 8}, pp in
{1, 2, 4, 8}, weight precision bf16 / fp8 / fp4 with a bf16 or same-precision KV cache, and
batch sizes; half are prefill rows, half decode rows, spread over four workloads
(input/output tokens). Each row goes through validity, memory, the stage latencies and the
runtime role (prefill: M/D/1 TTFT and the utilisation solve; decode: TPOT) and the SLO check
(Slo(ttft_p50_ms=1000, tpot_p50_ms=50, safety_margin=0.05)).

`Workload` holds scalar token lengths, so rows are evaluated in blocks of one (workload, role)
each, further cut to at most --block rows (default 125,000: one block per workload and role),
which also bounds the temporaries' memory.

    .venv/bin/python benchmarks/bench_perf_model.py [--rows N] [--block N] [--workloads N] [--profile]
        [--model llama-4-maverick --routing hottest:7%]

With a mixture-of-experts `--model`, rows also draw ep in {1, 8, 16, 32} and attention dp in
{1, 2, 4} (ep must divide tp x dp, so many rows are invalid and still evaluated), and
`--routing` (as `estimate --routing`) sets the routing over the experts.

`--workloads 1 --block 1000000` evaluates the rows as two unchunked blocks of 500,000 (one
prefill_role call, one decode_role call), the worst case for peak memory.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import sys
import time

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params as _engine_params
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch

ENGINE = _engine_params("vllm")
from solver.catalog.calibration import engine_params
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans
from solver.perf.validity import valid_mask
from solver.schema.routing import Routing

MODEL = "llama-3.1-70b"
WORKLOADS = ((512.0, 128.0), (2048.0, 150.0), (4096.0, 256.0), (8192.0, 512.0))
TP = np.array([1, 2, 4, 8])
PP = np.array([1, 2, 4, 8])
PREFILL_BATCH = np.array([1, 2, 4, 8, 16, 32])
DECODE_BATCH = np.array([1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512])
SLO = rt.Slo(ttft_p50_ms=1000.0, tpot_p50_ms=50.0, safety_margin=0.05)


EP = np.array([1, 8, 16, 32])
DP = np.array([1, 2, 4])


def build_rows(
    n_rows: int, n_hw: int, workloads=WORKLOADS, seed: int = 0, moe: bool = False
) -> list[tuple[str, tuple[float, float], Plans]]:
    """(role, workload, plans) blocks: n_rows in all, half prefill, half decode."""
    rng = np.random.default_rng(seed)
    blocks = []
    per = n_rows // (2 * len(workloads))
    sizes = [per] * (2 * len(workloads))
    sizes[-1] += n_rows - per * 2 * len(workloads)
    k = 0
    for wl in workloads:
        for role, batches in (("prefill", PREFILL_BATCH), ("decode", DECODE_BATCH)):
            n = sizes[k]
            k += 1
            wprec = rng.integers(0, 3, n)
            kvprec = np.where(rng.random(n) < 0.5, 0, wprec)
            plans = Plans(
                hw=rng.integers(0, n_hw, n),
                tp=TP[rng.integers(0, len(TP), n)],
                pp=PP[rng.integers(0, len(PP), n)],
                ep=EP[rng.integers(0, len(EP), n)] if moe else np.ones(n, dtype=int),
                dp=DP[rng.integers(0, len(DP), n)] if moe else np.ones(n, dtype=int),
                batch=batches[rng.integers(0, len(batches), n)].astype(float),
                wprec=wprec,
                kvprec=kvprec,
            )
            blocks.append((role, wl, plans))
    return blocks


PREDICTED = ("prefill_ms", "decode_step_ms", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
             "tpot_p99_ms", "capacity_qps", "tokens_per_s", "utilization")


def evaluate(arch: ModelArch, hw: HardwareTable, blocks, block_rows: int,
             keep: dict[str, list] | None = None) -> dict[str, int]:
    """Counts of valid / fitting / SLO-meeting rows; with `keep`, each predicted array too."""
    counts = {"rows": 0, "valid": 0, "fits": 0, "slo_ok": 0, "feasible": 0}
    for role, (s, o), plans in blocks:
        wl = rt.Workload(s, o)
        for start in range(0, len(plans), block_rows):
            p = plans.take(np.arange(start, min(start + block_rows, len(plans))))
            valid = valid_mask(arch, p)
            fn = rt.prefill_role if role == "prefill" else rt.decode_role
            r = fn(arch, hw, p, wl, SLO, ENGINE)
            feasible = r.feasible & valid
            counts["rows"] += len(p)
            counts["valid"] += int(valid.sum())
            counts["fits"] += int((r.fits & valid).sum())
            counts["slo_ok"] += int((r.slo_ok & valid).sum())
            counts["feasible"] += int(feasible.sum())
            if keep is not None:
                for name in PREDICTED:
                    keep.setdefault(name, []).append(np.asarray(getattr(r, name), dtype=float))
                keep.setdefault("memory_gib", []).append(r.memory.total_gib)
                keep.setdefault("feasible", []).append(feasible)
    return counts


def peak_rss_gib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / 1024.0**2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--block", type=int, default=125_000, help="rows per evaluation block")
    ap.add_argument("--workloads", type=int, default=len(WORKLOADS), choices=range(1, len(WORKLOADS) + 1),
                    help="use the first N (input, output) workloads (1: two blocks of rows/2)")
    ap.add_argument("--profile", action="store_true", help="cProfile the evaluation")
    ap.add_argument("--roofline-only", action="store_true", help="without measured tables")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--routing", default=None, help="MoE routing spec, as estimate --routing")
    ap.add_argument("--dump", metavar="FILE.npz", default=None,
                    help="also write every predicted array (for before/after comparisons)")
    a = ap.parse_args(argv)

    t0 = time.perf_counter()
    routing = Routing.from_spec(a.routing) if a.routing else None
    arch = ModelArch.from_card(shipped.model_card(a.model)).with_routing(routing)
    names = shipped.names("hardware")
    cards = [shipped.hardware_card(n) for n in names]
    # the full model: the vLLM calibration and measured tables (H100/H200), roofline elsewhere
    hw = HardwareTable.from_cards(
        cards, engine=engine_params("vllm"),
        profiles=None if a.roofline_only else measured_tables(cards, "vllm"),
    )
    blocks = build_rows(a.rows, len(hw), WORKLOADS[: a.workloads], moe=arch.moe_layers > 0)
    t1 = time.perf_counter()
    prof = cProfile.Profile() if a.profile else None
    if prof:
        prof.enable()
    keep: dict[str, list] | None = {} if a.dump else None
    counts = evaluate(arch, hw, blocks, a.block, keep)
    if prof:
        prof.disable()
    t2 = time.perf_counter()

    routed = f" (routing: {arch.expert_routing.description})" if arch.moe_layers else ""
    print(f"model            {a.model}{routed}")
    print(f"hardware         {len(hw)} cards: {', '.join(names)}")
    print(f"rows             {counts['rows']:,} (prefill {sum(len(p) for r, _, p in blocks if r == 'prefill'):,}, "
          f"decode {sum(len(p) for r, _, p in blocks if r == 'decode'):,}); block {a.block:,} rows")
    print(f"valid            {counts['valid']:,}")
    print(f"fit in memory    {counts['fits']:,}")
    print(f"meet SLO         {counts['slo_ok']:,}")
    print(f"feasible         {counts['feasible']:,}")
    print(f"build rows s     {t1 - t0:.3f}")
    print(f"evaluate s       {t2 - t1:.3f}")
    print(f"total s          {t2 - t0:.3f}")
    print(f"peak RSS GiB     {peak_rss_gib():.3f}")
    print(f"rows per second  {counts['rows'] / (t2 - t1):,.0f}")
    ok = (t2 - t0) <= 10.0 and peak_rss_gib() <= 1.5
    print(f"target (<= 10 s, <= 1.5 GiB): {'met' if ok else 'MISSED'}")
    if keep is not None:
        np.savez_compressed(a.dump, **{k: np.concatenate(v) for k, v in keep.items()})
        print(f"predictions      {a.dump}")
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(20)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Demand over time: speed and direction checks of the fleet over periods (benchmarks/multiperiod.md).

    python benchmarks/bench_multiperiod.py speed [--week [--no-day]]  # 24-period day and/or 168-period week
    python benchmarks/bench_multiperiod.py premium            # the ServeGen 14 days, premium swept

Speed: three services (the shipped three-services problem's chat, autocomplete and summarise,
without its budget) on four hardware types (H100 and H200 committed or on demand, MI300X and
A100 on demand only), each service's demand the ServeGen m-large hourly profile scaled to its
mean and shifted by a day per service (traces/servegen-m-large-rate.csv). CPU time is user+sys of
this process (CP-SAT's threads included), for the candidates, the model and the solve.

Premium: one service on H100s (committed $2.49/device-hour, on demand $2.49 x premium) over the
14 days in hourly periods; against the cheapest plan that commits for the peak (no on-demand).
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solver.candidates.build import build_candidates  # noqa: E402
from solver.fleet.options import SolveOptions  # noqa: E402
from solver.fleet.periods import build_period_instance  # noqa: E402
from solver.fleet.periods_solve import solve_periods  # noqa: E402
from solver.problem.load import parse_problem  # noqa: E402

RATE = ROOT / "traces" / "servegen-m-large-rate.csv"
SERVICES = {  # name: (model, precision, mean QPS, input, output, ttft p50/p99, tpot p50/p99, context)
    "chat": ("llama-3.1-70b", "fp8", 150, 2048, 150, (600, 1500), (35, 60), 8192),
    "autocomplete": ("llama-3.1-8b", "fp8", 800, 512, 32, (100, 250), (15, 25), 4096),
    "summarise": ("qwen3-32b", "bf16", 40, 6000, 400, (2000, 6000), (50, None), 16384),
}
HARDWARE = [  # committed price: Lambda's posted prices as the cards' alternatives; on demand: the cards'
    {"type": "h100-sxm", "committed": {"price_per_hour": 2.49}, "on_demand": {"price_per_hour": 4.25}},
    {"type": "h200-sxm", "committed": {"price_per_hour": 3.19}, "on_demand": {"price_per_hour": 4.54}},
    {"type": "mi300x"},
    {"type": "a100-sxm"},
]


def cpu() -> float:
    """user+sys of this process and its finished children (the box search's worker processes,
    solver/fleet/pool.py, which end with each solve)."""
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def rates() -> tuple[np.ndarray, np.ndarray]:
    with open(RATE) as fh:
        rows = list(csv.DictReader(fh))
    return np.array([float(r["time_s"]) for r in rows]), np.array([float(r["requests_per_s"]) for r in rows])


def points(mean_qps: float, shift_days: int, hours: int) -> list[dict]:
    """The profile scaled to `mean_qps` over its 14 days, starting `shift_days` in (wrapping)."""
    t, r = rates()
    step = t[1] - t[0]
    k0 = int(shift_days * 86400 / step)
    n = int(hours * 3600 / step)
    idx = (np.arange(n) + k0) % t.size
    scale = mean_qps / r.mean()
    return [{"time_s": float(i * step), "requests_per_s": round(float(r[j] * scale), 4)} for i, j in enumerate(idx)]


def service(name: str, shift: int, hours: int) -> dict:
    model, prec, qps, inp, out, ttft, tpot, ctx = SERVICES[name]
    slo = {"ttft_ms": {"p50": ttft[0], "p99": ttft[1]},
           "tpot_ms": {"p50": tpot[0]} if tpot[1] is None else {"p50": tpot[0], "p99": tpot[1]}}
    return {"name": name, "model": model, "precision": prec,
            "workload": {"input_tokens": inp, "output_tokens": out, "max_context": ctx},
            "demand_profile": {"points": points(qps, shift, hours)}, "slo": slo}


def speed_problem(hours: int) -> dict:
    return {"name": f"bench-{hours}h", "objective": "min_cost",
            "services": [service(n, k, hours) for k, n in enumerate(SERVICES)], "hardware": HARDWARE,
            "software": {"engine": "vllm"},
            "constraints": {"prefill_decode_ratio": {"max": 5}},
            "periods": {"length_h": 1, "horizon_h": hours}}


def run(doc: dict, opts: SolveOptions) -> dict:
    c0 = cpu()
    rp = parse_problem(yaml.safe_dump(doc, sort_keys=False), f"<{doc['name']}>")
    cs = build_candidates(rp)
    pi = build_period_instance(rp, cs)
    c1, w1 = cpu(), time.monotonic()
    sol = solve_periods(pi, opts)
    c2, w2 = cpu(), time.monotonic()
    names = pi.base.hw_names
    return {"periods": pi.n_periods, "columns": len(pi.base), "cpu_build_s": round(c1 - c0, 1),
            "cpu_solve_s": round(c2 - c1, 1), "wall_solve_s": round(w2 - w1, 1), "status": None if sol is None else str(sol.status),
            "gap": None if sol is None else round(sol.gap, 5),
            "cost_usd": None if sol is None else round(sol.cost_usd, 2),
            "committed": None if sol is None else {names[h]: x for h, x in sol.committed.items()},
            "stages": None if sol is None else [(s.name, str(s.status)) for s in sol.stages],
            "hint_solves": None if sol is None else sol.hint_solves,
            "peak_devices": None if sol is None else int((sol.counts @ pi.base.devices).max())}


def premium_problem(premium: float | None, hours: int) -> dict:
    """One service of the ServeGen profile as is on H100s; premium None: committed only."""
    h100 = {"type": "h100-sxm", "committed": {"price_per_hour": 2.49}}
    if premium is not None:
        h100["on_demand"] = {"price_per_hour": round(2.49 * premium, 4)}
    return {"name": "premium", "objective": "min_cost",
            "services": [{"name": "chat", "model": "llama-3.1-8b", "precision": "fp8",
                          "workload": {"input_tokens": 914, "output_tokens": 155, "max_context": 8192},
                          "demand_profile": "servegen-m-large-rate",
                          "slo": {"ttft_ms": {"p50": 400, "p99": 1500}, "tpot_ms": {"p50": 30, "p99": 50}}}],
            "hardware": [h100], "software": {"engine": "vllm"},
            "periods": {"length_h": 1, "horizon_h": hours}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["speed", "premium"])
    ap.add_argument("--week", action="store_true")
    ap.add_argument("--no-day", action="store_true", help="with --week: the week only")
    ap.add_argument("--hours", type=int, default=336)
    a = ap.parse_args()
    print(f"cores: {os.cpu_count()}", flush=True)
    if a.what == "speed":
        if not a.no_day:
            print("day", run(speed_problem(24), SolveOptions(time_limit_s=60)), flush=True)
        if a.week:
            print("week", run(speed_problem(168), SolveOptions(time_limit_s=300, relative_gap=0.01)), flush=True)
        return
    base = run(premium_problem(None, a.hours), SolveOptions(time_limit_s=90, relative_gap=0.005))
    print("peak-commit", base, flush=True)
    for premium in (3.0, 2.0, 1.5, 1.2):
        r = run(premium_problem(premium, a.hours), SolveOptions(time_limit_s=90, relative_gap=0.005))
        print(f"premium {premium}", r, flush=True)


if __name__ == "__main__":
    main()

"""The three-service day's committed line by services (issue 17 point 5, a diagnostic; results in
benchmarks/multiperiod.md).

With no row shared by the services, a period's cost at a committed vector C is exactly the least
sum of each service's own cost with c_s committed devices free, over splits c_1 + c_2 + c_3 <= C.
With one committed type (H100; H200 either rented at its on-demand price, i.e. C_H200 = 0, or with
`--h200-at-committed` bought per period at the committed price, which relaxes the one shared
H200 level into one per period: a lower bound for every C_H200), a service's cost as a function
of its free devices is fixed by its Pareto plans (H100 devices, cost of the rest), found by
single-service solves with a cap on H100 devices (the next cap is the found plan's usage less
one). Then T(C) for every C_H100 is a min-plus convolution per period and a sum over periods.

    python benchmarks/periods_by_service.py [--h200-at-committed]
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
from pathlib import Path

import numpy as np
import yaml
from ortools.sat.python import cp_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_multiperiod import speed_problem  # noqa: E402

from solver.candidates.build import build_candidates  # noqa: E402
from solver.fleet.build import build_model  # noqa: E402
from solver.fleet.cpsat import make_solver  # noqa: E402
from solver.fleet.objective import cost_expr  # noqa: E402
from solver.fleet.options import SolveOptions  # noqa: E402
from solver.fleet.periods import build_period_instance  # noqa: E402
from solver.fleet.periods_lagrange import linear_costs  # noqa: E402
from solver.fleet.standalone import sub_instance  # noqa: E402
from solver.problem.load import parse_problem  # noqa: E402

NEVER = 10**9  # an H200 price above its on-demand one: linear_costs then prices it on demand


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def frontier(sub, h100: int) -> tuple[list[tuple[int, int]], int]:
    """(H100 devices, rest cost per hour) of the service's Pareto plans; and the unproven solves."""
    at, cap, pts, unproven = sub.hw == h100, None, [], 0
    while True:
        fm = build_model(sub)
        if cap is not None:
            fm.m.add(sum(int(d) * fm.v.n[j] for j, d in enumerate(sub.devices) if at[j]) <= cap)
        fm.m.minimize(cost_expr(fm))
        sv = make_solver(SolveOptions(seed=0), 60.0, 5.0, alone=True)
        status = sv.solve(fm.m)
        if status == cp_model.INFEASIBLE:
            return pts, unproven
        unproven += status != cp_model.OPTIMAL
        n = np.array([sv.value(v) for v in fm.v.n])
        used = int(np.sum(n * sub.devices * at))
        pts.append((used, int(round(sv.objective_value))))
        if used == 0:
            return pts, unproven
        cap = used - 1


def free_cost(pts: list, od: int, top: int) -> np.ndarray:
    """A service's cost per hour with c = 0..top H100 free: its best Pareto plan, the rest rented."""
    c = np.arange(top + 1)
    used = np.array([u for u, _ in pts])
    rest = np.array([r for _, r in pts], dtype=float)
    return np.min(rest[:, None] + od * np.maximum(used[:, None] - c[None, :], 0), axis=0)


def min_plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.full(a.size, np.inf)
    for i in range(a.size):
        out[i:] = np.minimum(out[i:], a[i] + b[: a.size - i])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--h200-at-committed", action="store_true")
    a = ap.parse_args()
    rp = parse_problem(yaml.safe_dump(speed_problem(24), sort_keys=False), "<day>")
    pi = build_period_instance(rp, build_candidates(rp))
    h100, h200 = (pi.base.hw_names.index(x) for x in ("h100-sxm", "h200-sxm"))
    od, cp_h100 = int(pi.on_demand_price[h100]), int(pi.committed_price[h100])
    h200_price = int(pi.committed_price[h200]) if a.h200_at_committed else NEVER
    top, c0, solves, unproven = 300, cpu(), 0, 0
    total = np.zeros(top + 1)
    for p in range(pi.n_periods):
        inst = pi.bounded(pi.periods[p])
        inst = dataclasses.replace(inst, cost=linear_costs(pi, [h100, h200], np.array([0, h200_price])))
        g, sizes = None, []
        for s in range(len(inst.services)):
            pts, bad = frontier(sub_instance(inst, s), h100)
            solves, unproven, sizes = solves + len(pts) + 1, unproven + bad, sizes + [len(pts)]
            f = free_cost(pts, od, top)
            g = f if g is None else min_plus(g, f)
        total += np.minimum.accumulate(g) * pi.seconds[p] / 3600
        print(f"hour {p}: Pareto plans per service {sizes}, CPU {cpu() - c0:.1f} s", flush=True)
    usd = (total + cp_h100 * np.arange(top + 1) * pi.horizon_s / 3600) * 1e-4
    best = int(np.argmin(usd))
    print(f"solves {solves}, unproven {unproven}, CPU {cpu() - c0:.1f} s")
    print(f"least over C_H100: {best} H100, ${usd[best]:,.2f}")
    print("C_H100 -> $: " + ", ".join(f"{c}: {usd[c]:,.2f}" for c in range(max(0, best - 8), best + 9)))


if __name__ == "__main__":
    main()

"""How far the committed price split can bound the three-service day (issue 17 point 5, a
diagnostic; results in benchmarks/multiperiod.md).

Runs `solver.fleet.periods_lagrange.Lagrange.search` on the day instance of
`bench_multiperiod.py speed` with many more subgradient steps than the solver's time limit buys,
aimed at the best plan known (`--target`, USD; default $6,425.51, the least of
`periods_by_service.py` along C_H200 = 0), and prints the bound it stalls at and, per period,
the committed levels C'_k of that period's plan at the best split: the levels each period would
commit on its own at its share of the committed price. Where they differ between periods the
split cannot close the gap to one shared committed vector; a proof must then branch on the
vector itself.

    python benchmarks/periods_dual.py [--steps 40] [--aim 0.02] [--target 6425.51]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_multiperiod import speed_problem  # noqa: E402

from solver.candidates.build import build_candidates  # noqa: E402
from solver.fleet import periods_commit as commit  # noqa: E402
from solver.fleet import periods_lagrange  # noqa: E402
from solver.fleet.options import SolveOptions  # noqa: E402
from solver.fleet.periods import build_period_instance  # noqa: E402
from solver.fleet.pool import Pool  # noqa: E402
from solver.problem.load import parse_problem  # noqa: E402

UNITS_PER_USD = 1e4 * 3600  # objective units (1e-4 USD per hour, times seconds) per USD


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--aim", type=float, default=periods_lagrange.AIM, help="Polyak's aim above the bound")
    ap.add_argument("--target", type=float, default=6425.51, help="the best plan known, USD")
    a = ap.parse_args()
    periods_lagrange.AIM = a.aim
    rp = parse_problem(yaml.safe_dump(speed_problem(24), sort_keys=False), "<day>")
    pi = build_period_instance(rp, build_candidates(rp))
    types = sorted(commit.all_level_ranges(pi))
    names = [pi.base.hw_names[h] for h in types]
    c0, w0 = cpu(), time.monotonic()
    with Pool(2) as pool:
        lg = periods_lagrange.Lagrange(pi, types, commit.period_groups(pi), SolveOptions(seed=0, time_limit_s=60),
                                       pool)
        split = lg.search(a.target * UNITS_PER_USD, steps=a.steps)
        levels = lg.periods(split.prices)[2]
    bound = split.bound / UNITS_PER_USD
    print(f"{a.steps} steps (aim {a.aim:g}): bound ${bound:,.2f}, {(a.target - bound) / a.target:.2%} below "
          f"${a.target:,.2f}; {split.evaluations} evaluations, {lg.work:.1f} deterministic units, "
          f"CPU {cpu() - c0:.1f} s, wall {time.monotonic() - w0:.1f} s")
    print("period: committed price USD/device-hour, its plan's levels C'_k (" + ", ".join(names) + ")")
    for k, g in enumerate(lg.groups):
        prices = ", ".join(f"{x * 1e-4:.3f}" for x in split.prices[k])
        print(f"{g}: {prices}; " + ", ".join(f"{int(x)}" for x in levels[k]))
    for i, n in enumerate(names):
        print(f"{n}: levels {int(levels[:, i].min())}-{int(levels[:, i].max())} over the periods")


if __name__ == "__main__":
    main()

"""Leave-one-out error of the profile interpolation, per shipped table.

    python benchmarks/profiles_loo.py [--root DIR] [--family gemm ...] [--per-axis] [--json]

Every interior measured point (measured neighbours on both sides along an axis) is dropped and
predicted from its neighbours by the interpolator (piecewise-linear in log-log space); the
table prints the absolute relative error's median, mean and 90th percentile per table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver.perf.operators.tables import load_tables
from solver.profiles.format import available, default_root  # noqa: E402
from solver.profiles.loo import leave_one_out  # noqa: E402
from solver.profiles.operators import OperatorProfiles  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="profiles root (default: FLEETPLAN_PROFILES or the shipped ones)")
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--per-axis", action="store_true", help="also one line per axis")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    root = Path(a.root) if a.root else default_root()
    rows = []
    loaded: dict[tuple[str, str], OperatorProfiles] = {}
    for hw, fw, family in available(root):
        if a.family and family not in a.family:
            continue
        prof = loaded.get((hw, fw)) or load_tables(hw, fw, root=root)
        loaded[(hw, fw)] = prof
        t0 = time.perf_counter()
        res = leave_one_out(prof.tables[family])
        wall = time.perf_counter() - t0
        rows.append({"hardware": hw, "framework": fw, "family": family, "axis": "all",
                     **res.stats(), "wall_s": wall})
        if a.per_axis:
            for axis in res.errors:
                rows.append({"hardware": hw, "framework": fw, "family": family, "axis": axis,
                             **res.stats(axis), "wall_s": None})
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"leave-one-out |predicted/measured - 1| on {root}")
    head = f"{'hardware':<10} {'framework':<9} {'family':<21} {'axis':<13} {'points':>7} " \
           f"{'median':>7} {'mean':>7} {'p90':>7} {'max':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        if r["points"] == 0:
            print(f"{r['hardware']:<10} {r['framework']:<9} {r['family']:<21} {r['axis']:<13} "
                  f"{0:>7}       -")
            continue
        print(f"{r['hardware']:<10} {r['framework']:<9} {r['family']:<21} {r['axis']:<13} "
              f"{r['points']:>7} {r['median']:>7.2%} {r['mean']:>7.2%} {r['p90']:>7.2%} "
              f"{r['max']:>8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

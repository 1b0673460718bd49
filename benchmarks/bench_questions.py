"""Wall time of the what-if questions (run by hand; results go to the issue note).

    python benchmarks/bench_questions.py [--reps 3] [--points 10]

For each problem: a `--points`-level frontier in-process with the candidate tables built once
(solver/questions), the same levels planned through the full flow each time (candidates rebuilt
per level: what the frontier would cost without reuse), the real `fleetplan frontier` command
in a subprocess (interpreter start-up and imports included), and a default price sweep of the
first hardware type.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver.fleet.solve import SolveOptions  # noqa: E402
from solver.plan.planner import plan  # noqa: E402
from solver.problem.load import derive, load_problem  # noqa: E402
from solver.questions.frontier import frontier  # noqa: E402
from solver.questions.price import price_sweep  # noqa: E402

CASES = ["llama3-70b-online.yaml", "budget-max-throughput.yaml", "llama3-405b-online.yaml"]


def timed(fn, reps: int) -> tuple[float, object]:
    walls, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--points", type=int, default=10)
    a = ap.parse_args()
    opts = SolveOptions()
    for name in CASES:
        path = ROOT / "problems" / name
        rp = load_problem(path)
        reuse_s, doc = timed(lambda: frontier(rp, a.points, None, opts), a.reps)
        scales = [p.traffic_scale for p in doc.points]
        if doc.limit is not None:  # the limit's max_throughput plan and the plan one step beyond
            scales.append(doc.limit.beyond.traffic_scale)

        def full_flow():
            for s in scales:
                plan(derive(rp, demand_scale=s, objective="min_cost"), opts)  # candidates rebuilt
            if doc.limit is not None:
                plan(derive(rp, objective="max_throughput"), opts)

        full_s, _ = timed(full_flow, a.reps)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "solver", "frontier", str(path), "--points",
                            str(a.points)], capture_output=True, text=True, cwd=ROOT)
        cli_s = time.perf_counter() - t0
        if r.returncode not in (0, 1):
            raise SystemExit(f"{name}: exit {r.returncode}: {r.stderr}")
        hw = rp.hardware_names[0]
        sweep_s, sw = timed(lambda: price_sweep(rp, hw, opts=opts), 1)
        print(f"{name}: frontier of {a.points} levels ({doc.solver.solves} plans): "
              f"{reuse_s:.2f} s with the candidates built once ({doc.solver.candidates_build_s:.2f} s "
              f"of it building), {full_s:.2f} s rebuilding per level; `fleetplan frontier` "
              f"{cli_s:.2f} s; price sweep of {hw}: {sweep_s:.2f} s for {sw.solver.solves} plans, "
              f"{len(sw.changes)} changes")


if __name__ == "__main__":
    main()

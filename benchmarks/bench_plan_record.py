"""Where the time of `fleetplan plan` with its decision record goes (run by hand; results go to
the issue note).

    python benchmarks/bench_plan_record.py [--problem problems/llama3-70b-online.yaml] [--reps 3]

In one process, after a warm-up plan (imports, measured tables loaded), times each part of
`solver.decision.record.decide` on its own, wall and CPU seconds (CPU time is what a loaded
machine does not inflate): the candidate build, the plan (CP-SAT, verification, the homogeneous
comparison), the replay of the plan (solver/decision/replayed.py: step-time grids plus the event
loop), and the record's other parts (uncertainty, runners-up, fallback, validity); then the
whole `decide` with and without the replay, and the command itself in a subprocess (its CPU
is the child's user+sys time, imports and process start included).

Measured numbers, before and after the plan-speed work, are in benchmarks/plan_speed.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver.candidates.build import build_candidates  # noqa: E402
from solver.decision.alternatives import fallback, runners_up  # noqa: E402
from solver.decision.bands import plan_uncertainty  # noqa: E402
from solver.decision.record import decide  # noqa: E402
from solver.decision.replayed import Replay  # noqa: E402
from solver.decision.validity import MAX_SOLVES, validity  # noqa: E402
from solver.decision.whatif import what_if_options  # noqa: E402
from solver.fleet.solve import SolveOptions  # noqa: E402
from solver.plan.planner import plan  # noqa: E402
from solver.problem.load import load_problem  # noqa: E402


def timed(fn, reps: int) -> tuple[float, float, object]:
    """(median wall s, median CPU s, last result) over reps calls."""
    walls, cpus, out = [], [], None
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default=str(ROOT / "problems" / "llama3-70b-online.yaml"))
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rp = load_problem(a.problem)
    opts = SolveOptions()
    what_if = what_if_options(opts)
    plan(rp, opts, timings=False)  # warm-up
    rows = []
    w, c, cs = timed(lambda: build_candidates(rp), a.reps)
    rows.append(("candidates", w, c))
    w, c, doc = timed(lambda: plan(rp, opts, False, candidates=cs), a.reps)
    rows.append(("plan (solve, verify, homogeneous comparison)", w, c))
    w, c, _ = timed(lambda: Replay()(rp, doc), a.reps)
    rows.append(("replay of the plan (3,000 requests per service)", w, c))
    w, c, _ = timed(lambda: plan_uncertainty(rp, doc), a.reps)
    rows.append(("uncertainty", w, c))
    w, c, _ = timed(lambda: runners_up(rp, cs, doc, what_if), a.reps)
    rows.append(("runners-up", w, c))
    w, c, _ = timed(lambda: fallback(rp, doc, what_if), a.reps)
    rows.append(("fallback", w, c))
    w, c, _ = timed(lambda: validity(rp, cs, doc, what_if, MAX_SOLVES), a.reps)
    rows.append(("validity", w, c))
    for replay in (False, True):
        w, c, _ = timed(lambda: decide(rp, opts, timings=False, replay=replay), a.reps)
        rows.append((f"decide ({'with' if replay else 'without'} the replay)", w, c))
    walls, cpus = [], []
    for _ in range(a.reps):
        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "solver", "plan", a.problem, "--format", "json"], capture_output=True,
                       check=True, cwd=ROOT)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        walls.append(time.perf_counter() - t0)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    rows.append(("fleetplan plan (subprocess: user+sys)", statistics.median(walls), statistics.median(cpus)))
    print(f"{Path(a.problem).name}, median of {a.reps}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'part':<50} {'wall s':>8} {'CPU s':>8}")
    for name, w, c in rows:
        print(f"{name:<50} {w:>8.2f} {c:>8.2f}")


if __name__ == "__main__":
    main()

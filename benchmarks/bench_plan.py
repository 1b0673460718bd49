"""End-to-end wall time of `fleetplan plan` (run by hand; results go to the issue note).

    python benchmarks/bench_plan.py [--reps 5]

Times the real command in a subprocess (interpreter start-up, imports, candidate evaluation,
CP-SAT, verification, rendering) on:
- the default problem (problems/llama3-70b-online.yaml),
- the AIConfigurator comparison question (benchmarks/problems/aic-70b-h200-16gpu.yaml),
- the 10-service x 6-hardware fleet (benchmarks/problems/fleet-10x6.yaml; target: proven
  optimal within 30 s).
AIConfigurator itself is timed by benchmarks/time_aiconfigurator.sh (a throwaway venv).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ROOT / "problems" / "llama3-70b-online.yaml",
    ROOT / "benchmarks" / "problems" / "aic-70b-h200-16gpu.yaml",
    ROOT / "benchmarks" / "problems" / "fleet-10x6.yaml",
]


def run(path: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "solver", "plan", str(path), "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"{path}: exit {out.returncode}: {out.stderr}")
    return wall, json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    for path in CASES:
        walls = []
        doc: dict = {}
        for _ in range(a.reps):
            w, doc = run(path)
            walls.append(w)
        sv = doc["solver"]
        print(
            f"{path.name}: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, "
            f"max {max(walls):.2f}) over {a.reps} runs; status {doc['status']}, gap {sv['gap']:.4f}, "
            f"{sv['candidates_evaluated']:,} candidates, {sv['candidates_in_model']} in model, "
            f"objective {doc['objective']}, stages {[(s['name'], s['status']) for s in sv['stages']]}"
        )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS of the largest run: {peak:.0f} MiB")


if __name__ == "__main__":
    main()

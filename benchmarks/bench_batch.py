"""`fleetplan batch` on 100 generated problems with --jobs 1 and --jobs 2: wall time, speed-up,
peak memory, and that both runs wrote the same bytes.

    python benchmarks/bench_batch.py [--problems 100] [--jobs 1 2] [--keep DIR]

The problems are variants of five shipped problems (the default 70B online problem, 70B
offline, 405B online, the budget max-throughput problem, the mixed-supply problem), each with
its demand, prices and SLO bounds scaled by seeded random factors (demand 0.5-2x, prices
0.7-1.3x, SLOs 0.8-1.5x) and, for half of the problems with several hardware types, one type
left out. Each run is the real command (`python -m solver batch DIR --out OUT --jobs N
--no-timings --quiet --no-record`; `--record` keeps the decision records) in a subprocess; memory is sampled every 50 ms from /proc over the
command's process tree (the driver, the forkserver and the workers), and also read from
getrusage(RUSAGE_CHILDREN).ru_maxrss (the largest single process reaped), with the CPU seconds
the tree used (also sampled: compare with the wall time to see whether the cores were free;
on a machine shared with other work the speed-up is bounded by the cores left over). Linux
only.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BASES = ["llama3-70b-online", "llama3-70b-offline", "llama3-405b-online", "budget-max-throughput",
         "mixed-supply"]


def _scale_bound(b, f: float):
    if isinstance(b, (int, float)):
        return round(b * f, 1)
    if isinstance(b, dict):
        return {k: round(v * f, 1) for k, v in b.items()}
    return b


def generate(folder: Path, n: int, seed: int = 0) -> list[Path]:
    rng = random.Random(seed)
    bases = {name: yaml.safe_load((ROOT / "problems" / f"{name}.yaml").read_text()) for name in BASES}
    out = []
    for i in range(n):
        name = BASES[i % len(BASES)]
        p = yaml.safe_load(yaml.safe_dump(bases[name]))  # a deep copy
        p["name"] = f"{name}-{i:03d}"
        demand = rng.uniform(0.5, 2.0)
        slo = rng.uniform(0.8, 1.5)
        for s in p["services"]:
            s["workload"]["qps"] = round(s["workload"]["qps"] * demand, 2)
            for k in ("ttft_ms", "tpot_ms"):
                if k in s.get("slo", {}):
                    s["slo"][k] = _scale_bound(s["slo"][k], slo)
        for h in p["hardware"]:
            if "price_per_hour" in h:
                h["price_per_hour"] = round(h["price_per_hour"] * rng.uniform(0.7, 1.3), 3)
        if len(p["hardware"]) > 1 and rng.random() < 0.5 and p.get("objective") != "max_throughput":
            p["hardware"].pop(rng.randrange(len(p["hardware"])))
        path = folder / f"{p['name']}.yaml"
        path.write_text(yaml.safe_dump(p, sort_keys=False))
        out.append(path)
    return out


def _tree(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, stack = [], [root]
    while stack:
        p = stack.pop()
        out.append(p)
        stack += [c for c, pp in parent.items() if pp == p]
    return out


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def run(folder: Path, out: Path, jobs: int, record: bool = False) -> dict:
    cmd = [sys.executable, "-m", "solver", "batch", str(folder), "--out", str(out), "--jobs", str(jobs),
           "--no-timings", "--quiet", "--no-progress"] + ([] if record else ["--no-record"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    peak = {"driver": 0, "others_max": 0, "total": 0, "processes": 0}
    cpu: dict[int, float] = {}  # last CPU seconds seen per process of the tree
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            pids = _tree(proc.pid)
            rss = {p: _rss_kib(p) for p in pids}
            peak["driver"] = max(peak["driver"], rss.get(proc.pid, 0))
            others = [v for p, v in rss.items() if p != proc.pid]
            peak["others_max"] = max([peak["others_max"], *others])
            peak["total"] = max(peak["total"], sum(rss.values()))
            peak["processes"] = max(peak["processes"], len([v for v in rss.values() if v]))
            for p in pids:
                cpu[p] = max(cpu.get(p, 0.0), _cpu_s(p))
            stop.wait(0.05)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"batch failed ({proc.returncode}):\n{stderr}")
    return {"jobs": jobs, "wall_s": wall, "rc": proc.returncode, "summary": stdout.strip().splitlines()[-1],
            "peak_driver_mib": peak["driver"] / 1024, "peak_worker_mib": peak["others_max"] / 1024,
            "peak_tree_mib": peak["total"] / 1024, "processes": peak["processes"],
            "cpu_s": sum(cpu.values()), "load": os.getloadavg()[0]}


def _burn(n: int) -> float:
    x = 0
    for i in range(n):
        x += i * i
    return float(x)


def ceiling(jobs: int, tasks: int = 4, n: int = 10_000_000) -> float:
    """The speed-up this machine gives right now to `jobs` processes of pure Python arithmetic
    (no fleetplan): the most a batch can get from --jobs here."""
    import multiprocessing as mp

    t0 = time.perf_counter()
    for _ in range(tasks):
        _burn(n)
    serial = time.perf_counter() - t0
    with mp.get_context("spawn").Pool(jobs) as pool:
        pool.map(_burn, [1] * jobs)  # started
        t0 = time.perf_counter()
        pool.map(_burn, [n] * tasks)
        parallel = time.perf_counter() - t0
    return serial / parallel


def same_bytes(a: Path, b: Path) -> bool:
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return fa == fb and all((a / p).read_bytes() == (b / p).read_bytes() for p in fa
                            if p.suffix != ".parquet")  # parquet embeds writer metadata


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--keep", type=Path, help="keep the problems and outputs in this folder")
    ap.add_argument("--record", action="store_true",
                    help="with each plan's decision record (as fleetplan plan; a few dozen more "
                    "solves per problem): use fewer --problems")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="bench-batch-"))
    folder = work / "problems"
    folder.mkdir(parents=True, exist_ok=True)
    generate(folder, a.problems)
    print(f"{a.problems} problems in {folder} ({os.cpu_count()} CPUs; decision records "
          f"{'on' if a.record else 'off (--no-record)'})")
    results = []
    for jobs in a.jobs:
        r = run(folder, work / f"out-jobs{jobs}", jobs, a.record)
        results.append(r)
        print(f"--jobs {jobs}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s over the process tree "
              f"(sampled), 1-min load average {r['load']:.1f} at the end; exit {r['rc']} ({r['summary']}); peak RSS: "
              f"driver {r['peak_driver_mib']:.0f} MiB, largest other process {r['peak_worker_mib']:.0f} MiB, "
              f"whole tree {r['peak_tree_mib']:.0f} MiB over {r['processes']} processes")
    base = results[0]
    for r in results[1:]:
        print(f"speed-up --jobs {r['jobs']} vs --jobs {base['jobs']}: {base['wall_s'] / r['wall_s']:.2f}x "
              f"(the machine's ceiling now: {ceiling(r['jobs']):.2f}x for {r['jobs']} processes of pure "
              "arithmetic)")
        same = same_bytes(work / f"out-jobs{base['jobs']}", work / f"out-jobs{r['jobs']}")
        print(f"same bytes (results, records, summaries): {same}")
    ru = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"getrusage(RUSAGE_CHILDREN).ru_maxrss (largest reaped process): {ru:.0f} MiB")


if __name__ == "__main__":
    main()

"""Snapshot every user-visible output, to prove a refactoring changes none of them.

    .venv/bin/python benchmarks/purity.py snapshot DIR     # write the outputs to DIR
    .venv/bin/python benchmarks/purity.py compare A B      # byte-compare two snapshots

A snapshot holds, for every shipped problem, `fleetplan plan --no-timings --format json` (and
its exit code), and the same with `--no-record`; `fleetplan validate benchmarks/data/silicon_sample_validate.csv --format csv`;
a few `fleetplan estimate --format json` calls (dense, MoE with routing, prefill and decode);
and `benchmarks/bench_perf_model.py --dump`'s predicted arrays (the dense 1M-row benchmark and
the Maverick one with hottest-7% routing, 200,000 rows). `compare` reports every file that
differs; npz arrays are compared exactly (NaN equal to NaN).

The decision record's validity search stops at a wall-clock deadline (15 s), so on a loaded
machine it may make fewer solves and its intervals differ; `compare` says so when only the
record differs (the `--no-record` plan is identical). Rerun those problems on a quiet machine.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FLEETPLAN = [sys.executable, "-m", "solver"]
ESTIMATES = {
    "70b-decode-h100": ["--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "4",
                        "--stage", "decode", "--batch", "64"],
    "70b-prefill-h200": ["--model", "llama-3.1-70b", "--hardware", "h200-sxm", "--tp", "8",
                         "--stage", "prefill", "--batch", "4", "--input-tokens", "4096"],
    "70b-closed-loop-trtllm": ["--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "4",
                               "--concurrency", "32", "--engine", "trtllm"],
    "maverick-ep-b200": ["--model", "llama-4-maverick", "--hardware", "b200", "--tp", "4",
                         "--dp", "2", "--ep", "8", "--stage", "decode", "--batch", "128",
                         "--routing", "hottest:7%"],
    "qwen3-235b-mi300x": ["--model", "qwen3-235b-a22b", "--hardware", "mi300x", "--tp", "8",
                          "--ep", "8", "--stage", "prefill", "--batch", "2"],
    "8b-sglang-h100": ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "16",
                       "--engine", "sglang", "--precision", "fp8"],
}


def _run(cmd: list[str], out: Path) -> None:
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    out.write_text(p.stdout + f"\n# exit {p.returncode}\n" + p.stderr)


def snapshot(folder: Path) -> None:
    for sub in ("plan", "estimate", "bench"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    jobs = [
        (FLEETPLAN + ["plan", str(p), "--no-timings", "--format", "json"], folder / "plan" / f"{p.stem}.json")
        for p in sorted((ROOT / "problems").glob("*.yaml"))
    ]
    jobs += [
        (FLEETPLAN + ["plan", str(p), "--no-timings", "--no-record", "--format", "json"],
         folder / "plan" / f"{p.stem}.no-record.json")
        for p in sorted((ROOT / "problems").glob("*.yaml"))
    ]
    jobs.append((FLEETPLAN + ["validate", "benchmarks/data/silicon_sample_validate.csv", "--format", "csv"],
                 folder / "validate.csv"))
    jobs += [(FLEETPLAN + ["estimate", *args, "--format", "json"], folder / "estimate" / f"{name}.json")
             for name, args in ESTIMATES.items()]
    bench = [sys.executable, "benchmarks/bench_perf_model.py"]
    jobs.append((bench + ["--dump", str(folder / "bench" / "dense.npz")], folder / "bench" / "dense.txt"))
    jobs.append((bench + ["--model", "llama-4-maverick", "--routing", "hottest:7%", "--rows", "200000",
                          "--dump", str(folder / "bench" / "maverick.npz")], folder / "bench" / "maverick.txt"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda j: _run(*j), jobs))


def _same_npz(a: Path, b: Path) -> bool:
    x, y = np.load(a), np.load(b)
    if sorted(x.files) != sorted(y.files):
        return False
    return all(np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f") for k in x.files)


def compare(a: Path, b: Path) -> int:
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    differ = 0
    for n in names:
        pa, pb = a / n, b / n
        if not pa.exists() or not pb.exists():
            print(f"only in one: {n}")
            differ += 1
        elif n.suffix == ".npz":
            if not _same_npz(pa, pb):
                print(f"differs: {n}")
                differ += 1
        elif n.parent.name == "bench":
            continue  # timings and peak memory: expected to vary
        elif pa.read_bytes() != pb.read_bytes():
            core = a / n.with_name(n.stem + ".no-record.json")
            if n.parent.name == "plan" and core.is_file() and core.read_bytes() == (b / core.relative_to(a)).read_bytes():
                print(f"differs: {n} (only the decision record: its validity search has a wall-clock "
                      "deadline; rerun on a quiet machine)")
            else:
                print(f"differs: {n}")
            differ += 1
    print(f"{len(names) - differ} of {len(names)} outputs identical")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "snapshot":
        snapshot(Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

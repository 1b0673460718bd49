"""Starting the communication ranks (`torch.multiprocessing`, spawn; rendezvous through a file),
gathering their results and writing the `allreduce` and `collectives` tables. On CUDA one
process per GPU (NCCL, only with 2 or more visible GPUs, for each world size of the grid that
fits); on the CPU a 'gloo' mode with several processes on this host."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from solver.profiles.sources.pytorch.comm import METHOD, columns, comm_plan, comm_worker
from solver.profiles.sources.pytorch.device import CollectError
from solver.profiles.sources.pytorch.grid import Shapes
from solver.profiles.sources.pytorch.timing import Outcome, Timer
from solver.profiles.sources.pytorch.writing import Writer


def _wait(mp, ctx, backend: str, world: int, timeout_s: float) -> None:
    """Join the ranks; a rank that fails, or ranks past the deadline, are a CollectError."""
    deadline = time.monotonic() + timeout_s
    try:
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    if p.is_alive():
                        p.terminate()
                for p in ctx.processes:
                    p.join(5)
                raise CollectError(f"{backend} workers ({world} ranks) did not finish "
                                   f"within {timeout_s:g} s")
    except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:  # a rank failed
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
        msg = str(exc).strip().splitlines()
        raise CollectError(f"{backend} worker failed ({world} ranks): "
                           f"{msg[-1] if msg else type(exc).__name__}") from None


def run_comm(world: int, backend: str, plan: list, warmup: int, repeats: int, target_us: float,
             timeout_s: float) -> list[dict]:
    """Run `plan` on `world` ranks; the per-point results rank 0 wrote."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="fleetplan-collect-") as tmp:
        init_file = os.path.join(tmp, "rendezvous")
        result_file = os.path.join(tmp, "result.json")
        env_set = False
        if backend == "gloo" and sys.platform.startswith("linux") and "GLOO_SOCKET_IFNAME" not in os.environ:
            os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # one host: loopback, whatever the hostname says
            env_set = True
        try:
            ctx = mp.start_processes(
                comm_worker,
                args=(world, backend, init_file, result_file, plan, warmup, repeats, target_us),
                nprocs=world, join=False, start_method="spawn",
            )
            _wait(mp, ctx, backend, world, timeout_s)
        finally:
            if env_set:
                os.environ.pop("GLOO_SOCKET_IFNAME", None)
        try:
            with open(result_file, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError) as exc:
            raise CollectError(f"{backend} workers wrote no results ({exc})") from None


def _backend_worlds(torch, dev, comm: Sequence[str], shapes: Shapes, processes: int | None,
                    log) -> tuple[str, list[int]]:
    """The backend and the world sizes to measure (none: skipped, and the log says why)."""
    if dev.type == "cuda":
        have = torch.cuda.device_count()
        worlds = [w for w in shapes.num_gpus if 2 <= w <= have]
        if not worlds:
            log(f"{', '.join(comm)}: skipped: {have} CUDA device(s) visible, the grid's world "
                f"sizes are {', '.join(map(str, shapes.num_gpus))} (needs 2 or more)")
        elif dev.index not in (None, 0):
            log(f"{', '.join(comm)}: ranks use cuda:0..cuda:{max(worlds) - 1}")
        return "nccl", worlds
    n = 2 if processes is None else processes
    if n < 2:
        log(f"{', '.join(comm)}: skipped on the CPU (processes {n}; the gloo mode needs 2 or more)")
        return "gloo", []
    return "gloo", [n]


def _tally(outcomes: dict[str, Outcome], results: list[dict], world: int) -> None:
    for r in results:
        oc = outcomes[r["family"]]
        if r["latency_us"] is None or not r["latency_us"] > 0:
            oc.skipped += 1
            if oc.first_error is None:
                oc.first_error = f"{r['op']} {r['bytes']} B x{world}: {r['error'] or 'failed'}"
            continue
        lat = max(float(r["latency_us"]), 1e-3)
        if r["family"] == "allreduce":
            oc.rows.append((r["dtype"], world, r["bytes"], lat))
        else:
            oc.rows.append((r["op"], r["dtype"], world, r["bytes"], lat))


def collect_comm(torch, dev, timer: Timer, comm: Sequence[str], shapes: Shapes,
                 processes: int | None, timeout_s: float, writer: Writer, log) -> list[Path]:
    """Measure and write the communication families in `comm` (none where they cannot run)."""
    backend, worlds = _backend_worlds(torch, dev, comm, shapes, processes, log)
    if not worlds:
        return []
    if backend == "gloo" and not torch.distributed.is_available():
        raise CollectError("this PyTorch build has no torch.distributed")
    outcomes = {f: Outcome() for f in comm}
    for world in worlds:
        plan = comm_plan(shapes, comm, world)
        t0 = time.perf_counter()
        results = run_comm(world, backend, plan, timer.warmup, timer.repeats, timer.target_us,
                           timeout_s)
        log(f"{backend} x{world}: {len(plan)} points in {time.perf_counter() - t0:.1f} s")
        _tally(outcomes, results, world)
    written = []
    for family in comm:
        what = (f"world sizes {', '.join(map(str, worlds))} ({backend}); "
                + ("bf16" if family == "allreduce" else f"ops {', '.join(shapes.collective_ops)}, fp16")
                + "; every message size of the grid (rounded to whole elements per rank); the "
                "slowest rank's median")
        notes = [("each repeat starts after a barrier; the recorded latency is the maximum over "
                  "ranks of each rank's median")]
        if backend == "gloo":
            notes.append("CPU gloo mode: num_gpus counts processes on one host, not GPUs")
        written.append(writer.table(family, outcomes[family], what, notes, METHOD[family],
                                    columns(writer.cpu)[family], {"backend": backend}))
    return written

"""Communication, one process per rank: torch.distributed all_reduce of a bf16 tensor
(`allreduce`), and all_reduce, all_gather, reduce_scatter, alltoall on fp16 tensors
(`collectives`; message_bytes as nccl-tests counts it: the larger buffer per rank). What one
rank runs is here; `launch.py` starts the ranks and writes the tables."""

from __future__ import annotations

import json
import math
import os
import statistics
from typing import Sequence

from solver.profiles.sources.pytorch.device import TORCH_DTYPES
from solver.profiles.sources.pytorch.grid import Shapes
from solver.profiles.sources.pytorch.timing import Timer

COMM_FAMILIES = ("allreduce", "collectives")
_ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}

METHOD = {
    "allreduce": "torch.distributed.all_reduce (SUM) of a bf16 tensor, one process per rank",
    "collectives": "torch.distributed all_reduce / all_gather / reduce_scatter / all_to_all_single "
                   "on fp16 tensors, out-of-place where the op has an output, one process per rank",
}


def columns(cpu: bool) -> dict[str, dict[str, str]]:
    comm_unit = ("time of one collective (slowest rank), microseconds")
    ranks = "processes (gloo ranks) on this host" if cpu else "GPUs (NCCL ranks, one process each)"
    return {
        "allreduce": {
            "dtype": "payload element type (bf16)",
            "num_gpus": ranks,
            "message_bytes": "bytes reduced per rank",
            "latency_us": comm_unit,
        },
        "collectives": {
            "op": "all_reduce | all_gather | reduce_scatter | alltoall",
            "dtype": "payload element type (fp16)",
            "num_gpus": ranks,
            "message_bytes": "bytes of the larger per-rank buffer, as nccl-tests reports size "
            "(all_gather: output, reduce_scatter: input)",
            "latency_us": comm_unit,
        },
    }


def comm_plan(shapes: Shapes, families: Sequence[str], world: int) -> list[tuple[str, str, str, int]]:
    """(family, op, dtype, message_bytes) per point; sizes rounded to whole elements per rank."""
    plan = []
    if "allreduce" in families:
        for b in shapes.allreduce_bytes:
            plan.append(("allreduce", "all_reduce", "bf16", _round_bytes(b, 2, 1)))
    if "collectives" in families:
        for op in shapes.collective_ops:
            per = 1 if op == "all_reduce" else world
            for b in shapes.collective_bytes:
                plan.append(("collectives", op, "fp16", _round_bytes(b, 2, per)))
    return plan


def _round_bytes(nbytes: int, elem: int, multiple: int) -> int:
    elems = max(multiple, (int(nbytes) // elem) // multiple * multiple)
    return elems * elem


def _comm_call(torch, dist, op: str, dtype: str, nbytes: int, world: int, dev):
    dt = getattr(torch, TORCH_DTYPES[dtype])
    elems = nbytes // _ELEM_BYTES[dtype]
    if op == "all_reduce":
        x = torch.ones(elems, dtype=dt, device=dev)
        return lambda: dist.all_reduce(x)
    if op == "all_gather":  # nccl-tests size: the gathered (output) buffer
        x = torch.ones(elems // world, dtype=dt, device=dev)
        y = torch.empty(elems, dtype=dt, device=dev)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(y, x)
    if op == "reduce_scatter":  # nccl-tests size: the input buffer
        x = torch.ones(elems, dtype=dt, device=dev)
        y = torch.empty(elems // world, dtype=dt, device=dev)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: scatter(y, x)
    if op == "alltoall":
        x = torch.ones(elems, dtype=dt, device=dev)
        y = torch.empty(elems, dtype=dt, device=dev)
        return lambda: dist.all_to_all_single(y, x)
    raise ValueError(f"unknown collective '{op}'")


def _time_point(torch, dist, timer: Timer, dev, op: str, dtype: str, nbytes: int,
                world: int) -> tuple[float, str]:
    """This rank's median per-call microseconds of one point, and "" (or -1 and the error)."""
    try:
        fn = _comm_call(torch, dist, op, dtype, nbytes, world, dev)
        for _ in range(timer.warmup):
            fn()
        timer.sync()
        dist.barrier()
        once = timer.run_n(fn, 1)
        # every rank must run the same number of calls: agree on the slowest estimate
        t = torch.tensor([once], dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        inner = int(max(1, min(timer.max_inner, math.ceil(timer.target_us / max(float(t.item()), 1e-3)))))
        samples = []
        for _ in range(timer.repeats):
            dist.barrier()
            timer.sync()
            samples.append(timer.run_n(fn, inner) / inner)
        return statistics.median(samples), ""
    except (RuntimeError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        return -1.0, f"{type(exc).__name__}: {first}"


def _write_results(result_file: str, results: list[dict]) -> None:
    tmp = result_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f)
    os.replace(tmp, result_file)


def comm_worker(rank: int, world: int, backend: str, init_file: str, result_file: str,
                plan: list, warmup: int, repeats: int, target_us: float) -> None:
    """One rank: time every point of `plan`; rank 0 writes the per-point maximum over ranks."""
    import torch
    import torch.distributed as dist

    if backend == "nccl":
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
    else:
        dev = torch.device("cpu")
        torch.set_num_threads(1)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    timer = Timer(torch, dev, warmup, repeats, target_us)
    results = []
    try:
        for family, op, dtype, nbytes in plan:
            mine, err = _time_point(torch, dist, timer, dev, op, dtype, nbytes, world)
            t = torch.tensor([mine], dtype=torch.float64, device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            worst = float(t.item())
            ok = torch.tensor([1.0 if not err else 0.0], dtype=torch.float64, device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            results.append({"family": family, "op": op, "dtype": dtype, "bytes": nbytes,
                            "latency_us": worst if ok.item() > 0 else None, "error": err})
            if backend == "nccl":
                torch.cuda.empty_cache()
        if rank == 0:
            _write_results(result_file, results)
        dist.barrier()
    finally:
        dist.destroy_process_group()

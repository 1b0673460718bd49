"""Measure operator profiles on the local accelerator with PyTorch and write them in the
profile format (`format.py`), so a user can plan with their own hardware's numbers.

    fleetplan profiles collect --hardware h100-sxm [--framework torch-eager] [--out DIR]
                               [--families gemm,attention_context,...] [--quick]
                               [--device cpu|cuda] [--repeats N]

What is timed (PyTorch eager, one call at a time; latency: microseconds per call, the median of
`repeats` timed repeats after `warmup` untimed calls; each repeat times `inner` back-to-back
calls, with `inner` chosen so that one repeat lasts about `target_us`, and divides):

| family                 | operation                                                         |
|------------------------|-------------------------------------------------------------------|
| gemm                   | torch.matmul(X[m,k], W[k,n]) in bf16 (fp32 where the CPU lacks bf16); fp8: torch._scaled_mm with per-tensor scales, bf16 out (GPUs of compute capability >= 8.9 only) |
| attention_context      | scaled_dot_product_attention(is_causal=True), q [batch, heads, isl, head_dim], K/V with num_kv_heads (GQA) |
| attention_generation   | scaled_dot_product_attention of one query token per sequence over kv_tokens cached K/V |
| allreduce              | torch.distributed.all_reduce of a bf16 tensor of message_bytes per rank |
| collectives            | all_reduce, all_gather, reduce_scatter, alltoall (fp16; message_bytes as nccl-tests counts it: the larger buffer per rank) |

GPU times come from CUDA events; CPU times from `time.perf_counter`. The communication
families need several ranks: on CUDA one process per GPU (NCCL, only with 2 or more visible
GPUs, for each world size of the grid that fits), on the CPU a 'gloo' mode with 2 processes
(tiny messages; it proves the pipeline, it is no model of an NVLink domain). Processes are
started with `torch.multiprocessing` (spawn) and rendezvous through a file.

PyTorch is an optional dependency (`pip install 'fleetplan[collect]'`) and is imported only
when `collect` runs.

The default grids follow the shipped model cards as the importer does (`shapes.py`): the
per-device (n, k) of every weight matrix and the per-device attention geometry at TP 1/2/4/8,
over m / batch / token / message-size sweeps; `quick_shapes()` is a tiny grid for tests and CPU
smoke runs.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Callable, Iterable, Sequence

from solver import __version__
from solver.errors import InputError
from solver.profiles.format import (
    FAMILIES,
    Provenance,
    csv_text,
    sha256_text,
    write_profile,
)

COLLECTOR = f"fleetplan solver.profiles.collect/1 (fleetplan {__version__})"
DEFAULT_FRAMEWORK = "torch-eager"
DEFAULT_LICENCE = "LicenseRef-own-measurement"
ALL_FAMILIES: tuple[str, ...] = (
    "gemm", "attention_context", "attention_generation", "allreduce", "collectives",
)
COMM_FAMILIES = ("allreduce", "collectives")
COLLECTIVE_OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
TORCH_MISSING = "PyTorch is needed: pip install 'fleetplan[collect]'"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


class CollectError(InputError):
    """The measurement could not run here (no such device, a worker failed, ...)."""


# ---------------------------------------------------------------------------------------------
# shape grids
# ---------------------------------------------------------------------------------------------


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return tuple(out)


@dataclass(frozen=True)
class Shapes:
    """The points to measure. GEMM: every m with every (n, k); attention: every head group with
    every (batch, tokens) whose batch x tokens stays under the cap; communication: every message
    size at every world size (GPUs; processes in the CPU gloo mode) that the host has."""

    gemm_m: tuple[int, ...]
    gemm_nk: tuple[tuple[int, int], ...]
    attention_groups: tuple[tuple[int, int, int], ...]  # (num_heads, num_kv_heads, head_dim)
    context_batch: tuple[int, ...]
    context_isl: tuple[int, ...]
    generation_batch: tuple[int, ...]
    generation_kv: tuple[int, ...]
    max_context_tokens: int  # batch x isl_tokens
    max_generation_tokens: int  # batch x kv_tokens
    allreduce_bytes: tuple[int, ...]
    collective_bytes: tuple[int, ...]
    collective_ops: tuple[str, ...] = COLLECTIVE_OPS
    num_gpus: tuple[int, ...] = (2, 4, 8)
    description: str = ""

    def context_points(self) -> list[tuple[int, int]]:
        return [(b, s) for b in self.context_batch for s in self.context_isl
                if b * s <= self.max_context_tokens]

    def generation_points(self) -> list[tuple[int, int]]:
        return [(b, s) for b in self.generation_batch for s in self.generation_kv
                if b * s <= self.max_generation_tokens]


def quick_shapes() -> Shapes:
    """A tiny grid (seconds on a CPU) for tests and smoke runs."""
    return Shapes(
        gemm_m=(1, 16, 256),
        gemm_nk=tuple((n, k) for n in (64, 256) for k in (64, 256)),
        attention_groups=((4, 2, 64),),
        context_batch=(1, 2),
        context_isl=(16, 64),
        generation_batch=(1, 4),
        generation_kv=(16, 128),
        max_context_tokens=1 << 20,
        max_generation_tokens=1 << 20,
        allreduce_bytes=(1024, 16384, 262144),
        collective_bytes=(1024, 16384, 262144),
        num_gpus=(2,),
        description="quick grid (m 1/16/256, n and k 64/256; heads 4, kv heads 2, head_dim 64; "
        "batch 1-4, 16-128 tokens; messages 1 KiB-256 KiB)",
    )


def default_shapes(models: Sequence[str] | None = None) -> Shapes:
    """The grid the shipped model cards need (per device, TP 1/2/4/8), as the importer keeps."""
    from solver.catalog import shipped
    from solver.profiles.sources.shapes import attention_groups, gemm_shapes

    names = list(models) if models else shipped.names("models")
    cards = [shipped.model_card(n) for n in names]
    nk = sorted({(s.n, s.k) for c in cards for s in gemm_shapes(c)})
    groups = sorted({(g.num_heads, g.num_kv_heads, g.head_dim) for c in cards for g in attention_groups(c)})
    m = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
         4096, 6144, 8192)
    return Shapes(
        gemm_m=m,
        gemm_nk=tuple(nk),
        attention_groups=tuple(groups),
        context_batch=_pow2(1, 256),
        context_isl=(1,) + _pow2(16, 16384),
        generation_batch=_pow2(1, 1024),
        generation_kv=_pow2(16, 131072),
        max_context_tokens=65536,
        max_generation_tokens=1 << 21,
        allreduce_bytes=_pow2(256, 1 << 30),
        collective_bytes=_pow2(512, 1 << 29),
        num_gpus=(2, 4, 8),
        description=(
            f"the per-device weight matrices ({len(nk)} (n, k) pairs) and attention head groups "
            f"({len(groups)}) of the model cards {', '.join(names)} at TP 1/2/4/8; m "
            f"{m[0]}-{m[-1]}; context batch x isl_tokens <= 65536; generation batch x kv_tokens "
            f"<= 2097152; messages 256 B-1 GiB (all-reduce), 512 B-512 MiB (collectives)"
        ),
    )


# ---------------------------------------------------------------------------------------------
# torch, devices, timing
# ---------------------------------------------------------------------------------------------


def import_torch():
    """PyTorch, or a one-line InputError naming the extra to install."""
    try:
        import torch
    except ImportError:
        raise InputError(TORCH_MISSING) from None
    return torch


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [x.strip() for x in out.stdout.splitlines() if x.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def _resolve_device(torch, device: str | None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise InputError(f"unknown device '{device}' (cpu or cuda)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA device is visible to PyTorch")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        if dev.index >= torch.cuda.device_count():
            raise InputError(f"--device {device}: only {torch.cuda.device_count()} CUDA devices")
    elif dev.type != "cpu":
        raise InputError(f"device '{device}': the collector measures on cpu or cuda")
    return dev


def _device_name(torch, dev) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return _cpu_name()


def _software(torch, dev) -> dict[str, str]:
    sw = {"torch": str(torch.__version__), "python": platform.python_version(),
          "fleetplan": __version__}
    if dev.type == "cuda":
        if getattr(torch.version, "cuda", None):
            sw["cuda"] = str(torch.version.cuda)
        if getattr(torch.version, "hip", None):
            sw["hip"] = str(torch.version.hip)
        try:
            if torch.backends.cudnn.is_available():
                sw["cudnn"] = str(torch.backends.cudnn.version())
        except Exception:  # noqa: BLE001 - optional fact
            pass
        try:
            v = torch.cuda.nccl.version()
            sw["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001 - optional fact
            pass
        cap = torch.cuda.get_device_capability(dev)
        sw["compute_capability"] = f"{cap[0]}.{cap[1]}"
        drv = _driver_version()
        if drv:
            sw["driver"] = drv
    else:
        sw["cpu_threads"] = str(torch.get_num_threads())
        sw["platform"] = platform.platform()
    return sw


class _Timer:
    """Median per-call time (us) of a callable: CUDA events on a GPU, perf_counter on a CPU."""

    def __init__(self, torch, dev, warmup: int, repeats: int, target_us: float, max_inner: int = 100):
        self.torch, self.dev = torch, dev
        self.cuda = dev.type == "cuda"
        self.warmup, self.repeats = warmup, repeats
        self.target_us, self.max_inner = target_us, max_inner

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def run_n(self, fn: Callable[[], object], inner: int) -> float:
        """Microseconds of `inner` back-to-back calls."""
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1000.0
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t0) * 1e6

    def __call__(self, fn: Callable[[], object]) -> float:
        for _ in range(self.warmup):
            fn()
        self.sync()
        once = self.run_n(fn, 1)
        inner = int(max(1, min(self.max_inner, math.ceil(self.target_us / max(once, 1e-3)))))
        samples = [self.run_n(fn, inner) / inner for _ in range(self.repeats)]
        return max(statistics.median(samples), 1e-3)


def _is_oom(torch, exc: BaseException) -> bool:
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


@dataclass
class _Outcome:
    rows: list[tuple] = field(default_factory=list)
    skipped: int = 0
    first_error: str | None = None
    notes: list[str] = field(default_factory=list)

    def skip(self, torch, exc: BaseException, what: str) -> None:
        self.skipped += 1
        if self.first_error is None:
            kind = "out of memory" if _is_oom(torch, exc) else f"{type(exc).__name__}: {exc}"
            self.first_error = f"{what}: {str(kind).splitlines()[0][:200]}"


def _free(torch, dev) -> None:
    if dev.type == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# single-device families
# ---------------------------------------------------------------------------------------------


def _working_dtype(torch, dev, name: str) -> str:
    """The element type actually used for `name` (bf16 falls back to fp32 on a CPU without)."""
    if name not in _TORCH_DTYPES:
        return name
    try:
        dt = getattr(torch, _TORCH_DTYPES[name])
        a = torch.ones(4, 4, dtype=dt, device=dev)
        torch.matmul(a, a)
        return name
    except (RuntimeError, TypeError):
        if dev.type == "cpu" and name != "fp32":
            return "fp32"
        raise


def fp8_supported(torch, dev) -> bool:
    """torch._scaled_mm with e4m3 inputs runs here (CUDA, compute capability >= 8.9)."""
    if dev.type != "cuda" or not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return False
    if torch.version.cuda and torch.cuda.get_device_capability(dev) < (8, 9):
        return False
    try:
        a = torch.ones(16, 16, device=dev).to(torch.float8_e4m3fn)
        b = torch.ones(16, 16, device=dev).to(torch.float8_e4m3fn).t()
        s = torch.ones((), device=dev, dtype=torch.float32)
        torch._scaled_mm(a, b, scale_a=s, scale_b=s, out_dtype=torch.bfloat16)
        return True
    except Exception:  # noqa: BLE001 - any failure means: not supported here
        return False


def _gemm_fn(torch, dev, dtype: str, m: int, n: int, k: int):
    if dtype == "fp8":
        x = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major (k, n)
        s = torch.ones((), device=dev, dtype=torch.float32)

        def fn():
            return torch._scaled_mm(x, w, scale_a=s, scale_b=s, out_dtype=torch.bfloat16)

        return fn
    dt = getattr(torch, _TORCH_DTYPES[dtype])
    x = torch.randn(m, k, device=dev, dtype=dt)
    w = torch.randn(k, n, device=dev, dtype=dt)
    return lambda: torch.matmul(x, w)


def _measure_gemm(torch, dev, timer: _Timer, shapes: Shapes, dtypes: Sequence[str], log) -> _Outcome:
    out = _Outcome()
    for dtype in dtypes:
        t0 = time.perf_counter()
        for n, k in shapes.gemm_nk:
            for m in shapes.gemm_m:
                try:
                    fn = _gemm_fn(torch, dev, dtype, m, n, k)
                    fn()
                    out.rows.append((dtype, m, n, k, timer(fn)))
                except (RuntimeError, ValueError, TypeError) as exc:
                    out.skip(torch, exc, f"{dtype} m={m} n={n} k={k}")
                finally:
                    fn = None
                    _free(torch, dev)
        n_shapes = len(shapes.gemm_nk) * len(shapes.gemm_m)
        log(f"gemm {dtype}: {n_shapes} shapes in {time.perf_counter() - t0:.1f} s")
    return out


def _gqa_mode(torch, dev, dt) -> bool:
    """True when scaled_dot_product_attention takes enable_gqa (PyTorch >= 2.5)."""
    q = torch.zeros(1, 2, 2, 8, dtype=dt, device=dev)
    kv = torch.zeros(1, 1, 2, 8, dtype=dt, device=dev)
    try:
        torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        return True
    except (TypeError, RuntimeError):
        return False


def _attention_fn(torch, dev, dt, gqa: bool, heads: int, kv_heads: int, head_dim: int,
                  batch: int, q_len: int, kv_len: int, causal: bool):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(batch, heads, q_len, head_dim, device=dev, dtype=dt)
    k = torch.randn(batch, kv_heads, kv_len, head_dim, device=dev, dtype=dt)
    v = torch.randn(batch, kv_heads, kv_len, head_dim, device=dev, dtype=dt)
    if heads != kv_heads:
        if heads % kv_heads:
            raise ValueError(f"num_heads {heads} is not a multiple of num_kv_heads {kv_heads}")
        if gqa:
            return lambda: sdpa(q, k, v, is_causal=causal, enable_gqa=True)
        rep = heads // kv_heads  # older PyTorch: expand the cache once, outside the timing
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    return lambda: sdpa(q, k, v, is_causal=causal)


def _measure_attention(torch, dev, timer: _Timer, shapes: Shapes, phase: str, kv_dtype: str,
                       log) -> _Outcome:
    out = _Outcome()
    dt = getattr(torch, _TORCH_DTYPES[kv_dtype])
    gqa = _gqa_mode(torch, dev, dt)
    out.notes.append(
        "GQA: scaled_dot_product_attention(enable_gqa=True)" if gqa else
        "GQA: K/V expanded to the query heads with repeat_interleave before timing "
        "(this PyTorch has no enable_gqa)"
    )
    points = shapes.context_points() if phase == "context" else shapes.generation_points()
    t0 = time.perf_counter()
    for heads, kv_heads, head_dim in shapes.attention_groups:
        for batch, tokens in points:
            q_len = tokens if phase == "context" else 1
            try:
                fn = _attention_fn(torch, dev, dt, gqa, heads, kv_heads, head_dim, batch,
                                   q_len, tokens, causal=phase == "context")
                fn()
                out.rows.append((kv_dtype, heads, kv_heads, head_dim, batch, tokens, timer(fn)))
            except (RuntimeError, ValueError, TypeError) as exc:
                out.skip(torch, exc, f"heads {heads}/{kv_heads}x{head_dim} batch {batch} tokens {tokens}")
            finally:
                fn = None
                _free(torch, dev)
    log(f"attention_{phase}: {len(shapes.attention_groups) * len(points)} shapes in "
        f"{time.perf_counter() - t0:.1f} s")
    return out


# ---------------------------------------------------------------------------------------------
# communication families (one process per rank)
# ---------------------------------------------------------------------------------------------


def _comm_plan(shapes: Shapes, families: Sequence[str], world: int) -> list[tuple[str, str, str, int]]:
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
    dt = getattr(torch, _TORCH_DTYPES[dtype])
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


def _comm_worker(rank: int, world: int, backend: str, init_file: str, result_file: str,
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
    timer = _Timer(torch, dev, warmup, repeats, target_us)
    results = []
    try:
        for family, op, dtype, nbytes in plan:
            err = ""
            try:
                fn = _comm_call(torch, dist, op, dtype, nbytes, world, dev)
                for _ in range(warmup):
                    fn()
                timer.sync()
                dist.barrier()
                once = timer.run_n(fn, 1)
                # every rank must run the same number of calls: agree on the slowest estimate
                t = torch.tensor([once], dtype=torch.float64, device=dev)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                inner = int(max(1, min(timer.max_inner, math.ceil(target_us / max(float(t.item()), 1e-3)))))
                samples = []
                for _ in range(repeats):
                    dist.barrier()
                    timer.sync()
                    samples.append(timer.run_n(fn, inner) / inner)
                mine = statistics.median(samples)
            except (RuntimeError, ValueError, TypeError) as exc:
                first = str(exc).splitlines()[0][:200] if str(exc) else ""
                mine, err = -1.0, f"{type(exc).__name__}: {first}"
            finally:
                fn = None
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
            tmp = result_file + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(results, f)
            os.replace(tmp, result_file)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _run_comm(world: int, backend: str, plan: list, warmup: int, repeats: int, target_us: float,
              timeout_s: float) -> list[dict]:
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
                _comm_worker,
                args=(world, backend, init_file, result_file, plan, warmup, repeats, target_us),
                nprocs=world, join=False, start_method="spawn",
            )
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
        finally:
            if env_set:
                os.environ.pop("GLOO_SOCKET_IFNAME", None)
        try:
            with open(result_file, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError) as exc:
            raise CollectError(f"{backend} workers wrote no results ({exc})") from None


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------

_TIMING = {
    "cuda": "CUDA events around {inner} back-to-back calls on the current stream",
    "cpu": "time.perf_counter around {inner} back-to-back calls",
}


def _columns(family: str, cpu: bool) -> dict[str, str]:
    unit = ("wall time of one call on the CPU, microseconds" if cpu
            else "GPU time of one call (CUDA events), microseconds")
    comm_unit = ("time of one collective (slowest rank), microseconds")
    ranks = "processes (gloo ranks) on this host" if cpu else "GPUs (NCCL ranks, one process each)"
    return {
        "gemm": {
            "dtype": "bf16 | fp8 (per-tensor scaled FP8 inputs, bf16 output) | fp32 (CPU without bf16)",
            "m": "rows of the activation: tokens",
            "n": "output features (columns of W)",
            "k": "input features (reduction length)",
            "latency_us": unit,
        },
        "attention_context": {
            "kv_dtype": "element type of q, K and V",
            "num_heads": "query heads",
            "num_kv_heads": "key/value heads",
            "head_dim": "elements per head",
            "batch": "prompts in the call",
            "isl_tokens": "tokens per prompt (all new, causal)",
            "latency_us": unit,
        },
        "attention_generation": {
            "kv_dtype": "element type of q, K and V",
            "num_heads": "query heads",
            "num_kv_heads": "key/value heads",
            "head_dim": "elements per head",
            "batch": "sequences decoding one token each",
            "kv_tokens": "cached tokens attended per sequence",
            "latency_us": unit,
        },
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
    }[family]


_METHOD = {
    "gemm": "torch.matmul(X[m,k], W[k,n]) (fp8: torch._scaled_mm, per-tensor scales, bf16 out), "
            "random inputs",
    "attention_context": "torch.nn.functional.scaled_dot_product_attention(is_causal=True) on "
                         "q [batch, heads, isl, head_dim] and K/V [batch, kv_heads, isl, head_dim]",
    "attention_generation": "torch.nn.functional.scaled_dot_product_attention of q [batch, heads, "
                            "1, head_dim] over K/V [batch, kv_heads, kv_tokens, head_dim] "
                            "(contiguous cache, not paged)",
    "allreduce": "torch.distributed.all_reduce (SUM) of a bf16 tensor, one process per rank",
    "collectives": "torch.distributed all_reduce / all_gather / reduce_scatter / all_to_all_single "
                   "on fp16 tensors, out-of-place where the op has an output, one process per rank",
}


def _safe_name(value: str, what: str) -> str:
    if not _NAME.match(value or ""):
        raise InputError(f"{what} '{value}': use letters, digits, '.', '_', '+' or '-' "
                         f"(it names a folder)")
    return value


def _write(folder: Path, family: str, rows: list[tuple], meta: dict, compress: bool) -> Path:
    rows = sorted(rows)
    text = csv_text(family, rows)
    prov = Provenance(family=family, rows=len(rows), content_sha256=sha256_text(text), **meta)
    return write_profile(folder, family, text, prov, compress=compress)


def _log_default(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _parse_families(families: str | Iterable[str]) -> list[str]:
    if isinstance(families, str):
        families = [f.strip() for f in families.split(",") if f.strip()]
    fams = list(dict.fromkeys(families))
    bad = [f for f in fams if f not in FAMILIES]
    if bad or not fams:
        raise InputError(f"unknown operator family '{','.join(bad) or '(none)'}' "
                         f"(one or more of {', '.join(ALL_FAMILIES)})")
    return fams


def collect(
    hardware: str,
    framework_label: str = DEFAULT_FRAMEWORK,
    out_root: Path | str | None = None,
    families: str | Iterable[str] = ALL_FAMILIES,
    shapes: Shapes | None = None,
    device: str | None = None,
    dtypes: str | Sequence[str] = ("bf16",),
    repeats: int | None = None,
    warmup: int | None = None,
    quick: bool = False,
    models: Sequence[str] | None = None,
    processes: int | None = None,
    licence: str = DEFAULT_LICENCE,
    compress: bool = False,
    target_us: float | None = None,
    threads: int | None = None,
    comm_timeout_s: float = 1800.0,
    log: Callable[[str], None] | None = None,
) -> list[Path]:
    """Measure `families` on `device` and write `<out_root>/<hardware>/<framework_label>/
    <family>.csv[.gz]` + `.meta.json`; returns the CSV paths written.

    shapes: the grid (default `default_shapes(models)`, or `quick_shapes()` with quick=True).
    device: "cpu" or "cuda[:i]" (default: cuda when available). dtypes: GEMM element types,
    "bf16" and/or "fp8" (fp8 only where torch._scaled_mm runs; skipped otherwise, an error when
    it is the only one asked). processes: ranks of the CPU gloo mode (default 2; 0 or 1 skips
    the communication families on the CPU); on CUDA the world sizes are `shapes.num_gpus` that
    fit the visible GPUs, and the communication families are skipped with fewer than 2.
    threads: CPU threads for the CPU measurements (default: PyTorch's; 1 is steadier on a
    shared machine). out_root: default FLEETPLAN_PROFILES, else ./fleetplan-profiles."""
    log = log or _log_default
    hardware = _safe_name(hardware, "hardware name")
    framework_label = _safe_name(framework_label, "framework label")
    fams = _parse_families(families)
    if isinstance(dtypes, str):
        dtypes = [d.strip() for d in dtypes.split(",") if d.strip()]
    dtypes = list(dict.fromkeys(dtypes))
    bad = [d for d in dtypes if d not in ("bf16", "fp8")]
    if bad or not dtypes:
        raise InputError(f"GEMM dtype '{','.join(bad) or '(none)'}': bf16 and/or fp8")
    if repeats is not None and repeats < 1:
        raise InputError(f"repeats must be at least 1, got {repeats}")
    if warmup is not None and warmup < 0:
        raise InputError(f"warmup must be 0 or more, got {warmup}")
    if threads is not None and threads < 1:
        raise InputError(f"threads must be at least 1, got {threads}")

    torch = import_torch()
    dev = _resolve_device(torch, device)
    cuda = dev.type == "cuda"
    before = torch.get_num_threads()
    if threads is not None and not cuda:
        torch.set_num_threads(threads)
    try:
        args = (torch, dev, hardware, framework_label, out_root, fams, shapes, dtypes, repeats,
                warmup, quick, models, processes, licence, compress, target_us, comm_timeout_s, log)
        if cuda:
            with torch.cuda.device(dev):  # events and streams on the measured device
                return _collect(*args)
        return _collect(*args)
    finally:
        torch.set_num_threads(before)


def _collect(torch, dev, hardware, framework_label, out_root, fams, shapes, dtypes, repeats,
             warmup, quick, models, processes, licence, compress, target_us, comm_timeout_s,
             log) -> list[Path]:
    cuda = dev.type == "cuda"
    if shapes is None:
        shapes = quick_shapes() if quick else default_shapes(models)
    repeats = repeats if repeats is not None else (20 if cuda else 10)
    warmup = warmup if warmup is not None else (5 if cuda else 2)
    target_us = target_us if target_us is not None else (500.0 if cuda else 1000.0)
    if out_root is None:
        env = os.environ.get("FLEETPLAN_PROFILES")
        out_root = Path(env) if env else Path("fleetplan-profiles")
    folder = Path(out_root) / hardware / framework_label
    timer = _Timer(torch, dev, warmup, repeats, target_us)
    dev_name = _device_name(torch, dev)
    software = _software(torch, dev)
    today = date.today().isoformat()
    timing = _TIMING[dev.type].format(inner="N")
    common_notes = [
        "local measurement (first-party): fleetplan profiles collect, no upstream source",
        (f"latency: median of {repeats} timed repeats after {warmup} warmup calls; each repeat "
         f"times N back-to-back calls ({timing}, N chosen so a repeat lasts about "
         f"{target_us:.0f} us, at most 100) and divides by N"),
        f"grid: {shapes.description or 'custom'}",
    ]
    if not cuda:
        common_notes.append("measured on the CPU: a smoke test of the pipeline, not a model of "
                            "an accelerator")

    def meta(family: str, method: str, selection: str, notes: list[str], extra_sw=None) -> dict:
        return dict(
            hardware=hardware, device_name=dev_name, framework=framework_label,
            framework_version=str(torch.__version__), software=software | (extra_sw or {}),
            collected_on=today,
            collection_method=f"fleetplan profiles collect on {dev_name}: {method}",
            source=None, selection=selection, columns=_columns(family, not cuda),
            licence=licence, converter=COLLECTOR, notes=common_notes + notes,
        )

    def selection(outcome: _Outcome, what: str) -> str:
        s = what
        if outcome.skipped:
            s += f"; {outcome.skipped} points skipped (first: {outcome.first_error})"
        return s

    written: list[Path] = []
    # ---- GEMM
    if "gemm" in fams:
        use = []
        for d in dtypes:
            if d == "fp8":
                if fp8_supported(torch, dev):
                    use.append("fp8")
                else:
                    log(f"gemm fp8: not supported on {dev_name} (needs CUDA, compute capability "
                        f">= 8.9 and torch._scaled_mm); skipped")
            else:
                use.append(_working_dtype(torch, dev, d))
        if not use:
            raise CollectError(f"gemm: none of the dtypes {', '.join(dtypes)} runs on {dev_name}")
        oc = _measure_gemm(torch, dev, timer, shapes, use, log)
        notes = ["bf16 asked, fp32 used: this CPU build has no bf16 matmul"] if "fp32" in use else []
        written += _finish("gemm", oc, folder, compress, meta, selection, notes,
                           f"dtypes {', '.join(use)}; every m of the grid with every (n, k)")
    # ---- attention
    for phase in ("context", "generation"):
        family = f"attention_{phase}"
        if family not in fams:
            continue
        kv_dtype = _working_dtype(torch, dev, "bf16")
        oc = _measure_attention(torch, dev, timer, shapes, phase, kv_dtype, log)
        cap = shapes.max_context_tokens if phase == "context" else shapes.max_generation_tokens
        axis = "isl_tokens" if phase == "context" else "kv_tokens"
        written += _finish(family, oc, folder, compress, meta, selection, [],
                           f"{kv_dtype}; every head group of the grid; batch x {axis} <= {cap}")
    # ---- communication
    comm = [f for f in fams if f in COMM_FAMILIES]
    if comm:
        written += _collect_comm(torch, dev, comm, shapes, processes, warmup, repeats, target_us,
                                 comm_timeout_s, folder, compress, meta, selection, log)
    return written


def _finish(family, oc: _Outcome, folder, compress, meta, selection, notes, what) -> list[Path]:
    if not oc.rows:
        raise CollectError(f"{family}: no point could be measured ({oc.first_error or 'empty grid'})")
    m = meta(family, _METHOD[family], selection(oc, what), oc.notes + notes)
    return [_write(folder, family, oc.rows, m, compress)]


def _collect_comm(torch, dev, comm, shapes: Shapes, processes, warmup, repeats, target_us,
                  timeout_s, folder, compress, meta, selection, log) -> list[Path]:
    if dev.type == "cuda":
        backend = "nccl"
        have = torch.cuda.device_count()
        worlds = [w for w in shapes.num_gpus if 2 <= w <= have]
        if not worlds:
            log(f"{', '.join(comm)}: skipped: {have} CUDA device(s) visible, the grid's world "
                f"sizes are {', '.join(map(str, shapes.num_gpus))} (needs 2 or more)")
            return []
        if dev.index not in (None, 0):
            log(f"{', '.join(comm)}: ranks use cuda:0..cuda:{max(worlds) - 1}")
    else:
        backend = "gloo"
        n = 2 if processes is None else processes
        if n < 2:
            log(f"{', '.join(comm)}: skipped on the CPU (processes {n}; the gloo mode needs 2 or more)")
            return []
        worlds = [n]
    if backend == "gloo" and not torch.distributed.is_available():
        raise CollectError("this PyTorch build has no torch.distributed")
    outcomes = {f: _Outcome() for f in comm}
    for world in worlds:
        plan = _comm_plan(shapes, comm, world)
        t0 = time.perf_counter()
        results = _run_comm(world, backend, plan, warmup, repeats, target_us, timeout_s)
        log(f"{backend} x{world}: {len(plan)} points in {time.perf_counter() - t0:.1f} s")
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
    extra = {"backend": backend}
    written = []
    for family in comm:
        oc = outcomes[family]
        what = (f"world sizes {', '.join(map(str, worlds))} ({backend}); "
                + ("bf16" if family == "allreduce" else f"ops {', '.join(shapes.collective_ops)}, fp16")
                + "; every message size of the grid (rounded to whole elements per rank); the "
                "slowest rank's median")
        if not oc.rows:
            raise CollectError(f"{family}: no point could be measured ({oc.first_error or 'empty grid'})")
        notes = [("each repeat starts after a barrier; the recorded latency is the maximum over "
                  "ranks of each rank's median")]
        if backend == "gloo":
            notes.append("CPU gloo mode: num_gpus counts processes on one host, not GPUs")
        m = meta(family, _METHOD[family], selection(oc, what), notes, extra)
        written.append(_write(folder, family, oc.rows, m, compress))
    return written


def summary(paths: Sequence[Path]) -> str:
    lines = []
    for p in paths:
        meta = json.loads(p.with_name(p.name.split(".csv")[0] + ".meta.json").read_text(encoding="utf-8"))
        lines.append(f"{p}  {meta['rows']} rows  {meta['framework']} {meta['framework_version']}  "
                     f"{meta['device_name']}")
    return "\n".join(lines)


__all__ = [
    "ALL_FAMILIES", "COLLECTIVE_OPS", "COLLECTOR", "CollectError", "DEFAULT_FRAMEWORK", "Shapes",
    "collect", "default_shapes", "fp8_supported", "import_torch", "quick_shapes", "summary",
]

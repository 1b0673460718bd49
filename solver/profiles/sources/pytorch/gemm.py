"""GEMM: torch.matmul(X[m,k], W[k,n]) in bf16 (fp32 where the CPU lacks bf16); fp8:
torch._scaled_mm with per-tensor scales, bf16 out (GPUs of compute capability >= 8.9 only)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from solver.profiles.sources.pytorch.device import TORCH_DTYPES, CollectError, free, working_dtype
from solver.profiles.sources.pytorch.grid import Shapes
from solver.profiles.sources.pytorch.timing import Outcome, Timer, call_unit
from solver.profiles.sources.pytorch.writing import Writer

METHOD = ("torch.matmul(X[m,k], W[k,n]) (fp8: torch._scaled_mm, per-tensor scales, bf16 out), "
          "random inputs")


def columns(cpu: bool) -> dict[str, str]:
    return {
        "dtype": "bf16 | fp8 (per-tensor scaled FP8 inputs, bf16 output) | fp32 (CPU without bf16)",
        "m": "rows of the activation: tokens",
        "n": "output features (columns of W)",
        "k": "input features (reduction length)",
        "latency_us": call_unit(cpu),
    }


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
    dt = getattr(torch, TORCH_DTYPES[dtype])
    x = torch.randn(m, k, device=dev, dtype=dt)
    w = torch.randn(k, n, device=dev, dtype=dt)
    return lambda: torch.matmul(x, w)


def measure_gemm(torch, dev, timer: Timer, shapes: Shapes, dtypes: Sequence[str], log) -> Outcome:
    out = Outcome()
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
                    free(torch, dev)
        n_shapes = len(shapes.gemm_nk) * len(shapes.gemm_m)
        log(f"gemm {dtype}: {n_shapes} shapes in {time.perf_counter() - t0:.1f} s")
    return out


def _usable_dtypes(torch, dev, dtypes: Sequence[str], dev_name: str, log) -> list[str]:
    """The asked GEMM dtypes that run here (fp8 skipped where unsupported; bf16 may be fp32)."""
    use = []
    for d in dtypes:
        if d == "fp8":
            if fp8_supported(torch, dev):
                use.append("fp8")
            else:
                log(f"gemm fp8: not supported on {dev_name} (needs CUDA, compute capability "
                    f">= 8.9 and torch._scaled_mm); skipped")
        else:
            use.append(working_dtype(torch, dev, d))
    if not use:
        raise CollectError(f"gemm: none of the dtypes {', '.join(dtypes)} runs on {dev_name}")
    return use


def collect_gemm(torch, dev, timer: Timer, shapes: Shapes, dtypes: Sequence[str], writer: Writer,
                 log) -> Path:
    """Measure and write the `gemm` table."""
    use = _usable_dtypes(torch, dev, dtypes, writer.device_name, log)
    oc = measure_gemm(torch, dev, timer, shapes, use, log)
    notes = ["bf16 asked, fp32 used: this CPU build has no bf16 matmul"] if "fp32" in use else []
    return writer.table("gemm", oc, f"dtypes {', '.join(use)}; every m of the grid with every (n, k)",
                        notes, METHOD, columns(writer.cpu))

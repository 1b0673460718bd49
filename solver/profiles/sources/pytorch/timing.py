"""Timing one callable (the median per-call time of repeated runs) and tallying a family's
points (rows measured, points skipped and why)."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

# how one repeat is timed, as each table's notes say
TIMING = {
    "cuda": "CUDA events around {inner} back-to-back calls on the current stream",
    "cpu": "time.perf_counter around {inner} back-to-back calls",
}


def call_unit(cpu: bool) -> str:
    """The latency column's words for a single-device family."""
    return ("wall time of one call on the CPU, microseconds" if cpu
            else "GPU time of one call (CUDA events), microseconds")


class Timer:
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


def is_oom(torch, exc: BaseException) -> bool:
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


@dataclass
class Outcome:
    rows: list[tuple] = field(default_factory=list)
    skipped: int = 0
    first_error: str | None = None
    notes: list[str] = field(default_factory=list)

    def skip(self, torch, exc: BaseException, what: str) -> None:
        self.skipped += 1
        if self.first_error is None:
            kind = "out of memory" if is_oom(torch, exc) else f"{type(exc).__name__}: {exc}"
            self.first_error = f"{what}: {str(kind).splitlines()[0][:200]}"

"""The calibration fit through the replay (`benchmarks/calibrate.py --model replay`).

Each candidate parameter set is scored by replaying the measured rows' benchmarks
(`solver/accuracy/replay_rows.py`, what `fleetplan validate --model replay` runs), so the fit
has no harness terms: the arrival-wave law of `solver/perf/closed_loop.py` is not used by the
replay, and the mixed-batch slowdown stays 1 (the replay prices a mixed iteration from the
measured tables at its actual composition; no mechanism in the replay asks for more). What is
fitted are physical quantities of the engine, each with a range and a reason (`REPLAY_BOUNDS`,
`REQUEST_OVERHEAD_MS`).

A replay of the h100 rows costs about a second of CPU per row, so the search is bounded:
phase 1 (measured tables off: the efficiency factors that roofline-only cards use) is a
Nelder-Mead over the two factors, phase 2 (tables on) a golden-section search over the
per-iteration overhead; both score a deterministic subsample (every k-th row), and
`request_overhead_ms`, which only adds to every TTFT, is solved exactly inside each
evaluation on a grid (no replay needed for it).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from solver.accuracy.fit import MEAN_WEIGHT, TRIM_FACTOR, fit_engine, robust_loss
from solver.accuracy.replay_rows import replay_rows
from solver.schema.engine import EngineParams

# (field, lower, upper) of the factors and overheads the replay fit searches.
REPLAY_BOUNDS: tuple[tuple[str, float, float], ...] = (
    # achieved GEMM throughput at model shapes vs the card's best-shape (MAMF) efficiency: a
    # ceiling of 1; below 0.5 would mean the engine's GEMMs reach less than half of what
    # MAMF-finder measures at the same card (the cards' efficiency.gemm and its source, e.g.
    # hardware/h100-sxm.yaml)
    ("gemm_efficiency_factor", 0.5, 1.0),
    # achieved HBM bandwidth in the engine's kernels vs the card's measured copy bandwidth:
    # decode GEMV-like kernels reach 0.6-1.0 of a STREAM-like copy (the card's efficiency.memory
    # is that copy); above 1.25 the product with the card's efficiency passes the peak
    ("memory_efficiency_factor", 0.6, 1.25),
    # CPU time per engine iteration outside the GPU passes (scheduling, sampling, input
    # preparation, CUDA-graph launch; what the vLLM V1 rewrite, blog "vLLM V1: A Major Upgrade to
    # vLLM's Core Architecture", 2025-01-27, set out to shrink): an assumption of 0.1-8 ms, from
    # an overlapped C++ scheduler (TensorRT-LLM) to a Python one at large batch
    ("step_overhead_ms", 0.1, 8.0),
)
# host time to launch one layer's kernels eagerly (no CUDA graph: TensorRT-LLM's PyTorch backend
# graphs decode-only batches alone, solver/replay/steptime.py): PyTorch eager dispatch costs
# ~5-40 us per op from Python and a decoder layer issues tens of ops (norms, quantisation, GEMMs,
# attention and its metadata, all-reduces, MoE routing), so an assumption of 0-1.5 ms per layer;
# 0 is a host that always runs ahead of the GPU. Searched in phase 2b only (`evals_eager`), for
# the engines whose overlap scheduler hands out an iteration's first tokens after the next launch
# (solver/replay/schedulers/trtllm.py); the closed form has no such term.
EAGER_LAYER_HOST_MS = (0.0, 1.5)
# per-request time outside the iterations before the first token reaches the client (HTTP
# parse, tokenisation of at most a few thousand tokens, queue hand-off, first-token
# detokenisation and SSE streaming): milliseconds on a local benchmark; 50 ms is an order above
REQUEST_OVERHEAD_MS = (0.0, 50.0)
REQUEST_GRID = 501  # grid points over REQUEST_OVERHEAD_MS (0.1 ms apart)
EFFICIENCY = ("gemm_efficiency_factor", "memory_efficiency_factor")
START_GEMM = 0.85  # phase 1 starts here: inside REPLAY_BOUNDS, where MAMF-like shapes already sit


def subsample(rows: list, every: int) -> list:
    """Every `every`-th row in (model, tp, pp, ep, dp, concurrency, lengths) order: each group
    and concurrency range keeps its share, deterministically."""
    key = lambda r: (r.model, r.ints["tp"], r.ints["pp"], r.ints["ep"], r.ints["dp"],  # noqa: E731
                     r.ints["concurrency"], r.ints["input_tokens"], r.ints["output_tokens"])
    return sorted(rows, key=key)[::max(int(every), 1)]


def best_request_overhead(ttft0_ms: np.ndarray, meas_ms: np.ndarray) -> tuple[float, float]:
    """(request_overhead_ms, TTFT part of `robust_loss`) minimising that part over the grid of
    REQUEST_OVERHEAD_MS, for TTFTs predicted without the overhead."""
    grid = np.linspace(*REQUEST_OVERHEAD_MS, REQUEST_GRID)
    cap = math.log(TRIM_FACTOR)
    err = np.abs(np.log((ttft0_ms[None, :] + grid[:, None]) / meas_ms[None, :]))
    err = np.nan_to_num(err, nan=cap)
    part = np.median(err, axis=1) + MEAN_WEIGHT * np.mean(np.minimum(err, cap), axis=1)
    k = int(np.argmin(part))
    return float(grid[k]), float(part[k])


class ReplayScore:
    """The replay fit's loss over `rows` (one engine), with `request_overhead_ms` solved exactly
    per evaluation; remembers each evaluation (`log`)."""

    def __init__(self, path: str, rows: list, tables: bool, say: Callable[[str], None] = print) -> None:
        self.path, self.rows, self.tables, self.say = path, rows, tables, say
        self.meas_t = np.array([r.ttft_ms for r in rows])
        self.meas_p = np.array([r.tpot_ms for r in rows])
        self.log: list[tuple[EngineParams, float]] = []

    def predict(self, params: EngineParams) -> tuple[np.ndarray, np.ndarray]:
        """(TTFT without the request overhead, TPOT) per row, replayed with `params`."""
        p0 = params.model_copy(update={"request_overhead_ms": 0.0, "mixed_batch_slowdown": 1.0})
        return replay_rows(self.path, self.rows, lambda _e: p0, tables=self.tables, slowdown=1.0)

    def with_overhead(self, params: EngineParams) -> tuple[EngineParams, float]:
        t0, tp = self.predict(params)
        r, _ = best_request_overhead(t0, self.meas_t)
        best = params.model_copy(update={"request_overhead_ms": r, "mixed_batch_slowdown": 1.0})
        loss = robust_loss(np.log((t0 + r) / self.meas_t), np.log(tp / self.meas_p))
        self.log.append((best, loss))
        self.say(f"  eval {len(self.log)} tables={self.tables}: "
                 + ", ".join(f"{f}={getattr(best, f):.4g}" for f in (*EFFICIENCY, "step_overhead_ms",
                                                                    "eager_layer_host_ms", "request_overhead_ms"))
                 + f" loss {loss:.4f}")
        return best, loss

    def __call__(self, params: EngineParams) -> float:
        return self.with_overhead(params)[1]

    def best(self) -> tuple[EngineParams, float]:
        return min(self.log, key=lambda pl: pl[1])


def golden(f: Callable[[float], float], lo: float, hi: float, evals: int) -> float:
    """Golden-section search for the minimum of a unimodal f on [lo, hi] in `evals` calls."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(max(evals - 2, 0)):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return c if fc <= fd else d


def fit_replay(path: str, rows: list, start: EngineParams, every: int = 3, evals_roofline: int = 20,
               evals_step: int = 10, say: Callable[[str], None] = print,
               evals_eager: int = 0) -> tuple[EngineParams, float]:
    """The replay fit of one engine on `rows` (its fitted rows; module docstring). Returns the
    parameters (wave-law terms at their no-wave defaults, mixed-batch slowdown 1) and the loss
    on the subsample. `evals_roofline` 0 keeps `start`'s efficiency factors; `evals_eager` > 0
    adds phase 2b: a golden section over eager_layer_host_ms at the best step overhead."""
    sub = subsample(rows, every)
    say(f"replay fit: {len(sub)} of {len(rows)} rows (every {every}th)")
    # the search starts inside the bounds (a start at a bound is a corner the simplex cannot
    # leave in the logistic coordinates of solver/accuracy/fit.py)
    base = start.model_copy(update={"wave_size_coefficient": 1.0, "wave_size_exponent": 0.0,
                                    "mixed_batch_slowdown": 1.0})
    if evals_roofline > 0:
        base = base.model_copy(update={"gemm_efficiency_factor": START_GEMM})
    roof = ReplayScore(path, sub, tables=False, say=say)
    if evals_roofline > 0:
        fit_engine(roof, base, max_evals=evals_roofline, fields=EFFICIENCY, bounds=REPLAY_BOUNDS)
        eff = roof.best()[0]
        base = base.model_copy(update={f: getattr(eff, f) for f in EFFICIENCY})
    score = ReplayScore(path, sub, tables=True, say=say)
    _, lo, hi = next(b for b in REPLAY_BOUNDS if b[0] == "step_overhead_ms")
    golden(lambda s: score(base.model_copy(update={"step_overhead_ms": s})), lo, hi, evals_step)
    if evals_eager > 0:
        best = score.best()[0]
        golden(lambda e: score(best.model_copy(update={"eager_layer_host_ms": e})), *EAGER_LAYER_HOST_MS,
               evals_eager)
    return score.best()

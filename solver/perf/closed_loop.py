"""A closed-loop benchmark on one colocated instance: N requests kept in flight, as `vllm bench
serve --max-concurrency N` and aiperf `--concurrency N` run it; the steady state and the arrival
waves the benchmark harness produces (fitted per engine: `wave_size_coefficient`,
`wave_size_exponent` in solver/schema/engine.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.memory import Memory, memory
from solver.perf.runtime import Workload, cycle, effective_chunk, mixed_iteration, prompt_latency
from solver.perf.stages import Load
from solver.perf.tables import HardwareTable, Plans
from solver.schema.engine import EngineParams


@dataclass(frozen=True, slots=True)
class ClosedLoop:
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    throughput_qps: np.ndarray
    output_tokens_per_s: np.ndarray
    decode_batch: np.ndarray  # mean sequences in their decode phase
    memory: Memory


def wave_size(N, engine: EngineParams) -> np.ndarray:
    """Requests per arrival wave of a closed loop of N: coefficient x N^exponent, within [1, N]."""
    N = np.asarray(N, dtype=float)
    g = engine.wave_size_coefficient * np.power(np.maximum(N, 1.0), engine.wave_size_exponent)
    return np.clip(g, 1.0, np.maximum(N, 1.0))


def wave_iterations(G, u, max_wave: int = 4096) -> np.ndarray:
    """Mean number of full-budget iterations a prompt of a wave of G waits for its first token.

    Each prompt needs u iterations' worth of prompt tokens (s / C'); prompt i of the wave is
    done at the end of iteration ceil(i u). Exact mean over i = 1..n for whole n; a fractional
    G interpolates linearly between floor(G) and floor(G) + 1. Note the discreteness: two
    4096-token prompts under an 8192-token budget that also carries decode tokens need two
    iterations, not one. Waves above `max_wave` use the continuous mean
    (G + 1)/2 x u + (1 - min(u, 1)) / 2 (the rounding up adds half an iteration on average).
    """
    G_all = np.maximum(np.asarray(G, dtype=float), 1.0)
    u = np.asarray(u, dtype=float) + np.zeros_like(G_all)
    G = np.minimum(G_all, float(max_wave))
    n_max = int(np.ceil(G.max())) + 1 if G.size else 2
    i = np.arange(1, n_max + 1, dtype=float)
    done = np.ceil(u[..., None] * i - 1e-9)  # iteration at whose end prompt i is done
    mean = np.cumsum(done, axis=-1) / i  # mean over the first n prompts, n = 1..n_max
    lo = np.floor(G).astype(int)
    w = G - lo
    m_lo = np.take_along_axis(mean, (lo - 1)[..., None], axis=-1)[..., 0]
    m_hi = np.take_along_axis(mean, np.minimum(lo, n_max - 1)[..., None], axis=-1)[..., 0]
    exact = (1.0 - w) * m_lo + w * m_hi
    smooth = (G_all + 1.0) / 2.0 * u + (1.0 - np.minimum(u, 1.0)) / 2.0
    return np.where(G_all > max_wave, smooth, exact)


def wave_ttft(
    arch: ModelArch, hw: HardwareTable, plans: Plans, wl: Workload, N, G, engine: EngineParams
) -> np.ndarray:
    """Mean TTFT (s) of a wave of G prompts that arrive at once in a closed loop of N.

    While the wave is prefilled, D = N - G/2 sequences decode on average (the other waves and
    the wave's prompts already prefilled); the engine prefills C' = budget - D prompt tokens
    per iteration (at least one prompt's worth, never more than the wave holds), and prompt i
    of the wave is done at the end of iteration ceil(i s / C') (`wave_iterations`). G = N is the
    lockstep wave of a benchmark's start.
    """
    N = np.asarray(N, dtype=float) + np.zeros(len(plans))
    G = np.minimum(np.asarray(G, dtype=float) + np.zeros(len(plans)), np.maximum(N, 1.0))
    s = wl.input_tokens
    C = float(engine.max_batched_tokens)
    dec = np.maximum(N - G / 2.0, 1e-9)
    chunk = effective_chunk(np.minimum(np.maximum(C - dec, np.minimum(s, C)), G * s), s, engine)
    iters = wave_iterations(G, s / chunk)
    sized = plans.with_batch(dec)
    tau_d, _ = cycle(arch, hw, sized, Load.decode(dec, wl.decode_context), engine)
    tau_m, _ = cycle(arch, hw, sized, Load.mixed(dec, wl.decode_context, chunk, s), engine)
    tau_b = mixed_iteration(tau_d, tau_m, engine)
    return iters * tau_b + engine.request_overhead_ms * 1e-3


def closed_loop(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    wl: Workload,
    concurrency,
    engine: EngineParams,
    iters: int = 32,
) -> ClosedLoop:
    """A benchmark that keeps N requests in flight on one colocated instance.

    Steady state first: with B sequences decoding, Little's law gives the request rate
    lambda = B / ((o-1) tau) and the prefill tokens needed per iteration B*s/(o-1), which must
    fit the token budget left after the decode tokens (C - B). The prefill of one prompt takes
    s / (C - B) mixed iterations (the last one carrying only the remainder). N = B + lambda * TTFT
    closes the loop; we bisect on B. When the budget cannot keep up (B at saturation), the
    remaining requests queue and TTFT = (N - B) / lambda.

    Then the arrival waves (`wave_size`): requests that finish in the same iteration are
    replaced together, so prompts arrive in waves of G and wait for the wave's prefill
    (`wave_ttft`); TTFT is the larger of the two. A lockstep wave (G = N) also stretches TPOT:
    the prompts prefilled early wait for the rest of the wave, then all N decode together, which
    adds the wave's mean prefill wait spread over the o-1 decode steps; TPOT moves from the
    steady state towards that in proportion (G - 1) / (N - 1).
    """
    N = np.asarray(concurrency, dtype=float) + np.zeros(len(plans))
    s, o = wl.input_tokens, wl.output_tokens  # scalars, or arrays over the plans
    o1 = np.maximum(np.asarray(o, dtype=float) - 1.0, 1.0)
    C = float(engine.max_batched_tokens)
    b, tau, lam, ttft = _steady_state(arch, hw, plans, wl, N, o1, engine, iters)
    G = wave_size(N, engine)
    if np.any(G > 1.0):
        tau, lam, ttft = _with_waves(arch, hw, plans, wl, N, G, o1, tau, ttft, engine)
    mem = memory(arch, hw, plans.with_batch(N), s + o, np.minimum(N + C, N * (s + 1)), engine)
    return ClosedLoop(
        ttft_ms=ttft * 1e3,
        tpot_ms=tau * 1e3,
        throughput_qps=lam,
        output_tokens_per_s=lam * o,
        decode_batch=b,
        memory=mem,
    )


def _loop_state(arch, hw, plans: Plans, wl: Workload, b, o1, engine: EngineParams):
    """(iteration time, request rate, TTFT) in seconds with b sequences decoding."""
    s = wl.input_tokens
    C = float(engine.max_batched_tokens)
    budget = np.maximum(C - b, 1.0)
    need = b * s / o1
    # prefill tokens a mixed iteration carries: whole prompts while the queue is short
    # (one prompt per mixed iteration), up to the budget when it is not
    chunk = effective_chunk(np.minimum(budget, np.maximum(s, need)), s, engine)
    f = np.clip(need / chunk, 0.0, 1.0)
    sized = plans.with_batch(np.maximum(b, 1e-9))
    tau_d, _ = cycle(arch, hw, sized, Load.decode(np.maximum(b, 1e-9), wl.decode_context), engine)
    tau_m, _ = cycle(arch, hw, sized, Load.mixed(b, wl.decode_context, chunk, s), engine)
    tau_m = mixed_iteration(tau_d, tau_m, engine)
    tau = f * tau_m + (1.0 - f) * tau_d
    lam = b / (o1 * tau)
    lat = prompt_latency(arch, hw, sized, np.maximum(b, 1e-9), wl.decode_context, chunk, s, engine)
    ttft = tau / 2.0 + lat + engine.request_overhead_ms * 1e-3
    return tau, lam, ttft


def _steady_state(arch, hw, plans: Plans, wl: Workload, N, o1, engine: EngineParams, iters: int):
    """Bisect on the decoding sequences B until N = B + lambda x TTFT; requests the budget
    cannot keep up with queue (TTFT = (N - B) / lambda). Returns (B, tau, lambda, TTFT)."""
    s = wl.input_tokens
    C = float(engine.max_batched_tokens)
    b_sat = C * o1 / (s + o1)
    lo = np.zeros_like(N)
    up = np.minimum(N, b_sat)
    for _ in range(iters):
        mid = 0.5 * (lo + up)
        _, lam, ttft = _loop_state(arch, hw, plans, wl, mid, o1, engine)
        g = mid + lam * ttft - N
        lo = np.where(g < 0, mid, lo)
        up = np.where(g < 0, up, mid)
    b = 0.5 * (lo + up)
    tau, lam, ttft = _loop_state(arch, hw, plans, wl, b, o1, engine)
    queued = (N - b - lam * ttft) > 1e-6 * N
    return b, tau, lam, np.where(queued, (N - b) / lam, ttft)


def _with_waves(arch, hw, plans: Plans, wl: Workload, N, G, o1, tau, ttft, engine: EngineParams):
    """The steady state with arrival waves of G: TTFT is the larger of the two, a lockstep
    share (G - 1) / (N - 1) of TPOT waits for the wave. Returns (tau, lambda, TTFT)."""
    wave = wave_ttft(arch, hw, plans, wl, N, G, engine)
    full = plans.with_batch(np.maximum(N, 1e-9))
    tau_full, _ = cycle(arch, hw, full, Load.decode(np.maximum(N, 1e-9), wl.decode_context), engine)
    lockstep = np.where(N > 1.0, (G - 1.0) / np.maximum(N - 1.0, 1e-9), 0.0)
    wait = wave - engine.request_overhead_ms * 1e-3
    ttft = np.maximum(ttft, wave)
    tau = (1.0 - lockstep) * tau + lockstep * (tau_full + wait / o1)
    lam = N / (ttft + o1 * tau)  # Little's law over the whole closed loop
    return tau, lam, ttft

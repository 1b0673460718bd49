"""Runtime models: stage times -> per-instance capacity, TTFT and TPOT (p50 and p99).

Three roles of an instance:

- `prefill` (disaggregated): batches of prompts flow through the pipeline; a request's TTFT is
  its queueing wait + the pass latency + the KV transfer to the decode pool. The queue is M/D/1
  per instance (a pool of c instances waits less, so this is conservative) with the
  exponential-tail approximation P(W > t) = rho exp(-2(1 - rho) t / S), whose mean is the exact
  M/D/1 mean; capacity is the highest arrival rate whose p50/p99 TTFT, inflated by the safety
  margin, meets the SLO.
- `decode` (disaggregated): `batch` sequences decode together; TPOT is the iteration (pipeline
  cycle) time; capacity = slot fill x batch / (output tokens x TPOT).
- `colocated` (continuous batching with chunked prefill): an operating point with `batch`
  decoding sequences and a per-iteration prefill chunk. Little's law fixes the share of
  iterations that carry prefill: f = batch x input / (output x chunk). Those iterations are
  slower (prefill work plus the named mixed-batch slowdown); TPOT p50 is the mean iteration,
  p99 adds the binomial spread of mixed iterations over a request's tokens; TTFT waits for the
  prefill lane (M/D/1 at its busy share) and takes ceil(input / chunk) mixed iterations.

`closed_loop` models a benchmark that keeps N requests in flight (vLLM/SGLang bench, aiperf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.memory import Memory, memory
from solver.perf.stages import Load, StageTime, pass_latency, stage_time
from solver.perf.tables import GIB, PRECISION_BYTES, HardwareTable, Plans
from solver.schema.engine import EngineParams

Z99 = 2.3263478740408408  # standard normal 99th percentile


@dataclass(frozen=True, slots=True)
class Workload:
    """Token lengths of one service (means and tails, tokens)."""

    input_tokens: float
    output_tokens: float
    input_p99_tokens: float | None = None
    output_p99_tokens: float | None = None

    @property
    def input_p99(self) -> float:
        return self.input_p99_tokens or self.input_tokens

    @property
    def output_p99(self) -> float:
        return self.output_p99_tokens or self.output_tokens

    @property
    def decode_context(self) -> float:
        """Mean KV context of a decoding sequence: input + output / 2."""
        return self.input_tokens + self.output_tokens / 2.0


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency bounds in ms (None: unconstrained) and the safety margin on predictions."""

    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    safety_margin: float = 0.0


@dataclass(frozen=True, slots=True)
class RoleMetrics:
    """Per-plan results of one role (arrays; NaN where a metric does not apply)."""

    memory: Memory
    prefill_ms: np.ndarray  # one pass of the role's prefill work (NaN for decode)
    decode_step_ms: np.ndarray  # one decode iteration (NaN for prefill)
    ttft_p50_ms: np.ndarray
    ttft_p99_ms: np.ndarray
    tpot_p50_ms: np.ndarray
    tpot_p99_ms: np.ndarray
    capacity_qps: np.ndarray  # requests/s one instance sustains within the SLO (0: none)
    tokens_per_s: np.ndarray  # tokens/s of the role at that capacity
    utilization: np.ndarray
    slo_ok: np.ndarray
    breakdown: StageTime  # of the role's main iteration

    @property
    def fits(self) -> np.ndarray:
        return self.memory.fits

    @property
    def feasible(self) -> np.ndarray:
        return self.fits & self.slo_ok & (self.capacity_qps > 0)


# ---- helpers ---------------------------------------------------------------------------------


def _within(value, bound: float | None, margin: float) -> np.ndarray:
    if bound is None:
        return np.ones(np.shape(value), dtype=bool)
    return np.nan_to_num(value, nan=np.inf) * (1.0 + margin) <= bound


def queue_wait(rho, service_s, q: float) -> np.ndarray:
    """q-quantile of the M/D/1 wait, exponential-tail approximation (seconds)."""
    rho = np.clip(rho, 0.0, 1.0 - 1e-9)
    tail = service_s / (2.0 * (1.0 - rho)) * np.log(np.maximum(rho / (1.0 - q), 1.0))
    return np.where(rho > 1.0 - q, tail, 0.0)


def _micro_batches(plans: Plans, seqs) -> np.ndarray:
    """Pipeline micro-batches: fill the pipe when there are enough sequences."""
    return np.maximum(1.0, np.minimum(np.asarray(seqs, dtype=float), plans.pp))


def cycle(
    arch: ModelArch, hw: HardwareTable, plans: Plans, load: Load, engine: EngineParams
) -> tuple[np.ndarray, StageTime]:
    """Seconds for every sequence of `load` (the whole instance) to advance one iteration.

    The load is split over attention-DP ranks and over pipeline micro-batches; a micro-batch
    crosses every stage and hop once per iteration.
    """
    m = _micro_batches(plans, load.dec_seqs)
    st = stage_time(arch, hw, plans, load.scaled(m * plans.dp), engine)
    return pass_latency(plans, st, engine), st


def chunk_latency(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    dec_seqs,
    context,
    chunk,
    prompt_tokens: float,
    engine: EngineParams,
) -> np.ndarray:
    """Latency of the pipeline micro-batch that carries one prefill chunk through every stage.

    The decode batch is spread over the micro-batches, but one prompt's chunk rides in a single
    micro-batch; its prefill work pays the mixed-batch slowdown. Equal to the mixed iteration
    when pp == 1.
    """
    decode_only, with_chunk = _chunk_latencies(
        arch, hw, plans, dec_seqs, context, chunk, prompt_tokens, engine
    )
    return mixed_iteration(decode_only, with_chunk, engine)


def _chunk_latencies(arch, hw, plans, dec_seqs, context, chunk, prompt_tokens, engine):
    """(decode-only, with-chunk) latencies of the micro-batch of `chunk_latency`."""
    m = _micro_batches(plans, dec_seqs)
    d = plans.dp.astype(float)
    dec = np.asarray(dec_seqs, dtype=float) / (m * d)
    c = np.asarray(chunk, dtype=float) + np.zeros(len(plans))
    decode_only = Load.decode(dec, context)
    with_chunk = Load(
        dec_seqs=decode_only.dec_seqs,
        dec_ctx=decode_only.dec_ctx,
        pre_tokens=c / d,
        pre_prompt=np.zeros_like(c) + prompt_tokens,
        pre_chunk=np.minimum(c, prompt_tokens),
        logits=dec + c / prompt_tokens / d,
    )
    return tuple(pass_latency(plans, stage_time(arch, hw, plans, ld, engine), engine)
                 for ld in (decode_only, with_chunk))


def prompt_latency(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    dec_seqs,
    context,
    chunk,
    prompt_tokens,
    engine: EngineParams,
) -> np.ndarray:
    """Time to prefill one prompt of `prompt_tokens` in chunks of at most `chunk` tokens.

    floor(s / c) iterations carry a full chunk; the remainder r rides in one more iteration
    whose prefill share is r / c of a full chunk's (a prompt one token over the budget costs a
    cheap second iteration, not a second full one).
    """
    s = np.asarray(prompt_tokens, dtype=float) + np.zeros(len(plans))
    c = np.minimum(np.asarray(chunk, dtype=float) + np.zeros(len(plans)), s)
    full = np.floor(s / np.maximum(c, 1.0))
    rest = s - full * c
    lat_0, mixed = _chunk_latencies(arch, hw, plans, dec_seqs, context, c, s, engine)
    lat_c = mixed_iteration(lat_0, mixed, engine)
    lat_r = lat_0 + (rest / np.maximum(c, 1.0)) * (lat_c - lat_0)
    return full * lat_c + np.where(rest > 0.5, lat_r, 0.0)


def kv_transfer_s(
    arch: ModelArch, hw: HardwareTable, plans: Plans, tokens, engine: EngineParams,
    link: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Ship one prompt's KV cache from a prefill instance to a decode instance.

    All of the prefill instance's NICs send in parallel (each device holds its shard); bf16 or
    the KV precision, full model. `kv_transfer_overlap` hides part of it behind compute.
    `link` is (bytes/s per device, latency s) per plan when the decode pool is on another
    hardware type (the slower of the two cards' scale-out links); default the plan's own card's.
    """
    i = plans.hw
    bw_dev, lat = (hw.so_bw[i], hw.so_lat[i]) if link is None else link
    bytes_ = np.asarray(tokens, dtype=float) * arch.kv_cache_bytes_per_token(1.0) * PRECISION_BYTES[plans.kvprec]
    bw = bw_dev * plans.devices
    return (lat + bytes_ / bw) * (1.0 - engine.kv_transfer_overlap)


def _solve_rho(ok_at, n: int, hi: float, iters: int = 40) -> np.ndarray:
    """Largest rho in (0, hi] with ok_at(rho) True, for a predicate that only turns False as
    rho grows (arrays of n plans); 0 where even an idle instance fails."""
    lo_ok = ok_at(np.full(n, 1e-6))
    lo = np.zeros(n)
    up = np.full(n, hi)
    top_ok = ok_at(up)
    for _ in range(iters):
        mid = 0.5 * (lo + up)
        good = ok_at(mid)
        lo = np.where(good, mid, lo)
        up = np.where(good, up, mid)
    return np.where(top_ok, hi, np.where(lo_ok, lo, 0.0))


# ---- roles -----------------------------------------------------------------------------------


def prefill_role(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    wl: Workload,
    slo: Slo,
    engine: EngineParams,
    kv_link: tuple[np.ndarray, np.ndarray] | None = None,
) -> RoleMetrics:
    """`kv_link`: the link the KV cache crosses to the decode pool (see kv_transfer_s)."""
    B = plans.batch
    st = stage_time(arch, hw, plans, Load.prefill(B / plans.dp, wl.input_tokens), engine)
    latency = pass_latency(plans, st, engine)
    if wl.input_p99 != wl.input_tokens:
        st99 = stage_time(arch, hw, plans, Load.prefill(B / plans.dp, wl.input_p99), engine)
        latency99 = pass_latency(plans, st99, engine)
    else:
        latency99 = latency
    # a full pipe releases one batch per stage time
    interval = st.stage_s + engine.step_overhead_ms * 1e-3
    per_request = interval / B
    t_kv = kv_transfer_s(arch, hw, plans, wl.input_tokens, engine, kv_link)
    t_kv99 = kv_transfer_s(arch, hw, plans, wl.input_p99, engine, kv_link)

    overhead = engine.request_overhead_ms * 1e-3

    def ttft(rho, q):
        base = latency if q == 0.5 else latency99
        kv = t_kv if q == 0.5 else t_kv99
        return queue_wait(rho, per_request, q) + base + kv + overhead

    def meets_slo(rho):
        return _within(ttft(rho, 0.5) * 1e3, slo.ttft_p50_ms, slo.safety_margin) & _within(
            ttft(rho, 0.99) * 1e3, slo.ttft_p99_ms, slo.safety_margin
        )

    rho = _solve_rho(meets_slo, len(plans), engine.max_utilization)
    mem = memory(arch, hw, plans, wl.input_p99, B * wl.input_p99, engine)
    capacity = rho / per_request
    ok = rho > 0
    nan = np.full(len(plans), np.nan)
    return RoleMetrics(
        memory=mem,
        prefill_ms=latency * 1e3,
        decode_step_ms=nan,
        ttft_p50_ms=ttft(rho, 0.5) * 1e3,
        ttft_p99_ms=ttft(rho, 0.99) * 1e3,
        tpot_p50_ms=nan,
        tpot_p99_ms=nan,
        capacity_qps=np.where(ok & mem.fits, capacity, 0.0),
        tokens_per_s=np.where(ok & mem.fits, capacity * wl.input_tokens, 0.0),
        utilization=rho,
        slo_ok=ok,
        breakdown=st,
    )


def decode_role(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    wl: Workload,
    slo: Slo,
    engine: EngineParams,
) -> RoleMetrics:
    B = plans.batch
    tpot, st = cycle(arch, hw, plans, Load.decode(B, wl.decode_context), engine)
    long_ctx = wl.input_p99 + wl.output_p99
    if long_ctx != wl.decode_context:
        tpot99, _ = cycle(arch, hw, plans, Load.decode(B, long_ctx), engine)
    else:
        tpot99 = tpot
    ok = _within(tpot * 1e3, slo.tpot_p50_ms, slo.safety_margin) & _within(
        tpot99 * 1e3, slo.tpot_p99_ms, slo.safety_margin
    )
    mem = memory(arch, hw, plans, wl.input_tokens + wl.output_tokens, B, engine)
    capacity = engine.decode_slot_fill * B / (wl.output_tokens * tpot)
    nan = np.full(len(plans), np.nan)
    good = ok & mem.fits
    return RoleMetrics(
        memory=mem,
        prefill_ms=nan,
        decode_step_ms=tpot * 1e3,
        ttft_p50_ms=nan,
        ttft_p99_ms=nan,
        tpot_p50_ms=tpot * 1e3,
        tpot_p99_ms=tpot99 * 1e3,
        capacity_qps=np.where(good, capacity, 0.0),
        tokens_per_s=np.where(good, engine.decode_slot_fill * B / tpot, 0.0),
        utilization=np.full(len(plans), engine.decode_slot_fill),
        slo_ok=ok,
        breakdown=st,
    )


def mixed_iteration(tau_decode, tau_mixed, engine: EngineParams) -> np.ndarray:
    """A mixed iteration: the prefill work it adds over a pure decode iteration runs
    `mixed_batch_slowdown` times slower than the roofline says."""
    return tau_decode + engine.mixed_batch_slowdown * np.maximum(tau_mixed - tau_decode, 0.0)


def effective_chunk(chunk, input_tokens: float, engine: EngineParams) -> np.ndarray:
    """Prefill tokens per mixed iteration; without chunking, whole prompts only."""
    c = np.asarray(chunk, dtype=float)
    if engine.chunked_prefill:
        return c
    return np.maximum(1.0, np.round(c / input_tokens)) * input_tokens


def colocated_role(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    wl: Workload,
    slo: Slo,
    engine: EngineParams,
    chunk_tokens,
) -> RoleMetrics:
    B = plans.batch
    s, o = wl.input_tokens, wl.output_tokens
    c = effective_chunk(chunk_tokens, s, engine) + np.zeros(len(plans))
    f = B * s / (o * c)  # share of iterations that carry prefill work
    stable = f <= 1.0
    f = np.minimum(f, 1.0)
    tau_d, st = cycle(arch, hw, plans, Load.decode(B, wl.decode_context), engine)
    tau_m, _ = cycle(arch, hw, plans, Load.mixed(B, wl.decode_context, c, s), engine)
    tau_m = mixed_iteration(tau_d, tau_m, engine)
    tau = f * tau_m + (1.0 - f) * tau_d
    spread = Z99 * np.sqrt(f * (1.0 - f) / max(o - 1.0, 1.0)) * (tau_m - tau_d)
    tpot99 = tau + spread
    lam = engine.decode_slot_fill * B / (o * tau)
    # the prefill lane: busy share rho, per-prompt service input x tau_m / chunk
    service = s * tau_m / c
    rho = np.minimum(lam * service, 1.0)
    lat = prompt_latency(arch, hw, plans, B, wl.decode_context, c, s, engine)
    lat99 = prompt_latency(arch, hw, plans, B, wl.decode_context, c, wl.input_p99, engine)
    overhead = engine.request_overhead_ms * 1e-3
    ttft50 = queue_wait(rho, service, 0.5) + tau / 2.0 + lat + overhead
    ttft99 = queue_wait(rho, wl.input_p99 * tau_m / c, 0.99) + tau / 2.0 + lat99 + overhead
    ok = (
        stable
        & (rho < engine.max_utilization)
        & _within(ttft50 * 1e3, slo.ttft_p50_ms, slo.safety_margin)
        & _within(ttft99 * 1e3, slo.ttft_p99_ms, slo.safety_margin)
        & _within(tau * 1e3, slo.tpot_p50_ms, slo.safety_margin)
        & _within(tpot99 * 1e3, slo.tpot_p99_ms, slo.safety_margin)
    )
    mem = memory(arch, hw, plans, s + o, B + c, engine)
    good = ok & mem.fits
    return RoleMetrics(
        memory=mem,
        prefill_ms=lat * 1e3,
        decode_step_ms=tau_d * 1e3,
        ttft_p50_ms=ttft50 * 1e3,
        ttft_p99_ms=ttft99 * 1e3,
        tpot_p50_ms=tau * 1e3,
        tpot_p99_ms=tpot99 * 1e3,
        capacity_qps=np.where(good, lam, 0.0),
        tokens_per_s=np.where(good, lam * o, 0.0),
        utilization=rho,
        slo_ok=ok,
        breakdown=st,
    )


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
    b_sat = C * o1 / (s + o1)
    hi = np.minimum(N, b_sat)

    def state(b):
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

    lo = np.zeros_like(N)
    up = hi.copy()
    for _ in range(iters):
        mid = 0.5 * (lo + up)
        _, lam, ttft = state(mid)
        g = mid + lam * ttft - N
        lo = np.where(g < 0, mid, lo)
        up = np.where(g < 0, up, mid)
    b = 0.5 * (lo + up)
    tau, lam, ttft = state(b)
    queued = (N - b - lam * ttft) > 1e-6 * N
    ttft = np.where(queued, (N - b) / lam, ttft)
    G = wave_size(N, engine)
    if np.any(G > 1.0):
        wave = wave_ttft(arch, hw, plans, wl, N, G, engine)
        full = plans.with_batch(np.maximum(N, 1e-9))
        tau_full, _ = cycle(arch, hw, full, Load.decode(np.maximum(N, 1e-9), wl.decode_context), engine)
        lockstep = np.where(N > 1.0, (G - 1.0) / np.maximum(N - 1.0, 1e-9), 0.0)
        wait = wave - engine.request_overhead_ms * 1e-3
        ttft = np.maximum(ttft, wave)
        tau = (1.0 - lockstep) * tau + lockstep * (tau_full + wait / o1)
        lam = N / (ttft + o1 * tau)  # Little's law over the whole closed loop
    mem = memory(arch, hw, plans.with_batch(N), s + o, np.minimum(N + C, N * (s + 1)), engine)
    return ClosedLoop(
        ttft_ms=ttft * 1e3,
        tpot_ms=tau * 1e3,
        throughput_qps=lam,
        output_tokens_per_s=lam * o,
        decode_batch=b,
        memory=mem,
    )


def memory_gib(m: Memory) -> np.ndarray:
    return m.total / GIB

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
- `colocated` (continuous batching with chunked prefill, with or without speculation):
  solver/perf/colocated.py, built on the helpers here (`cycle`, `prompt_latency`,
  `mixed_iteration`, `effective_chunk`).

A benchmark that keeps N requests in flight (vLLM/SGLang bench, aiperf) is `closed_loop.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf import prefix, speculative
from solver.perf.arch import ModelArch
from solver.perf.memory import Memory, memory
from solver.perf.slots import queue_wait
from solver.perf.stages import Load, StageTime, pass_latency, stage_time
from solver.perf.tables import PRECISION_BYTES, HardwareTable, Plans
from solver.perf.workload import Slo, Workload, slot_fill
from solver.schema.engine import EngineParams

__all__ = ["Slo", "Workload", "queue_wait", "slot_fill"]  # re-exported: callers use rt.Workload, rt.Slo

Z99 = 2.3263478740408408  # standard normal 99th percentile


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
    link: tuple[np.ndarray, np.ndarray] | None = None, decode_tp=None,
) -> np.ndarray:
    """Ship one prompt's KV cache from a prefill instance to a decode instance.

    A request's cache lives on its attention group: the tp x pp x cp devices of one
    attention-DP rank (pipeline stages hold their layers, context-parallel ranks their share of
    the prompt), each sending over its own NIC in parallel; bf16 or the KV precision, full
    model. With grouped-query attention each tensor-parallel rank holds its heads' share. With
    MLA every tensor-parallel rank holds the same latent vectors, and every attention rank of
    the decode instance needs them: each prefill rank sends ceil(decode_tp / tp) full copies of
    its stage (TensorRT-LLM cpp/tensorrt_llm/batch_manager/mlaCacheFormatter.cpp:
    `formatOutput` sends to each target rank, `needSendCache` lets only every
    (tp / decode_tp)-th rank send when the decode has fewer). `decode_tp` is the decode
    instance's attention tensor-parallel size (1 with attention DP); default the prefill's.
    `kv_transfer_overlap` hides part of the transfer behind compute. `link` is (bytes/s per
    device, latency s) per plan when the decode pool is on another hardware type (the slower of
    the two cards' scale-out links); default the plan's own card's.
    """
    i = plans.hw
    bw_dev, lat = (hw.so_bw[i], hw.so_lat[i]) if link is None else link
    bytes_ = np.asarray(tokens, dtype=float) * arch.kv_cache_bytes_per_token(1.0) * PRECISION_BYTES[plans.kvprec]
    if arch.is_mla:  # each tensor-parallel rank sends its stage's full latent copies
        copies = np.ceil((plans.tp if decode_tp is None else np.asarray(decode_tp)) / plans.tp)
        bytes_, senders = bytes_ * copies, plans.pp * plans.cp
    else:
        senders = plans.tp * plans.pp * plans.cp
    return (lat + bytes_ / (bw_dev * senders)) * (1.0 - engine.kv_transfer_overlap)


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
    st = stage_time(arch, hw, plans, prefix.prefill_load(B / plans.dp, wl, wl.input_tokens), engine)
    latency = pass_latency(plans, st, engine)
    if wl.input_p99 != wl.input_tokens:
        st99 = stage_time(arch, hw, plans, prefix.prefill_load(B / plans.dp, wl, wl.input_p99), engine)
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
        return queue_wait(rho, per_request, q, wl.arrival_cv2) + base + kv + overhead

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
    tpot, tpot99 = speculative.decode_tpots(arch, hw, plans, B, wl, long_ctx, engine, tpot, tpot99, cycle)
    ok = _within(tpot * 1e3, slo.tpot_p50_ms, slo.safety_margin) & _within(
        tpot99 * 1e3, slo.tpot_p99_ms, slo.safety_margin
    )
    mem = speculative.decode_memory(arch, hw, plans, B, wl, engine)
    fill = slot_fill(slo, engine)
    capacity = fill * B / (wl.output_tokens * tpot)
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
        tokens_per_s=np.where(good, fill * B / tpot, 0.0),
        utilization=np.full(len(plans), fill),
        slo_ok=ok,
        breakdown=st,
    )


def mixed_iteration(tau_decode, tau_mixed, engine: EngineParams) -> np.ndarray:
    """A mixed iteration: the prefill work it adds over a pure decode iteration runs
    `mixed_batch_slowdown` times slower than the roofline says."""
    return tau_decode + engine.mixed_batch_slowdown * np.maximum(tau_mixed - tau_decode, 0.0)


def effective_chunk(chunk, input_tokens: float, engine: EngineParams, decoding=0.0) -> np.ndarray:
    """Prefill tokens per mixed iteration; without chunking, whole prompts only. With chunking,
    `chunk` is the token budget and the `decoding` sequences' tokens count inside it (running
    requests first, prompts get the rest: vLLM v1 `max_num_batched_tokens`,
    vllm/v1/core/sched/scheduler.py `schedule`; TensorRT-LLM `max_num_tokens`,
    tensorrt_llm/_torch/pyexecutor/scheduler.py), so a mixed iteration carries `chunk` GEMM rows,
    not chunk + decoding (a power-of-two budget stays on a node of the measured GEMM tables)."""
    c = np.asarray(chunk, dtype=float)
    if engine.chunked_prefill:
        return np.maximum(c - np.asarray(decoding, dtype=float), 0.0)
    return np.maximum(1.0, np.round(c / input_tokens)) * input_tokens

"""The colocated role: continuous batching with chunked prefill, with or without speculation.

An operating point has n decoding sequences (`batch`, or fewer where the token budget cannot
feed that many: slots.py `budget_decoders`) and a per-iteration prefill chunk c. Little's law
fixes the share of iterations that carry prefill, f = n x input / (output x c). Those iterations
are slower (prefill work plus the named mixed-batch slowdown); TPOT p50 is the mean iteration,
p99 adds the binomial spread of mixed iterations over a request's tokens; TTFT waits for the
prefill lane (M/D/1 at its busy share) and takes ceil(input / c) mixed iterations.

Speculative decoding (a plan's `spec` column; solver/perf/speculative.py for the iteration
itself). vLLM speculates in chunked-prefill serving too: every running request's next tokens
are `num_tokens_with_spec - num_computed_tokens` = k + 1 (its sampled token and k drafts) and
they are taken from the same `max_num_batched_tokens` budget as the prefill chunks
(vllm/v1/core/sched/scheduler.py `Scheduler.schedule`, the RUNNING loop; vllm/v1/request.py
`num_tokens_with_spec` = prompt + output + spec tokens); TensorRT-LLM counts a generation
request's draft tokens against `max_num_tokens` alike (cpp/tensorrt_llm/batch_manager/
microBatchScheduler.cpp: beam width + draft tokens per generation request). So with v = k + 1
budget tokens per decoder and E = (1 - a^(k+1)) / (1 - a) tokens per decoder per iteration:

- the budget feeds n <= o c_b / (E s + v o) decoders (each request needs s prompt tokens of
  budget and o / E iterations of v tokens), c = c_b - v n prefill tokens per mixed iteration;
- f = n E s / (o c) (n E / o requests finish per iteration);
- a decode-only iteration is the verification of n x (k + 1) positions plus the k draft passes;
  a mixed one the verification and the chunk in one forward pass (the drafted positions ride as
  prefill tokens beside the chunk, `mixed_verify_load`) plus the drafts; the mixed slowdown on
  what the chunk adds;
- TPOT = the mean iteration / E; a request holds its slot o / E iterations; p99 spreads the
  mixed iterations over those o / E iterations.

Not counted: the proposer's pass over the chunk's tokens (an EAGLE / MTP head's one layer, ~1/L
of the chunk; a draft model's prefill of the prompt), and the spread of accepted lengths.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from solver.perf import speculative
from solver.perf.arch import ModelArch
from solver.perf.memory import memory
from solver.perf.runtime import (
    Z99,
    RoleMetrics,
    _solve_rho,
    _within,
    cycle,
    effective_chunk,
    mixed_iteration,
    prompt_latency,
)
from solver.perf.slots import budget_decoders, queue_wait, slot_wait
from solver.perf.speculative import Speculation
from solver.perf.stages import Load, StageTime
from solver.perf.tables import HardwareTable, Plans
from solver.perf.workload import Slo, Workload, slot_fill
from solver.schema.engine import EngineParams


@dataclass(frozen=True)
class Iterations:
    """A colocated operating point per plan (arrays): `n` decoders, `c` prefill tokens per mixed
    iteration, the share `f` of mixed iterations, their seconds (`tau_d` decode-only, `tau_m`
    mixed), the prompt's latency (`lat`, `lat99` for the p99 prompt), tokens per decoder per
    iteration (`gain`: E, 1 without speculation), budget tokens per decoder (`verify`)."""

    n: np.ndarray
    c: np.ndarray
    f: np.ndarray
    tau_d: np.ndarray
    tau_m: np.ndarray
    lat: np.ndarray
    lat99: np.ndarray
    gain: np.ndarray
    verify: np.ndarray
    stable: np.ndarray
    st: StageTime

    def merged(self, idx: np.ndarray, other: Iterations) -> Iterations:
        """These iterations with rows `idx` replaced by `other`'s (its rows in that order)."""
        def put(a, b):
            out = np.array(a, dtype=np.result_type(a, b), copy=True)
            out[idx] = b
            return out
        st = dataclasses.replace(
            self.st, **{f.name: put(getattr(self.st, f.name), getattr(other.st, f.name))
                        for f in dataclasses.fields(StageTime) if f.name != "sources"},
            sources={k: put(v, other.st.sources[k]) for k, v in self.st.sources.items()})
        fields = {f.name: put(getattr(self, f.name), getattr(other, f.name))
                  for f in dataclasses.fields(self) if f.name != "st"}
        return Iterations(**fields, st=st)


def _point(n, c, f_raw, stable):
    stable = stable & (c >= 1.0) & (n >= 1.0)
    f = np.asarray(f_raw, dtype=float)
    return np.maximum(n, 1.0), np.maximum(c, 1.0), np.minimum(f, 1.0), stable & (f <= 1.0 + 1e-9)


def plain_iterations(arch: ModelArch, hw: HardwareTable, plans: Plans, wl: Workload, engine: EngineParams,
                     chunk_tokens) -> Iterations:
    """Without speculation: one budget token and one output token per decoder per iteration."""
    s, o, z = wl.input_tokens, wl.output_tokens, np.zeros(len(plans))
    n = budget_decoders(plans.batch, chunk_tokens, s, o, engine.chunked_prefill) + z
    c = effective_chunk(chunk_tokens, s, engine, n) + z
    n1, c1 = np.maximum(n, 1.0), np.maximum(c, 1.0)
    n, c, f, stable = _point(n, c, n1 * s / (o * c1), np.ones(len(plans), dtype=bool))
    tau_d, st = cycle(arch, hw, plans, Load.decode(n, wl.decode_context), engine)
    tau_m, _ = cycle(arch, hw, plans, Load.mixed(n, wl.decode_context, c, s), engine)
    tau_m = mixed_iteration(tau_d, tau_m, engine)
    lat = prompt_latency(arch, hw, plans, n, wl.decode_context, c, s, engine)
    lat99 = prompt_latency(arch, hw, plans, n, wl.decode_context, c, wl.input_p99, engine)
    one = np.ones(len(plans))
    return Iterations(n, c, f, tau_d, tau_m, lat, lat99, one, one, stable, st)


def mixed_verify_load(seqs, context, k: int, chunk, prompt_tokens) -> Load:
    """One forward pass verifying k + 1 positions of `seqs` sequences (speculative.verify_load)
    beside `chunk` prefill tokens of prompts of `prompt_tokens`: the prefill rows are the k
    drafted positions per sequence and the chunk, their equivalent prompt the token-weighted
    mean of the two (2 ctx - 1 for the drafts, the prompt for the chunk: the causal pairs add)."""
    n = np.asarray(seqs, dtype=float)
    ctx = np.asarray(context, dtype=float)
    c = np.asarray(chunk, dtype=float)
    s = np.asarray(prompt_tokens, dtype=float)
    z = np.zeros_like(n * ctx * c * s)
    drafted = k * n
    tokens = drafted + c
    prompt = (drafted * np.maximum(2.0 * ctx - 1.0, 1.0) + c * s) / np.maximum(tokens, 1.0)
    return Load(n + z, ctx + z, tokens + z, prompt + z, np.minimum(tokens, prompt) + z,
                (k + 1.0) * n + c / np.maximum(s, 1.0) + z)


def _chunked_latency(s, c, tau_d, tau_m) -> np.ndarray:
    """floor(s / c) mixed iterations and the remainder's share of one more (runtime.py
    `prompt_latency` at pp 1, from the iteration times)."""
    s = np.asarray(s, dtype=float) + np.zeros_like(c)
    full = np.floor(s / c)
    rest = s - full * c
    return full * tau_m + np.where(rest > 0.5, tau_d + rest / c * (tau_m - tau_d), 0.0)


def spec_iterations(arch: ModelArch, hw: HardwareTable, plans: Plans, wl: Workload, engine: EngineParams,
                    chunk_tokens, sp: Speculation, cyc=cycle) -> Iterations:
    """With speculation (module docstring): k + 1 budget tokens and E output tokens per decoder
    per iteration, the verification and the drafts in every iteration (`cyc`: runtime.py
    `cycle`, or a stand-in of its signature)."""
    s, o, z = wl.input_tokens, wl.output_tokens, np.zeros(len(plans))
    k, e, v = sp.tokens, sp.expected_tokens, sp.tokens + 1.0
    budget = np.asarray(chunk_tokens, dtype=float) + z
    n = np.asarray(plans.batch, dtype=float) + z
    if engine.chunked_prefill:
        n = np.minimum(n, np.floor(o * budget / (e * s + v * o)))
    c = effective_chunk(budget, s, engine, v * n) + z
    n1, c1 = np.maximum(n, 1.0), np.maximum(c, 1.0)
    n, c, f, stable = _point(n, c, n1 * e * s / (o * c1), np.ones(len(plans), dtype=bool))
    ctx = wl.decode_context
    draft = speculative.draft_s(arch, hw, plans, n, ctx, engine, sp, cyc)
    verify, st = cyc(arch, hw, plans, speculative.verify_load(n, ctx, k), engine)
    mixed, _ = cyc(arch, hw, plans, mixed_verify_load(n, ctx, k, c, s), engine)
    tau_d = verify + draft
    tau_m = mixed_iteration(tau_d, mixed + draft, engine)
    lat = _chunked_latency(s, c, tau_d, tau_m)
    lat99 = _chunked_latency(wl.input_p99, c, tau_d, tau_m)
    return Iterations(n, c, f, tau_d, tau_m, lat, lat99, e + z, v + z, stable, st)


def iterations(arch: ModelArch, hw: HardwareTable, plans: Plans, wl: Workload, engine: EngineParams,
               chunk_tokens) -> Iterations:
    """Every plan's operating point; plans with `spec` on at the workload's speculation."""
    it = plain_iterations(arch, hw, plans, wl, engine, chunk_tokens)
    sp = wl.speculation
    idx = np.flatnonzero(plans.spec == 1) if sp is not None else np.zeros(0, dtype=int)
    if not len(idx):
        return it
    chunk = (np.asarray(chunk_tokens, dtype=float) + np.zeros(len(plans)))[idx]
    return it.merged(idx, spec_iterations(arch, hw, plans.take(idx), wl, engine, chunk, sp))


@dataclass(frozen=True)
class _Lane:
    """A colocated instance's request path at slot occupancy `fill`: the wait for one of `slots`
    decode slots (each held `hold_s`), the prefill lane's M/D/1 wait (per-prompt `service_s`,
    `service99_s` for the p99 prompt), the prompt's own latency and the fixed `extra_s`."""

    slots: np.ndarray
    hold_s: np.ndarray
    extra_s: np.ndarray
    service_s: np.ndarray
    service99_s: np.ndarray
    lat_s: np.ndarray
    lat99_s: np.ndarray
    stable: np.ndarray
    ca2: float = 1.0  # squared CV of inter-arrival times (both waits scale with it: queue_wait)

    def at(self, fill, slo: Slo, engine: EngineParams):
        lam = fill * self.slots / self.hold_s
        rho = np.minimum(lam * self.service_s, 1.0)
        k = self.ca2
        ttft50 = (queue_wait(rho, self.service_s, 0.5, k) + slot_wait(fill, self.slots, self.hold_s, 0.5, k)
                  + self.extra_s + self.lat_s)
        ttft99 = (queue_wait(rho, self.service99_s, 0.99, k) + slot_wait(fill, self.slots, self.hold_s, 0.99, k)
                  + self.extra_s + self.lat99_s)
        ok = (self.stable & (rho < engine.max_utilization)
              & _within(ttft50 * 1e3, slo.ttft_p50_ms, slo.safety_margin)
              & _within(ttft99 * 1e3, slo.ttft_p99_ms, slo.safety_margin))
        return lam, rho, ttft50, ttft99, ok


def _memory(arch, hw, plans, wl: Workload, it: Iterations, engine: EngineParams):
    """Weights, KV at the mean decode context, activations of the budget's pass (the decoders'
    verified positions and the chunk), and where the plan speculates the proposer's."""
    mem = memory(arch, hw, plans, wl.decode_context, it.verify * it.n + it.c, engine)
    return speculative.with_proposer_memory(mem, arch, plans, it.n, wl.decode_context, wl.speculation,
                                            verify_in_pass=True)


def colocated_role(arch: ModelArch, hw: HardwareTable, plans: Plans, wl: Workload, slo: Slo,
                   engine: EngineParams, chunk_tokens) -> RoleMetrics:
    """The slot occupancy is the highest, up to the slot fill (workload.py `slot_fill`:
    `decode_slot_fill`, or full slots offline), at which the wait for a decode slot (slots.py
    `slot_wait`) plus the prefill lane's wait and latency meet the TTFT bounds."""
    s, o = wl.input_tokens, wl.output_tokens
    it = iterations(arch, hw, plans, wl, engine, chunk_tokens)
    f, e = it.f, it.gain
    steps = o / e  # iterations a request decodes for
    tau = f * it.tau_m + (1.0 - f) * it.tau_d
    tpot, tpot99 = tau / e, (tau + Z99 * np.sqrt(f * (1.0 - f) / np.maximum(steps - 1.0, 1.0))
                             * (it.tau_m - it.tau_d)) / e
    lane = _Lane(it.n, steps * tau, tau / 2.0 + engine.request_overhead_ms * 1e-3, s * it.tau_m / it.c,
                 wl.input_p99 * it.tau_m / it.c, it.lat, it.lat99, it.stable, wl.arrival_cv2)
    fill = _solve_rho(lambda x: lane.at(x, slo, engine)[-1], len(plans), slot_fill(slo, engine))
    lam, rho, ttft50, ttft99, ok = lane.at(np.maximum(fill, 1e-6), slo, engine)
    ok &= (fill > 0) & _within(tpot * 1e3, slo.tpot_p50_ms, slo.safety_margin) & _within(
        tpot99 * 1e3, slo.tpot_p99_ms, slo.safety_margin)
    mem = _memory(arch, hw, plans, wl, it, engine)
    good = ok & mem.fits
    return RoleMetrics(
        memory=mem,
        prefill_ms=it.lat * 1e3,
        decode_step_ms=it.tau_d / e * 1e3,
        ttft_p50_ms=ttft50 * 1e3,
        ttft_p99_ms=ttft99 * 1e3,
        tpot_p50_ms=tpot * 1e3,
        tpot_p99_ms=tpot99 * 1e3,
        capacity_qps=np.where(good, lam, 0.0),
        tokens_per_s=np.where(good, lam * o, 0.0),
        utilization=rho,
        slo_ok=ok,
        breakdown=it.st,
    )

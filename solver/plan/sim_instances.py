"""The engine instances of a planned pool, for `fleetplan simulate` (solver/plan/simulate.py).

A pool of the plan is `instances` replicas of one configuration (hardware, tp / pp / ep / dp,
batch, chunk). Each replica is a `solver.replay.instance.Instance` with:

- iteration times from one `StepTimes` grid per pool (shared by its replicas: a lookup table);
- the engine's scheduler (the problem's `software.engine`, vLLM when none is named:
  `solver.replay.schedulers.make_policy`) with the plan's operating point as its limits:
  colocated, `batch` running sequences and a token budget of the plan's `chunk_tokens` per
  iteration (decode tokens inside it, as vLLM's `max_num_batched_tokens` counts them); prefill, `batch` prompts per forward pass and, with
  pipeline parallelism, `pp` passes in flight (the performance model's prefill role releases
  one batch per stage time: solver/perf/runtime.py `prefill_role`), so `batch` x `pp` prompts
  and a budget of that many p99 prompts; decode, `batch` sequences, one token each per
  iteration;
- a KV cache of the blocks the instance's memory holds after weights, activations of one
  iteration and the runtime reserve (`KVCache.for_plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solver.candidates.variants import capped_table
from solver.perf.arch import ModelArch
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.problem.load import ResolvedProblem
from solver.replay.requests import RequestTable
from solver.schema.pool import Pool as PoolDoc


@dataclass(frozen=True)
class PoolSpec:
    """What an engine instance of one pool is built from (the performance model's view)."""

    rp: ResolvedProblem
    service: int  # index into rp.problem.services
    pool: PoolDoc
    arch: ModelArch
    hw: HardwareTable
    plan: Plans  # one row
    chunk_tokens: int | None


def pool_spec(rp: ResolvedProblem, si: int, pool: PoolDoc, hw: HardwareTable) -> PoolSpec:
    """The pool at its precisions and, under a power cap below full power, on its capped card."""
    s = rp.problem.services[si]
    j = rp.hw_index(pool.hardware)
    if pool.power_cap_w is not None and pool.power_cap_w < rp.hardware[j].power_w:
        hw, j = capped_table(rp, j, pool.power_cap_w), 0
    kv = pool.kv_precision or (s.kv_precisions[0] if s.kv_precisions else pool.precision)
    plans = Plans.of(hw=j, tp=pool.tp, pp=pool.pp, ep=pool.ep, dp=pool.dp,
                     batch=pool.batch, wprec=precision_code(pool.precision), kvprec=precision_code(kv),
                     cp=pool.cp or 1, spec=int(pool.speculative is not None))
    return PoolSpec(rp, si, pool, rp.archs[si], hw, plans, pool.chunk_tokens)


def _budget(spec: PoolSpec) -> tuple[int, int, int]:
    """(max sequences, token budget per iteration, longest context) of a pool's instances."""
    wl = spec.rp.problem.services[spec.service].workload
    prompt = int(math.ceil(wl.input_tokens.p99_tokens))
    output = int(math.ceil(wl.output_tokens.p99_tokens))
    context = int(wl.max_context or (prompt + output))
    b = int(spec.pool.batch)
    if spec.pool.role == "colocated":
        return b, int(spec.chunk_tokens or 8192), context
    if spec.pool.role == "prefill":
        b *= int(spec.pool.pp)
        return b, max(b * prompt, 1), context
    return b, b, context


class InstanceMaker:
    """Builds the replicas of each pool; what they share (the step-time grid, the KV block
    count, the scheduler settings: `solver.replay.instance.instance_plan`) once per pool."""

    def __init__(self) -> None:
        self._plans: dict[int, object] = {}

    def __call__(self, spec: PoolSpec, table: RequestTable, index: int):
        from solver.replay.instance import instance_plan

        key = id(spec.pool)
        if key not in self._plans:
            seqs, tokens, context = _budget(spec)
            engine_name = spec.rp.problem.software.engine or "vllm"
            svc = spec.rp.problem.services[spec.service]
            self._plans[key] = instance_plan(spec.arch, spec.hw, spec.plan, spec.rp.engine, engine_name,
                                             seqs, tokens, context, spec.rp.speculation_of(svc.name),
                                             svc.workload.prefix_cache is not None)
        return self._plans[key].instance(table, index, spec.pool.role)

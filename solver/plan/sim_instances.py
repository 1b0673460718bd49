"""The engine instances of a planned pool, for `fleetplan simulate` (solver/plan/simulate.py).

A pool of the plan is `instances` replicas of one configuration (hardware, tp / pp / ep / dp,
batch, chunk). Each replica is a `solver.replay.instance.Instance` with:

- iteration times from one `StepTimes` grid per pool (shared by its replicas: a lookup table);
- the engine's scheduler (the problem's `software.engine`, vLLM when none is named) with the
  plan's operating point as its limits: colocated, `batch` running sequences and a token budget
  of the plan's `chunk_tokens` per iteration (decode tokens inside it, as vLLM's
  `max_num_batched_tokens` counts them); prefill, `batch` prompts per forward pass and, with
  pipeline parallelism, `pp` passes in flight (the performance model's prefill role releases
  one batch per stage time: solver/perf/runtime.py `prefill_role`), so `batch` x `pp` prompts
  and a budget of that many p99 prompts; decode, `batch` sequences, one token each per
  iteration;
- a KV cache of the blocks the instance's memory holds after weights, activations of one
  iteration and the runtime reserve (`KVCache.for_plan`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from solver.replay.requests import RequestTable

if TYPE_CHECKING:
    from solver.plan.simulate import PoolSpec


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
    """Builds the replicas of each pool; the grids are built once per pool configuration."""

    def __init__(self) -> None:
        self._steps: dict[tuple, object] = {}

    def __call__(self, spec: PoolSpec, table: RequestTable, index: int):
        from solver.replay.instance import Instance
        from solver.replay.kv import BLOCK_TOKENS, KVCache
        from solver.replay.steptime import Limits, StepTimes

        engine_name = spec.rp.problem.software.engine or "vllm"
        seqs, tokens, context = _budget(spec)
        key = (spec.service, spec.pool.role, spec.pool.hardware, spec.pool.tp, spec.pool.pp, spec.pool.ep,
               spec.pool.dp, spec.pool.batch, spec.chunk_tokens)
        if key not in self._steps:
            limits = Limits(max_seqs=seqs, max_tokens=tokens, max_context=context)
            self._steps[key] = StepTimes.build(spec.arch, spec.hw, spec.plan, spec.rp.engine, limits)
        block = BLOCK_TOKENS.get(engine_name, 16)
        kv = KVCache.for_plan(spec.arch, spec.hw, spec.plan, spec.rp.engine, float(tokens), block)
        return Instance(table, self._steps[key], _policy(engine_name, seqs, tokens, block), kv, index,
                        spec.pool.role)


def _policy(engine: str, seqs: int, tokens: int, block: int):
    from solver.replay.schedulers.vllm import VllmScheduler

    return VllmScheduler(max_num_seqs=seqs, max_num_batched_tokens=tokens, block_tokens=block)

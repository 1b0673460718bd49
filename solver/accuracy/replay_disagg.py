"""Measured disaggregated benchmarks replayed: prefill workers -> KV link -> decode workers.

Each row (solver/accuracy/disagg_rows.py) is replayed as its benchmark ran: the harness's closed
loop (`solver.accuracy.replay_rows.benchmark_tool`, `solver/replay/sources/harness.py`) against
a `solver/replay/fleet.py` `Disaggregated` service of one prefill pool (`prefill_workers`
instances) and one decode pool (`decode_workers` instances), each worker an engine instance of
its role with one step-time grid per plan, and the KV link the planner charges
(`disagg_rows.kv_link`). Both pools take requests round-robin: the measured runs put NVIDIA
Dynamo's frontend in front of the workers (NVIDIA/srt-slurm src/srtctl/frontends/dynamo.py
starts `python3 -m dynamo.frontend` with no `--router-mode`), whose router defaults to
round-robin (ai-dynamo/dynamo components/src/dynamo/frontend/main.py, `--router-mode` default
`round-robin`). A request's first token is out when a decode worker admits it after its KV cache
has landed: the prefill computes it, and the decode server streams it once the request holds a
slot of its batch and the transfer is done, from a batch that skips the forward pass (SGLang
python/sglang/srt/disaggregation/decode.py, the request life cycle PreallocQueue ->
TransferQueue -> WaitingQueue -> PrebuiltExtendBatch, and
scheduler_output_processor_mixin.py `process_batch_result_prebuilt` -> `stream_output`; Dynamo's
SGLang KV-transfer explainer, components/backends/sglang/docs/sglang-kv-transfer-explainer.md,
read in the vickiegpt/dynamo fork, has the same order). A decode worker holds at most
`decode_batch` x `decode_dp` sequences (the engine's `max_batch_size`), so a client beyond its
slots waits there for one to free. TTFT and TPOT: the mean over the measured requests, plus the engine's request
overhead on TTFT, as `replay_rows` reads them. A row's speculative decoding (its `speculative`
column, with the acceptance rate) runs on its decode workers, whose step times speculate as a
colocated instance's do (solver/replay/speculation.py); the draft module's pass over the prompt on
the prefill workers is not charged.
"""

from __future__ import annotations

import math

import numpy as np

from solver.catalog.calibration import engine_params
from solver.replay import metrics
from solver.replay.fleet import Disaggregated, KvLink, Pool, Tags
from solver.replay.instance import InstancePlan
from solver.replay.kv import KVCache
from solver.replay.loop import run
from solver.replay.schedulers import make_policy
from solver.replay.sources.harness import benchmark_source
from solver.replay.speculation import speculating
from solver.replay.steptime import Limits, StepTimes
from solver.schema.speculative import Speculative

from .disagg_rows import ROLES, DisaggRow, RoleSetup, kv_link, parse_disagg, role_setup
from .replay_rows import DEFAULT_ENGINE, _context_limit, benchmark_tool, speculation_of


def _instance_plan(s: RoleSetup, params, engine: str, ctx: int, spec=None) -> InstancePlan:
    """One role's instances; `spec` (a decode role's `Speculation`) makes its decode speculate."""
    steps = StepTimes.build(s.arch, s.hw, s.plan, params, Limits(s.batch, s.chunk, _context_limit(ctx)), 1.0)
    if spec is not None:  # the grid's decode cycles at the speculative rate (it sets the rows' spec)
        steps = speculating(steps, s.arch, s.hw, s.plan, params, spec)
    block = make_policy(engine).block_tokens
    kv = KVCache.for_plan(s.arch, s.hw, s.plan, params, s.chunk, block)
    need = -(-s.batch * (ctx + block) // block)  # the measured engine held its batch's KV
    return InstancePlan(steps, max(kv.total, need), engine, s.batch, s.chunk)


def replay_pools(src, plans: tuple[InstancePlan, InstancePlan], workers: tuple[int, int], link: KvLink) -> None:
    """Run `src` through `workers[0]` prefill instances of plans[0], the link and `workers[1]`
    decode instances of plans[1] (round-robin routers, as Dynamo's frontend routes)."""
    table, tags = src.table, Tags()
    pools = [Pool(table, [ip.instance(table, i, role) for i in range(n)], "round_robin", index=k, tags=tags,
                  role=role) for k, (role, ip, n) in enumerate(zip(ROLES, plans, workers))]
    run(src, Disaggregated(table, [pools[0]], [1.0], [pools[1]], [1.0], [[link]], tags))


def measured_means(table, overhead_ms: float) -> tuple[float, float]:
    """(mean TTFT + overhead, mean TPOT) in ms over the measured, finished requests."""
    sel = metrics.finished(table, metrics.selected(table))
    if not len(sel):
        return math.nan, math.nan
    tp = metrics.tpot_s(table, sel)
    return (float(np.mean(metrics.ttft_s(table, sel))) * 1e3 + overhead_ms,
            float(np.mean(tp)) * 1e3 if len(tp) else math.nan)


def replay_disagg_row(path: str, r: DisaggRow, cache: dict) -> tuple[float, float]:
    engine = r.engine or DEFAULT_ENGINE
    params = engine_params(engine)
    ctx = r.ints["input_tokens"] + r.ints["output_tokens"]
    spec: Speculative | None = r.speculation.spec if r.speculation is not None else None
    setups, plans = [], []
    for role in ROLES:
        key = (r.raw["model"], r.raw["hardware"], r.raw["precision"], engine, role,
               *(r.ints[f"{role}_{k}"] for k in ("tp", "pp", "ep", "dp", "batch", "workers")),
               r.ints["concurrency"], r.ints["input_tokens"], _context_limit(ctx),
               spec.label if spec is not None and role == "decode" else None)
        if key not in cache:
            s = role_setup(path, r, role, params, engine)
            sp = speculation_of(path, r, spec) if role == "decode" else None
            cache[key] = (s, _instance_plan(s, params, engine, ctx, sp))
        setups.append(cache[key][0])
        plans.append(cache[key][1])
    src = benchmark_source(benchmark_tool(r.raw), r.ints["concurrency"], r.ints["input_tokens"],
                           r.ints["output_tokens"])
    replay_pools(src, (plans[0], plans[1]), (r.ints["prefill_workers"], r.ints["decode_workers"]),
                 kv_link(setups[0], params, setups[1]))
    return measured_means(src.table, params.request_overhead_ms)


def replay_disagg(path: str, rows: list[DisaggRow]) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (ttft_ms, tpot_ms) per disaggregated row (module docstring)."""
    cache: dict = {}
    out = np.array([replay_disagg_row(path, r, cache) for r in rows]).reshape(len(rows), 2)
    return out[:, 0], out[:, 1]


__all__ = ["DisaggRow", "measured_means", "parse_disagg", "replay_disagg", "replay_disagg_row", "replay_pools"]

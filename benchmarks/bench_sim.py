"""Benchmark: one simulated engine instance replaying 10,000 requests.

Target (issue 14, point 9): 10,000 requests of a Llama-3.1-70B colocated plan in <= 1 s of wall
time on one core. The plan: h100-sxm, tp4, fp8 weights and KV cache, vLLM's scheduler with
max_num_seqs 256 and max_num_batched_tokens 8192 (chunk), measured operator tables; requests of
2048 prompt and 150 output tokens (the default problem's workload,
problems/llama3-70b-online.yaml) arriving as a Poisson process at --load x the instance's
capacity, where the capacity is measured first by a saturated replay (every request at t = 0).

The grid of iteration times (`StepTimes.build`) and the KV block count are built once and timed
apart; the replay's wall time is what the target is about.

    .venv/bin/python benchmarks/bench_sim.py [--requests N] [--load X] [--batch N] [--chunk N]
        [--seed N] [--prefix-hit-rate H] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay.instance import Instance
from solver.replay.kv import KVCache
from solver.replay.loop import run
from solver.replay.requests import RequestTable
from solver.replay.schedulers.vllm import VllmScheduler
from solver.replay.sources.prefixes import hit_rate_prefixes
from solver.replay.steptime import Limits, StepTimes

PROMPT, OUTPUT = 2048, 150  # problems/llama3-70b-online.yaml


class PoissonSource:
    """A tiny open-loop source (the sources package has the real ones)."""

    def __init__(self, table: RequestTable, arrivals: np.ndarray, hit_rate: float = 0.0) -> None:
        self.table = table
        pid, ptok = -1, 0
        if hit_rate:
            pid, ptok = hit_rate_prefixes(np.full(len(arrivals), PROMPT), hit_rate)
        table.add(arrivals, PROMPT, OUTPUT, pid, ptok)
        self._t = arrivals.tolist()
        self._i = 0

    def next_arrival_s(self) -> float:
        return self._t[self._i] if self._i < len(self._t) else np.inf

    def take(self, until_s: float) -> np.ndarray:
        lo, t = self._i, self._t
        hi = lo
        while hi < len(t) and t[hi] <= until_s:
            hi += 1
        self._i = hi
        return np.arange(lo, hi)

    def finished(self, ids: np.ndarray, t_s: float) -> None:
        pass

    def done(self) -> bool:
        return self._i >= len(self._t)


def build(batch: int, chunk: int):
    engine = engine_params("vllm")
    card = shipped.hardware_card("h100-sxm")
    arch = ModelArch.from_card(shipped.model_card("llama-3.1-70b"))
    hw = HardwareTable.from_cards([card], engine=engine, profiles=measured_tables([card], "vllm"))
    plan = Plans.of(hw=0, tp=4, pp=1, ep=1, dp=1, batch=batch, wprec=precision_code("fp8"),
                    kvprec=precision_code("fp8"))
    steps = StepTimes.build(arch, hw, plan, engine, Limits(batch, chunk, PROMPT + OUTPUT))
    blocks = KVCache.for_plan(arch, hw, plan, engine, chunk).total
    return steps, blocks


def replay(steps: StepTimes, blocks: int, arrivals: np.ndarray, batch: int, chunk: int, hit_rate: float = 0.0):
    table = RequestTable(len(arrivals))
    inst = Instance(table, steps, VllmScheduler(batch, chunk), KVCache(blocks, 16))
    inst.cached_prefill = hit_rate > 0
    t0, c0 = time.perf_counter(), time.process_time()
    run(PoissonSource(table, arrivals, hit_rate), inst)
    return (time.perf_counter() - t0, time.process_time() - c0), table, inst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--load", type=float, default=0.9, help="arrival rate / measured capacity")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prefix-hit-rate", type=float, default=0.0,
                    help="requests share prefixes (8 groups) for this token hit rate; the replay's LRU "
                         "prefix cache finds them (solver/replay/sources/prefixes.py)")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    steps, blocks = build(a.batch, a.chunk)
    print(f"grid and KV blocks: {time.perf_counter() - t0:.3f} s ({blocks} blocks of 16 tokens)")
    n_sat = min(a.requests, 2000)
    _, sat, _ = replay(steps, blocks, np.zeros(n_sat), a.batch, a.chunk, a.prefix_hit_rate)
    capacity = n_sat / float(sat.finish_s.max())
    rate = a.load * capacity
    arrivals = np.cumsum(np.random.default_rng(a.seed).exponential(1.0 / rate, a.requests))
    prof = cProfile.Profile() if a.profile else None
    if prof:
        prof.enable()
    (wall, cpu), table, inst = replay(steps, blocks, arrivals, a.batch, a.chunk, a.prefix_hit_rate)
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    ttft = (table.first_token_s - table.arrival_s) * 1e3
    tpot = (table.finish_s - table.first_token_s) / (OUTPUT - 1) * 1e3
    st = inst.stats
    print(f"capacity {capacity:.2f} QPS (saturated replay); arrivals {rate:.2f} QPS ({a.load:g} x)")
    print(f"replay: {a.requests} requests, {st.iterations} iterations in {wall:.3f} s wall "
          f"({cpu:.3f} s CPU) = {a.requests / wall:,.0f} requests/s of wall time "
          f"({'meets' if wall <= 1.0 else 'misses'} the 1 s target)")
    print(f"TTFT p50/p99 {np.percentile(ttft, 50):.0f}/{np.percentile(ttft, 99):.0f} ms; "
          f"TPOT p50/p99 {np.percentile(tpot, 50):.1f}/{np.percentile(tpot, 99):.1f} ms; "
          f"preemptions {st.preemptions}; max queue {st.max_waiting}")
    if a.prefix_hit_rate:
        kv = inst.kv
        print(f"prefix cache: hit rate {kv.hit_tokens / max(kv.query_tokens, 1):.3f} of prompt tokens "
              f"(workload {a.prefix_hit_rate:g}); {kv.evicted} blocks evicted")


if __name__ == "__main__":
    main()

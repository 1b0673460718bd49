"""Measured disaggregated benchmarks replayed: prefill workers -> KV link -> decode workers.

Input: a CSV with the columns model, hardware, precision, mode (`disaggregated`), input_tokens,
output_tokens, concurrency, prefill_tp, prefill_pp, prefill_ep, prefill_dp, prefill_workers,
prefill_batch, decode_tp, decode_pp, decode_ep, decode_dp, decode_workers, decode_batch,
ttft_ms, tpot_ms and optionally engine, benchmark and source_id (as written by
`benchmarks/silicon_disagg_to_validate.py`; `*_batch` is per attention-data-parallel rank, as
the sample records it: a worker runs batch x dp sequences; a decode worker at least its share
of the clients, as the sample also records batch 1 for decode pools of 48 clients).

Each row is replayed as its benchmark ran: the harness's closed loop
(`solver.accuracy.replay_rows.benchmark_tool`, `solver/replay/sources/harness.py`) against a
`solver/replay/fleet.py` `Disaggregated` service of one prefill pool (`prefill_workers`
instances, least-queue router) and one decode pool (`decode_workers` instances), each worker
an engine instance of its role with one step-time grid per plan. The KV link is taken as free
(`KvLink(0, 0)`): a DeepSeek-V3 prompt's MLA cache is about 70 KB per token, 1024 tokens
about 0.2 ms over 400 GB/s of NICs, below the measured TTFTs' resolution. TTFT and TPOT: the
mean over the measured requests, plus the engine's request overhead on TTFT, as
`replay_rows` reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay import metrics
from solver.replay.fleet import Disaggregated, KvLink, Pool, Tags
from solver.replay.instance import InstancePlan
from solver.replay.kv import KVCache
from solver.replay.loop import run
from solver.replay.schedulers import make_policy
from solver.replay.sources.harness import BENCHMARKS, benchmark_source
from solver.replay.steptime import Limits, StepTimes

from .replay_rows import CHUNK_TOKENS, DEFAULT_ENGINE, _context_limit, benchmark_tool
from .validate import ENGINES, csv_records, milliseconds, whole_numbers

ROLES = ("prefill", "decode")
PLAN = ("tp", "pp", "ep", "dp", "workers", "batch")
INTS = ["input_tokens", "output_tokens", "concurrency"] + [f"{r}_{k}" for r in ROLES for k in PLAN]
REQUIRED = ["model", "hardware", "precision", "mode", *INTS, "ttft_ms", "tpot_ms"]


@dataclass
class DisaggRow:
    line: int
    raw: dict[str, str]
    ints: dict[str, int]
    ttft_ms: float
    tpot_ms: float


def parse_disagg(path: str, text: str) -> list[DisaggRow]:
    _, records = csv_records(path, text, REQUIRED)
    rows = []
    for i, raw, bad in records:
        ints = whole_numbers(raw, INTS, bad)
        meas = milliseconds(raw, ("ttft_ms", "tpot_ms"), bad)
        if raw["mode"] != "disaggregated":
            raise bad("mode", "expected 'disaggregated'")
        if (raw.get("engine") or "") not in ("", *ENGINES):
            raise bad("engine", f"expected one of {', '.join(ENGINES)} or empty")
        if benchmark_tool(raw) not in BENCHMARKS:
            raise bad("benchmark", f"expected one of {', '.join(BENCHMARKS)}")
        rows.append(DisaggRow(i, raw, ints, *meas))
    if not rows:
        raise InputError(f"{path}: no data rows")
    return rows


def _role_plan(path: str, r: DisaggRow, role: str, params, engine: str, cache: dict) -> InstancePlan:
    g = {k: r.ints[f"{role}_{k}"] for k in PLAN}
    batch = g["batch"] * g["dp"]
    if role == "decode":  # the sample records batch 1 for unset: a decode worker holds its share of the clients
        batch = max(batch, -(-r.ints["concurrency"] // g["workers"]))
    prompt, ctx = r.ints["input_tokens"], r.ints["input_tokens"] + r.ints["output_tokens"]
    chunk = max(CHUNK_TOKENS, batch * prompt) if role == "prefill" else CHUNK_TOKENS
    key = (r.raw["model"], r.raw["hardware"], r.raw["precision"], engine, role, *g.values(), _context_limit(ctx))
    if key in cache:
        return cache[key]
    try:
        arch = ModelArch.from_card(shipped.model_card(r.raw["model"]))
        card = shipped.hardware_card(r.raw["hardware"])
    except InputError as exc:
        raise InputError(f"{path}:{r.line}: model/hardware: {exc}") from None
    hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], engine))
    prec = precision_code(r.raw["precision"])  # type: ignore[arg-type]
    plan = Plans.of(hw=0, tp=g["tp"], pp=g["pp"], ep=g["ep"], dp=g["dp"], batch=batch, wprec=prec, kvprec=prec)
    steps = StepTimes.build(arch, hw, plan, params, Limits(batch, chunk, _context_limit(ctx)), 1.0)
    block = make_policy(engine).block_tokens
    kv = KVCache.for_plan(arch, hw, plan, params, chunk, block)
    need = -(-batch * (ctx + block) // block)  # the measured engine held its batch's KV
    cache[key] = InstancePlan(steps, max(kv.total, need), engine, batch, chunk)
    return cache[key]


def replay_disagg_row(path: str, r: DisaggRow, cache: dict) -> tuple[float, float]:
    engine = (r.raw.get("engine") or "").strip() or DEFAULT_ENGINE
    params = engine_params(engine)
    src = benchmark_source(benchmark_tool(r.raw), r.ints["concurrency"], r.ints["input_tokens"],
                           r.ints["output_tokens"])
    table, tags = src.table, Tags()
    pools = []
    for k, role in enumerate(ROLES):
        ip = _role_plan(path, r, role, params, engine, cache)
        insts = [ip.instance(table, i, role) for i in range(r.ints[f"{role}_workers"])]
        pools.append(Pool(table, insts, "least_queue", index=k, tags=tags, role=role))
    server = Disaggregated(table, [pools[0]], [1.0], [pools[1]], [1.0], [[KvLink(0.0, 0.0)]], tags)
    run(src, server)
    sel = metrics.finished(table, metrics.selected(table))
    if not len(sel):
        return math.nan, math.nan
    tp = metrics.tpot_s(table, sel)
    return (float(np.mean(metrics.ttft_s(table, sel))) * 1e3 + params.request_overhead_ms,
            float(np.mean(tp)) * 1e3 if len(tp) else math.nan)


def replay_disagg(path: str, rows: list[DisaggRow]) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (ttft_ms, tpot_ms) per disaggregated row (module docstring)."""
    cache: dict = {}
    out = np.array([replay_disagg_row(path, r, cache) for r in rows]).reshape(len(rows), 2)
    return out[:, 0], out[:, 1]


__all__ = ["DisaggRow", "parse_disagg", "replay_disagg", "replay_disagg_row"]

"""Measured disaggregated benchmarks: the CSV rows and each role's plan.

Input: a CSV with the columns model, hardware, precision, mode (`disaggregated`), input_tokens,
output_tokens, concurrency, prefill_tp, prefill_pp, prefill_ep, prefill_dp, prefill_workers,
prefill_batch, decode_tp, decode_pp, decode_ep, decode_dp, decode_workers, decode_batch,
ttft_ms, tpot_ms and optionally engine, benchmark and source_id (as written by
`benchmarks/silicon_disagg_to_validate.py`). One row is one closed-loop benchmark of
`prefill_workers` prefill instances and `decode_workers` decode instances of their own
parallelism. `*_batch` is the engine's batch limit per attention-data-parallel rank
(TensorRT-LLM's `max_batch_size` with attention DP is per rank): a worker runs at most
batch x dp sequences, and clients beyond a decode pool's slots wait for one. (aiconfigurator's
database dumps record concurrency / (decode_workers x decode_dp) there;
benchmarks/inferencex_disagg_recipes.py writes the InferenceX recipes' limit instead where it
is known.)

The KV cache crosses the scale-out network as the planner charges it
(solver/perf/runtime.py `kv_transfer_s`: the NICs of a request's attention group in parallel,
an MLA model's latent copies for every decode attention rank, the card's scale-out bandwidth
and latency, the engine's transfer overlap), with the row's decode plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.accuracy.measured import kv_precision
from solver.catalog import shipped
from solver.errors import InputError
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.perf.validity import RULES, invalid_reasons
from solver.replay.fleet import KvLink
from solver.replay.sources.harness import BENCHMARKS
from solver.schema.cards import PRECISIONS
from solver.schema.engine import EngineParams

from .measured import ENGINES, RowSpeculation, csv_records, milliseconds, row_speculation, whole_numbers
from .replay_rows import CHUNK_TOKENS, benchmark_tool

ROLES = ("prefill", "decode")
PLAN = ("tp", "pp", "ep", "dp", "workers", "batch")
INTS = ["input_tokens", "output_tokens", "concurrency"] + [f"{r}_{k}" for r in ROLES for k in PLAN]
REQUIRED = ["model", "hardware", "precision", "mode", *INTS, "ttft_ms", "tpot_ms"]
MARKER = "prefill_tp"  # a measured CSV with this column holds disaggregated rows
# upper bounds of a row's numbers, so that a typo cannot ask for a replay of millions of
# instances or requests (the sample's largest: 8,192 clients, 40 prefill workers, 8,192 tokens)
LIMITS = {"input_tokens": 1 << 20, "output_tokens": 1 << 20, "concurrency": 65536,
          **{f"{r}_{k}": 1024 for r in ROLES for k in ("tp", "pp", "ep", "dp", "workers")},
          **{f"{r}_batch": 65536 for r in ROLES}}


@dataclass
class DisaggRow:
    line: int
    raw: dict[str, str]
    ints: dict[str, int]
    ttft_ms: float
    tpot_ms: float
    speculation: RowSpeculation | None = None  # the row's speculative column

    @property
    def engine(self) -> str | None:
        return (self.raw.get("engine") or "").strip() or None


@dataclass(frozen=True)
class RoleSetup:
    """One role's instance: the model, the card's table, the plan (one row) and its limits."""

    arch: ModelArch
    hw: HardwareTable
    plan: Plans
    batch: int  # sequences an instance runs (all of its attention-DP ranks)
    chunk: int  # tokens per iteration


def _check_row(path: str, raw: dict, ints: dict, bad) -> None:
    for c, top in LIMITS.items():
        if ints[c] > top:
            raise bad(c, f"at most {top:,}")
    if raw["mode"] != "disaggregated":
        raise bad("mode", "expected 'disaggregated' in a CSV with prefill_/decode_ columns")
    if raw["precision"] not in PRECISIONS:
        raise bad("precision", f"expected one of {', '.join(PRECISIONS)}")
    if (raw.get("engine") or "").strip() not in ("", *ENGINES):
        raise bad("engine", f"expected one of {', '.join(ENGINES)} or empty")
    if benchmark_tool(raw) not in BENCHMARKS:
        raise bad("benchmark", f"expected one of {', '.join(BENCHMARKS)}")
    try:
        arch = ModelArch.from_card(shipped.model_card(raw["model"]))
    except InputError as exc:
        raise bad("model", str(exc)) from None
    for role in ROLES:
        g = {k: ints[f"{role}_{k}"] for k in PLAN}
        plan = Plans.of(hw=0, tp=g["tp"], pp=g["pp"], ep=g["ep"], dp=g["dp"], batch=g["batch"] * g["dp"],
                        wprec=0, kvprec=0)
        for rule, mask in invalid_reasons(arch, plan).items():
            if rule != "batch_dp" and mask.any():
                raise bad(f"{role}_tp/{role}_pp/{role}_ep/{role}_dp", f"{RULES[rule]} ({raw['model']})")


def parse_disagg(path: str, text: str) -> list[DisaggRow]:
    """The rows of a disaggregated measured CSV (InputError naming file, line and field)."""
    _, records = csv_records(path, text, REQUIRED)
    rows = []
    for i, raw, bad in records:
        ints = whole_numbers(raw, INTS, bad)
        meas = milliseconds(raw, ("ttft_ms", "tpot_ms"), bad)
        _check_row(path, raw, ints, bad)
        rows.append(DisaggRow(i, raw, ints, *meas, row_speculation(raw, bad)))
    if not rows:
        raise InputError(f"{path}: no data rows")
    return rows


def role_setup(path: str, r: DisaggRow, role: str, params: EngineParams, engine: str,
               running: int | None = None) -> RoleSetup:
    """One role's instance; its batch is the worker's sequence limit (a client beyond the slots
    waits), or `running` sequences where fewer run (the closed form's decode share)."""
    g = {k: r.ints[f"{role}_{k}"] for k in PLAN}
    batch = g["batch"] * g["dp"]
    if running is not None:  # at least one per attention-DP rank: the busiest rank's step
        batch = max(g["dp"], min(batch, running))
    chunk = max(CHUNK_TOKENS, batch * r.ints["input_tokens"]) if role == "prefill" else CHUNK_TOKENS
    arch = ModelArch.from_card(shipped.model_card(r.raw["model"]))
    try:
        card = shipped.hardware_card(r.raw["hardware"])
    except InputError as exc:
        raise InputError(f"{path}:{r.line}: hardware: {exc}") from None
    hw = HardwareTable.from_cards([card], engine=params, profiles=measured_tables([card], engine))
    prec = precision_code(r.raw["precision"])  # type: ignore[arg-type]
    kv = precision_code(kv_precision(r.raw["precision"]))  # type: ignore[arg-type]
    plan = Plans.of(hw=0, tp=g["tp"], pp=g["pp"], ep=g["ep"], dp=g["dp"], batch=batch, wprec=prec, kvprec=kv)
    return RoleSetup(arch, hw, plan, batch, chunk)


def kv_link(prefill: RoleSetup, params: EngineParams, decode: RoleSetup | None = None) -> KvLink:
    """The prefill instance's link to a decode instance, linear in prompt tokens; with the
    decode's attention tensor-parallel size where it is known (an MLA model's latent cache goes
    to every decode attention rank: solver/perf/runtime.py `kv_transfer_s`)."""
    dtp = None if decode is None else decode.plan.tp
    t0, t1 = (float(rt.kv_transfer_s(prefill.arch, prefill.hw, prefill.plan, np.array([n]), params,
                                     decode_tp=dtp)[0]) for n in (0.0, 1.0))
    return KvLink(t0, t1 - t0)


__all__ = ["MARKER", "DisaggRow", "RoleSetup", "kv_link", "parse_disagg", "role_setup"]

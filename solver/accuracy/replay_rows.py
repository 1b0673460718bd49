"""`fleetplan validate --model replay`: predict each measured row by replaying the benchmark
that measured it.

A row is a closed-loop benchmark of one colocated instance: C clients, nominal lengths
(input_tokens, output_tokens), a plan (tp, pp, ep, dp) on one engine. The replay runs

- the harness that measured the row (`benchmark_tool`; its closed loop from
  `solver/replay/sources/harness.py` `benchmark_source`: phases, warm-ups, request counts and
  length spread as that tool's code runs them, see `solver/replay/sources/closed.py`),
- against one instance of the row's engine (`solver/replay/instance.py`, the engine's scheduler
  policy from `solver/replay/schedulers/`), its iteration times from one `StepTimes` grid per
  (model, hardware, precision, engine, tp, pp, ep, dp) group, built once and reused by every
  concurrency and length of the group (the grid covers the group's largest concurrency and
  context),

and reads TTFT and TPOT over the measured requests as the tools report them: the mean over
requests of first-token minus send time, and of (latency - TTFT) / (output tokens - 1)
(`vllm bench serve`'s and aiperf's per-request TPOT; `statistic="median"` gives their p50
instead).

Which tool measured a row: a `benchmark` column names it (one of
`solver.replay.sources.harness.BENCHMARKS`); without one, the row's `source_id` (the id of
aiconfigurator-core's `silicon_sample.csv`, passed through by
`benchmarks/silicon_to_validate.py`) decides: InferenceX database dumps (ids ending `_cfgN`)
and the dated InferenceX result exports (ids starting with a date, `2026_04_06_...`; their
models, images and concurrencies are InferenceX's) were run by InferenceX's
benchmark_serving.py; every other row (aiconfigurator's gap-analysis collections, most of the
h100_sxm ones) by aiconfigurator's generated aiperf benchmark. A row without a source is taken
as `vllm bench serve` at its defaults.

Engine settings the sample does not record: `max_num_seqs` is the row's concurrency (the
benchmarks size it to the clients), the token budget per iteration `CHUNK_TOKENS`, except on
the rows aiconfigurator measured (`aiconfigurator`), whose engines its generator launched with
limits sized to the benchmark (`generator_limits`).
The instance's KV blocks are the memory model's (`solver/replay/kv.py` `KVCache.for_plan`);
only where that leaves less than one client's full context (the row was measured, so the
engine held at least one) does the replay give it every client's.
A row that ran speculative decoding (its `speculative` column, else its launch script's
`Launch.speculation`: `launch_speculation`) is replayed with the speculating step times of
solver/replay/speculation.py at the row's acceptance rate; without a recorded rate it is not
predicted (nan; solver/accuracy/validate.py reports why).
The engine's `request_overhead_ms` is added to each TTFT (a per-request cost outside the
iterations: tokenisation, scheduling, detokenisation of the first token, as the closed form
adds it); the wave-size law of `solver/perf/closed_loop.py` is not used (the harness is
explicit here).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Callable, Literal

import numpy as np

from solver.accuracy.inferencex import Launch, sglang_launch, trtllm_launch
from solver.accuracy.measured import RowSpeculation, benchmark_tool, fp8_scaling, kv_precision
from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf.arch import ModelArch
from solver.perf.operators.tables import measured_tables
from solver.perf.speculative import Speculation
from solver.perf.tables import HardwareTable, Plans, precision_code
from solver.replay import metrics
from solver.replay.instance import InstancePlan
from solver.replay.kv import KVCache
from solver.replay.loop import run
from solver.replay.schedulers import make_policy
from solver.replay.sources.harness import BENCHMARKS, benchmark_source
from solver.replay.speculation import speculating
from solver.replay.steptime import Limits, StepTimes
from solver.schema.engine import EngineParams
from solver.schema.speculative import Speculative

# vLLM's default max_num_batched_tokens for the OpenAI server on >= 70 GiB GPUs
# (vllm/engine/arg_utils.py `_set_default_args`), also TensorRT-LLM's default max_num_tokens
# (8192, tensorrt_llm/llmapi/llm_args.py) and SGLang's chunked_prefill_size on H100-class GPUs.
CHUNK_TOKENS = 8192
DEFAULT_ENGINE = "vllm"
Statistic = Literal["mean", "median"]


# aiconfigurator's generator (ai-dynamo/aiconfigurator, src/aiconfigurator/generator/) sizes an
# aggregated worker's limits to the benchmark: vLLM (rule_plugin/vllm.rule at 095f58a5)
# max_num_seqs = 512 below 512 sequences (else twice the batch) and max_num_batched_tokens =
# max_num_seqs + isl + 1500. TensorRT-LLM: max_num_tokens = batch + isl + 1500 (the batch taken
# as the row's concurrency) in every generator the sample's TensorRT-LLM 1.0.0rc3 rows can have
# been launched by: backends/trtllm.py at 4361371a (2025-10), rule_plugin/trtllm.rule from
# 95ddf241 (2025-12-04) to 1cc3526b (2026-04-01, which cut the default rule's margin to 500),
# and rule_plugin/benchmark/trtllm.rule (the benchmark-mode rules, 71bb3d00, 2026-01-30, still
# 1500 at 095f58a5, rounded up to the 32-token KV block); the sample is a 2026-04 dump whose
# 1.0.0rc3 rows predate its dated 1.3.0rc1 ones (2026-03). None of them sets context chunking
# and the 1.0.0rc3 template's default is `enable_chunked_prefill: false`
# (templates/trtllm/extra_engine_args.1.0.0rc3.yaml.j2): a context that does not fit beside the
# iteration's other tokens waits (`TRTLLM_CHUNKED`). The overlap scheduler is on (the agg
# `disable_overlap_scheduler = false` of the same generators; solver/replay/schedulers/trtllm.py).
# SGLang: the generator launches an aggregated worker with `--max-prefill-tokens` isl + 1500
# (rule_plugin/sglang.rule from 95ddf241, 2025-12-04, the commit that added SGLang to the
# generator) and `--enable-mixed-chunk` (fa895ffb and 07a37792, 2026-01-19: the rule, then the
# flag's spelling; the benchmark rules of 71bb3d00 keep both), without `--disable-radix-cache`
# or `--chunked-prefill-size`. Its SGLang 0.5.6.post2 workers are Dynamo 0.8's
# (config/backend_version_matrix.yaml), whose template it gained on 2026-01-23 (c46a56b0), after
# both rules: rows of 0.5.6.post2 and later ran with them (`GEN_SGLANG_FROM`). The h100
# 0.5.1.post1 rows (a Dynamo before 0.6, not in the matrix) cannot be dated against the rules;
# they keep SGLang's defaults, which they agree with (applying the rules to them gave -69% to
# -95% TTFT in an earlier session).
GEN_VLLM_SEQS = 512
GEN_VLLM_EXTRA = 1500
GEN_TRTLLM_EXTRA = 1500
GEN_TRTLLM_BLOCK = 32  # tokens_per_block the benchmark rule rounds max_num_tokens up to
TRTLLM_CHUNKED = False  # enable_chunked_prefill of the generated TensorRT-LLM workers
GEN_SGLANG_FROM = (0, 5, 6)  # the first SGLang release the generator launched with its rules
GEN_SGLANG_EXTRA = 1500  # max_prefill_tokens = isl + this


def _release(version: str) -> tuple[int, ...]:
    """The leading numeric fields of an engine version ("0.5.6.post2" -> (0, 5, 6))."""
    out = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def generator_sglang_launch(version: str, input_tokens: int) -> Launch:
    """The policy of aiconfigurator's generated SGLang worker (above) for a row of `version`;
    SGLang's defaults for releases before `GEN_SGLANG_FROM` or an unknown version."""
    release = _release(version)
    if not release or release < GEN_SGLANG_FROM:
        return Launch()
    return Launch(policy={"mixed_chunk": True, "max_prefill_tokens": int(input_tokens) + GEN_SGLANG_EXTRA})


def generator_limits(tool: str, engine: str, concurrency: int, input_tokens: int) -> int:
    """The token budget per iteration of the engine that measured a row: aiconfigurator's
    generated vLLM and TensorRT-LLM limits (above) on its rows, else `CHUNK_TOKENS`."""
    if tool != "aiconfigurator" or engine not in ("vllm", "trtllm"):
        return CHUNK_TOKENS
    if engine == "trtllm":
        need = int(concurrency) + int(input_tokens) + GEN_TRTLLM_EXTRA
        return -(-need // GEN_TRTLLM_BLOCK) * GEN_TRTLLM_BLOCK
    seqs = GEN_VLLM_SEQS if int(concurrency) < GEN_VLLM_SEQS else 2 * int(concurrency)
    return seqs + int(input_tokens) + GEN_VLLM_EXTRA


def row_launch(r, tool: str, engine: str) -> Launch:
    """How the row's engine was launched where the sample does not say: InferenceX's
    TensorRT-LLM and SGLang scripts (solver/accuracy/inferencex.py), aiconfigurator's generated
    SGLang workers (`generator_sglang_launch`); nothing known otherwise."""
    i, version, measured = r.ints, (r.raw.get("engine_version") or "").strip(), (r.raw.get("measured") or "").strip()
    if tool == "aiconfigurator" and engine == "sglang":
        return generator_sglang_launch(version, i["input_tokens"])
    if tool != "inferencex" or engine not in ("trtllm", "sglang"):
        return Launch()
    if engine == "sglang":
        return sglang_launch(r.model, r.hardware, r.precision, measured, i["input_tokens"], i["output_tokens"],
                             i["concurrency"], i["tp"])
    return trtllm_launch(r.model, r.hardware, r.precision, version, measured, i["input_tokens"],
                         i["output_tokens"], i["concurrency"], i["tp"], i["dp"])


def launch_speculation(r) -> RowSpeculation | None:
    """The speculative decoding the row's own column or, without one, its launch script ran
    (`row_launch`; the script records no acceptance rate)."""
    if r.speculation is not None:
        return r.speculation
    tool = benchmark_tool(r.raw)
    ran = row_launch(r, tool, r.engine or DEFAULT_ENGINE).speculation
    if ran is None:
        return None
    return RowSpeculation(*ran, source=f"its {tool} launch script: solver/accuracy/inferencex.py")


def speculation_of(path: str, r, spec: Speculative | None) -> Speculation | None:
    """The performance model's speculation of a row's `spec` (its draft model's card resolved)."""
    if spec is None:
        return None
    if spec.method != "draft" or spec.draft_model is None:
        return Speculation.of(spec)
    try:
        draft = shipped.model_card(spec.draft_model)
    except InputError as exc:
        raise InputError(f"{path}:{r.line}: speculative: {exc}") from None
    target = shipped.model_card(r.raw["model"])
    if draft.vocab_size != target.vocab_size:
        raise InputError(f"{path}:{r.line}: speculative: {draft.name} has a vocabulary of {draft.vocab_size} tokens, "
                         f"{target.name} of {target.vocab_size}; a draft model must share the tokenizer")
    return Speculation.of(spec, ModelArch.from_card(draft))


def _budget(r, engine: str) -> int:
    """The row's token budget per iteration: its launch's, else `generator_limits`."""
    tool = benchmark_tool(r.raw)
    launched = row_launch(r, tool, engine).max_num_tokens
    return launched or generator_limits(tool, engine, r.ints["concurrency"], r.ints["input_tokens"])


def _context_limit(tokens: int) -> int:
    """The grid's context limit: the next power of two at or above `tokens`."""
    return 1 << max(int(tokens - 1).bit_length(), 1)


def _group_plan(path: str, rows: list, idx: list[int], params: EngineParams, engine: str,
                tables: bool, slowdown: float | None, spec: Speculative | None = None) -> InstancePlan:
    first = rows[idx[0]]
    try:
        card_m = shipped.model_card(first.model)
    except InputError as exc:
        raise InputError(f"{path}:{first.line}: model: {exc}") from None
    scaling = fp8_scaling(first.raw, benchmark_tool(first.raw), card_m.fp8_scaling)
    arch = ModelArch.from_card(card_m.model_copy(update={"fp8_scaling": scaling}))
    try:
        card = shipped.hardware_card(first.hardware)
    except InputError as exc:
        raise InputError(f"{path}:{first.line}: hardware: {exc}") from None
    profiles = measured_tables([card], first.engine) if tables else None
    hw = HardwareTable.from_cards([card], engine=params, profiles=profiles)
    conc = max(rows[k].ints["concurrency"] for k in idx)
    ctx = max(rows[k].ints["input_tokens"] + rows[k].ints["output_tokens"] for k in idx)
    chunk = max(_budget(rows[k], engine) for k in idx)
    i = first.ints
    plan = Plans.of(hw=0, tp=i["tp"], pp=i["pp"], ep=i["ep"], dp=i["dp"], batch=conc,
                    wprec=precision_code(first.precision), kvprec=precision_code(kv_precision(first.precision)))  # type: ignore[arg-type]
    # as solver/replay/instance.py `instance_plan`, with the mixed-batch slowdown settable
    steps = StepTimes.build(arch, hw, plan, params, Limits(conc, max(chunk, CHUNK_TOKENS), _context_limit(ctx)),
                            slowdown)
    sp = speculation_of(path, first, spec)
    if sp is not None:  # the grid's decode cycles at the speculative rate (it sets the rows' spec)
        steps = speculating(steps, arch, hw, plan, params, sp)
    block = make_policy(engine).block_tokens
    kv = KVCache.for_plan(arch, hw, plan, params, CHUNK_TOKENS, block)
    # the row was measured, so its engine held at least one client's KV: where the memory
    # model leaves less than that (e.g. no room at all after the weights), the replay gives the
    # instance every client's; otherwise the memory model's blocks stand, and clients beyond
    # them wait for blocks as in the engine (qwen3-32b bf16 on one h100: ~27k tokens of KV for
    # 16 clients of 2k + 256 tokens, measured TTFT 31 s where a replay holding all 16 gives 2 s)
    one = -(-(ctx + block) // block)
    blocks = kv.total if kv.total >= one else -(-conc * (ctx + block) // block)
    return InstancePlan(steps, blocks, engine, conc, CHUNK_TOKENS)


def replay_row(ip: InstancePlan, tool: str, concurrency: int, input_tokens: int, output_tokens: int,
               request_overhead_ms: float = 0.0, statistic: Statistic = "mean",
               seed: int = 0, launch: Launch | None = None) -> tuple[float, float]:
    """(TTFT ms, TPOT ms) of one benchmark point replayed on one instance of `ip`, with the
    token budget of the engine the tool's rows ran (`launch`'s, else `generator_limits`), the
    launch's running-request limit (else the concurrency) and its policy settings."""
    launch = launch or Launch()
    src = benchmark_source(tool, concurrency, input_tokens, output_tokens, seed=seed)
    chunk = launch.max_num_tokens or generator_limits(tool, ip.engine, concurrency, input_tokens)
    inst = replace(ip, batch=launch.max_seqs or int(concurrency), chunk=chunk).instance(src.table)
    if tool == "aiconfigurator" and ip.engine == "trtllm":
        inst.policy.chunked = TRTLLM_CHUNKED
    for name, value in launch.policy.items():
        setattr(inst.policy, name, value)
    run(src, inst)
    table = src.table
    sel = metrics.finished(table, metrics.selected(table))
    if not len(sel):
        return float("nan"), float("nan")
    reduce = np.mean if statistic == "mean" else np.median
    ttft = float(reduce(metrics.ttft_s(table, sel))) * 1e3 + request_overhead_ms
    tp = metrics.tpot_s(table, sel)
    return ttft, float(reduce(tp)) * 1e3 if len(tp) else float("nan")


def replay_rows(path: str, rows: list, params_for: Callable[[str | None], EngineParams] = engine_params,
                tables: bool = True, statistic: Statistic = "mean",
                slowdown: float | None = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (ttft_ms, tpot_ms) per row, as `solver.accuracy.validate.predict_rows` gives
    them, by replaying each row's benchmark (module docstring); one step-time grid per group.
    nan for a row that ran speculative decoding at an unrecorded acceptance rate."""
    ttft = np.full(len(rows), np.nan)
    tpot = np.full(len(rows), np.nan)
    groups: dict[tuple, list[int]] = defaultdict(list)
    specs: dict[tuple, Speculative | None] = {}
    for k, r in enumerate(rows):
        tool = benchmark_tool(r.raw)
        if tool not in BENCHMARKS:
            raise InputError(f"{path}:{r.line}: benchmark: expected one of {', '.join(BENCHMARKS)} (got {tool!r})")
        ran = launch_speculation(r)
        if ran is not None and ran.spec is None:
            continue
        i = r.ints
        key = (r.model, r.hardware, r.precision, r.engine, i["tp"], i["pp"], i["ep"], i["dp"],
               fp8_scaling(r.raw, tool, ""), ran.label if ran else None)
        groups[key].append(k)
        specs[key] = ran.spec if ran else None
    for key, idx in groups.items():
        engine = key[3] or DEFAULT_ENGINE
        params = params_for(key[3])
        ip = _group_plan(path, rows, idx, params, engine, tables, slowdown, specs[key])
        for k in idx:
            r = rows[k]
            tool = benchmark_tool(r.raw)
            ttft[k], tpot[k] = replay_row(ip, tool, r.ints["concurrency"], r.ints["input_tokens"],
                                          r.ints["output_tokens"], params.request_overhead_ms, statistic,
                                          launch=row_launch(r, tool, engine))
    return ttft, tpot

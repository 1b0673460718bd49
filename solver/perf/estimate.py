"""`fleetplan estimate`: the performance model for one configuration, as a typed document."""

from __future__ import annotations

from typing import Literal

from solver.catalog import shipped
from solver.catalog.calibration import engine_params
from solver.errors import InputError
from solver.perf import closed_loop as loop
from solver.perf import prefix, speculative
from solver.perf import runtime as rt
from solver.perf.arch import ModelArch
from solver.perf.memory import Memory, memory
from solver.perf.operators.tables import measured_tables
from solver.perf.power import capped_card, capped_profiles
from solver.perf.speculative import Speculation
from solver.perf.stages import Load, StageTime, pass_latency, stage_time
from solver.perf.tables import GIB, HardwareTable, Plans, precision_code
from solver.perf.validity import RULES, invalid_reasons
from solver.profiles import ProfileSet
from solver.schema.cards import HardwareCard, ModelCard, Precision
from solver.schema.engine import EngineParams
from solver.schema.estimate import EstimateResult, MemoryBreakdown, TimeBreakdown
from solver.schema.prefix import MAX_HIT_RATE
from solver.schema.problem import MAX_CP
from solver.schema.routing import Routing
from solver.schema.speculative import Speculative

Stage = Literal["prefill", "decode"]


def _mem_doc(m: Memory, device_gib: float) -> MemoryBreakdown:
    g = lambda a: round(float(a[0]) / GIB, 3)  # noqa: E731
    return MemoryBreakdown(
        weights_gib=g(m.weights),
        kv_cache_gib=g(m.kv_cache),
        activations_gib=g(m.activations),
        reserve_gib=g(m.reserve),
        usable_gib=g(m.capacity),
        device_gib=device_gib,
    )


def _time_doc(st: StageTime) -> TimeBreakdown:
    ms = lambda a: round(float(a[0]) * 1e3, 4)  # noqa: E731
    return TimeBreakdown(
        gemm_ms=ms(st.gemm_s),
        attention_ms=ms(st.attention_s),
        communication_ms=ms(st.comm_s),
        kernel_overhead_ms=ms(st.overhead_s),
        pipeline_hop_ms=ms(st.hop_s),
    )


def _sources(*parts: tuple[StageTime, float]) -> dict[str, float]:
    """Time-weighted operator-source shares of one or more iterations."""
    total = sum(w for _, w in parts) or 1.0
    names = parts[0][0].sources.keys()
    return {n: round(sum(float(st.sources[n][0]) * w for st, w in parts) / total, 4) for n in names}


def estimate(
    model: ModelCard,
    hardware: HardwareCard,
    *,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    dp: int = 1,
    cp: int = 1,
    stage: Stage | None = None,
    batch: int | None = None,
    concurrency: int | None = None,
    input_tokens: int = 2048,
    output_tokens: int = 128,
    precision: Precision = "bf16",
    kv_precision: Precision | None = None,
    engine: EngineParams | None = None,
    engine_name: str | None = None,
    routing: Routing | None = None,
    speculative: Speculative | None = None,
    prefix_hit_rate: float | None = None,
    power_cap_w: float | None = None,
) -> EstimateResult:
    engine = engine or engine_params(engine_name)
    kv_precision = kv_precision or precision
    batch = _check_counts(stage, batch, concurrency, input_tokens, output_tokens)
    _check_context(model, stage, input_tokens, output_tokens)
    _check_options(cp, prefix_hit_rate, concurrency)
    try:
        arch = ModelArch.from_card(model).with_routing(routing)
    except ValueError as exc:
        raise InputError(f"--routing: {exc}") from None
    hw = _hardware_table(hardware, engine, engine_name, power_cap_w)
    sp = _speculation(model, speculative, stage, concurrency)
    plans = Plans.of(hw=0, tp=tp, pp=pp, ep=ep, dp=dp, batch=batch or concurrency,
                     wprec=precision_code(precision), kvprec=precision_code(kv_precision), cp=cp,
                     spec=int(sp is not None))
    _check_plan(arch, plans, model.name)
    notes: list[str] = []
    math = precision if hardware.supports(precision) else "bf16"
    if math != precision:
        notes.append(
            f"{hardware.name} has no native {precision} math: weights are stored in {precision} "
            "and the GEMMs run in bf16 (weight-only quantisation)"
        )
    wl = rt.Workload(float(input_tokens), float(output_tokens), speculation=sp,
                     prefix_hit_rate=prefix_hit_rate or 0.0)
    common = dict(
        model=model.name, hardware=hardware.name, tp=tp, pp=pp, ep=ep, dp=dp, cp=cp,
        devices_per_instance=tp * pp * dp * cp, precision=precision, kv_precision=kv_precision,
        math_precision=math, batch=batch, concurrency=concurrency,
        input_tokens=input_tokens, output_tokens=output_tokens,
        routing=arch.expert_routing.description if arch.moe_layers else None,
        speculative=speculative.label if sp is not None and speculative is not None else None,
        prefix_hit_rate=prefix_hit_rate,
        power_cap_w=power_cap_w,
    )
    if concurrency is not None:
        return _closed_loop_doc(arch, hw, plans, wl, concurrency, engine, common, notes, hardware)
    return _stage_doc(arch, hw, plans, wl, float(batch), stage, engine, common, notes, hardware)  # type: ignore[arg-type]


def _check_context(model: ModelCard, stage: Stage | None, input_tokens: int, output_tokens: int) -> None:
    """The prompt (and, past a prefill, prompt + output) within the model's maximum context."""
    limit = model.max_context_tokens
    if input_tokens > limit:
        raise InputError(f"--input-tokens: {input_tokens} exceeds {model.name}'s maximum context of "
                         f"{limit} tokens")
    if stage != "prefill" and input_tokens + output_tokens > limit:
        raise InputError(f"--input-tokens + --output-tokens: {input_tokens} + {output_tokens} exceed "
                         f"{model.name}'s maximum context of {limit} tokens")


def _check_options(cp: int, prefix_hit_rate: float | None, concurrency: int | None) -> None:
    """--cp and --prefix-hit-rate within their bounds (InputError otherwise)."""
    if not 1 <= cp <= MAX_CP:
        raise InputError(f"--cp must be between 1 and {MAX_CP} (got {cp})")
    if prefix_hit_rate is not None:
        if not 0.0 <= prefix_hit_rate <= MAX_HIT_RATE:
            raise InputError(f"--prefix-hit-rate must be between 0 and {MAX_HIT_RATE} (got {prefix_hit_rate:g})")
        if concurrency is not None:
            raise InputError("--prefix-hit-rate applies to --stage prefill or a static batch; the closed "
                             "loop (--concurrency) does not model it")


def _check_plan(arch: ModelArch, plans: Plans, name: str) -> None:
    """The plan (one row) must be well-formed for the model (InputError naming every rule it breaks)."""
    broken = [RULES[k] for k, m in invalid_reasons(arch, plans).items() if m[0]]
    if broken:
        p = plans
        raise InputError(
            f"tp={p.tp[0]} pp={p.pp[0]} ep={p.ep[0]} dp={p.dp[0]} cp={p.cp[0]} is not a valid plan "
            f"for {name}: " + "; ".join(broken)
        )


def _speculation(model: ModelCard, speculative: Speculative | None, stage, concurrency) -> Speculation | None:
    """The decode step's speculation; its draft card resolved (and of the target's vocabulary).
    None without one, or for a prefill-only estimate (prefill does not speculate)."""
    if speculative is None or stage == "prefill":
        return None
    if concurrency is not None:
        raise InputError("--speculative applies to --stage decode or a static batch; the closed "
                         "loop (--concurrency) does not model it")
    if speculative.method != "draft" or speculative.draft_model is None:
        return Speculation.of(speculative)
    draft = shipped.model_card(speculative.draft_model)
    if draft.vocab_size != model.vocab_size:
        raise InputError(f"--speculative: {draft.name} has a vocabulary of {draft.vocab_size} tokens, "
                         f"{model.name} of {model.vocab_size}; a draft model must share the tokenizer")
    return Speculation.of(speculative, ModelArch.from_card(draft))


def _hardware_table(card: HardwareCard, engine: EngineParams, engine_name: str | None,
                    power_cap_w: float | None) -> HardwareTable:
    """The card's table, under a power limit when one is given (its power_curve)."""
    tables = measured_tables([card], engine_name)
    if power_cap_w is None:
        return HardwareTable.from_cards([card], engine=engine, profiles=tables)
    if not 0 < power_cap_w <= 1e5:
        raise InputError(f"--power-cap: {power_cap_w:g} W is not a power limit (0 < W <= 100000)")
    try:
        capped = capped_card(card, power_cap_w)
        profiles = ProfileSet((capped_profiles(tables.members[0], card, power_cap_w),))
    except ValueError as exc:
        raise InputError(f"--power-cap: {exc}") from None
    return HardwareTable.from_cards([capped], engine=engine, profiles=profiles)


def _check_counts(stage, batch, concurrency, input_tokens: int, output_tokens: int) -> int | None:
    """The batch to evaluate (1 when neither a batch nor a concurrency is given); bad
    combinations and counts below one are input errors."""
    if batch is not None and concurrency is not None:
        raise InputError("give --batch or --concurrency, not both")
    if concurrency is not None and stage is not None:
        raise InputError("--concurrency models a colocated instance; it takes no --stage")
    for name, v in (("input-tokens", input_tokens), ("output-tokens", output_tokens)):
        if v < 1:
            raise InputError(f"--{name} must be at least 1 (got {v})")
    if batch is None and concurrency is None:
        batch = 1
    for name, v in (("batch", batch), ("concurrency", concurrency)):
        if v is not None and v < 1:
            raise InputError(f"--{name} must be at least 1 (got {v})")
    return batch


def _closed_loop_doc(arch, hw, plans, wl, concurrency: int, engine: EngineParams, common: dict,
                     notes: list[str], hardware: HardwareCard) -> EstimateResult:
    cl = loop.closed_loop(arch, hw, plans, wl, concurrency, engine)
    mem = cl.memory
    _, cl_st = rt.cycle(arch, hw, plans, Load.decode(float(concurrency), wl.decode_context), engine)
    cl_pre = stage_time(arch, hw, plans, Load.prefill(1.0, wl.input_tokens), engine)
    return EstimateResult(
        **common, stage="closed_loop", fits=bool(mem.fits[0]),
        memory_gib_per_device=round(float(mem.total[0]) / GIB, 3),
        memory=_mem_doc(mem, hardware.memory_gib),
        prefill_ms=None, decode_step_ms=None,
        ttft_ms=float(cl.ttft_ms[0]), tpot_ms=float(cl.tpot_ms[0]),
        throughput_qps=float(cl.throughput_qps[0]),
        tokens_per_s=float(cl.output_tokens_per_s[0]), breakdown=None,
        operator_sources=_sources((cl_pre, float(cl_pre.stage_s[0])),
                                  (cl_st, wl.output_tokens * float(cl.tpot_ms[0]) / 1e3)),
        notes=notes + [f"closed loop: {concurrency} requests in flight; "
                       f"{float(cl.decode_batch[0]):.1f} decoding on average; "
                       f"token budget {engine.max_batched_tokens} per iteration; "
                       f"prompts arrive in waves of "
                       f"{float(loop.wave_size(float(concurrency), engine)):.1f} "
                       f"({engine.wave_size_coefficient:g} x N^{engine.wave_size_exponent:g})"],
    )


def _stage_doc(arch, hw, plans, wl, B: float, stage: Stage | None, engine: EngineParams,
               common: dict, notes: list[str], hardware: HardwareCard) -> EstimateResult:
    """One prefill pass, one decode step, or (no stage) a static batch prefilled then decoded."""
    s, o = wl.input_tokens, wl.output_tokens
    step = engine.step_overhead_ms * 1e-3
    pre_st = stage_time(arch, hw, plans, prefix.prefill_load(B / float(plans.dp[0]), wl, s), engine)
    prefill_s = pass_latency(plans, pre_st, engine)
    dec_s, dec_st = rt.cycle(arch, hw, plans, Load.decode(B, wl.decode_context), engine)
    sp = wl.speculation  # the decode step is then the speculative iteration per token
    dec_s = speculative.per_token_s(arch, hw, plans, B, wl.decode_context, engine, sp, dec_s, rt.cycle)
    if sp is not None:
        notes.append(f"speculative decoding {sp.method}: {sp.tokens} drafted tokens at acceptance "
                     f"{sp.acceptance_rate:g} yield {sp.expected_tokens:.3f} tokens per verification; "
                     "decode_step_ms and tpot_ms are per token")
    prefill_ms, decode_ms = float(prefill_s[0] * 1e3), float(dec_s[0] * 1e3)
    if stage == "prefill":
        mem = memory(arch, hw, plans, s, B * s, engine)
        qps = B / float(pre_st.stage_s[0] + step)
        tokens = qps * s
        ttft, tpot, st = prefill_ms, None, pre_st
        sources = _sources((pre_st, 1.0))
    elif stage == "decode":
        mem = memory(arch, hw, plans, wl.decode_context, B, engine)  # staggered contexts
        mem = speculative.with_proposer_memory(mem, arch, plans, B, wl.decode_context, sp)
        qps = B / (o * float(dec_s[0]))
        tokens = B / float(dec_s[0])
        ttft, tpot, st = None, decode_ms, dec_st
        sources = _sources((dec_st, 1.0))
    else:
        # static batch: prefill the batch, then decode it to the end (aiconfigurator run_static)
        mem = memory(arch, hw, plans, s + o, B * s, engine)
        mem = speculative.with_proposer_memory(mem, arch, plans, B, s + o, sp)
        total = float(prefill_s[0] + o * dec_s[0])
        qps = B / total
        tokens = qps * o
        ttft, tpot, st = prefill_ms, decode_ms, dec_st
        sources = _sources((pre_st, float(prefill_s[0])), (dec_st, o * float(dec_s[0])))
        notes.append("no --stage: a static batch is prefilled, then decoded to the end; "
                     "tokens_per_s counts output tokens")
    if not bool(mem.fits[0]):
        notes.append("does not fit in device memory: throughput figures are not achievable")
    return EstimateResult(
        **common, stage=stage or "both", fits=bool(mem.fits[0]),
        memory_gib_per_device=round(float(mem.total[0]) / GIB, 3),
        memory=_mem_doc(mem, hardware.memory_gib),
        prefill_ms=prefill_ms if stage != "decode" else None,
        decode_step_ms=decode_ms if stage != "prefill" else None,
        ttft_ms=ttft, tpot_ms=tpot, throughput_qps=qps, tokens_per_s=tokens,
        breakdown=_time_doc(st), operator_sources=sources, notes=notes,
    )

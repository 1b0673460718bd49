"""Assemble one engine iteration: operators per layer, summed along a pipeline stage.

An iteration (one forward pass) on one attention data-parallel rank carries a `Load`: some
decoding sequences (one new token each, reading their KV cache) and some prefill tokens (whole
prompts, or chunks of them). Prefill and decode are the two pure cases; colocated continuous
batching mixes them. Per layer we charge:

- QKV and output projections (GEMMs over all tokens of the iteration);
- attention: decode reads every sequence's KV; prefill is quadratic in the prompt (causal pairs),
  bounded by the window on chunked / sliding layers; MLA decode works on the latent cache;
- the MLP (dense) or the MoE block (router, experts sized by the tokens routed to a device, the
  weights of the experts actually touched, shared experts; measured routed-expert kernels where
  a `moe_experts` table covers the model, rescaled from the collector's balanced routing to the
  modelled one, see `_measured_moe`);
- tensor-parallel all-reduces (attention out, MLP out) and, with attention data parallelism, the
  MoE dispatch/combine all-to-all;
- a fixed cost per kernel.

A stage holds ceil(L / pp) layers; the last stage also runs the LM head. Pipeline hand-offs are
point-to-point sends. Every quantity is an array over plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf import ops
from solver.perf.arch import ModelArch
from solver.perf.tables import ACT_BYTES, PRECISION_BYTES, HardwareTable, Plans
from solver.profiles import EXTRAPOLATED, ROOFLINE, Estimate, SourceTally, hooks
from solver.schema.engine import EngineParams


@dataclass(frozen=True, slots=True)
class Load:
    """Work of one iteration on one attention-DP rank (arrays broadcastable to the plans)."""

    dec_seqs: np.ndarray  # decoding sequences, one token each
    dec_ctx: np.ndarray  # mean KV context (tokens) of those sequences
    pre_tokens: np.ndarray  # prefill tokens processed
    pre_prompt: np.ndarray  # length of the prompts those tokens belong to
    pre_chunk: np.ndarray  # tokens of one prompt per iteration (== prompt when unchunked)
    logits: np.ndarray  # rows that need the LM head (decoding seqs + prompts completing)

    @classmethod
    def prefill(cls, prompts, prompt_tokens) -> Load:
        prompts = np.asarray(prompts, dtype=float)
        s = np.asarray(prompt_tokens, dtype=float)
        z = np.zeros_like(prompts * s)
        return cls(z, z, prompts * s, s + z, s + z, prompts + z)

    @classmethod
    def decode(cls, seqs, context) -> Load:
        seqs = np.asarray(seqs, dtype=float)
        ctx = np.asarray(context, dtype=float)
        z = np.zeros_like(seqs * ctx)
        return cls(seqs + z, ctx + z, z, z, z, seqs + z)

    @classmethod
    def mixed(cls, seqs, context, chunk_tokens, prompt_tokens) -> Load:
        """Decode batch plus `chunk_tokens` of prefill work from prompts of `prompt_tokens`."""
        seqs = np.asarray(seqs, dtype=float)
        ctx = np.asarray(context, dtype=float)
        c = np.asarray(chunk_tokens, dtype=float)
        s = np.asarray(prompt_tokens, dtype=float)
        z = np.zeros_like(seqs * ctx * c * s)
        per_prompt = np.minimum(c, s)
        completing = c / np.maximum(s, 1.0)  # prompts finishing per iteration on average
        return cls(seqs + z, ctx + z, c + z, s + z, per_prompt + z, seqs + completing + z)

    def scaled(self, share) -> Load:
        """The load of one DP rank when the instance's load is split `share` ways."""
        return Load(
            self.dec_seqs / share,
            self.dec_ctx,
            self.pre_tokens / share,
            self.pre_prompt,
            self.pre_chunk,
            self.logits / share,
        )


@dataclass(frozen=True, slots=True)
class StageTime:
    """Seconds per pipeline stage for one iteration, with a breakdown (arrays)."""

    stage_s: np.ndarray  # slowest stage (the last, with the LM head)
    hop_s: np.ndarray  # point-to-point hand-off between stages
    gemm_s: np.ndarray  # projections, MLP/experts, LM head
    attention_s: np.ndarray
    comm_s: np.ndarray  # all-reduce / all-to-all inside the stage
    overhead_s: np.ndarray  # kernel fixed costs
    sources: dict[str, np.ndarray]  # share of operator time: measured, interpolated, ...


def _window_pairs(tokens, prompt, chunk, window):
    """Mean causal keys per prefill query, optionally bounded by a local window.

    A prompt of s tokens has s(s+1)/2 query-key pairs; chunking does not change the total, only
    how it is spread over iterations, so the mean keys per token is (s+1)/2. With a window w < s
    the mean is (w(w+1)/2 + (s-w)w) / s.
    """
    s = np.maximum(prompt, 1.0)
    if window is None:
        return tokens * (s + 1.0) / 2.0
    w = float(window)
    bounded = (w * (w + 1.0) / 2.0 + (s - w) * w) / s
    return tokens * np.where(s <= w, (s + 1.0) / 2.0, bounded)


# the measured expert time is rescaled (hold the kernel's efficiency, scale by the roofline) when
# the modelled routing differs from the collector's; a factor within 1% of one counts as none
_ROUTING_TOLERANCE = 0.01


def _measured_moe(arch: ModelArch, prof, i, plans: Plans, tokens, group_tokens, moe_tp, busiest,
                  touched, flops, mem_bw, b_w, block, tally: SourceTally, weight) -> np.ndarray:
    """One MoE block's compute from measured tables: routed experts (`hooks.moe_experts`), the
    shared expert and the router (GEMM tables); `block` (the block's roofline) stands where the
    routed experts have no table, so hardware or precisions without MoE tables keep the
    analytic model exactly.

    The expert table was timed under the collector's balanced routing: the device computes
    T k / ep token-expert pairs and reads clip(T k / ep, 1, E / ep) experts (tokens spread over
    as many experts as possible). The stage's routing model (perf/routing.py) gives the busiest
    rank's pairs (T k busiest_share) and the experts it reads (`touched`: uniform-random or
    skewed routing touches fewer experts than the collector's spread at small T, and a hot rank
    computes more pairs). The measured time is scaled by the roofline ratio of the two (the
    kernel's achieved efficiency held), and flagged extrapolated where that ratio is not ~1."""
    h = float(arch.hidden)
    e = plans.ep.astype(float)
    t = plans.tp.astype(float)
    expert_inter = int(round(arch.expert_params / (3.0 * h)))
    expert_w = arch.expert_params / moe_tp
    pairs_model = group_tokens * arch.top_k * busiest
    pairs_table = group_tokens * arch.top_k / e
    read_table = np.clip(pairs_table, 1.0, arch.num_experts / e)

    def routed_roofline(pairs, read):
        return ops.roofline(2.0 * pairs * expert_w, read * expert_w * b_w + pairs * 2.0 * h * ACT_BYTES,
                            flops, mem_bw, 0.0)

    modelled = routed_roofline(pairs_model, touched)
    factor = modelled / np.maximum(routed_roofline(pairs_table, read_table), 1e-30)
    routed = hooks.moe_experts(prof, i, group_tokens, arch.hidden, expert_inter, arch.num_experts,
                               arch.top_k, moe_tp, plans.ep, plans.wprec, fallback=modelled)
    covered = routed.source != ROOFLINE
    scaled = np.abs(factor - 1.0) > _ROUTING_TOLERANCE
    routed_s = np.where(covered, routed.seconds * factor, routed.seconds)
    routed_src = np.where(covered & scaled, np.maximum(routed.source, EXTRAPOLATED), routed.source)

    shared_w = arch.shared_expert_params / t
    rest_fb = ops.roofline(2.0 * tokens * (shared_w + arch.router_params),
                           shared_w * b_w + arch.router_params * ACT_BYTES + tokens * 2.0 * h * ACT_BYTES,
                           flops, mem_bw, 0.0)
    rest = hooks.moe_router_and_shared(prof, i, tokens, arch.hidden, arch.num_experts,
                                       arch.shared_expert_params / (3.0 * h), t, plans.wprec,
                                       fallback=rest_fb)
    # where the routed experts have no table the block keeps its own (single) roofline
    z = np.zeros_like(routed_s)
    tally.add(Estimate(np.where(covered, routed_s, z), routed_src.astype(np.int8)), weight)
    tally.add(Estimate(np.where(covered, rest.seconds, z), rest.source), weight)
    tally.add_roofline(np.where(covered, z, block), weight)
    return np.where(covered, routed_s + rest.seconds, block)


def stage_time(
    arch: ModelArch, hw: HardwareTable, plans: Plans, load: Load, engine: EngineParams
) -> StageTime:
    """Time of one iteration of `load` (per DP rank) on the slowest pipeline stage."""
    t = plans.tp.astype(float)
    d = plans.dp.astype(float)
    e = plans.ep.astype(float)
    p = plans.pp.astype(float)
    i = plans.hw
    b_w = PRECISION_BYTES[plans.wprec]
    b_kv = PRECISION_BYTES[plans.kvprec]
    flops = hw.gemm_flops[i, plans.wprec]
    flops_attn = hw.bf16_flops[i]
    mem_bw = hw.hbm_bw[i] * hw.mem_eff[i]
    fab = hw.fabric(i)
    h = float(arch.hidden)

    dec, ctx = load.dec_seqs, load.dec_ctx
    pre = load.pre_tokens
    tokens = dec + pre

    # ---- attention projections -----------------------------------------------------------
    proj_params = arch.attn_params_per_device(t)
    proj_act = tokens * (4.0 * h) * ACT_BYTES
    proj = ops.roofline(2.0 * tokens * proj_params, proj_params * b_w + proj_act, flops, mem_bw, 0.0)
    prof = hw.profiles  # measured operator tables (None: roofline only)
    gqa = prof is not None and not arch.mla_latent
    tally = SourceTally(len(plans))
    layers_per_stage = np.ceil(arch.layers / p)
    if gqa:
        est = hooks.attention_projections(prof, i, tokens, arch.hidden, arch.heads, arch.kv_heads,
                                          arch.head_dim, t, plans.wprec, fallback=proj)
        proj = est.seconds
        tally.add(est, layers_per_stage)
        measured_layer = est.source != ROOFLINE
    else:
        tally.add_roofline(proj, layers_per_stage)
        measured_layer = np.zeros(len(plans), dtype=bool)

    # ---- attention core --------------------------------------------------------------------
    heads = arch.heads / t
    if arch.mla_latent:
        kv_elems = np.full_like(t, arch.kv_cache_elems_per_token_per_layer)  # latent, replicated
        dec_qk = float(arch.kv_cache_elems_per_token_per_layer)  # absorbed: q . [latent, rope]
        dec_v = float(arch.kv_cache_elems_per_token_per_layer - (arch.qk_dim - arch.v_dim))
    else:
        kv_elems = 2.0 * np.ceil(arch.kv_heads / t) * arch.head_dim
        dec_qk = dec_v = float(arch.head_dim)
    pre_qk, pre_v = float(arch.qk_dim), float(arch.v_dim)

    def attention(window, weight) -> np.ndarray:
        c_eff = ctx if window is None else np.minimum(ctx, float(window))
        dec_t = ops.roofline(
            2.0 * dec * c_eff * heads * (dec_qk + dec_v),
            dec * c_eff * kv_elems * b_kv,
            flops_attn,
            mem_bw,
            0.0,
        )
        pairs = _window_pairs(pre, load.pre_prompt, load.pre_chunk, window)
        # earlier chunks of the same prompt are re-read from the KV cache by each later chunk
        prefix = np.maximum(load.pre_prompt - load.pre_chunk, 0.0) / 2.0 * (pre / np.maximum(load.pre_chunk, 1.0))
        if window is not None:
            prefix = np.minimum(prefix, float(window) * pre / np.maximum(load.pre_chunk, 1.0))
        pre_t = ops.roofline(
            2.0 * pairs * heads * (pre_qk + pre_v),
            pre * heads * (pre_qk + pre_v) * 2.0 * ACT_BYTES + (pre + prefix) * kv_elems * b_kv,
            flops_attn,
            mem_bw,
            0.0,
        )
        if gqa:
            kw = dict(heads=arch.heads, kv_heads=arch.kv_heads, head_dim=arch.head_dim, tp=t,
                      kv_precision=plans.kvprec, window=window)
            d_est = hooks.decode_attention(prof, i, dec, ctx, fallback=dec_t, **kw)
            p_est = hooks.prefill_attention(prof, i, pre, load.pre_prompt, fallback=pre_t, **kw)
            tally.add(d_est, weight)
            tally.add(p_est, weight)
            return d_est.seconds + p_est.seconds
        tally.add_roofline(dec_t + pre_t, weight)
        return dec_t + pre_t

    n_local = arch.local_layers
    n_global = arch.layers - n_local
    attn = attention(None, layers_per_stage * n_global / arch.layers) * (n_global / arch.layers)
    if n_local:
        w_local = layers_per_stage * n_local / arch.layers
        attn = attn + attention(arch.local_window_tokens, w_local) * (n_local / arch.layers)

    # ---- feed-forward ----------------------------------------------------------------------
    ffn = np.zeros_like(tokens)
    comm = np.zeros_like(tokens)
    ar_bytes = tokens * h * ACT_BYTES
    tp_ar = ops.all_reduce(ar_bytes, t, fab)
    if prof is not None:
        ar_est = hooks.tp_allreduce(prof, i, tokens, arch.hidden, t, hw.su_domain[i], fallback=tp_ar)
        tp_ar = ar_est.seconds
    dense_share = arch.dense_layers / arch.layers
    moe_share = arch.moe_layers / arch.layers
    if arch.dense_layers:
        dense_params = arch.dense_mlp_params / t
        dense = ops.roofline(
            2.0 * tokens * dense_params,
            dense_params * b_w + tokens * (2.0 * h + 1.5 * arch.dense_mlp_params / h / t) * ACT_BYTES,
            flops,
            mem_bw,
            0.0,
        )
        if gqa and arch.gated_mlp:
            est = hooks.dense_mlp(prof, i, tokens, arch.hidden, arch.dense_mlp_params / (3 * arch.hidden),
                                  t, plans.wprec, fallback=dense)
            dense = est.seconds
            tally.add(est, layers_per_stage * dense_share)
        else:
            tally.add_roofline(dense, layers_per_stage * dense_share)
        ffn = ffn + dense * dense_share
        comm = comm + tp_ar * dense_share
    if arch.moe_layers:
        group = t * d  # devices of one stage; experts are spread over all of them
        moe_tp = group / e
        group_tokens = tokens * d
        # the busiest expert-parallel rank sets the pace (perf/routing.py): its share of the
        # group's token-expert assignments, and the distinct experts whose weights it reads
        routing = arch.expert_routing
        busiest = routing.busiest_share(plans.ep)  # 1/ep under balanced routing
        touched = routing.touched(group_tokens, plans.ep)
        assignments = group_tokens * arch.top_k * busiest
        expert_w = arch.expert_params / moe_tp
        shared_w = arch.shared_expert_params / t
        moe = ops.roofline(
            2.0 * assignments * expert_w + 2.0 * tokens * (shared_w + arch.router_params),
            (touched * expert_w + shared_w) * b_w
            + arch.router_params * ACT_BYTES
            + (assignments + tokens) * 2.0 * h * ACT_BYTES,
            flops,
            mem_bw,
            0.0,
        )
        if prof is not None and arch.gated_mlp:
            moe = _measured_moe(arch, prof, i, plans, tokens, group_tokens, moe_tp, busiest, touched,
                                flops, mem_bw, b_w, moe, tally, layers_per_stage * moe_share)
        else:
            tally.add_roofline(moe, layers_per_stage * moe_share)
        ffn = ffn + moe * moe_share
        # d == 1: tokens are replicated on the TP group; experts' partial outputs are summed by
        # the same all-reduce a dense MLP needs. d > 1: dispatch and combine all-to-all. The
        # tokens of an attention rank are replicated on its t TP devices, so each device
        # dispatches a 1/t share of them (the TP all-reduce below puts the outputs back on all
        # t); the slowest rank receives `busiest * ep` times the even share.
        a2a_bytes = tokens / t * arch.top_k * h * ACT_BYTES * np.maximum(busiest * e, 1.0)
        a2a = 2.0 * ops.all_to_all(a2a_bytes, group, fab)
        moe_comm = np.where(d > 1, a2a + tp_ar, tp_ar)
        comm = comm + moe_comm * moe_share
        tally.add_roofline(np.where(d > 1, a2a, 0.0), layers_per_stage * moe_share)
    comm = comm + tp_ar  # attention output all-reduce
    # the layer's all-reduces: after attention, and after the MLP or the MoE block
    if prof is not None:
        tally.add(ar_est, 2.0 * layers_per_stage)
    else:
        tally.add_roofline(tp_ar, 2.0 * layers_per_stage)

    per_layer_gemm = proj + ffn
    # measured kernels already include their launch cost; only the unmeasured ones (norms,
    # activation, residual adds) pay the fixed kernel overhead then
    kernels = np.where(measured_layer, engine.unmeasured_kernels_per_layer, engine.kernels_per_layer)
    kernel_s = hw.kernel_s[i] * kernels * layers_per_stage

    # ---- LM head (last stage), vocabulary split over TP --------------------------------------
    head_params = arch.vocab * h / t
    lm_head = ops.roofline(
        2.0 * load.logits * head_params,
        head_params * ACT_BYTES + load.logits * arch.vocab / t * 4.0,
        hw.bf16_flops[i],
        mem_bw,
        hw.kernel_s[i],
    )
    if gqa:
        est = hooks.lm_head(prof, i, load.logits, arch.hidden, arch.vocab, t, fallback=lm_head)
        lm_head = est.seconds
        tally.add(est)
    else:
        tally.add_roofline(lm_head)

    gemm_s = layers_per_stage * per_layer_gemm + lm_head
    attention_s = layers_per_stage * attn
    comm_s = layers_per_stage * comm
    stage = gemm_s + attention_s + comm_s + kernel_s

    # pipeline hand-off: activations of the iteration's tokens; it leaves the node when the
    # instance is wider than one scale-up domain
    crosses = plans.devices > hw.su_domain[i]
    hop = np.where(p > 1, ops.p2p(tokens * h * ACT_BYTES, crosses, fab), 0.0)
    return StageTime(stage, hop, gemm_s, attention_s, comm_s, kernel_s, tally.shares())


def pass_latency(plans: Plans, st: StageTime, engine: EngineParams) -> np.ndarray:
    """One micro-batch through every pipeline stage and hop, plus the engine's step overhead."""
    p = plans.pp.astype(float)
    return p * st.stage_s + (p - 1.0) * st.hop_s + engine.step_overhead_ms * 1e-3

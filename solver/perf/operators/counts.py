"""FLOPs and bytes moved per operator: the counting formulas, nothing else.

Every function takes numpy arrays (one element per plan, or per table query) and returns a
`Work` (floating-point operations, bytes read and written). No hardware, no time: the
rooflines (`roofline.py` for the stage model, `bounds.py` for the table extrapolation laws)
divide these by peaks.

Conventions: activations and collectives travel in bf16 (`ACT_BYTES`); weights and the KV
cache in the plan's precision (bytes per element passed in). A GEMM Y[m, n] = X[m, k] W[k, n]
does 2 m n k FLOPs (one multiply and one add per term) and moves its input and weights at the
weight precision (activations are quantised to the weight format) and its output in bf16; the
stage model's projections, MLPs and LM head are counted as those GEMMs, one kernel each, with
the shapes the measured tables are queried at.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.tables import ACT_BYTES, Plans


@dataclass(frozen=True, slots=True)
class Work:
    """FLOPs and bytes of one operator (arrays)."""

    flops: np.ndarray
    bytes: np.ndarray


# ---- the stage model's operators (per device, one layer) -----------------------------------


GemmShape = tuple  # (m, n, k) of Y[m, n] = X[m, k] W[k, n]


def projection_gemms(arch: ModelArch, tp, tokens) -> list[GemmShape]:
    """The GQA projections as the engines run them (vLLM/SGLang tensor parallelism): fused QKV
    (query heads split, KV heads split or replicated past their count) and the row-parallel
    output projection."""
    q = np.ceil(arch.heads / tp)
    kv = np.ceil(arch.kv_heads / tp)
    h = float(arch.hidden)
    return [(tokens, (q + 2.0 * kv) * arch.head_dim, h), (tokens, h, q * arch.head_dim)]


def mla_projections(arch: ModelArch, tp, tokens, b_w) -> Work:
    """MLA's projections (down-projections whole on every rank, the rest split) as one block:
    the weights once and about 4 hidden-widths of bf16 activations per token."""
    params = arch.attn_params_per_device(tp)
    act = tokens * (4.0 * float(arch.hidden)) * ACT_BYTES
    return Work(2.0 * tokens * params, params * b_w + act)


def mlp_gemms(arch: ModelArch, tp, tokens, params) -> list[GemmShape]:
    """An MLP of `params` weights split over TP: fused gate+up (gated) or up, and down."""
    h = float(arch.hidden)
    mats = 3.0 if arch.gated_mlp else 2.0
    width = np.ceil(params / (mats * h) / tp)
    return [(tokens, (mats - 1.0) * width, h), (tokens, h, width)]


def lm_head_gemm(arch: ModelArch, tp, rows) -> GemmShape:
    """The LM head (bf16 weights), vocabulary split over TP."""
    return (rows, np.ceil(arch.vocab / tp), float(arch.hidden))


@dataclass(frozen=True, slots=True)
class AttentionShape:
    """Per-device attention geometry: query heads, cached elements per token, and the widths
    of the q.k and attention-times-V products for decode and prefill."""

    heads: np.ndarray
    kv_elems: np.ndarray
    dec_qk: float
    dec_v: float
    pre_qk: float
    pre_v: float

    @classmethod
    def of(cls, arch: ModelArch, tp) -> AttentionShape:
        """GQA: KV heads split over TP (replicated past their count). MLA: the latent cache is
        replicated, decode works on it directly (absorbed weights: q . [latent, rope], values
        from the latent part), prefill on the decompressed heads."""
        heads = arch.heads / tp
        if arch.mla_latent:
            latent = arch.kv_cache_elems_per_token_per_layer
            kv_elems = np.full_like(tp, latent)
            dec_qk, dec_v = float(latent), float(latent - (arch.qk_dim - arch.v_dim))
        else:
            kv_elems = 2.0 * np.ceil(arch.kv_heads / tp) * arch.head_dim
            dec_qk = dec_v = float(arch.head_dim)
        return cls(heads, kv_elems, dec_qk, dec_v, float(arch.qk_dim), float(arch.v_dim))


def window_pairs(tokens, prompt, window):
    """Query-key pairs of `tokens` prefill tokens of prompts of `prompt` tokens, optionally
    bounded by a local window.

    A prompt of s tokens has s(s+1)/2 causal pairs; chunking does not change the total, only
    how it is spread over iterations, so the mean keys per token is (s+1)/2. With a window
    w < s the mean is (w(w+1)/2 + (s-w)w) / s.
    """
    s = np.maximum(prompt, 1.0)
    if window is None:
        return tokens * (s + 1.0) / 2.0
    w = float(window)
    bounded = (w * (w + 1.0) / 2.0 + (s - w) * w) / s
    return tokens * np.where(s <= w, (s + 1.0) / 2.0, bounded)


def prefix_reads(tokens, prompt, chunk, window):
    """Cached tokens re-read by chunked prefill: each later chunk of a prompt reads the earlier
    chunks' KV (on average half the prompt before the chunk), at most the window."""
    chunks = tokens / np.maximum(chunk, 1.0)
    prefix = np.maximum(prompt - chunk, 0.0) / 2.0 * chunks
    if window is not None:
        prefix = np.minimum(prefix, float(window) * tokens / np.maximum(chunk, 1.0))
    return prefix


def decode_attention(shape: AttentionShape, seqs, context, window, b_kv) -> Work:
    """One decode step: every sequence reads its cached context (at most the window)."""
    c_eff = context if window is None else np.minimum(context, float(window))
    return Work(2.0 * seqs * c_eff * shape.heads * (shape.dec_qk + shape.dec_v),
                seqs * c_eff * shape.kv_elems * b_kv)


def prefill_attention(shape: AttentionShape, tokens, prompt, chunk, window, b_kv) -> Work:
    """Causal prefill attention: the pairs of `window_pairs`; Q, K, V and the output in bf16
    and the new plus re-read cache entries in the KV precision."""
    pairs = window_pairs(tokens, prompt, window)
    width = shape.pre_qk + shape.pre_v
    return Work(2.0 * pairs * shape.heads * width,
                tokens * shape.heads * width * 2.0 * ACT_BYTES
                + (tokens + prefix_reads(tokens, prompt, chunk, window)) * shape.kv_elems * b_kv)


# ---- the MoE block ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MoeLoad:
    """One MoE layer on the busiest expert-parallel rank of a stage.

    The experts are spread over the stage's tp x dp devices, ep ways (each expert split
    moe_tp = tp dp / ep ways); the group sees the tokens of all dp attention ranks. The routing
    model (solver/perf/routing.py) gives the busiest rank's share of the token-expert pairs
    (1/ep when balanced) and the distinct experts whose weights it reads."""

    group_tokens: np.ndarray
    moe_tp: np.ndarray
    busiest: np.ndarray
    touched: np.ndarray
    pairs: np.ndarray  # token-expert pairs computed by the busiest rank
    expert_w: np.ndarray  # weights of one expert on one device

    @classmethod
    def of(cls, arch: ModelArch, plans: Plans, tokens) -> MoeLoad:
        d = plans.dp.astype(float)
        group = plans.tp.astype(float) * d
        moe_tp = group / plans.ep.astype(float)
        group_tokens = tokens * d
        routing = arch.expert_routing
        busiest = routing.busiest_share(plans.ep)
        touched = routing.touched(group_tokens, plans.ep)
        pairs = group_tokens * arch.top_k * busiest
        return cls(group_tokens, moe_tp, busiest, touched, pairs, arch.expert_params / moe_tp)


def moe_block(arch: ModelArch, tp, tokens, moe: MoeLoad, b_w) -> Work:
    """The whole MoE block as one operator: routed experts (pairs x one expert's weights, the
    touched experts' weights read), shared experts and router on every token."""
    h = float(arch.hidden)
    shared_w = arch.shared_expert_params / tp
    return Work(2.0 * moe.pairs * moe.expert_w + 2.0 * tokens * (shared_w + arch.router_params),
                (moe.touched * moe.expert_w + shared_w) * b_w
                + arch.router_params * ACT_BYTES
                + (moe.pairs + tokens) * 2.0 * h * ACT_BYTES)


def routed_experts(arch: ModelArch, pairs, experts_read, expert_w, b_w) -> Work:
    """The routed experts alone: `pairs` token-expert products, `experts_read` experts' weights."""
    return Work(2.0 * pairs * expert_w,
                experts_read * expert_w * b_w + pairs * 2.0 * float(arch.hidden) * ACT_BYTES)


def router_and_shared(arch: ModelArch, tp, tokens, b_w) -> Work:
    """The rest of the MoE block: the router (bf16) and the shared experts split over TP."""
    shared_w = arch.shared_expert_params / tp
    return Work(2.0 * tokens * (shared_w + arch.router_params),
                shared_w * b_w + arch.router_params * ACT_BYTES
                + tokens * 2.0 * float(arch.hidden) * ACT_BYTES)


# ---- the memory-bound small kernels ---------------------------------------------------------

# hidden vectors moved per token by one fused residual add + RMSNorm: read the input and the
# residual, write the new residual and the normed output (vLLM's fused_add_rms_norm; the
# aiconfigurator-core 0.12.0 step model charges its add_norm ops as memory traffic too)
ADD_NORM_PASSES = 4.0
ACT_PASSES = 3.0  # gated activation: read gate and up, write their product


def elementwise(arch: ModelArch, tp, tokens) -> Work:
    """A layer's elementwise kernels as HBM traffic: two residual add + RMSNorm over the whole
    hidden vector (the residual stream is replicated on every TP rank) and, in dense MLP layers,
    the activation over the device's share of the MLP width (MoE experts fuse theirs). Their
    FLOPs are negligible; their launch cost is the per-kernel overhead, charged apart."""
    h = float(arch.hidden)
    norms = 2.0 * ADD_NORM_PASSES * tokens * h
    act = 0.0
    if arch.dense_layers:
        mats = 3.0 if arch.gated_mlp else 2.0
        width = np.ceil(arch.dense_mlp_params / (mats * h) / tp)
        act = (ACT_PASSES if arch.gated_mlp else 2.0) * tokens * width * (arch.dense_layers / arch.layers)
    return Work(np.zeros_like(tokens * tp), (norms + act) * ACT_BYTES)


# ---- bytes on the links -------------------------------------------------------------------


def hidden_bytes(arch: ModelArch, tokens):
    """One hidden vector per token in bf16: a TP all-reduce's or a pipeline hop's message."""
    return tokens * float(arch.hidden) * ACT_BYTES


def dispatch_bytes(arch: ModelArch, tp, ep, tokens, busiest):
    """MoE dispatch (or combine) bytes per device: each device of a TP group sends a 1/tp share
    of its rank's tokens, top-k copies each; the busiest rank receives busiest x ep times the
    even share."""
    return tokens / tp * arch.top_k * float(arch.hidden) * ACT_BYTES * np.maximum(busiest * ep, 1.0)


# ---- the measured tables' shapes (one query per row) ------------------------------------------


def gemm(m, n, k, b) -> Work:
    """Y[m, n] = X[m, k] W[k, n]: the input and the weights at `b` bytes per element (activations
    are quantised to the weight format), the output in bf16."""
    return Work(2.0 * m * n * k, (m * k + n * k) * b + m * n * ACT_BYTES)


def context_attention(batch, s, heads, kv_heads, head_dim, b_kv) -> Work:
    """`batch` whole prompts of `s` tokens, causal: s(s+1)/2 pairs each, q.k and p.v."""
    pairs = s * (s + 1.0) / 2.0
    return Work(4.0 * batch * heads * head_dim * pairs,
                batch * s * head_dim * (2.0 * heads * ACT_BYTES + 2.0 * kv_heads * b_kv))


def generation_attention(batch, kv, heads, kv_heads, head_dim, b_kv) -> Work:
    """One decode step of `batch` sequences over `kv` cached tokens."""
    return Work(4.0 * batch * heads * head_dim * kv,
                batch * (kv * 2.0 * kv_heads * head_dim * b_kv + 2.0 * heads * head_dim * ACT_BYTES))


def balanced_experts(tokens, tp, ep, hidden, inter, topk, experts, b) -> Work:
    """Gated experts (gate+up and down: 3 matrices of hidden x inter/tp) on one device under
    the collectors' balanced routing: tokens topk / ep pairs, their weights spread over as many
    of the device's experts as possible (clip(pairs, 1, experts / ep) read)."""
    width = float(inter) / tp
    pairs = tokens * float(topk) / ep
    touched = np.clip(pairs, 1.0, float(experts) / ep)
    return Work(2.0 * pairs * 3.0 * float(hidden) * width,
                touched * 3.0 * float(hidden) * width * b
                + (2.0 * tokens + 2.0 * pairs) * float(hidden) * ACT_BYTES)

"""Table lookups in the stage model's terms, on arrays over plans.

Each function returns an `Estimate` (seconds per plan and a source code per plan) for one
operator group of one layer (or the LM head) from the measured tables. Where no table covers
it (no profile for that hardware, an fp4 GEMM on Hopper, a TP group wider than the measured
NVLink domain) the source is ROOFLINE and the seconds are NaN: the caller's operator model
(solver/perf/operators/measured.py) answers those.

Shapes follow vLLM/SGLang tensor parallelism: fused QKV (query heads split, KV heads split or
replicated when TP exceeds them), row-parallel output projection, fused gate+up and down
projections split over TP, LM head split over the vocabulary.
"""

from __future__ import annotations

import numpy as np

from solver.profiles.interp import EXTRAPOLATED, MEASURED, ROOFLINE, Estimate
from solver.profiles.operators import ProfileSet

ACT_BYTES = 2.0


def _combine(parts: list[Estimate]) -> Estimate:
    """Sum of several GEMMs; ROOFLINE (no answer) where any part has no table."""
    seconds = sum(p.seconds for p in parts)
    source = np.max(np.stack([p.source for p in parts]), axis=0)
    return Estimate(seconds, source)


def attention_projections(prof: ProfileSet, hw, tokens, hidden: int, heads: int, kv_heads: int,
                          head_dim: int, tp, precision) -> Estimate:
    """Fused QKV and output projection GEMMs of one GQA layer on one device."""
    tp = np.asarray(tp, dtype=float)
    q = np.ceil(heads / tp)
    kv = np.ceil(kv_heads / tp)
    qkv = prof.gemm(hw, tokens, (q + 2.0 * kv) * head_dim, hidden, precision)
    out = prof.gemm(hw, tokens, hidden, q * head_dim, precision)
    return _combine([qkv, out])


def dense_mlp(prof: ProfileSet, hw, tokens, hidden: int, intermediate: float, tp, precision,
              gated: bool = True) -> Estimate:
    """Gate+up (fused) and down projections of a dense MLP split `tp` ways. For a ModelArch:
    intermediate = dense_mlp_params / (3 * hidden) when gated (2 * hidden otherwise)."""
    tp = np.asarray(tp, dtype=float)
    width = np.ceil(intermediate / tp)
    up = prof.gemm(hw, tokens, (2.0 if gated else 1.0) * width, hidden, precision)
    down = prof.gemm(hw, tokens, hidden, width, precision)
    return _combine([up, down])


def lm_head(prof: ProfileSet, hw, rows, hidden: int, vocab: int, tp) -> Estimate:
    """The LM head (bf16) on the rows that need logits, vocabulary split over TP."""
    tp = np.asarray(tp, dtype=float)
    return prof.gemm(hw, rows, np.ceil(vocab / tp), hidden, "bf16")


def prefill_attention(prof: ProfileSet, hw, pre_tokens, pre_prompt, heads: int, kv_heads: int,
                      head_dim: int, tp, kv_precision, window: int | None = None) -> Estimate:
    """Causal attention core of the prefill work of one iteration on one device.

    The table measures `batch` whole prompts of `isl` tokens. `pre_tokens` tokens of prompts of
    `pre_prompt` tokens are pre_tokens / pre_prompt prompts; when that is below one (chunked
    prefill), the iteration does that share of one whole prompt's attention (the causal pairs
    of all chunks add up to the whole prompt's). A local window w < prompt scales the time by
    the windowed share of the causal pairs."""
    tp = np.asarray(tp, dtype=float)
    tokens = np.asarray(pre_tokens, dtype=float)
    prompt = np.maximum(np.asarray(pre_prompt, dtype=float), 1.0)
    prompts = tokens / prompt
    batch = np.maximum(prompts, 1.0)
    share = np.where(prompts < 1.0, prompts, 1.0)
    est = prof.attention_context(hw, batch, prompt, np.ceil(heads / tp), np.ceil(kv_heads / tp),
                                 head_dim, kv_precision)
    seconds = est.seconds * share
    if window is not None:
        w = float(window)
        full = prompt * (prompt + 1.0) / 2.0
        bounded = np.where(prompt <= w, full, w * (w + 1.0) / 2.0 + (prompt - w) * w)
        seconds = seconds * bounded / full
        source = np.where((prompt > w) & (est.source < EXTRAPOLATED), EXTRAPOLATED, est.source)
    else:
        source = est.source
    seconds = np.where(tokens > 0, seconds, 0.0)
    source = np.where(tokens > 0, source, MEASURED).astype(np.int8)
    return Estimate(seconds, source)


def decode_attention(prof: ProfileSet, hw, seqs, context, heads: int, kv_heads: int,
                     head_dim: int, tp, kv_precision, window: int | None = None) -> Estimate:
    """One decode step's attention core: `seqs` sequences over `context` cached tokens (the
    window bounds the context on local layers)."""
    tp = np.asarray(tp, dtype=float)
    seqs = np.asarray(seqs, dtype=float)
    ctx = np.maximum(np.asarray(context, dtype=float), 1.0)
    if window is not None:
        ctx = np.minimum(ctx, float(window))
    est = prof.attention_generation(hw, np.maximum(seqs, 1.0), ctx, np.ceil(heads / tp),
                                    np.ceil(kv_heads / tp), head_dim, kv_precision)
    # fewer than one sequence per rank on average (attention DP): that share of one's time
    seconds = np.where(seqs > 0, est.seconds * np.minimum(seqs, 1.0), 0.0)
    source = np.where(seqs > 0, est.source, MEASURED).astype(np.int8)
    return Estimate(seconds, source)


def tp_allreduce(prof: ProfileSet, hw, tokens, hidden: int, tp, domain) -> Estimate:
    """The engine's all-reduce of the layer output (tokens x hidden, bf16) among `tp` devices
    of one scale-up domain; wider groups (hierarchical, across nodes) have no table."""
    tp = np.asarray(tp, dtype=float)
    size = np.asarray(tokens, dtype=float) * hidden * ACT_BYTES
    inside = tp <= np.asarray(domain, dtype=float)
    gpus = np.where(inside & (tp > 1), tp, 2.0).astype(int)  # others are masked below
    est = prof.allreduce(hw, np.maximum(size, 1.0), gpus)
    seconds = np.where(tp > 1, np.where(inside, est.seconds, np.nan), 0.0)
    source = np.where(tp > 1, np.where(inside, est.source, ROOFLINE), MEASURED).astype(np.int8)
    return Estimate(seconds, source)


def moe_experts(prof: ProfileSet, hw, tokens, hidden: int, expert_inter: int, num_experts: int,
                top_k: int, moe_tp, ep, precision) -> Estimate:
    """The routed-expert computation of one MoE layer on one device, balanced routing.

    `tokens`: the tokens entering the layer across the whole MoE group (the group's devices
    all see them: replicated by TP, or gathered across attention-DP ranks), as the table was
    measured. The device holds num_experts / ep experts, each expert_inter / moe_tp wide, and
    computes the token-expert pairs routed to them: activation quantisation, permutation, the
    grouped gate/up and down GEMMs, the activation and the top-k weighted sum (TensorRT-LLM's
    rows also include the top-k routing kernel). Not included: the router GEMM, shared experts,
    dispatch/combine all-to-all, the TP all-reduce. Shapes, precisions (fp4) or hardware without
    a measured table have no answer (source ROOFLINE)."""
    tokens = np.asarray(tokens, dtype=float)
    est = prof.moe_experts(hw, np.maximum(tokens, 1.0), moe_tp, ep, precision, hidden_size=hidden,
                           inter_size=expert_inter, topk=top_k, num_experts=num_experts)
    seconds = np.where(tokens > 0, est.seconds, 0.0)
    source = np.where(tokens > 0, est.source, MEASURED).astype(np.int8)
    return Estimate(seconds, source)


def moe_router_and_shared(prof: ProfileSet, hw, tokens, hidden: int, num_experts: int,
                          shared_inter: float, tp, precision) -> Estimate:
    """The rest of one MoE block's compute on one device: the router GEMM (bf16, replicated:
    tokens x hidden -> num_experts logits) and the shared experts as a gated MLP of total width
    `shared_inter` split over TP (0: none)."""
    parts = [prof.gemm(hw, tokens, num_experts, hidden, "bf16")]
    if shared_inter:
        parts.append(dense_mlp(prof, hw, tokens, hidden, shared_inter, tp, precision))
    return _combine(parts)


def mla_decode(prof: ProfileSet, hw, seqs, context, heads: int, tp, precision, kv_precision) -> Estimate:
    """One decode step of DeepSeek-V3's whole MLA block (projections, norms, RoPE, latent
    attention, output projection) on one device with heads / tp query heads."""
    seqs = np.asarray(seqs, dtype=float)
    ctx = np.maximum(np.asarray(context, dtype=float), 1.0)
    heads_dev = np.ceil(heads / np.asarray(tp, dtype=float))
    est = prof.mla_generation(hw, np.maximum(seqs, 1.0), ctx, heads_dev, precision, kv_precision)
    seconds = np.where(seqs > 0, est.seconds * np.minimum(seqs, 1.0), 0.0)
    source = np.where(seqs > 0, est.source, MEASURED).astype(np.int8)
    return Estimate(seconds, source)


def mla_prefill(prof: ProfileSet, hw, pre_tokens, pre_prompt, heads: int, tp, precision,
                kv_precision) -> Estimate:
    """The whole MLA block over one iteration's prefill tokens: pre_tokens / pre_prompt whole
    prompts; below one (a chunk), that share of one prompt's block (its projections scale
    with the tokens, its causal attention pairs add up over the chunks)."""
    tokens = np.asarray(pre_tokens, dtype=float)
    prompt = np.maximum(np.asarray(pre_prompt, dtype=float), 1.0)
    prompts = tokens / prompt
    heads_dev = np.ceil(heads / np.asarray(tp, dtype=float))
    est = prof.mla_context(hw, np.maximum(prompts, 1.0), prompt, heads_dev, precision, kv_precision)
    seconds = np.where(tokens > 0, est.seconds * np.where(prompts < 1.0, prompts, 1.0), 0.0)
    source = np.where(tokens > 0, est.source, MEASURED).astype(np.int8)
    return Estimate(seconds, source)

"""Memory per device: weights, KV cache, activations and the runtime reserve.

Weights: a stage holds ceil(L/pp) layers. Attention is split over TP with KV heads replicated
when TP exceeds them (ceil(n_kv/tp) heads per device); dense MLPs split over TP; experts split
over EP and, inside an expert group, over the remaining tp*dp/ep devices; embeddings and LM head
are vocabulary-parallel in bf16 (first and last stage). KV cache: every sequence's context for
the stage's layers, local-attention layers bounded by their window; an MLA latent cache is not
split by TP. Context parallelism (context_parallel.py) replicates the weights on its ranks and
shards every sequence's KV and the pass's tokens over them. Activations follow aiconfigurator's empirical factor (docs/sources.md, "Activation and runtime memory").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.perf.arch import ModelArch
from solver.perf.tables import ACT_BYTES, GIB, PRECISION_BYTES, HardwareTable, Plans
from solver.schema.engine import EngineParams


@dataclass(frozen=True, slots=True)
class Memory:
    """Bytes per device (arrays)."""

    weights: np.ndarray
    kv_cache: np.ndarray
    activations: np.ndarray
    reserve: np.ndarray
    capacity: np.ndarray  # usable bytes (device memory x gpu_memory_utilization)
    kv_bytes_per_token: np.ndarray  # per device, per token of context (global layers)

    @property
    def total(self) -> np.ndarray:
        return self.weights + self.kv_cache + self.activations + self.reserve

    @property
    def fits(self) -> np.ndarray:
        return self.total <= self.capacity

    @property
    def total_gib(self) -> np.ndarray:
        return self.total / GIB


def weight_bytes(arch: ModelArch, plans: Plans) -> np.ndarray:
    t = plans.tp.astype(float)
    d = plans.dp.astype(float)
    e = plans.ep.astype(float)
    p = plans.pp.astype(float)
    b_w = PRECISION_BYTES[plans.wprec]
    attn = arch.attn_params_per_device(t)
    ffn = np.zeros_like(t)
    if arch.dense_layers:
        ffn = ffn + arch.dense_mlp_params / t * (arch.dense_layers / arch.layers)
    if arch.moe_layers:
        moe_tp = t * d / e
        moe = (
            arch.num_experts / e * arch.expert_params / moe_tp
            + arch.shared_expert_params / t
            + arch.router_params
        )
        ffn = ffn + moe * (arch.moe_layers / arch.layers)
    layers = np.ceil(arch.layers / p)
    body = layers * ((attn + ffn) * b_w + arch.norm_params_per_layer * ACT_BYTES)
    # vocabulary-parallel embedding and LM head stay in bf16; with pp > 1 they sit on different
    # stages, so the worst stage holds the larger one
    emb = arch.embed_params / t * ACT_BYTES
    head = arch.lm_head_params / t * ACT_BYTES
    ends = np.where(p > 1, np.maximum(emb, head), emb + head)
    return body + ends  # the final norm (hidden x 2 bytes) is negligible


def kv_bytes_per_token(arch: ModelArch, plans: Plans) -> np.ndarray:
    """KV bytes per device for one token of context in every layer of a stage."""
    t = plans.tp.astype(float)
    if arch.mla_latent:
        elems = np.full_like(t, arch.kv_cache_elems_per_token_per_layer)
    else:
        elems = 2.0 * np.ceil(arch.kv_heads / t) * arch.head_dim
    return np.ceil(arch.layers / plans.pp) * elems * PRECISION_BYTES[plans.kvprec]


def memory(
    arch: ModelArch,
    hw: HardwareTable,
    plans: Plans,
    context_tokens,
    pass_tokens,
    engine: EngineParams,
) -> Memory:
    """Per-device memory of `plans.batch` sequences at `context_tokens` each.

    `pass_tokens` is the largest number of tokens one forward pass carries on the instance
    (prefill: batch x prompt; decode: batch; colocated: the iteration's token budget).
    """
    t = plans.tp.astype(float)
    d = plans.dp.astype(float)
    cp = plans.cp.astype(float)  # context parallelism shards the KV and the pass's tokens
    ctx = np.asarray(context_tokens, dtype=float)
    per_token = kv_bytes_per_token(arch, plans)
    if arch.local_layers:
        local_share = arch.local_layers / arch.layers
        w = float(arch.local_window_tokens or 0)
        eff_ctx = ctx * (1.0 - local_share) + np.minimum(ctx, w) * local_share
    else:
        eff_ctx = ctx
    kv = plans.batch / d * eff_ctx / cp * per_token
    # activations: 2 bytes x tokens x hidden x c(tp), c = 11, 6.5, 5, 5 for tp 1, 2, 4, 8 in
    # aiconfigurator's TRT-LLM backend; 5 + 6/tp follows that curve. MoE doubles it.
    factor = (5.0 + 6.0 / t) * (2.0 if arch.moe_layers else 1.0)
    tokens = np.asarray(pass_tokens, dtype=float) / (d * cp)
    act = np.maximum(tokens * arch.hidden * ACT_BYTES * factor, 70 * 1024.0**2)
    reserve = (engine.runtime_reserve_gib + np.where(plans.devices > 1, engine.collective_buffer_gib, 0.0)) * GIB
    capacity = hw.mem_bytes[plans.hw] * engine.gpu_memory_utilization
    weights = weight_bytes(arch, plans)
    zero = np.zeros(len(plans))
    return Memory(
        weights=weights + zero,
        kv_cache=kv + zero,
        activations=act + zero,
        reserve=reserve + zero,
        capacity=capacity + zero,
        kv_bytes_per_token=per_token + zero,
    )

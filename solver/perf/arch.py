"""Derived architecture numbers of a model card: parameter counts per block and KV sizes.

Scalars only (one model at a time); the vectorised performance model combines them with arrays
of parallelism plans. Formulas: docs/sources.md, "Parameters and weight memory" (llm-analysis, aiconfigurator),
with explicit head_dim and MLA projections.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from solver.perf.routing import ExpertRouting, expert_routing
from solver.schema.cards import ModelCard
from solver.schema.routing import Routing

# the card's FP8 checkpoint format -> the gemm table dtype its dense GEMMs run
# (solver/profiles/sources/aic/gemm.py: what each dtype measures)
FP8_GEMM_DTYPE = {"per_tensor_static": "fp8_static", "per_tensor_dynamic": "fp8", "block": "fp8_block"}


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelArch:
    """Parameter counts (elements, not bytes) of the blocks the performance model shards."""

    name: str
    layers: int
    hidden: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    is_mla: bool
    # attention block, per layer
    attn_q_params: int  # query projection(s), incl. MLA down/up projections for q
    attn_kv_params: int  # key/value projection(s); for MLA the latent down + up projections
    attn_o_params: int
    attn_replicated_params: int  # part of q/kv kept whole on every TP rank (MLA down-projections)
    # feed-forward, per layer
    dense_mlp_params: int  # one dense layer's MLP (0 when no dense layer exists)
    expert_params: int  # one routed expert
    shared_expert_params: int  # all shared experts of one MoE layer together
    router_params: int
    num_experts: int
    top_k: int
    moe_layers: int
    dense_layers: int
    norm_params_per_layer: int
    gated_mlp: bool
    embed_params: int  # input embedding
    lm_head_params: int  # 0 when tied
    # attention geometry used by the cost model
    qk_dim: int  # per-head dim of q.k products
    v_dim: int  # per-head dim of values
    kv_cache_elems_per_token_per_layer: int  # whole model width (before TP split)
    mla_latent: bool  # KV cache is a latent vector shared by all heads (not split by TP)
    local_window_tokens: int | None
    local_layers: int  # layers restricted to the window
    # how the service's traffic is routed over the experts (None: balanced)
    routing: ExpertRouting | None = None
    # the measured GEMM rows an fp8 plan's dense GEMMs read (the card's `fp8_scaling`)
    fp8_gemm: str = "fp8_static"

    @classmethod
    def from_card(cls, card: ModelCard) -> ModelArch:
        a = card.attention
        h = card.hidden_size
        attn = _mla_attention(card) if a.kind == "mla" else _mha_attention(card)
        mlp = _mlp_blocks(card)
        moe_layers = card.num_moe_layers
        local = a.local
        if local is None:
            local_layers, window = 0, None
        else:
            globals_ = card.num_layers // local.global_every if local.global_every else 0
            local_layers, window = card.num_layers - globals_, local.window_tokens
        return cls(
            name=card.name,
            layers=card.num_layers,
            hidden=h,
            vocab=card.vocab_size,
            heads=a.num_heads,
            kv_heads=a.num_kv_heads,
            head_dim=a.head_dim,
            is_mla=a.kind == "mla",
            **attn,
            **mlp,
            moe_layers=moe_layers,
            dense_layers=card.num_layers - moe_layers,
            norm_params_per_layer=2 * h,
            gated_mlp=card.gated_mlp,
            embed_params=card.vocab_size * h,
            lm_head_params=0 if card.tie_word_embeddings else card.vocab_size * h,
            mla_latent=a.kind == "mla",
            local_window_tokens=window,
            local_layers=local_layers,
            fp8_gemm=FP8_GEMM_DTYPE[card.fp8_scaling],
        )

    def with_routing(self, routing: Routing | None) -> ModelArch:
        """The same model served with the given routing distribution (MoE models only)."""
        if routing is None:
            return self
        if not self.moe_layers:
            raise ValueError(f"routing is for mixture-of-experts models; {self.name} is dense")
        return replace(self, routing=expert_routing(routing, self.num_experts, self.top_k))

    @property
    def expert_routing(self) -> ExpertRouting:
        """The routing the cost model uses: the service's, or balanced."""
        if self.routing is not None:
            return self.routing
        return expert_routing(None, max(self.num_experts, 1), max(self.top_k, 1))

    # ---- totals -------------------------------------------------------------------------

    def attn_params_per_device(self, tp):
        """Attention weights per device at tensor parallelism `tp` (scalar or array).

        GQA: K/V heads split over TP, replicated when TP exceeds them (ceil(n_kv/tp) per device).
        MLA: the down-projections stay whole on every rank, the rest is split.
        """
        tp = np.asarray(tp, dtype=float)
        if self.mla_latent:
            split = self.attn_params_per_layer - self.attn_replicated_params
            return split / tp + self.attn_replicated_params
        kv_share = np.ceil(self.kv_heads / tp) / self.kv_heads
        return (self.attn_q_params + self.attn_o_params) / tp + self.attn_kv_params * kv_share

    @property
    def attn_params_per_layer(self) -> int:
        return self.attn_q_params + self.attn_kv_params + self.attn_o_params

    def _params(self, experts: int) -> int:
        """All parameters, counting `experts` routed experts per MoE layer."""
        per_moe = experts * self.expert_params + self.shared_expert_params
        return (
            self.layers * (self.attn_params_per_layer + self.norm_params_per_layer)
            + self.dense_layers * self.dense_mlp_params
            + self.moe_layers * (per_moe + self.router_params)
            + self.embed_params
            + self.lm_head_params
            + self.hidden  # final norm
        )

    @property
    def total_params(self) -> int:
        return self._params(self.num_experts)

    @property
    def active_params(self) -> int:
        """Parameters touched by one token (embedding row lookups counted as the table)."""
        return self._params(self.top_k)

    def kv_cache_bytes_per_token(self, kv_bytes_per_elem: float) -> float:
        """KV bytes per token of context for the whole model, no window bounding."""
        return self.layers * self.kv_cache_elems_per_token_per_layer * kv_bytes_per_elem


def _mla_attention(card: ModelCard) -> dict[str, int]:
    """Projection sizes and cache geometry of multi-head latent attention (DeepSeek-V3)."""
    a, h = card.attention, card.hidden_size
    m = a.mla
    if m is None:  # the card validator guarantees an mla block for kind 'mla'
        raise TypeError(f"model {card.name}: attention.kind 'mla' without an mla block")
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a.num_heads * qk
    else:
        q = h * a.num_heads * qk
    kv = (
        h * (m.kv_lora_rank + m.qk_rope_head_dim)
        + m.kv_lora_rank
        + m.kv_lora_rank * a.num_heads * (m.qk_nope_head_dim + m.v_head_dim)
    )
    # q_a_proj, kv_a_proj_with_mqa and their norms are replicated on every TP rank in
    # vLLM and SGLang; only the up-projections are split
    replicated = (
        (h * m.q_lora_rank + m.q_lora_rank if m.q_lora_rank else 0)
        + h * (m.kv_lora_rank + m.qk_rope_head_dim)
        + m.kv_lora_rank
    )
    return dict(attn_q_params=q, attn_kv_params=kv, attn_o_params=a.num_heads * m.v_head_dim * h,
                attn_replicated_params=replicated, qk_dim=qk, v_dim=m.v_head_dim,
                kv_cache_elems_per_token_per_layer=m.kv_lora_rank + m.qk_rope_head_dim)


def _mha_attention(card: ModelCard) -> dict[str, int]:
    """Projection sizes and cache geometry of multi-head / grouped-query attention."""
    a, h = card.attention, card.hidden_size
    return dict(attn_q_params=h * a.num_heads * a.head_dim,
                attn_kv_params=2 * h * a.num_kv_heads * a.head_dim,
                attn_o_params=a.num_heads * a.head_dim * h, attn_replicated_params=0,
                qk_dim=a.head_dim, v_dim=a.head_dim,
                kv_cache_elems_per_token_per_layer=2 * a.num_kv_heads * a.head_dim)


def _mlp_blocks(card: ModelCard) -> dict[str, int]:
    """Parameters of one dense MLP, one routed expert, the shared experts and the router."""
    h = card.hidden_size
    mats = 3 if card.gated_mlp else 2
    has_dense = card.intermediate_size is not None and card.num_layers > card.num_moe_layers
    dense = mats * h * card.intermediate_size if has_dense else 0
    moe = card.moe
    if moe is None:
        return dict(dense_mlp_params=dense, expert_params=0, shared_expert_params=0,
                    router_params=0, num_experts=0, top_k=0)
    shared_width = moe.shared_expert_intermediate_size or moe.expert_intermediate_size
    return dict(dense_mlp_params=dense, expert_params=mats * h * moe.expert_intermediate_size,
                shared_expert_params=moe.shared_experts * mats * h * shared_width,
                router_params=h * moe.num_experts, num_experts=moe.num_experts,
                top_k=moe.experts_per_token)
